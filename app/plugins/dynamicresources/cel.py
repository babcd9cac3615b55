"""Device selectors: CEL in the Kubernetes DRA environment (``k8s.io/dynamic-resource-allocation/cel``).

An expression sees one variable, ``device``, with ``driver``, ``allowMultipleAllocations``,
``attributes[domain][id]`` and ``capacity[domain][id]`` (ids without a domain belong to the
device's driver), plus Kubernetes' ``quantity`` and ``semver`` libraries. Expressions are
evaluated with the ``common-expression-language`` package (a Rust CEL interpreter; see
docs/dra.md for why this one). It has no Kubernetes types, so quantities and versions travel
through CEL as one-key maps whose value is canonical (equal quantities compare equal with ``==``),
and the library functions are Python functions dispatched on that key.

Each expression is compiled once (:class:`CelCache`). A compile error or a runtime error never
escapes as a traceback: it comes back as the message kube-scheduler wraps into its reasons
("CEL compile error: ...", "CEL runtime error: ...").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import cel

from app.api.quantity import QUANTITY_FORMAT_MESSAGE, parse_quantity_string
from app.api.resource import Device, DeviceAttribute

QUANTITY_TAG = "__k8s_quantity__"
SEMVER_TAG = "__k8s_semver__"

# blang/semver's strict grammar (no leading zeros, optional pre-release and build).
_NUM = r"(0|[1-9][0-9]*)"
_SEMVER_RE = re.compile(
    rf"^{_NUM}\.{_NUM}\.{_NUM}"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
_MAX_INT64 = 2**63 - 1
_IDENTIFIER_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

# What kube's DRA environment declares: the CEL standard library, the Kubernetes extension
# libraries for strings, lists, regex, quantities and semver. A call of anything else is
# "undeclared" at compile time, as cel-go's checker reports it.
_STANDARD_FUNCTIONS = frozenset(
    {
        "size", "has", "all", "exists", "exists_one", "map", "filter", "int", "uint", "double", "string",
        "bytes", "bool", "type", "dyn", "duration", "timestamp", "contains", "startsWith", "endsWith",
        "matches", "in", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear",
        "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
        # Kubernetes string and list libraries
        "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split", "substring",
        "trim", "join", "isSorted", "sum", "min", "max", "reverse", "format",
    }
)  # fmt: skip


class CelError(Exception):
    """A selector that could not be evaluated; the message is what kube-scheduler reports."""


# --- quantity and semver values ----------------------------------------------------------------


def _quantity_value(amount: Fraction) -> dict[str, str]:
    return {QUANTITY_TAG: f"{amount.numerator}/{amount.denominator}"}


def _as_fraction(value: Any) -> Fraction:
    if isinstance(value, Mapping) and QUANTITY_TAG in value:
        return Fraction(value[QUANTITY_TAG])
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    raise CelError("no such overload")


def _parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]] | None:
    m = _SEMVER_RE.match(text)
    if m is None:
        return None
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre


def _semver_value(text: str) -> dict[str, str]:
    if _parse_semver(text) is None:
        raise CelError(f"could not parse {text!r} as semver")
    return {SEMVER_TAG: text}


def _semver_key(value: Any) -> tuple[int, int, int, tuple[tuple[int, int | str], ...], int]:
    """Order by semver precedence: release before pre-release, numeric identifiers numerically."""
    parsed = _parse_semver(value[SEMVER_TAG])
    assert parsed is not None
    major, minor, patch, pre = parsed
    pre_key = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre)
    return major, minor, patch, pre_key, 0 if pre else 1


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Mapping) and SEMVER_TAG in a:
        if not (isinstance(b, Mapping) and SEMVER_TAG in b):
            raise CelError("no such overload")
        ka, kb = _semver_key(a), _semver_key(b)
        if ka[:3] != kb[:3]:
            return -1 if ka[:3] < kb[:3] else 1
        pa, pb = (ka[4], ka[3]), (kb[4], kb[3])
        return 0 if pa == pb else (-1 if pa < pb else 1)
    fa, fb = _as_fraction(a), _as_fraction(b)
    return 0 if fa == fb else (-1 if fa < fb else 1)


def _quantity(text: str) -> dict[str, str]:
    try:
        return _quantity_value(parse_quantity_string(text))
    except ValueError:
        raise CelError(QUANTITY_FORMAT_MESSAGE) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity_string(text)
    except ValueError:
        return False
    return True


def _as_integer(q: Any) -> int:
    amount = _as_fraction(q)
    if amount.denominator != 1 or not -_MAX_INT64 - 1 <= amount.numerator <= _MAX_INT64:
        raise CelError("cannot convert value to integer")
    return amount.numerator


def _sign(q: Any) -> int:
    amount = _as_fraction(q)
    return (amount > 0) - (amount < 0)


def _semver_part(index: int) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        parsed = _parse_semver(v[SEMVER_TAG])
        assert parsed is not None
        return parsed[:3][index]

    return part


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _sign,
    "isInteger": lambda q: _as_fraction(q).denominator == 1,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(_as_fraction(q)),
    "add": lambda a, b: _quantity_value(_as_fraction(a) + _as_fraction(b)),
    "sub": lambda a, b: _quantity_value(_as_fraction(a) - _as_fraction(b)),
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "compareTo": _compare,
    "semver": _semver_value,
    "isSemver": lambda text: _parse_semver(text) is not None,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
}
_DECLARED = _STANDARD_FUNCTIONS | frozenset(_FUNCTIONS)

# device.attributes["domain"] / device.capacity["domain"] with a literal domain: kube's maps answer
# an unknown domain with an empty map (so has(...) on it is false), which the interpreter cannot
# do, so the literal domains an expression names are added as empty maps before evaluating.
_DOMAIN_RE = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")
_LITERAL_CALL_RE = re.compile(r"""\b(quantity|semver)\s*\(\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\)""")


# --- devices as CEL input ----------------------------------------------------------------------


def _attribute_value(name: str, attr: DeviceAttribute) -> Any:
    if attr.kind == "version":
        assert isinstance(attr.value, str)
        if _parse_semver(attr.value) is None:
            raise CelError(f"attribute {name}: parse semantic version: invalid version {attr.value!r}")
        return {SEMVER_TAG: attr.value}
    if attr.kind == "":
        raise CelError(f"attribute {name}: unsupported attribute value")
    return attr.value


def _split(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: ``domain/id``, or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(driver: str, device: Device) -> dict[str, Any]:
    """The ``device`` variable for one device (``DeviceMatches``); CelError for a bad attribute."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(name, attr)
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[ident] = _quantity_value(cap.value)
    return {
        "driver": driver,
        "allowMultipleAllocations": device.allow_multiple_allocations,
        "attributes": attributes,
        "capacity": capacity,
    }


# --- compiled expressions --------------------------------------------------------------------


@dataclass(slots=True)
class CompiledSelector:
    """One compiled expression, or its compile error (``CompilationResult``)."""

    expression: str
    program: Any = None
    error: str = ""
    attribute_domains: tuple[str, ...] = ()
    capacity_domains: tuple[str, ...] = ()

    def matches(self, device: Mapping[str, Any]) -> bool:
        """Evaluate against a :func:`device_input`; CelError with kube's runtime message on failure."""
        if self.attribute_domains or self.capacity_domains:
            device = _with_empty_domains(device, self.attribute_domains, self.capacity_domains)
        context = cel.Context(variables={"device": device}, functions=_FUNCTIONS)
        try:
            result = self.program.execute(context)
        except KeyError as err:
            raise CelError(f"no such key: {err.args[0] if err.args else ''}") from None
        except Exception as err:  # the interpreter's errors carry no finer type worth keeping
            raise CelError(_runtime_message(err)) from None
        if not isinstance(result, bool):
            raise CelError(f"CEL result of type {_cel_type_name(result)} could not be converted to bool")
        return result


def _with_empty_domains(
    device: Mapping[str, Any], attrs: tuple[str, ...], caps: tuple[str, ...]
) -> dict[str, Any]:
    out = dict(device)
    for field_name, domains in (("attributes", attrs), ("capacity", caps)):
        if domains:
            merged: dict[str, Any] = {d: {} for d in domains}
            merged.update(device[field_name])
            out[field_name] = merged
    return out


def _runtime_message(err: Exception) -> str:
    text = str(err)
    marker = "Python function call failed: CelError: "
    if marker in text:
        return text.split(marker, 1)[1].split(". Check function arguments", 1)[0]
    if isinstance(err, ZeroDivisionError):
        return "division by zero"
    return text


def _cel_type_name(value: object) -> str:
    if isinstance(value, Mapping):
        if QUANTITY_TAG in value:
            return "kubernetes.Quantity"
        if SEMVER_TAG in value:
            return "kubernetes.Semver"
        return "map"
    return {
        int: "int",
        float: "double",
        str: "string",
        bytes: "bytes",
        list: "list",
        type(None): "null_type",
    }.get(type(value), type(value).__name__)


def compile_selector(expression: str) -> CompiledSelector:
    """Compile ``expression`` in the DRA environment; the result carries any compile error."""
    try:
        program = cel.compile(expression)
    except Exception as err:  # a syntax error: ValueError with the parser's report
        report = str(err)
        if report.startswith("Failed to parse expression") and ": ERROR:" in report:
            report = "ERROR:" + report.split(": ERROR:", 1)[1]  # cel-go's form of the report
        return CompiledSelector(expression, error=f"compilation failed: {report}")
    for name in program.variables():
        if name != "device" and not _is_comprehension_variable(expression, name):
            return CompiledSelector(expression, error=f"compilation failed: undeclared reference to '{name}'")
    for name in program.functions():
        if not _IDENTIFIER_RE.fullmatch(name) or name in _DECLARED:  # operators: _==_, !_, @in
            continue
        return CompiledSelector(expression, error=f"compilation failed: undeclared reference to '{name}'")
    for m in _LITERAL_CALL_RE.finditer(expression):
        literal = m.group(2) if m.group(2) is not None else m.group(3)
        check = _is_quantity(literal) if m.group(1) == "quantity" else _parse_semver(literal) is not None
        if not check:
            what = (
                QUANTITY_FORMAT_MESSAGE
                if m.group(1) == "quantity"
                else f"could not parse {literal!r} as semver"
            )
            return CompiledSelector(expression, error=f"compilation failed: {what}")
    attrs: set[str] = set()
    caps: set[str] = set()
    for m in _DOMAIN_RE.finditer(expression):
        domain = m.group(2) if m.group(2) is not None else m.group(3)
        (attrs if m.group(1) == "attributes" else caps).add(domain)
    return CompiledSelector(expression, program, "", tuple(sorted(attrs)), tuple(sorted(caps)))


def _is_comprehension_variable(expression: str, name: str) -> bool:
    """Whether ``name`` is bound by a macro (``all(x, ...)``), which the program lists as a variable."""
    return (
        re.search(rf"\b(all|exists|exists_one|map|filter)\s*\(\s*{re.escape(name)}\s*,", expression)
        is not None
    )


class CelCache:
    """Compiled expressions by source text, each compiled once (``cel.Cache``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compiled: dict[str, CompiledSelector] = {}

    def get_or_compile(self, expression: str) -> CompiledSelector:
        """The compiled form of ``expression`` (compiled on first use)."""
        with self._lock:
            compiled = self._compiled.get(expression)
        if compiled is None:
            compiled = compile_selector(expression)
            with self._lock:
                self._compiled.setdefault(expression, compiled)
        return compiled

    def __len__(self) -> int:
        with self._lock:
            return len(self._compiled)


COMPILE_ERROR = "\x00compile:"
"""Marks a compile error among :func:`device_verdict`'s answers."""


def device_verdict(cache: CelCache, expression: str, driver: str, device: Device) -> bool | str:
    """What ``expression`` says about ``device`` of ``driver``: a bool, a runtime error's message
    (both remembered on the device, which never changes), or COMPILE_ERROR and the compile error."""
    verdict = device.selector_results.get(expression)
    if verdict is not None:
        return verdict
    compiled = cache.get_or_compile(expression)
    if compiled.error:
        return COMPILE_ERROR + compiled.error  # not remembered: it says nothing about the device
    try:
        if device.cel_input is None:
            device.cel_input = device_input(driver, device)
        verdict = compiled.matches(device.cel_input)
    except CelError as err:
        verdict = str(err)
    device.selector_results[expression] = verdict
    return verdict
