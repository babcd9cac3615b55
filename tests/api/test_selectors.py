"""Node selector matching, ported from component-helpers v0.36.3 nodeaffinity_test.go
(TestNodeSelectorMatch, TestPreferredSchedulingTermsScore, TestNodeSelectorRequirementsAsSelector) and
helpers_test.go (TestMatchNodeSelectorTerms), plus apimachinery's Gt/Lt parsing rules.

Where component-helpers reports an error that API validation also rejects (matchFields with several
values, an unknown operator, Exists with values), the project's parser raises FieldError at parse time;
those cases assert that. Errors API validation lets through (bad label key/value, non-integer Gt/Lt)
are kept on the term, which then matches no node.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.errors import FieldError
from app.api.selectors import NodeSelector, parse_int64, parse_node_selector, parse_node_selector_term

NAME_KEY_DETAIL = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def selector(*terms: dict[str, Any]) -> NodeSelector:
    return parse_node_selector({"nodeSelectorTerms": list(terms)}, "ns")


L1 = req("label_1", "In", "label_1_val")
F1 = req("metadata.name", "In", "host_1")

MATCH_CASES: list[tuple[str, list[dict[str, Any]], str, dict[str, str], bool]] = [
    # TestNodeSelectorMatch
    (
        "node matches field selector, but not labels",
        [{"matchExpressions": [L1], "matchFields": [F1]}],
        "host_1",
        {},
        False,
    ),
    (
        "node matches field selector and label selector",
        [{"matchExpressions": [L1], "matchFields": [F1]}],
        "host_1",
        {"label_1": "label_1_val"},
        True,
    ),
    ("second term matches", [{"matchExpressions": [L1]}, {"matchFields": [F1]}], "host_1", {}, True),
    # TestMatchNodeSelectorTerms
    (
        "node label matches matchExpressions terms",
        [{"matchExpressions": [L1]}],
        "n",
        {"label_1": "label_1_val"},
        True,
    ),
    ("node field matches matchFields terms", [{"matchFields": [F1]}], "host_1", {}, True),
    (
        "fieldSelectorTerm with node labels",
        [{"matchFields": [F1]}],
        "not_host_1",
        {"metadata.name": "host_1"},
        False,
    ),
    (
        "labelSelectorTerm with node fields",
        [{"matchExpressions": [req("metadata.name", "In", "host_1")]}],
        "host_1",
        {},
        False,
    ),
    (
        "labelSelectorTerm and fieldSelectorTerm was set, but only node fields",
        [{"matchExpressions": [L1], "matchFields": [F1]}],
        "host_1",
        {},
        False,
    ),
    (
        "labelSelectorTerm and fieldSelectorTerm was set, both node fields and labels (one mismatched)",
        [{"matchExpressions": [L1], "matchFields": [F1]}],
        "host_1",
        {"label_1": "label_1_val-failed"},
        False,
    ),
    (
        "multi-selector was set, both node fields and labels (one mismatched)",
        [{"matchExpressions": [L1]}, {"matchFields": [F1]}],
        "host_1",
        {"label_1": "label_1_val-failed"},
        True,
    ),
    # Not in the Go tables: operators and term shapes.
    ("no terms match nothing", [], "n", {"a": "b"}, False),
    ("empty term matches nothing", [{}], "n", {"a": "b"}, False),
    ("NotIn matches a missing key", [{"matchExpressions": [req("a", "NotIn", "x")]}], "n", {}, True),
    (
        "NotIn rejects a listed value",
        [{"matchExpressions": [req("a", "NotIn", "x")]}],
        "n",
        {"a": "x"},
        False,
    ),
    ("DoesNotExist", [{"matchExpressions": [req("a", "DoesNotExist")]}], "n", {"b": "x"}, True),
    (
        "DoesNotExist with key present",
        [{"matchExpressions": [req("a", "DoesNotExist")]}],
        "n",
        {"a": ""},
        False,
    ),
    ("Exists with empty value", [{"matchExpressions": [req("a", "Exists")]}], "n", {"a": ""}, True),
    ("In with missing key", [{"matchExpressions": [req("a", "In", "")]}], "n", {}, False),
    ("Gt greater", [{"matchExpressions": [req("v", "Gt", "0204")]}], "n", {"v": "0206"}, True),
    ("Gt equal", [{"matchExpressions": [req("v", "Gt", "5")]}], "n", {"v": "5"}, False),
    ("Lt less, negative label", [{"matchExpressions": [req("v", "Lt", "3")]}], "n", {"v": "-7"}, True),
    # "+3" parses as an integer but is not a valid label value, so NewRequirement fails.
    (
        "signed Lt value never matches",
        [{"matchExpressions": [req("v", "Lt", "+3")]}],
        "n",
        {"v": "-7"},
        False,
    ),
    ("Gt missing label", [{"matchExpressions": [req("v", "Gt", "1")]}], "n", {}, False),
    ("Gt non-integer label", [{"matchExpressions": [req("v", "Gt", "1")]}], "n", {"v": "abc"}, False),
    (
        "Gt label with spaces is not an integer",
        [{"matchExpressions": [req("v", "Gt", "1")]}],
        "n",
        {"v": " 5"},
        False,
    ),
    (
        "Gt label with underscores is not an integer",
        [{"matchExpressions": [req("v", "Gt", "1")]}],
        "n",
        {"v": "1_000"},
        False,
    ),
    (
        "Gt label beyond int64",
        [{"matchExpressions": [req("v", "Lt", "1")]}],
        "n",
        {"v": "-9223372036854775809"},
        False,
    ),
    (
        "Gt non-integer value never matches",
        [{"matchExpressions": [req("v", "Gt", "x")]}],
        "n",
        {"v": "5"},
        False,
    ),
    ("matchFields NotIn", [{"matchFields": [req("metadata.name", "NotIn", "a")]}], "b", {}, True),
    ("matchFields NotIn own name", [{"matchFields": [req("metadata.name", "NotIn", "a")]}], "a", {}, False),
    (
        "invalid label value never matches",
        [{"matchExpressions": [req("foo", "NotIn", "invalid value: ___@#$%^")]}],
        "n",
        {"foo": "bar"},
        False,
    ),
    (
        "invalid key never matches",
        [{"matchExpressions": [req("invalid key", "Exists")]}],
        "n",
        {"invalid key": "x"},
        False,
    ),
    (
        "an invalid term does not stop a later valid one",
        [{"matchExpressions": [req("invalid key", "Exists")]}, {"matchExpressions": [req("a", "Exists")]}],
        "n",
        {"a": "1"},
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "terms", "node_name", "labels", "want"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES]
)
def test_node_selector_match(
    name: str, terms: list[dict[str, Any]], node_name: str, labels: dict[str, str], want: bool
) -> None:
    assert selector(*terms).matches(node_name, labels) is want


def test_nameless_node_ignores_match_fields() -> None:
    # extractNodeFields yields no fields for an unnamed node, and the field selector is then skipped.
    assert selector({"matchFields": [F1]}).matches("", {}) is True


def test_lazy_errors_are_recorded_with_go_text() -> None:
    term = parse_node_selector_term({"matchExpressions": [req("invalid key", "In", "label_value")]}, "t")
    assert term.errors == (f'matchExpressions[0].key: Invalid value: "invalid key": {NAME_KEY_DETAIL}',)
    value_term = parse_node_selector_term({"matchExpressions": [req("foo", "NotIn", "bad value!")]}, "t")
    assert value_term.errors == (
        'matchExpressions[0].values[0][foo]: Invalid value: "bad value!": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    )
    gt_term = parse_node_selector_term({"matchExpressions": [req("foo", "Gt", "x")]}, "t")
    assert gt_term.errors == (
        "matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
    )
    assert parse_node_selector_term({"matchExpressions": [req("example.com/a", "Gt", "1")]}, "t").errors == ()


def test_lazy_errors_do_not_affect_equality() -> None:
    a = parse_node_selector_term({"matchExpressions": [req("a", "In", "x")]}, "t")
    b = parse_node_selector_term({"matchExpressions": [req("a", "In", "x")]}, "u")
    assert a == b


@pytest.mark.parametrize(
    ("term", "message"),
    [
        # TestNodeSelectorMatch / TestMatchNodeSelectorTerms: "invalid node field requirement"
        ({"matchFields": [req("metadata.name", "In", "host_1", "host_2")]}, "must be only one value"),
        # TestNodeSelectorRequirementsAsSelector: Exists with values; an unsupported operator
        ({"matchExpressions": [req("foo", "Exists", "bar", "baz")]}, "may not be specified"),
        ({"matchExpressions": [req("baz", "invalid", "5")]}, 'Unsupported value: "invalid"'),
        ({"matchExpressions": [req("foo", "In")]}, "must be specified"),
        ({"matchExpressions": [req("foo", "Gt", "1", "2")]}, "single value"),
        ({"matchFields": [req("metadata.uid", "In", "x")]}, "not a valid field selector key"),
        ({"matchFields": [req("metadata.name", "Exists")]}, "not a valid selector operator"),
    ],
)
def test_api_invalid_requirements_raise(term: dict[str, Any], message: str) -> None:
    with pytest.raises(FieldError, match=message):
        parse_node_selector_term(term, "t")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("0204", 204),
        ("+5", 5),
        ("-5", -5),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("", None),
        ("-", None),
        (" 1", None),
        ("1\n", None),
        ("1_0", None),
        ("1.5", None),
        ("\u0661", None),
    ],
)
def test_parse_int64(text: str, value: int | None) -> None:
    assert parse_int64(text) == value
