"""NodeAffinityArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import (
    child,
    index,
    invalid,
    label_key_errors,
    label_value_errors,
    not_supported,
    raise_errors,
)

KIND = "NodeAffinityArgs"

#: Operator order of component-helpers' ``validSelectorOperators`` (used in the NotSupported message).
SELECTOR_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS: tuple[str, ...] = ("In", "NotIn")


def _decode_requirements(term: Obj, key: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for p, item in term.array(key):
        req = Obj(item, p)
        out.append(
            {
                "key": req.string("key"),
                "operator": req.string("operator"),
                "values": req.string_list("values"),
            }
        )
        req.finish()
    return out


def _decode_term(term: Obj) -> None:
    _decode_requirements(term, "matchExpressions")
    _decode_requirements(term, "matchFields")
    term.finish()


def _decode_node_affinity(obj: Obj) -> None:
    """Strictly type-check a ``v1.NodeAffinity`` (nothing is kept: the raw dict is stored as given)."""
    ns = obj.nested("requiredDuringSchedulingIgnoredDuringExecution")
    if ns is not None:
        for p, item in ns.array("nodeSelectorTerms"):
            _decode_term(Obj(item, p))
        ns.finish()
    for p, item in obj.array("preferredDuringSchedulingIgnoredDuringExecution"):
        pref = Obj(item, p)
        pref.integer("weight")
        preference = pref.nested("preference")
        if preference is not None:
            _decode_term(preference)
        pref.finish()
    obj.finish()


def _requirements(term: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    value = term.get(key) or []
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _str_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _validate_label_requirements(reqs: list[Mapping[str, object]], path: str) -> list[FieldError]:
    """nodeSelectorRequirementsAsSelector + labels.NewRequirement."""
    errs: list[FieldError] = []
    for i, expr in enumerate(reqs):
        p = index(path, i)
        op = str(expr.get("operator") or "")
        key = str(expr.get("key") or "")
        values = _str_list(expr.get("values"))
        if op not in SELECTOR_OPERATORS:
            errs.append(not_supported(child(p, "operator"), op, SELECTOR_OPERATORS))
            continue
        key_errs = label_key_errors(key)
        if key_errs:
            errs.append(invalid(child(p, "key"), key, "; ".join(key_errs)))
        vp = child(p, "values")
        if op in ("In", "NotIn") and not values:
            errs.append(invalid(vp, values, "for 'in', 'notin' operators, values set can't be empty"))
        elif op in ("Exists", "DoesNotExist") and values:
            errs.append(invalid(vp, values, "values set must be empty for exists and does not exist"))
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                errs.append(invalid(vp, values, "for 'Gt', 'Lt' operators, exactly one value is required"))
            for j, v in enumerate(values):
                if not _is_int64(v):
                    errs.append(
                        invalid(index(vp, j), v, "for 'Gt', 'Lt' operators, the value must be an integer")
                    )
        for j, v in enumerate(values):
            value_errs = label_value_errors(v)
            if value_errs:
                # labels.validateLabelValue reports at path.Key(key), i.e. values[j][key].
                errs.append(invalid(f"{index(vp, j)}[{key}]", v, "; ".join(value_errs)))
    return errs


def _is_int64(text: str) -> bool:
    """strconv.ParseInt(text, 10, 64) succeeds."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit() and -(2**63) <= int(text) < 2**63


def _validate_field_requirements(reqs: list[Mapping[str, object]], path: str) -> list[FieldError]:
    """nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value."""
    errs = []
    for i, expr in enumerate(reqs):
        p = index(path, i)
        op = str(expr.get("operator") or "")
        values = _str_list(expr.get("values"))
        if op in FIELD_SELECTOR_OPERATORS:
            if len(values) != 1:
                errs.append(invalid(child(p, "values"), values, "must have one element"))
        else:
            errs.append(not_supported(child(p, "operator"), op, FIELD_SELECTOR_OPERATORS))
    return errs


def validate_node_selector_term(term: Mapping[str, object], path: str) -> list[FieldError]:
    """The parse errors of one NodeSelectorTerm (component-helpers ``newNodeSelectorTerm``)."""
    errs = []
    exprs = _requirements(term, "matchExpressions")
    if exprs:
        errs.extend(_validate_label_requirements(exprs, child(path, "matchExpressions")))
    fields = _requirements(term, "matchFields")
    if fields:
        errs.extend(_validate_field_requirements(fields, child(path, "matchFields")))
    return errs


def _is_empty_term(term: Mapping[str, object]) -> bool:
    return not _requirements(term, "matchExpressions") and not _requirements(term, "matchFields")


def validate_node_affinity(affinity: Mapping[str, object], path: str) -> list[FieldError]:
    """ValidateNodeAffinityArgs' checks: what NewNodeSelector and NewPreferredSchedulingTerms reject."""
    errs: list[FieldError] = []
    ns = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(ns, Mapping):
        terms_path = child(child(path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
        terms = ns.get("nodeSelectorTerms") or []
        for i, term in enumerate(terms if isinstance(terms, list) else []):
            if isinstance(term, Mapping) and not _is_empty_term(term):
                errs.extend(validate_node_selector_term(term, index(terms_path, i)))
    prefs = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    pref_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(prefs if isinstance(prefs, list) else []):
        if not isinstance(pref, Mapping):
            continue
        preference = pref.get("preference") or {}
        if not pref.get("weight") or not isinstance(preference, Mapping) or _is_empty_term(preference):
            continue
        # component-helpers reports preferred-term errors at [i] directly, without ".preference".
        errs.extend(validate_node_selector_term(preference, index(pref_path, i)))
    return errs


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    """Args of NodeAffinity: an affinity ANDed with every pod's own node affinity.

    ``added_affinity`` is the raw v1 ``NodeAffinity`` dict (camelCase), already validated.
    """

    added_affinity: dict[str, object] | None = None

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args (there are no defaults), then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        added = obj.nested("addedAffinity")
        affinity = None
        if added is not None:
            _decode_node_affinity(added)
            affinity = copy.deepcopy(dict(added.raw))
        obj.finish()
        args = cls(affinity)
        raise_errors(args.validate(path))
        return args

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidateNodeAffinityArgs."""
        if self.added_affinity is None:
            return []
        return validate_node_affinity(self.added_affinity, child(path, "addedAffinity"))

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        out: dict[str, object] = {"apiVersion": API_VERSION}
        if self.added_affinity is not None:
            out["addedAffinity"] = copy.deepcopy(self.added_affinity)
        out["kind"] = KIND
        return out
