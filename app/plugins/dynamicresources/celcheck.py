"""cel-go's type checker for device selectors, in the DRA environment kube-scheduler compiles them in.

kube-scheduler compiles a selector with ``env.Compile`` (parse and check) in the environment of
``k8s.io/dynamic-resource-allocation/cel`` (``newCompiler``) on top of Kubernetes' base CEL
environment (``StoredExpressions``, so every versioned option is there whatever the feature
gates). A type error is a compile error: ``device.driver + 1`` is ``found no matching overload
for '_+_' applied to '(string, int)'``. This module ports what of ``cel-go/checker`` selectors
meet: overload resolution with type parameters and dyn, field selection on the ``device`` object
and on maps, comprehension ranges, homogeneous list and map literals, and the error texts and
positions (``Error.ToDisplayString``).

The declared functions are those berth's interpreter evaluates (the standard library, the
Kubernetes string, list, regex, quantity and semver libraries, ``includes``, ``cel.bind``); a call
of anything else is ``undeclared reference``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.plugins.dynamicresources.celast import (
    Bind,
    Call,
    Comprehension,
    Has,
    Ident,
    ListLiteral,
    Literal,
    MapLiteral,
    Node,
    Select,
    SourceLines,
)


@dataclass(frozen=True, slots=True)
class CelType:
    """A CEL type: a primitive, ``list``/``map``/``type`` with parameters, an object, dyn, a type parameter."""

    name: str
    params: tuple[CelType, ...] = ()
    is_param: bool = False

    def __str__(self) -> str:
        """``Type.String()``: the form kube's "must evaluate to bool" message uses."""
        return self.format(any_name="google.protobuf.Any")

    def format(self, any_name: str = "any") -> str:
        """``FormatCELType``: the form of overload and mismatch messages."""
        if self.name == "any":
            return any_name
        if self.name == "null_type":
            return "null"
        if self.name in ("list", "map", "type") and self.params:
            return f"{self.name}({', '.join(p.format(any_name) for p in self.params)})"
        return self.name


def _t(spec: str) -> CelType:
    """A type from its written form: ``int``, ``list(A)``, ``map(string, any)``; one capital letter is a parameter."""
    spec = spec.strip()
    if "(" in spec:
        name, inner = spec[:-1].split("(", 1)
        return CelType(name, tuple(_t(p) for p in _split_args(inner)))
    return CelType(spec, is_param=len(spec) == 1 and spec.isupper())


BOOL, INT, DYN, ANY, ERROR = _t("bool"), _t("int"), _t("dyn"), _t("any"), _t("error")
QUANTITY, SEMVER = _t("kubernetes.Quantity"), _t("kubernetes.Semver")


@dataclass(frozen=True, slots=True)
class Overload:
    """One overload: member overloads have the receiver as first argument."""

    member: bool
    args: tuple[CelType, ...]
    result: CelType


def _overloads(*specs: str) -> list[Overload]:
    """Overloads from ``(int, int) int`` (global) or ``string.(string) bool`` (member) specs."""
    out = []
    for spec in specs:
        member = ".(" in spec
        open_at = spec.index(".(") + 1 if member else 0
        depth = 0
        for close_at in range(open_at, len(spec)):
            depth += {"(": 1, ")": -1}.get(spec[close_at], 0)
            if depth == 0:
                break
        args = [_t(a) for a in _split_args(spec[open_at + 1 : close_at])]
        result = spec[close_at + 1 :]
        if member:
            args.insert(0, _t(spec[: open_at - 1]))
        out.append(Overload(member, tuple(args), _t(result)))
    return out


def _split_args(text: str) -> list[str]:
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (p.strip() for p in parts) if p]


_NUMERIC = ("int", "uint", "double")
_ORDERED = ("bool", "int", "uint", "double", "string", "bytes", "timestamp", "duration")
_COMPARISON = [f"({t}, {t}) bool" for t in _ORDERED] + [
    f"({a}, {b}) bool" for a in _NUMERIC for b in _NUMERIC if a != b
]
_TIME_GETTERS = ("getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek")
_CLOCK_GETTERS = ("getHours", "getMinutes", "getSeconds", "getMilliseconds")

FUNCTIONS: dict[str, list[Overload]] = {
    "_+_": _overloads(
        *(f"({t}, {t}) {t}" for t in ("int", "uint", "double", "string", "bytes", "duration")),
        "(list(A), list(A)) list(A)",
        "(timestamp, duration) timestamp",
        "(duration, timestamp) timestamp",
    ),
    "_-_": _overloads(
        *(f"({t}, {t}) {t}" for t in (*_NUMERIC, "duration")),
        "(timestamp, timestamp) duration",
        "(timestamp, duration) timestamp",
    ),
    "_*_": _overloads(*(f"({t}, {t}) {t}" for t in _NUMERIC)),
    "_/_": _overloads(*(f"({t}, {t}) {t}" for t in _NUMERIC)),
    "_%_": _overloads("(int, int) int", "(uint, uint) uint"),
    "-_": _overloads("(int) int", "(double) double"),
    "!_": _overloads("(bool) bool"),
    "_&&_": _overloads("(bool, bool) bool"),
    "_||_": _overloads("(bool, bool) bool"),
    "_==_": _overloads("(A, A) bool"),
    "_!=_": _overloads("(A, A) bool"),
    "_<_": _overloads(*_COMPARISON),
    "_<=_": _overloads(*_COMPARISON),
    "_>_": _overloads(*_COMPARISON),
    "_>=_": _overloads(*_COMPARISON),
    "@in": _overloads("(A, list(A)) bool", "(A, map(A, B)) bool"),
    "_[_]": _overloads("(list(A), int) A", "(map(A, B), A) B"),
    "_?_:_": _overloads("(bool, A, A) A"),
    "size": _overloads(
        *(f"({t}) int" for t in ("string", "bytes", "list(A)", "map(A, B)")),
        *(f"{t}.() int" for t in ("string", "bytes", "list(A)", "map(A, B)")),
    ),
    "contains": _overloads("string.(string) bool"),
    "startsWith": _overloads("string.(string) bool"),
    "endsWith": _overloads("string.(string) bool"),
    "matches": _overloads("(string, string) bool", "string.(string) bool"),
    "int": _overloads(*(f"({t}) int" for t in ("int", "uint", "double", "string", "timestamp", "duration"))),
    "uint": _overloads(*(f"({t}) uint" for t in ("uint", "int", "double", "string"))),
    "double": _overloads(*(f"({t}) double" for t in ("double", "int", "uint", "string"))),
    "string": _overloads(
        *(
            f"({t}) string"
            for t in ("string", "int", "uint", "double", "bool", "bytes", "timestamp", "duration")
        )
    ),
    "bytes": _overloads("(bytes) bytes", "(string) bytes"),
    "bool": _overloads("(bool) bool", "(string) bool"),
    "dyn": _overloads("(A) dyn"),
    "type": _overloads("(A) type(A)"),
    "duration": _overloads("(string) duration", "(duration) duration"),
    "timestamp": _overloads("(string) timestamp", "(timestamp) timestamp", "(int) timestamp"),
    **{g: _overloads("timestamp.() int", "timestamp.(string) int") for g in _TIME_GETTERS},
    **{
        g: _overloads("timestamp.() int", "timestamp.(string) int", "duration.() int") for g in _CLOCK_GETTERS
    },
    # Kubernetes' string library (ext.Strings version 2)
    "charAt": _overloads("string.(int) string"),
    "indexOf": _overloads("string.(string) int", "string.(string, int) int", "list(A).(A) int"),
    "lastIndexOf": _overloads("string.(string) int", "string.(string, int) int", "list(A).(A) int"),
    "lowerAscii": _overloads("string.() string"),
    "upperAscii": _overloads("string.() string"),
    "replace": _overloads("string.(string, string) string", "string.(string, string, int) string"),
    "split": _overloads("string.(string) list(string)", "string.(string, int) list(string)"),
    "substring": _overloads("string.(int) string", "string.(int, int) string"),
    "trim": _overloads("string.() string"),
    "join": _overloads("list(string).() string", "list(string).(string) string"),
    "format": _overloads("string.(list(dyn)) string"),
    "reverse": _overloads("string.() string", "list(A).() list(A)"),
    # Kubernetes' list library
    "isSorted": _overloads("list(A).() bool"),
    "sum": _overloads("list(A).() A"),
    "min": _overloads("list(A).() A"),
    "max": _overloads("list(A).() A"),
    # Kubernetes' regex library
    "find": _overloads("string.(string) string"),
    "findAll": _overloads("string.(string) list(string)", "string.(string, int) list(string)"),
    # Kubernetes' quantity library
    "quantity": _overloads("(string) kubernetes.Quantity"),
    "isQuantity": _overloads("(string) bool"),
    "sign": _overloads("(kubernetes.Quantity) int"),
    "isInteger": _overloads("kubernetes.Quantity.() bool"),
    "asInteger": _overloads("kubernetes.Quantity.() int"),
    "asApproximateFloat": _overloads("kubernetes.Quantity.() double"),
    "add": _overloads(
        "kubernetes.Quantity.(kubernetes.Quantity) kubernetes.Quantity",
        "kubernetes.Quantity.(int) kubernetes.Quantity",
    ),
    "sub": _overloads(
        "kubernetes.Quantity.(kubernetes.Quantity) kubernetes.Quantity",
        "kubernetes.Quantity.(int) kubernetes.Quantity",
    ),
    "isGreaterThan": _overloads(
        "kubernetes.Quantity.(kubernetes.Quantity) bool", "kubernetes.Semver.(kubernetes.Semver) bool"
    ),
    "isLessThan": _overloads(
        "kubernetes.Quantity.(kubernetes.Quantity) bool", "kubernetes.Semver.(kubernetes.Semver) bool"
    ),
    "compareTo": _overloads(
        "kubernetes.Quantity.(kubernetes.Quantity) int", "kubernetes.Semver.(kubernetes.Semver) int"
    ),
    # Kubernetes' semver library (version 1: the optional "normalize" argument)
    "semver": _overloads("(string) kubernetes.Semver", "(string, bool) kubernetes.Semver"),
    "isSemver": _overloads("(string) bool", "(string, bool) bool"),
    "major": _overloads("kubernetes.Semver.() int"),
    "minor": _overloads("kubernetes.Semver.() int"),
    "patch": _overloads("kubernetes.Semver.() int"),
    # DRA's own: declared in the StoredExpressions environment whatever DRAListTypeAttributes says
    "includes": _overloads("dyn.(dyn) bool"),
}

_TYPE_NAMES = ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn")


def device_type(list_type_attributes: bool) -> dict[str, CelType]:
    """The fields of ``kubernetes.DRADevice`` (the newest one: with ``allowMultipleAllocations``)."""
    attribute = DYN if list_type_attributes else ANY
    return {
        "driver": _t("string"),
        "allowMultipleAllocations": BOOL,
        "attributes": CelType("map", (_t("string"), CelType("map", (_t("string"), attribute)))),
        "capacity": CelType("map", (_t("string"), CelType("map", (_t("string"), QUANTITY)))),
    }


DEVICE = _t("kubernetes.DRADevice")


def _is_dyn_or_error(t: CelType) -> bool:
    return t.name in ("dyn", "any", "error")


@dataclass(slots=True)
class _Checker:
    lines: SourceLines
    device_fields: dict[str, CelType]
    errors: list[tuple[int, int, str]] = field(default_factory=list)
    scopes: list[dict[str, CelType]] = field(default_factory=list)
    types: dict[int, CelType] = field(default_factory=dict)
    literals: list[Node] = field(default_factory=list)

    def report(self, offset: int, message: str) -> CelType:
        self.errors.append((offset, len(self.errors), message))
        return ERROR

    # --- assignability (checker/types.go isAssignable, simplified to what selectors meet) ---

    def assignable(self, subst: dict[str, CelType], formal: CelType, actual: CelType) -> bool:
        if formal.is_param:
            bound = subst.get(formal.name)
            if bound is None:
                subst[formal.name] = actual
                return True
            if self.assignable(subst, bound, actual):
                subst[formal.name] = _most_general(bound, actual)
                return True
            if self.assignable(subst, actual, bound):
                subst[formal.name] = _most_general(actual, bound)
                return True
            return False
        if actual.is_param:
            bound = subst.get(actual.name)
            return True if bound is None else self.assignable(subst, formal, bound)
        if _is_dyn_or_error(formal) or _is_dyn_or_error(actual):
            return True
        if formal.name == "null_type" or actual.name == "null_type":
            return formal.name == actual.name or (formal.name if actual.name == "null_type" else "") in (
                "timestamp",
                "duration",
                "kubernetes.DRADevice",
            )
        if formal.name != actual.name or len(formal.params) != len(actual.params):
            return False
        return all(self.assignable(subst, f, a) for f, a in zip(formal.params, actual.params, strict=True))

    def resolve(self, node: Node, name: str, args: list[CelType], member: bool) -> CelType:
        overloads = FUNCTIONS.get(name)
        if overloads is None:
            return self.report(node.offset, f"undeclared reference to '{name}' (in container '')")
        result: CelType | None = None
        for overload in overloads:
            if overload.member != member or len(overload.args) != len(args):
                continue
            subst: dict[str, CelType] = {}
            if all(self.assignable(subst, f, a) for f, a in zip(overload.args, args, strict=True)):
                found = _substitute(subst, overload.result)
                if result is None:
                    result = found
                elif not _is_dyn_or_error(result) and found != result:
                    result = DYN
        if result is None:
            shown = [a.format() for a in args]
            signature = f"{shown[0]}.({', '.join(shown[1:])})" if member else f"({', '.join(shown)})"
            return self.report(
                node.offset, f"found no matching overload for '{name}' applied to '{signature}'"
            )
        return result

    # --- expressions --------------------------------------------------------------------------

    def check(self, node: Node) -> CelType:
        if isinstance(node, Literal):
            return _t(node.kind)
        if isinstance(node, Ident):
            for scope in reversed(self.scopes):
                if node.name in scope:
                    return scope[node.name]
            if node.name == "device":
                return DEVICE
            if node.name in _TYPE_NAMES:
                return CelType("type", (_t(node.name),))
            return self.report(node.offset, f"undeclared reference to '{node.name}' (in container '')")
        if isinstance(node, Select | Has):
            result = self.select(node.offset, self.check(node.operand), node.name)
            return BOOL if isinstance(node, Has) and result is not ERROR else result
        if isinstance(node, Call):
            if node.function == "matches" and node.target is not None and node.args:
                self.literals.append(node)
            args = [self.check(a) for a in ([node.target] if node.target is not None else []) + node.args]
            return self.resolve(node, node.function, args, node.target is not None)
        if isinstance(node, ListLiteral):
            self.literals.append(node)
            return CelType("list", (self.join(node.elements),))
        if isinstance(node, MapLiteral):
            self.literals.append(node)
            key = self.join([k for k, _ in node.entries])
            value = self.join([v for _, v in node.entries])
            return CelType("map", (key, value))
        if isinstance(node, Bind):
            value = self.check(node.value)
            self.scopes.append({node.variable: value})
            try:
                return self.check(node.body)
            finally:
                self.scopes.pop()
        assert isinstance(node, Comprehension)
        return self.comprehension(node)

    def select(self, offset: int, operand: CelType, name: str) -> CelType:
        if _is_dyn_or_error(operand):
            return DYN
        if operand.name == "map":
            return operand.params[1]
        if operand == DEVICE:
            found = self.device_fields.get(name)
            return found if found is not None else self.report(offset, f"undefined field '{name}'")
        return self.report(offset, f"type '{operand.format()}' does not support field selection")

    def join(self, elements: list[Node]) -> CelType:
        """The element type of a literal: mixed types join to dyn (the validator reports them)."""
        joined: CelType | None = None
        for element in elements:
            current = self.check(element)
            self.types[id(element)] = current
            if joined is None:
                joined = current
            elif self.assignable({}, joined, current):
                joined = _most_general(joined, current)
            else:
                joined = DYN
        return joined if joined is not None else DYN

    def comprehension(self, node: Comprehension) -> CelType:
        range_type = self.check(node.range)
        if range_type.name == "list" or range_type.name == "map":
            variable = range_type.params[0]
        elif range_type.name in ("dyn", "error"):  # not any: the unknown type is no range
            variable = DYN
        else:
            self.report(
                node.offset,
                f"expression of type '{range_type.format()}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)",
            )
            variable = ERROR
        self.scopes.append({node.variable: variable})
        try:
            # cel-go expands the macros into folds; a non-bool predicate fails in the expansion:
            # all/exists check their step's type, the others a conditional at the call.
            if node.macro == "map":
                body = self.check(node.body)
                if node.filter is not None:
                    self.conditional(node.call_offset, self.check(node.filter), CelType("list", (body,)))
                return CelType("list", (body,))
            if node.macro in ("all", "exists"):
                found = self.check(node.body)
                if not self.assignable({}, BOOL, found):
                    self.report(node.body.offset, f"expected type 'bool' but found '{found.format()}'")
                return BOOL
            found = self.check(node.body)
            if node.macro == "filter":
                self.conditional(node.call_offset, found, CelType("list", (variable,)))
                return CelType("list", (variable,))
            self.conditional(node.call_offset, found, INT)
            return BOOL
        finally:
            self.scopes.pop()

    def conditional(self, offset: int, condition: CelType, branch: CelType) -> None:
        if not self.assignable({}, BOOL, condition):
            shown = f"({condition.format()}, {branch.format()}, {branch.format()})"
            self.report(offset, f"found no matching overload for '_?_:_' applied to '{shown}'")


def _most_general(a: CelType, b: CelType) -> CelType:
    return a if _is_dyn_or_error(a) or not _is_dyn_or_error(b) else b


def _substitute(subst: dict[str, CelType], t: CelType) -> CelType:
    if t.is_param:
        bound = subst.get(t.name)
        return _substitute(subst, bound) if bound is not None and not bound.is_param else DYN
    if t.params:
        return CelType(t.name, tuple(_substitute(subst, p) for p in t.params))
    return t


def _regex_compiles(pattern: str) -> bool:
    """Whether RE2 (Go's regexp) takes ``pattern``; Python's re plus RE2's missing constructs."""
    if re.search(r"\(\?<?[=!]|\\[1-9]|\(\?P=", pattern):
        return False  # look-around and back-references: Python has them, RE2 does not
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _validate(checker: _Checker) -> None:
    """cel-go's AST validators of the base environment, run once the tree type-checks.

    ``ValidateRegexLiterals`` (a literal pattern of a member ``matches`` call must compile) and
    ``ValidateHomogeneousAggregateLiterals`` (list elements, map keys and map values of one literal
    of one exact type; a list reports its first mismatch, a map every one).
    """
    for node in checker.literals:
        if isinstance(node, Call):
            pattern = node.args[0]
            if (
                isinstance(pattern, Literal)
                and pattern.kind == "string"
                and not _regex_compiles(pattern.value)
            ):
                checker.report(pattern.offset, "invalid matches argument")
        elif isinstance(node, ListLiteral):
            first = checker.types[id(node.elements[0])] if node.elements else None
            for element in node.elements[1:]:
                current = checker.types[id(element)]
                if current != first:
                    assert first is not None
                    checker.report(
                        element.offset, f"expected type '{first.format()}' but found '{current.format()}'"
                    )
                    break
        elif isinstance(node, MapLiteral) and node.entries:
            key0, value0 = (checker.types[id(n)] for n in node.entries[0])
            for key, value in node.entries[1:]:
                for expected, item in ((key0, key), (value0, value)):
                    if checker.types[id(item)] != expected:
                        found = checker.types[id(item)].format()
                        checker.report(
                            item.offset, f"expected type '{expected.format()}' but found '{found}'"
                        )


def check(source: str, tree: Node, list_type_attributes: bool = False) -> tuple[CelType, str]:
    """The type of ``tree`` and, if it does not type-check, cel-go's report of its issues."""
    checker = _Checker(SourceLines(source), device_type(list_type_attributes))
    result = checker.check(tree)
    if not checker.errors:
        _validate(checker)
    if not checker.errors:
        return result, ""
    # Issues are sorted by position (a stable sort: equal positions keep their order).
    ordered = sorted(checker.errors)
    report = "\n".join(checker.lines.display(offset, message) for offset, _, message in ordered)
    return result, report
