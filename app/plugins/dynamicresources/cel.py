"""Device selectors: CEL in the Kubernetes DRA environment (``k8s.io/dynamic-resource-allocation/cel``).

An expression sees one variable, ``device``, with ``driver``, ``allowMultipleAllocations``,
``attributes[domain][id]`` and ``capacity[domain][id]`` (ids without a domain belong to the
device's driver), plus Kubernetes' ``quantity`` and ``semver`` libraries. Expressions are
evaluated with the ``common-expression-language`` package (a Rust CEL interpreter; see
docs/dra.md for why this one). It has no Kubernetes types, so quantities and versions travel
through CEL as one-key maps whose value is canonical (equal quantities compare equal with ``==``),
and the library functions are Python functions dispatched on that key.

Each expression is compiled once (:class:`CelCache`): parsed by the interpreter (its syntax
errors), then parsed again into berth's own tree (:mod:`celast`) and type-checked as cel-go does
(:mod:`celcheck`), so a type error is a compile error with cel-go's text. Expressions that loop
are evaluated with cel-go's cost tracking as well (:mod:`celcost`), so one over kube's runtime
cost limit fails as in kube-scheduler. A compile error or a runtime error never escapes as a
traceback: it comes back as the message kube-scheduler wraps into its reasons
("CEL compile error: ...", "CEL runtime error: ...").
"""

from __future__ import annotations

import re
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from app.api.quantity import QUANTITY_FORMAT_MESSAGE, parse_quantity_string
from app.api.resource import Device, DeviceAttribute
from app.plugins.dynamicresources.celast import CelSyntaxError, Node, parse
from app.plugins.dynamicresources.celcheck import ANY, BOOL, DYN, check
from app.plugins.dynamicresources.celcost import (
    CostLimitExceeded,
    CostWalk,
    NotIterable,
    Unsupported,
    needs_cost_tracking,
)

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


def _semver_error(text: str) -> str:
    """blang/semver's ``Parse`` error for a string the grammar refuses (the common ones)."""
    if not text:
        return "Version string empty"
    parts = text.split(".", 2)
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    for label, part in (("major", parts[0]), ("minor", parts[1])):
        if not part.isdigit():
            return f"Invalid character(s) found in {label} number {_go_quote(part)}"
        if len(part) > 1 and part.startswith("0"):
            return f"{label.capitalize()} number must not contain leading zeroes {_go_quote(part)}"
    patch = re.split(r"[+-]", parts[2], maxsplit=1)[0]
    if not patch.isdigit():
        return f"Invalid character(s) found in patch number {_go_quote(patch)}"
    if len(patch) > 1 and patch.startswith("0"):
        return f"Patch number must not contain leading zeroes {_go_quote(patch)}"
    return f"Invalid version {_go_quote(text)}"


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _normalize_semver(text: str) -> str:
    """The semver library's ``normalizeAndParse``: no ``v`` prefix, no leading zeros, missing parts 0."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            parts[i] = part if part[:1].isdigit() else "0" + part
    if len(parts) < 3 and any(c in parts[-1] for c in "+-"):
        raise CelError("short version cannot contain PreRelease/Build meta data")
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    if normalize:
        text = _normalize_semver(text)
    if _parse_semver(text) is None:
        raise CelError(_semver_error(text))
    return {SEMVER_TAG: text}


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        return _parse_semver(_normalize_semver(text) if normalize else text) is not None
    except CelError:
        return False


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
    "isSemver": _is_semver,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    # Kubernetes' string library (ext.Strings version 2), which the interpreter lacks
    "split": lambda text, sep, limit=-1: _split_string(text, sep, limit),
    "lowerAscii": lambda text: "".join(c.lower() if c.isascii() else c for c in text),
    "upperAscii": lambda text: "".join(c.upper() if c.isascii() else c for c in text),
    "trim": lambda text: text.strip(),
    "replace": lambda text, old, new, limit=-1: text.replace(old, new, limit),
    "substring": lambda text, start, end=None: _substring(text, start, end),
    "charAt": lambda text, index: _substring(text, index, index + 1) if index != len(text) else "",
    "indexOf": lambda target, value, start=0: _index_of(target, value, start, last=False),
    "lastIndexOf": lambda target, value, start=None: _index_of(target, value, start, last=True),
    "join": lambda items, sep="": sep.join(items),
    # Kubernetes' regex library (Python's re standing in for RE2 on the patterns selectors use)
    "find": lambda text, pattern: m.group(0) if (m := re.search(pattern, text)) else "",
    "findAll": lambda text, pattern, limit=-1: [m.group(0) for m in re.finditer(pattern, text)][
        : None if limit < 0 else limit
    ],
    # DRA's includes (declared in the stored-expressions environment whatever the gates say): a
    # list includes an equal element, a scalar includes what equals it.
    "includes": lambda target, value: _includes(target, value),
}

MAX_ATTRIBUTE_VALUES = 48
"""``ResourceSliceMaxAttributeValuesPerDevice``: ``includes`` refuses to look further into a list."""


def _includes(target: Any, value: Any) -> bool:
    """``includesFunc``: a list includes an equal element (within its first 48), a scalar what equals it."""
    if not isinstance(target, list):
        return _cel_equal(target, value)
    for index, item in enumerate(target):
        if index >= MAX_ATTRIBUTE_VALUES:
            raise CelError(
                f"'includes' function cannot be applied to lists longer than {MAX_ATTRIBUTE_VALUES} values"
            )
        if _cel_equal(item, value):
            return True
    return False


def _split_string(text: str, sep: str, limit: int) -> list[str]:
    if limit == 0:
        return []
    return text.split(sep, limit - 1) if limit > 0 else text.split(sep)


def _substring(text: str, start: int, end: int | None) -> str:
    stop = len(text) if end is None else end
    if not 0 <= start <= stop <= len(text):
        raise CelError(f"index out of range: {start if start < 0 or start > len(text) else stop}")
    return text[start:stop]


def _index_of(target: Any, value: Any, start: int | None, last: bool) -> int:
    if isinstance(target, list):
        found = [i for i, item in enumerate(target) if _cel_equal(item, value)]
        return (found[-1] if last else found[0]) if found else -1
    if last:
        return target.rfind(value, 0, None if start is None else start + len(value))
    return target.find(value, start or 0)


def _cel_equal(a: Any, b: Any) -> bool:
    """CEL equality of two attribute values: a bool never equals a number."""
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)


# device.attributes["domain"] / device.capacity["domain"] with a literal domain: kube's maps answer
# an unknown domain with an empty map (so has(...) on it is false), which the interpreter cannot
# do, so the literal domains an expression names are added as empty maps before evaluating.
_DOMAIN_RE = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")


# --- devices as CEL input ----------------------------------------------------------------------


_LIST_KINDS = frozenset({"ints", "bools", "strings", "versions"})


def _version(name: str, text: str) -> dict[str, str]:
    if _parse_semver(text) is None:
        raise CelError(f"attribute {name}: parse semantic version: {_semver_error(text)}")
    return {SEMVER_TAG: text}


def _attribute_value(name: str, attr: DeviceAttribute, list_type_attributes: bool) -> Any:
    """``getAttributeValue``: lists only with DRAListTypeAttributes, else "unsupported attribute value"."""
    if attr.kind == "version":
        assert isinstance(attr.value, str)
        return _version(name, attr.value)
    if attr.kind in _LIST_KINDS and list_type_attributes:
        assert isinstance(attr.value, tuple)
        if attr.kind == "versions":
            return [_version(name, str(v)) for v in attr.value]
        return list(attr.value)
    if attr.kind in ("", *_LIST_KINDS):
        raise CelError(f"attribute {name}: unsupported attribute value")
    return attr.value


def _split(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: ``domain/id``, or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(driver: str, device: Device, list_type_attributes: bool = False) -> dict[str, Any]:
    """The ``device`` variable for one device (``DeviceMatches``); CelError for a bad attribute."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(name, attr, list_type_attributes)
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
    """One compiled expression, or its compile error (``CompilationResult``).

    ``cost_tree`` is the syntax tree of an expression that loops, evaluated once more with
    cel-go's cost tracking (:mod:`celcost`); None for the others.
    """

    expression: str
    program: Any = None
    error: str = ""
    attribute_domains: tuple[str, ...] = ()
    capacity_domains: tuple[str, ...] = ()
    cost_tree: Node | None = None

    def matches(self, device: Mapping[str, Any]) -> bool:
        """Evaluate against a :func:`device_input`; CelError with kube's runtime message on failure."""
        if self.attribute_domains or self.capacity_domains:
            device = _with_empty_domains(device, self.attribute_domains, self.capacity_domains)
        if self.cost_tree is not None:
            try:
                walked = CostWalk(_FUNCTIONS).run(self.cost_tree, device)
            except (CostLimitExceeded, NotIterable) as err:
                raise CelError(str(err)) from None
            except Unsupported:
                pass  # the interpreter evaluates what the walk could not, and reports its error
            else:
                if isinstance(walked, bool):
                    return walked
        context = _interpreter().Context(variables={"device": device}, functions=_FUNCTIONS)
        try:
            result = self.program.execute(context)
        except KeyError as err:
            raise CelError(f"no such key: {err.args[0] if err.args else ''}") from None
        except Exception as err:  # the interpreter's errors carry no finer type worth keeping
            raise CelError(_runtime_message(err)) from None
        if not isinstance(result, bool):
            name = _cel_type_name(result)
            raise CelError(
                f"CEL result of type {name} could not be converted to bool: "
                f"unsupported type conversion from '{name}' to bool"
            )
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


#: What stands in for ``cel.cli`` in ``sys.modules``: see :func:`_interpreter`.
CEL_CLI_NOT_LOADED = "berth does not load cel's command line (typer, prompt_toolkit, rich)"


def _interpreter() -> Any:
    """The ``cel`` interpreter module, imported on first use (a cluster may never see a DRA selector).

    The package's ``__init__`` also imports its command line, ``cel.cli``, and with it typer,
    prompt_toolkit and rich: about 400 modules, 0.4 s of CPU (more without cached bytecode) and
    27 MiB of resident memory that ``berth run`` paid on its first DRA pod, for an interactive
    shell it never starts. An empty module registered as ``cel.cli`` first lets the package import
    without it; the interpreter (the compiled ``cel.cel``) and ``cel.stdlib`` do not use it."""
    cel = sys.modules.get("cel")
    if cel is None:
        sys.modules.setdefault("cel.cli", types.ModuleType("cel.cli", CEL_CLI_NOT_LOADED))
        import cel
    return cel


def compile_selector(expression: str, list_type_attributes: bool = False) -> CompiledSelector:
    """Compile ``expression`` in the DRA environment; the result carries any compile error.

    ``list_type_attributes`` is DRAListTypeAttributes: attributes are then of type dyn (so
    macros may range over them) rather than the unknown type, and a dyn result is accepted.
    """
    try:
        program = _interpreter().compile(expression)
    except Exception as err:  # a syntax error: ValueError with the parser's report
        report = str(err)
        if report.startswith("Failed to parse expression") and ": ERROR:" in report:
            # cel-go's form of the report: the same ANTLR messages, the snippet lines indented by one
            report = ("ERROR:" + report.split(": ERROR:", 1)[1]).replace("\n| ", "\n | ")
        return CompiledSelector(expression, error=f"compilation failed: {report}")
    try:
        tree: Node | None = parse(expression)
    except CelSyntaxError:
        tree = None  # a construct berth's tree lacks (two-variable macros): the interpreter decides
    if tree is not None:
        output, issues = check(expression, tree, list_type_attributes)
        if issues:
            return CompiledSelector(expression, error=f"compilation failed: {issues}")
        if output not in (BOOL, ANY) and not (list_type_attributes and output == DYN):
            return CompiledSelector(
                expression, error=f"must evaluate to bool or the unknown type, not {output}"
            )
    attrs: set[str] = set()
    caps: set[str] = set()
    for m in _DOMAIN_RE.finditer(expression):
        domain = m.group(2) if m.group(2) is not None else m.group(3)
        (attrs if m.group(1) == "attributes" else caps).add(domain)
    cost_tree = tree if tree is not None and needs_cost_tracking(tree) else None
    return CompiledSelector(expression, program, "", tuple(sorted(attrs)), tuple(sorted(caps)), cost_tree)


class CelCache:
    """Compiled expressions by source text, each compiled once (``cel.Cache``)."""

    def __init__(self, list_type_attributes: bool = False) -> None:
        self._lock = threading.Lock()
        self._compiled: dict[str, CompiledSelector] = {}
        self.list_type_attributes = list_type_attributes

    def get_or_compile(self, expression: str) -> CompiledSelector:
        """The compiled form of ``expression`` (compiled on first use)."""
        with self._lock:
            compiled = self._compiled.get(expression)
        if compiled is None:
            compiled = compile_selector(expression, self.list_type_attributes)
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
            device.cel_input = device_input(driver, device, cache.list_type_attributes)
        verdict = compiled.matches(device.cel_input)
    except CelError as err:
        verdict = str(err)
    device.selector_results[expression] = verdict
    return verdict
