"""cel-go's runtime cost of a device selector, and its limit (``cel.CostLimit``).

kube-scheduler evaluates each selector with a cost limit of ``CELSelectorExpressionMaxCost``
(1,000,000 units) and cel-go's ``CostTracker`` with Kubernetes' ``library.CostEstimator``: an
evaluation that goes over fails with ``operation cancelled: actual cost limit exceeded``.

The Rust interpreter berth evaluates with counts no cost, so this module walks the syntax tree
of :mod:`celast` once more, evaluating as cel-go does and adding each step's cost as
``interpreter/runtimecost.go`` does: one unit per variable, field or index access, nothing for
constants, ``&&``, ``||`` and ``?:`` (whose skipped branches cost nothing), the list and map
creation costs, each call's cost (string and list sizes for the traversing functions, one unit
for the rest), and the fold cel-go expands each macro into, iteration by iteration.

Only expressions with a comprehension are walked (:func:`needs_cost_tracking`): without a loop
an expression's cost is bounded by its own size times the longest string a device holds, far
below the limit for any expression the API server stores (its length is capped at 10Ki).
Expressions with ``cel.bind``, which the interpreter does not know, are walked too. A walk that
completes gives the verdict; one that meets what it does not evaluate (or a runtime error)
leaves the verdict, and the error text, to the interpreter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

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
)

COST_LIMIT = 1_000_000
"""``resourceapi.CELSelectorExpressionMaxCost``."""

COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"

_STRING_FACTOR = 0.1  # common.StringTraversalCostFactor
_REGEX_FACTOR = 0.25  # common.RegexStringLengthCostFactor
_LIST_CREATE = 10  # common.ListCreateBaseCost
_MAP_CREATE = 30  # common.MapCreateBaseCost


class CostLimitExceeded(Exception):
    """The evaluation went over the limit."""


class NotIterable(Exception):
    """A macro over a value that is no list or map (cel-go's "expected iterable type" error)."""


class Unsupported(Exception):
    """The walk met something it does not evaluate; the Rust interpreter's verdict stands."""


def needs_cost_tracking(tree: Node) -> bool:
    """Whether ``tree`` loops (the only way to a large cost) or binds (which the interpreter lacks)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Comprehension | Bind):
            return True
        stack.extend(_children(node))
    return False


def _children(node: Node) -> list[Node]:
    if isinstance(node, Select | Has):
        return [node.operand]
    if isinstance(node, Call):
        return ([node.target] if node.target is not None else []) + node.args
    if isinstance(node, ListLiteral):
        return list(node.elements)
    if isinstance(node, MapLiteral):
        return [n for entry in node.entries for n in entry]
    if isinstance(node, Bind):
        return [node.value, node.body]
    if isinstance(node, Comprehension):
        return [n for n in (node.range, node.body, node.filter) if n is not None]
    return []


def _size(value: Any) -> int:
    """``actualSize``: the length of strings, bytes, lists and maps, 1 for anything else."""
    if isinstance(value, str | bytes | list | tuple):
        return len(value)
    if isinstance(value, Mapping) and not _is_tagged(value):
        return len(value)
    return 1


def _is_tagged(value: Mapping[str, Any]) -> bool:
    return len(value) == 1 and next(iter(value)).startswith("__k8s_")


def _strcost(size: float) -> int:
    return math.ceil(size * _STRING_FACTOR)


def _regex_cost(text: Any, pattern: Any) -> int:
    return math.ceil((1 + _size(text)) * _STRING_FACTOR) * math.ceil(_size(pattern) * _REGEX_FACTOR)


def call_cost(function: str, args: list[Any], result: Any) -> int:
    """The cost of one call (``CostTracker.costCall`` after ``library.CostEstimator.CallCost``)."""
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        return _strcost(_size(args[0])) if isinstance(args[0], str) else _size(args[0])
    if function in (
        "lowerAscii",
        "upperAscii",
        "substring",
        "trim",
        "quantity",
        "isQuantity",
        "semver",
        "isSemver",
    ):
        return _strcost(_size(args[0]))
    if function in ("replace", "split"):
        return math.ceil(_size(args[0]) * 2 * _STRING_FACTOR)
    if function == "join":
        return math.ceil(_size(result) * 2 * _STRING_FACTOR)
    if function in ("find", "findAll", "matches"):
        return _regex_cost(args[0], args[1])
    if function in ("startsWith", "endsWith"):
        return _strcost(_size(args[0]))
    if function == "@in":
        return _size(args[1]) if isinstance(args[1], list) else 1
    if function in ("_==_", "_!=_"):
        if isinstance(args[0], Mapping) and _is_tagged(args[0]):
            return 1
        return _strcost(min(_size(args[0]), _size(args[1])))
    if function in ("_<_", "_<=_", "_>_", "_>=_") and isinstance(args[0], str | bytes):
        return _strcost(min(_size(args[0]), _size(args[1])))
    if function == "_+_" and isinstance(args[0], str | bytes):
        return _strcost(_size(args[0]) + _size(args[1]))
    if function == "contains":
        return _strcost(_size(args[0])) * _strcost(_size(args[1]))
    return 1


_OPERATORS: dict[str, Callable[..., Any]] = {
    "_==_": lambda a, b: _equal(a, b),
    "_!=_": lambda a, b: not _equal(a, b),
    "_<_": lambda a, b: _ordered(a, b) < 0,
    "_<=_": lambda a, b: _ordered(a, b) <= 0,
    "_>_": lambda a, b: _ordered(a, b) > 0,
    "_>=_": lambda a, b: _ordered(a, b) >= 0,
    "_+_": lambda a, b: _arith(a, b, lambda x, y: x + y),
    "_-_": lambda a, b: _arith(a, b, lambda x, y: x - y),
    "_*_": lambda a, b: _arith(a, b, lambda x, y: x * y),
    "_/_": lambda a, b: _arith(a, b, lambda x, y: x / y if isinstance(x, float) else _int_div(x, y)),
    "_%_": lambda a, b: _arith(
        a, b, lambda x, y: math.fmod(x, y) if isinstance(x, float) else _int_mod(x, y)
    ),
    "-_": lambda a: -_number(a),
    "!_": lambda a: not _boolean(a),
    "@in": lambda a, b: any(_equal(a, item) for item in b) if isinstance(b, list) else a in b,
    "size": lambda a: _size(a),
    "contains": lambda a, b: b in a,
    "startsWith": lambda a, b: a.startswith(b),
    "endsWith": lambda a, b: a.endswith(b),
    "matches": lambda a, b: re.search(b, a) is not None,
    "find": lambda a, b: m.group(0) if (m := re.search(b, a)) else "",
    "findAll": lambda a, b, n=-1: [m.group(0) for m in re.finditer(b, a)][: None if n < 0 else n],
    "split": lambda a, b, n=-1: a.split(b) if n < 0 else a.split(b, n - 1) if n else [],
    "lowerAscii": lambda a: a.lower(),
    "upperAscii": lambda a: a.upper(),
    "trim": lambda a: a.strip(),
    "int": lambda a: int(a),
    "string": lambda a: a if isinstance(a, str) else str(a).lower() if isinstance(a, bool) else str(a),
    "double": lambda a: float(a),
    "dyn": lambda a: a,
}


def _int_div(x: int, y: int) -> int:
    """Go's integer division: truncated toward zero."""
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


def _int_mod(x: int, y: int) -> int:
    """Go's remainder: the sign of the dividend."""
    return x - _int_div(x, y) * y


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unsupported("not a number")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Unsupported("not a bool")
    return value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)


def _ordered(a: Any, b: Any) -> int:
    if isinstance(a, bool) != isinstance(b, bool) or (
        type(a) is not type(b) and not (isinstance(a, int | float) and isinstance(b, int | float))
    ):
        raise Unsupported("no such overload")
    return 0 if a == b else (-1 if a < b else 1)


def _arith(a: Any, b: Any, op: Callable[[Any, Any], Any]) -> Any:
    if isinstance(a, str | list) and type(a) is type(b):
        return op(a, b)
    result = op(_number(a), _number(b))
    if isinstance(result, int) and not -(2**63) <= result < 2**63:
        raise Unsupported("overflow")
    return result


def _go_type_name(value: Any) -> str:
    """cel-go's Go type of a value, as its "expected iterable type" error names it."""
    if isinstance(value, Mapping):
        return "cel.Semver" if "__k8s_semver__" in value else "cel.Quantity"
    names = {
        bool: "types.Bool",
        int: "types.Int",
        float: "types.Double",
        str: "types.String",
        bytes: "types.Bytes",
    }
    return names.get(type(value), "types.Null")


class CostWalk:
    """One evaluation with cost tracking (a fresh ``CostTracker``)."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]], limit: int = COST_LIMIT) -> None:
        self.functions = functions
        self.limit = limit
        self.cost = 0
        self.scopes: list[dict[str, Any]] = []

    def add(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)

    def run(self, tree: Node, device: Mapping[str, Any]) -> Any:
        """The value of ``tree`` for ``device``; CostLimitExceeded over the limit, Unsupported if unsure."""
        self.scopes = [{"device": device}]
        try:
            return self.eval(tree)
        except (CostLimitExceeded, Unsupported, NotIterable):
            raise
        except Exception as err:  # an evaluation error: the Rust interpreter reports it in its words
            raise Unsupported(str(err)) from None

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise Unsupported(f"undeclared {name}")

    def eval(self, node: Node) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Ident):
            self.add(1)
            return self.lookup(node.name)
        if isinstance(node, Select | Has):
            operand = self.eval(node.operand)
            self.add(1)
            if not isinstance(operand, Mapping):
                raise Unsupported("select on a non-map")
            if isinstance(node, Has):
                return node.name in operand
            if node.name not in operand:
                raise Unsupported("no such key")
            return operand[node.name]
        # A literal of constants is one constant to cel-go's planner: it costs nothing.
        if isinstance(node, ListLiteral):
            items = [self.eval(e) for e in node.elements]
            if not all(isinstance(e, Literal) for e in node.elements):
                self.add(_LIST_CREATE)
            return items
        if isinstance(node, MapLiteral):
            entries = {self.eval(k): self.eval(v) for k, v in node.entries}
            if not all(isinstance(k, Literal) and isinstance(v, Literal) for k, v in node.entries):
                self.add(_MAP_CREATE)
            return entries
        if isinstance(node, Bind):
            self.scopes.append({node.variable: self.eval(node.value)})
            try:
                return self.eval(node.body)
            finally:
                self.scopes.pop()
        if isinstance(node, Comprehension):
            return self.fold(node)
        assert isinstance(node, Call)
        return self.call(node)

    def call(self, node: Call) -> Any:
        name = node.function
        if name in ("_&&_", "_||_"):
            left = self.eval(node.args[0])
            if isinstance(left, bool) and left == (name == "_||_"):
                return left
            right = self.eval(node.args[1])
            if isinstance(right, bool) and right == (name == "_||_"):
                return right
            return _boolean(left) and _boolean(right) if name == "_&&_" else _boolean(left) or _boolean(right)
        if name == "_?_:_":
            return self.eval(node.args[1] if _boolean(self.eval(node.args[0])) else node.args[2])
        if name == "_[_]":
            operand = self.eval(node.args[0])
            index = self.eval(node.args[1])
            self.add(1)
            try:
                return operand[index]
            except (KeyError, IndexError, TypeError):
                raise Unsupported("no such key") from None
        args = [self.eval(a) for a in ([node.target] if node.target is not None else []) + node.args]
        function = _OPERATORS.get(name) or self.functions.get(name)
        if function is None:
            raise Unsupported(f"no evaluation of {name}")
        result = function(*args)
        self.add(call_cost(name, args, result))
        return result

    def fold(self, node: Comprehension) -> Any:
        """The fold cel-go's parser expands a macro into, with its per-iteration costs."""
        iter_range = self.eval(node.range)
        if isinstance(iter_range, Mapping) and not _is_tagged(iter_range):
            items = list(iter_range)
        elif isinstance(iter_range, list):
            items = iter_range
        else:
            raise NotIterable(f"got '{_go_type_name(iter_range)}', expected iterable type")
        accu: Any = {"all": True, "exists": False, "exists_one": 0}.get(node.macro, [])
        for item in items:
            self.scopes.append({node.variable: item})
            try:
                if node.macro in ("all", "exists"):
                    # loop condition @not_strictly_false(accu) (all) or (!accu) (exists); stop when false
                    self.add(2 if node.macro == "all" else 3)
                    if accu != (node.macro == "all"):
                        break
                    self.add(1)  # the step reads accu, then the predicate
                    accu = _boolean(self.eval(node.body))
                elif node.macro == "exists_one":
                    # step: body ? accu + 1 : accu (the bare accu of the other branch costs nothing)
                    if _boolean(self.eval(node.body)):
                        accu += 1
                        self.add(2)
                else:
                    predicate = node.filter if node.macro == "map" else node.body
                    keep = predicate is None or _boolean(self.eval(predicate))
                    if keep:
                        value = (
                            self.eval(node.body) if node.macro == "map" else self.eval_variable(node.variable)
                        )
                        self.add(1 + _LIST_CREATE + 1)  # accu + [value]; the bare accu otherwise is free
                        accu = [*accu, value]
            finally:
                self.scopes.pop()
        if node.macro == "exists_one":
            self.add(2)  # accu == 1
            return accu == 1
        self.add(1)  # the result reads accu
        return accu

    def eval_variable(self, name: str) -> Any:
        self.add(1)
        return self.lookup(name)
