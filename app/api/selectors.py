"""Label selectors and node selectors with the matching rules of apimachinery and
component-helpers/scheduling/corev1/nodeaffinity."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.api.errors import FieldError
from app.api.validation import invalid, label_key_errors, label_value_errors

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(slots=True, frozen=True)
class Requirement:
    """One ``key operator values`` requirement (label or node selector)."""

    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy the requirement (labels.Requirement.Matches)."""
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None or len(self.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(next(iter(self.values)))
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


_INT64_RE = re.compile(r"[+-]?[0-9]+")


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None where Go fails.

    Python's ``int()`` is laxer (whitespace, ``_`` separators, non-ASCII digits, no range limit).
    """
    if _INT64_RE.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(slots=True, frozen=True)
class LabelSelector:
    """``metav1.LabelSelector`` converted to requirements. An empty selector matches everything."""

    requirements: tuple[Requirement, ...]
    equalities: frozenset[tuple[str, str]] | None = field(init=False, default=None, compare=False, repr=False)
    """The requirements as ``(key, value)`` pairs when all are single-value ``In`` (matchLabels),
    the common case, which then matches as one subset test of the labels' items."""

    def __post_init__(self) -> None:
        if all(r.operator == "In" and len(r.values) == 1 for r in self.requirements):
            pairs = frozenset((r.key, v) for r in self.requirements for v in r.values)
            object.__setattr__(self, "equalities", pairs)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether every requirement holds for ``labels``."""
        equalities = self.equalities
        if equalities is not None:
            return labels.items() >= equalities
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True for ``{}``, which selects everything."""
        return not self.requirements


EVERYTHING = LabelSelector(())


def parse_label_selector(raw: Mapping[str, Any], path: str) -> LabelSelector:
    """Parse a ``metav1.LabelSelector``; errors name the field path."""
    reqs: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise FieldError(f"{path}.matchLabels", "expected an object")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise FieldError(f"{path}.matchLabels.{key}", "expected a string")
        reqs.append(Requirement(key, "In", frozenset((value,))))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise FieldError(f"{path}.matchExpressions", "expected an array")
    for i, expr in enumerate(expressions):
        reqs.append(_parse_requirement(expr, f"{path}.matchExpressions[{i}]", LABEL_OPERATORS))
    return LabelSelector(tuple(reqs))


def _parse_requirement(raw: object, path: str, operators: tuple[str, ...]) -> Requirement:
    if not isinstance(raw, Mapping):
        raise FieldError(path, "expected an object")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise FieldError(f"{path}.key", "Required value")
    op = raw.get("operator")
    if op not in operators:
        supported = ", ".join(f'"{o}"' for o in operators)
        raise FieldError(f"{path}.operator", f'Unsupported value: "{op}": supported values: {supported}')
    values = raw.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise FieldError(f"{path}.values", "expected an array of strings")
    if op in ("In", "NotIn") and not values:
        raise FieldError(
            f"{path}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    if op in ("Exists", "DoesNotExist") and values:
        raise FieldError(
            f"{path}.values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    if op in ("Gt", "Lt") and len(values) != 1:
        raise FieldError(
            f"{path}.values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        )
    return Requirement(key, op, frozenset(values))


@dataclass(slots=True, frozen=True)
class NodeSelectorTerm:
    """A node selector term: expressions on labels AND fields (only ``metadata.name``).

    A term with neither matches no node, as in component-helpers. ``errors`` holds what
    ``labels.NewRequirement`` rejects but API validation lets through (a bad label key or value, a
    non-integer Gt/Lt value), as ``field.Error`` texts relative to the term
    (``matchExpressions[0].key: Invalid value: ...``); such a term matches no node, as a term with
    parse errors does in component-helpers' lazy-error selector.
    """

    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...]
    errors: tuple[str, ...] = field(default=(), compare=False)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether the node satisfies every expression and field requirement of the term."""
        if self.errors or (not self.match_expressions and not self.match_fields):
            return False
        # Field requirements are In/NotIn with one value on metadata.name (enforced by the parser);
        # compared directly so that no fields dict is built per node. A nameless node has no fields,
        # which component-helpers treats as matching.
        if node_name:
            for r in self.match_fields:
                if (node_name in r.values) != (r.operator == "In"):
                    return False
        # A plain loop rather than all(genexpr): this runs per node per term, and the generator
        # object would be allocated on every call.
        for r in self.match_expressions:  # noqa: SIM110
            if not r.matches(labels):
                return False
        return True


@dataclass(slots=True, frozen=True)
class NodeSelector:
    """``v1.NodeSelector``: terms ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether any term matches the node."""
        # A plain loop, as in the term: DynamicResources asks this of an allocated claim's node
        # selector on every node for every pod sharing the claim.
        for term in self.terms:  # noqa: SIM110
            if term.matches(node_name, labels):
                return True
        return False


def parse_node_selector_term(raw: Mapping[str, Any], path: str) -> NodeSelectorTerm:
    """Parse a ``v1.NodeSelectorTerm``."""
    exprs = raw.get("matchExpressions") or []
    fields = raw.get("matchFields") or []
    if not isinstance(exprs, list):
        raise FieldError(f"{path}.matchExpressions", "expected an array")
    if not isinstance(fields, list):
        raise FieldError(f"{path}.matchFields", "expected an array")
    match_fields = []
    for i, f in enumerate(fields):
        req = _parse_requirement(f, f"{path}.matchFields[{i}]", NODE_OPERATORS)
        if req.key != "metadata.name":
            raise FieldError(
                f"{path}.matchFields[{i}].key", f'Invalid value: "{req.key}": not a valid field selector key'
            )
        if req.operator not in ("In", "NotIn"):
            raise FieldError(
                f"{path}.matchFields[{i}].operator",
                f'Invalid value: "{req.operator}": not a valid selector operator',
            )
        if req.operator in ("In", "NotIn") and len(req.values) != 1:
            raise FieldError(
                f"{path}.matchFields[{i}].values",
                "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
        match_fields.append(req)
    match_expressions = tuple(
        _parse_requirement(e, f"{path}.matchExpressions[{i}]", NODE_OPERATORS) for i, e in enumerate(exprs)
    )
    errors: list[str] = []
    for i, req in enumerate(match_expressions):
        errors.extend(_lazy_requirement_errors(req, exprs[i].get("values") or [], f"matchExpressions[{i}]"))
    return NodeSelectorTerm(match_expressions, tuple(match_fields), tuple(errors))


def _lazy_requirement_errors(req: Requirement, values: list[str], path: str) -> list[str]:
    """What ``labels.NewRequirement`` reports beyond API validation, in its order (key, Gt/Lt, values)."""
    errs: list[str] = []
    key_errs = label_key_errors(req.key)
    if key_errs:
        errs.append(str(invalid(f"{path}.key", req.key, "; ".join(key_errs))))
    if req.operator in ("Gt", "Lt"):
        for j, v in enumerate(values):
            if parse_int64(v) is None:
                errs.append(
                    str(
                        invalid(
                            f"{path}.values[{j}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"
                        )
                    )
                )
    for j, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            # validateLabelValue reports at path.Key(key): values[j][key].
            errs.append(str(invalid(f"{path}.values[{j}][{req.key}]", v, "; ".join(value_errs))))
    return errs


def parse_node_selector(raw: Mapping[str, Any], path: str) -> NodeSelector:
    """Parse a ``v1.NodeSelector`` (``nodeSelectorTerms``)."""
    terms = raw.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        raise FieldError(f"{path}.nodeSelectorTerms", "expected an array")
    out = []
    for i, term in enumerate(terms):
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        if not isinstance(term, Mapping):
            raise FieldError(tpath, "expected an object")
        out.append(parse_node_selector_term(term, tpath))
    return NodeSelector(tuple(out))
