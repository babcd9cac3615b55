"""Device selector CEL as kube-scheduler v1.36.3 compiles and evaluates it.

The table ports ``k8s.io/dynamic-resource-allocation@v0.36.3/cel/compile_test.go`` (the cases of
the scheduler's environment: StoredExpressions, DRAListTypeAttributes off) and adds type errors,
with kube's exact texts: each expectation was produced by that package itself (a Go program
calling ``cel.NewCache(...).GetOrCompile`` and ``DeviceMatches``, as the scheduler does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

from app.api.resource import Device, DeviceAttribute, DeviceCapacity
from app.plugins.dynamicresources.cel import (
    CEL_CLI_NOT_LOADED,
    CelCache,
    CelError,
    compile_selector,
    device_input,
)
from app.plugins.dynamicresources.celcost import COST_LIMIT, CostLimitExceeded, CostWalk, call_cost
from tests.fresh_interpreter import run_python

DRIVER = "dra.example.com"


@dataclass
class Case:
    expression: str
    attributes: dict[str, tuple[str, Any]] = field(default_factory=dict)
    capacity: dict[str, Fraction] = field(default_factory=dict)
    driver: str = DRIVER
    allow_multiple_allocations: bool = False
    compile_error: str = ""
    match_error: str = ""
    match: bool = False
    list_types: bool = False  # DRAListTypeAttributes


def _located(line: int, column: int, message: str, snippet: str) -> str:
    return f"compilation failed: ERROR: <input>:{line}:{column}: {message}\n | {snippet}\n | {'.' * (column - 1)}^"


def _expensive_attributes() -> dict[str, tuple[str, Any]]:
    # As the Go case: the maximum number of attributes with the longest names.
    return {f"dra.example.com/{'x' * (32 - len(f'-{i}'))}-{i}": ("string", "abc") for i in range(32)}


NESTED_ALL = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    ".all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, "
    "int('1'.find('[0-9]*')) < 100)))))))"
)

CASES: dict[str, Case] = {
    # --- compile_test.go ---
    "true": Case("true", match=True),
    "false": Case("false"),
    "syntax-error": Case(
        "?!",
        compile_error="compilation failed: ERROR: <input>:1:1: Syntax error: extraneous input '?' expecting "
        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        "IDENTIFIER}\n | ?!\n | ^\nERROR: <input>:1:3: Syntax error: extraneous input '<EOF>' expecting "
        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        "IDENTIFIER}\n | ?!\n | ..^",
    ),
    "type-error": Case("1", compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Case(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "runtime-error-lookup-map": Case(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "domain-check-negative": Case('"no-such-domain" in device.attributes'),
    "domain-check-positive": Case(
        '"dra.example.com" in device.attributes',
        attributes={"dra.example.com/something": ("bool", True)},
        match=True,
    ),
    "empty-driver-name": Case('device.driver == ""', driver="", match=True),
    "real-driver-name": Case('device.driver == "dra.example.com"', match=True),
    "driver-name-qualifier": Case(
        'device.attributes["dra.example.com"].name', attributes={"name": ("bool", True)}, match=True
    ),
    "driver-name-qualifier-map-lookup": Case(
        'device.attributes["dra.example.com"]["name"]', attributes={"name": ("bool", True)}, match=True
    ),
    "bind": Case(
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        attributes={"name": ("bool", True)},
        match=True,
    ),
    "qualified-attribute-name": Case(
        'device.attributes["other.example.com"].name',
        attributes={"other.example.com/name": ("bool", True)},
        match=True,
    ),
    "int": Case('device.attributes["dra.example.com"].name > 0', attributes={"name": ("int", 1)}, match=True),
    "string": Case(
        'device.attributes["dra.example.com"].name == "fish"',
        attributes={"name": ("string", "fish")},
        match=True,
    ),
    "attribute-access-causes-match-error": Case(
        'device.attributes["dra.example.com"].names',
        attributes={"names": ("", ["fish", "bird"])},
        match_error="attribute names: unsupported attribute value",
    ),
    # includes is declared in the StoredExpressions environment the scheduler uses, gate or not.
    "includes-function-on-string-scalar-positive": Case(
        'device.attributes["dra.example.com"].name.includes("fish")',
        attributes={"name": ("string", "fish")},
        match=True,
    ),
    "includes-function-on-int-scalar-negative": Case(
        'device.attributes["dra.example.com"].name.includes(1)', attributes={"name": ("int", 2)}
    ),
    "includes-function-on-semver-scalar-positive": Case(
        'device.attributes["dra.example.com"].name.includes(semver("1.0.0"))',
        attributes={"name": ("version", "1.0.0")},
        match=True,
    ),
    "version": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        attributes={"name": ("version", "1.0.0")},
        match=True,
    ),
    "version_v": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        attributes={"name": ("version", "1.0.0")},
        match=True,
    ),
    "macro-exists-on-version": Case(
        'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        attributes={"name": ("version", "1.0.0")},
        compile_error=_located(
            1,
            37,
            "expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)",
            'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        ),
    ),
    "quantity": Case(
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        capacity={"name": Fraction(1 << 20)},
        match=True,
    ),
    "check-positive": Case(
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        capacity={"name": Fraction(1 << 20)},
        match=True,
    ),
    "check-negative": Case(
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        match=True,
    ),
    "all": Case(
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        attributes={
            "bool": ("bool", True),
            "int": ("int", 1),
            "string": ("string", "fish"),
            "version": ("version", "1.0.0"),
        },
        capacity={"quantity": Fraction(1 << 20)},
        match=True,
    ),
    "many": Case(
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        attributes={"a": ("bool", True), "b": ("bool", True), "c": ("bool", True)},
        match=True,
    ),
    "check_attribute_domains": Case(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        attributes={"services": ("string", "some_example_value")},
        match=True,
    ),
    "check_attribute_ids": Case(
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        attributes={"services": ("string", "some_example_value")},
        match=True,
    ),
    "split_attribute": Case(
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        attributes={"services": ("string", "some_example_value")},
        match=True,
    ),
    "regexp_attribute": Case(
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        attributes={"services": ("string", "asymetric")},
        match=True,
    ),
    "check_capacity_domains": Case(
        'device.capacity.exists_one(x, x == "dra.example.com")',
        capacity={"memory": Fraction(1 << 20)},
        match=True,
    ),
    "check_capacity_ids": Case(
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        capacity={"memory": Fraction(1 << 20)},
        match=True,
    ),
    "expensive": Case(
        NESTED_ALL,
        attributes=_expensive_attributes(),
        match_error="operation cancelled: actual cost limit exceeded",
    ),
    "allow_multiple_allocations": Case(
        "device.allowMultipleAllocations == true", allow_multiple_allocations=True, match=True
    ),
    "allow_multiple_allocations_default": Case("device.allowMultipleAllocations == false", match=True),
    # --- type errors cel-go's checker reports at compile time ---
    "string-plus-int": Case(
        "device.driver + 1",
        compile_error=_located(
            1, 15, "found no matching overload for '_+_' applied to '(string, int)'", "device.driver + 1"
        ),
    ),
    "undeclared-variable": Case(
        "foo == 1",
        compile_error=_located(1, 1, "undeclared reference to 'foo' (in container '')", "foo == 1"),
    ),
    "undeclared-function": Case(
        "device.driver.foo(1)",
        compile_error=_located(
            1, 18, "undeclared reference to 'foo' (in container '')", "device.driver.foo(1)"
        ),
    ),
    "undefined-field": Case(
        "device.nope", compile_error=_located(1, 7, "undefined field 'nope'", "device.nope")
    ),
    "field-of-string": Case(
        "device.driver.x",
        compile_error=_located(1, 14, "type 'string' does not support field selection", "device.driver.x"),
    ),
    "quantity-plus-int": Case(
        "device.capacity['d'].m + 1 > 0",
        compile_error=_located(
            1,
            24,
            "found no matching overload for '_+_' applied to '(kubernetes.Quantity, int)'",
            "device.capacity['d'].m + 1 > 0",
        ),
    ),
    "unknown-attribute-type-is-accepted": Case(
        "device.attributes['dra.example.com'].m + 1 > 0", attributes={"m": ("int", 3)}, match=True
    ),
    "member-overload-on-the-unknown-type": Case(
        "device.attributes['d'].x.isGreaterThan(1)",
        compile_error=_located(
            1,
            39,
            "found no matching overload for 'isGreaterThan' applied to 'any.(int)'",
            "device.attributes['d'].x.isGreaterThan(1)",
        ),
    ),
    "quantity-against-semver": Case(
        "quantity('1').isGreaterThan(semver('1.0.0'))",
        compile_error=_located(
            1,
            28,
            "found no matching overload for 'isGreaterThan' applied to 'kubernetes.Quantity.(kubernetes.Semver)'",
            "quantity('1').isGreaterThan(semver('1.0.0'))",
        ),
    ),
    "bool-plus-int": Case(
        "device.allowMultipleAllocations + 1 == 2",
        compile_error=_located(
            1,
            33,
            "found no matching overload for '_+_' applied to '(bool, int)'",
            "device.allowMultipleAllocations + 1 == 2",
        ),
    ),
    "two-errors-both-reported": Case(
        "device.driver == 1 || device.driver + 1 == 'a'",
        compile_error=_located(
            1,
            15,
            "found no matching overload for '_==_' applied to '(string, int)'",
            "device.driver == 1 || device.driver + 1 == 'a'",
        )
        + "\n"
        + _located(
            1,
            37,
            "found no matching overload for '_+_' applied to '(string, int)'",
            "device.driver == 1 || device.driver + 1 == 'a'",
        ).removeprefix("compilation failed: "),
    ),
    "second-line": Case(
        "device.driver\n  + 1 == 'x'",
        compile_error=_located(
            2, 3, "found no matching overload for '_+_' applied to '(string, int)'", "  + 1 == 'x'"
        ),
    ),
    "mixed-list-literal": Case(
        "[device.driver, device.attributes['d'].x].size() == 2",
        compile_error=_located(
            1,
            39,
            "expected type 'string' but found 'any'",
            "[device.driver, device.attributes['d'].x].size() == 2",
        ),
    ),
    "non-bool-predicate": Case(
        "[1,2].exists(x, x)",
        compile_error=_located(1, 17, "expected type 'bool' but found 'int'", "[1,2].exists(x, x)"),
    ),
    "non-bool-filter": Case(
        'device.driver.split(".").filter(x, x)',
        compile_error=_located(
            1,
            32,
            "found no matching overload for '_?_:_' applied to '(string, list(string), list(string))'",
            'device.driver.split(".").filter(x, x)',
        ),
    ),
    "invalid-regex-literal": Case(
        "device.driver.matches('[')",
        compile_error=_located(1, 23, "invalid matches argument", "device.driver.matches('[')"),
    ),
    "result-of-the-unknown-map-type": Case(
        "device.attributes",
        compile_error="must evaluate to bool or the unknown type, not map(string, map(string, google.protobuf.Any))",
    ),
    "dyn-result": Case("dyn(true)", compile_error="must evaluate to bool or the unknown type, not dyn"),
    # --- runtime errors with kube's texts ---
    "malformed-quantity-is-a-runtime-error": Case(
        "quantity('bad').isInteger()",
        match_error="quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    "malformed-semver-is-a-runtime-error": Case(
        "semver('bad').major() == 1", match_error="No Major.Minor.Patch elements found"
    ),
    "semver-normalized": Case("semver('v1.2', true).major() == 1", match=True),
    "quantity-sign-is-a-global-function": Case("sign(quantity('1')) == 1", match=True),
    # --- DRAListTypeAttributes on (compile_test.go's cases with enableListTypeAttributes) ---
    "macro-exists-on-int": Case(
        'device.attributes["dra.example.com"].name.exists(x, x > 0)',
        attributes={"name": ("int", 1)},
        match_error="got 'types.Int', expected iterable type",
        list_types=True,
    ),
    "macro-exists-on-string": Case(
        'device.attributes["dra.example.com"].name.exists(x, x == "fish")',
        attributes={"name": ("string", "fish")},
        match_error="got 'types.String', expected iterable type",
        list_types=True,
    ),
    "macro-exists-on-version-with-lists": Case(
        'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        attributes={"name": ("version", "1.0.0")},
        match_error="got 'cel.Semver', expected iterable type",
        list_types=True,
    ),
    "list-of-semver": Case(
        'device.attributes["dra.example.com"].names.size() == 2',
        attributes={"names": ("versions", ("1.0.0", "2.0.0"))},
        match=True,
        list_types=True,
    ),
    "macro-on-list-of-int": Case(
        'device.attributes["dra.example.com"].names.exists(x, x > 0)',
        attributes={"names": ("ints", (1, 2))},
        match=True,
        list_types=True,
    ),
    "macro-on-list-of-semver": Case(
        'device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))',
        attributes={"names": ("versions", ("1.0.0", "2.0.0"))},
        match=True,
        list_types=True,
    ),
    "includes-function-on-bool-list-negative": Case(
        'device.attributes["dra.example.com"].name.includes(false)',
        attributes={"name": ("bools", (True, True))},
        list_types=True,
    ),
    "includes-function-on-semver-list-positive": Case(
        'device.attributes["dra.example.com"].name.includes(semver("1.0.0"))',
        attributes={"name": ("versions", ("1.0.0", "2.0.0"))},
        match=True,
        list_types=True,
    ),
    "includes-function-on-very-long-list-positive": Case(
        'device.attributes["dra.example.com"].name.includes("value-48")',
        attributes={"name": ("strings", tuple(f"value-{i}" for i in range(48)))},
        list_types=True,
    ),
    "includes-function-on-very-long-list-runtime-error": Case(
        'device.attributes["dra.example.com"].name.includes("value-49")',
        attributes={"name": ("strings", tuple(f"value-{i}" for i in range(49)))},
        match_error="'includes' function cannot be applied to lists longer than 48 values",
        list_types=True,
    ),
    "in-operator-on-list": Case(
        '1 in device.attributes["dra.example.com"].names',
        attributes={"names": ("ints", (1, 2, 3))},
        match=True,
        list_types=True,
    ),
    "dyn-result-with-lists": Case(
        "dyn(1)",
        match_error="CEL result of type int could not be converted to bool: "
        "unsupported type conversion from 'int' to bool",
        list_types=True,
    ),
    "integer-division-in-a-loop-truncates-toward-zero": Case(
        "[7, -7, 9223372036854775807].all(x, x / 2 == (x > 0 ? x - 1 : x + 1) / 2 && x % 2 == (x > 0 ? 1 : -1))",
        match=True,
    ),
    "a-cheap-loop-stays-under-the-limit": Case(
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, x * y <= 100))",
        match=True,
    ),
}


def _device(case: Case) -> Device:
    attributes = {name: DeviceAttribute(kind, value) for name, (kind, value) in case.attributes.items()}
    capacity = {name: DeviceCapacity(value) for name, value in case.capacity.items()}
    return Device("device", attributes, capacity, allow_multiple_allocations=case.allow_multiple_allocations)


@pytest.mark.parametrize("name", list(CASES))
def test_cel_as_kube_scheduler(name: str) -> None:
    case = CASES[name]
    compiled = compile_selector(case.expression, case.list_types)
    assert compiled.error == case.compile_error
    if case.compile_error:
        return
    if case.match_error.startswith("attribute "):
        with pytest.raises(CelError, match=case.match_error):
            device_input(case.driver, _device(case), case.list_types)
        return
    device = device_input(case.driver, _device(case), case.list_types)
    if case.match_error:
        with pytest.raises(CelError) as err:
            compiled.matches(device)
        assert str(err.value) == case.match_error
        return
    assert compiled.matches(device) is case.match


def test_the_cost_limit_stops_the_evaluation_as_soon_as_it_is_passed() -> None:
    """cel-go interrupts at the first step over the limit: a walk with a lower limit stops early."""
    compiled = compile_selector(NESTED_ALL)
    assert compiled.cost_tree is not None
    walk = CostWalk({"find": lambda text, pattern: "1"}, limit=1000)
    with pytest.raises(CostLimitExceeded, match="actual cost limit exceeded"):
        walk.run(compiled.cost_tree, {})
    assert 1000 < walk.cost <= 1000 + 12
    assert COST_LIMIT == 1_000_000


@pytest.mark.parametrize(
    ("expression", "attributes", "kube_cost"),
    [
        # actual costs cel-go reports (EvalDetails.ActualCost) for these selectors
        (
            'device.attributes["dra.example.com"].exists_one(x, x == "services")',
            {"services": ("string", "v")},
            9,
        ),
        ("device.attributes.exists_one(x, x == 'dra.example.com')", {"services": ("string", "v")}, 9),
        ("[1, 2, 3].all(x, x > 0)", {}, 16),
        ("[1, 2, 3].exists(x, x > 5)", {}, 19),
        ("['a', 'bb'].map(x, x.size()).size() == 2", {}, 31),
        ("['a', 'bb'].filter(x, x.size() > 1).size() == 1", {}, 22),
        ("['a', 'b'].filter(x, x.size() > 0).size() == 2", {}, 35),
        ("[device.driver].exists_one(x, x == 'b')", {}, 16),
    ],
)
def test_loops_cost_what_cel_go_counts(
    expression: str, attributes: dict[str, tuple[str, Any]], kube_cost: int
) -> None:
    compiled = compile_selector(expression)
    assert compiled.error == "" and compiled.cost_tree is not None
    walk = CostWalk({})
    walk.run(compiled.cost_tree, device_input(DRIVER, _device(Case(expression, attributes))))
    assert walk.cost == kube_cost


def test_string_functions_cost_by_size() -> None:
    assert call_cost("_==_", ["a" * 63, "dra.example.com"], True) == 2
    assert call_cost("matches", ["asymetric", "[^a]?sym"], True) == 2
    assert call_cost("size", ["abc"], 3) == 1


def test_each_expression_is_compiled_once_with_its_error() -> None:
    cache = CelCache()
    first = cache.get_or_compile("device.driver + 1")
    assert cache.get_or_compile("device.driver + 1") is first
    assert first.error.startswith("compilation failed: ERROR: <input>:1:15: found no matching overload")
    assert len(cache) == 1


def test_compiling_a_selector_leaves_cels_command_line_unloaded() -> None:
    """The first DRA selector loads the interpreter, not cel's interactive shell (typer,
    prompt_toolkit, rich: 27 MiB and 0.4 s of CPU in a scheduler that never starts it), and the
    selector still compiles and runs. A fresh interpreter: this process may have imported them."""
    out = run_python(
        """
        import json, sys
        from app.api.resource import parse_resource_slice
        from app.plugins.dynamicresources.cel import CelCache, device_verdict
        device = parse_resource_slice({
            "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "pool": {"name": "p", "generation": 1,
                     "resourceSliceCount": 1}, "nodeName": "n",
                     "devices": [{"name": "dev", "attributes": {"model": {"string": "a"}}}]},
        }).devices[0]
        verdict = device_verdict(CelCache(), 'device.attributes["d.example.com"].model == "a"', "d.example.com", device)
        loaded = [m for m in ("typer", "prompt_toolkit", "rich") if m in sys.modules]
        print(json.dumps({"verdict": verdict, "loaded": loaded, "cli": sys.modules["cel.cli"].__doc__}))
        """
    )
    result = json.loads(out.splitlines()[-1])
    assert result == {"verdict": True, "loaded": [], "cli": CEL_CLI_NOT_LOADED}
