"""Toleration matching, ported from k8s.io/api core/v1 toleration_test.go and component-helpers'
TestFindMatchingUntoleratedTaint (v0.36.3).

TaintTolerationComparisonOperators (Gt/Lt) is alpha and off in v1.36: the Gt/Lt cases are checked
with the gate's off behaviour (never tolerated), and TestCompareNumericValues is not ported.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.api.errors import FieldError
from app.api.objects import Taint, Toleration, parse_pod, tolerations_tolerate

NS, NE = "NoSchedule", "NoExecute"

TOLERATES_CASES = [
    (
        "same key and effect, operator Exists, taint has no value",
        Toleration("foo", "Exists", "", NS),
        Taint("foo", "", NS),
        True,
    ),
    (
        "same key and effect, operator Exists, taint has some value",
        Toleration("foo", "Exists", "", NS),
        Taint("foo", "bar", NS),
        True,
    ),
    (
        "same effect, empty key and operator Exists match all taints",
        Toleration("", "Exists", "", NS),
        Taint("foo", "bar", NS),
        True,
    ),
    (
        "same key, effect and value, operator Equal",
        Toleration("foo", "Equal", "bar", NS),
        Taint("foo", "bar", NS),
        True,
    ),
    (
        "same key and effect, different values, operator Equal",
        Toleration("foo", "Equal", "value1", NS),
        Taint("foo", "value2", NS),
        False,
    ),
    (
        "same key and value, different effects, operator Equal",
        Toleration("foo", "Equal", "bar", NS),
        Taint("foo", "bar", NE),
        False,
    ),
    # The Go cases below run with the comparison gate on; with it off (v1.36 default) Gt/Lt never tolerate.
    (
        "Gt, taint value less (gate off)",
        Toleration("node.kubernetes.io/sla", "Gt", "950", NS),
        Taint("node.kubernetes.io/sla", "800", NS),
        False,
    ),
    (
        "Gt, taint value greater (gate off)",
        Toleration("node.kubernetes.io/sla", "Gt", "750", NS),
        Taint("node.kubernetes.io/sla", "950", NS),
        False,
    ),
    (
        "Lt, taint value less (gate off)",
        Toleration("node.kubernetes.io/sla", "Lt", "950", NS),
        Taint("node.kubernetes.io/sla", "800", NS),
        False,
    ),
    # Not in the Go table: defaults and wildcards.
    ("empty operator means Equal", Toleration("foo", "", "bar", NS), Taint("foo", "bar", NS), True),
    (
        "empty effect matches every effect",
        Toleration("foo", "Equal", "bar", ""),
        Taint("foo", "bar", NE),
        True,
    ),
    ("different key", Toleration("foo", "Exists", "", ""), Taint("baz", "bar", NS), False),
    (
        "empty key with Equal matches value only",
        Toleration("", "Equal", "bar", ""),
        Taint("any", "bar", NS),
        True,
    ),
    (
        "unknown operator never tolerates",
        Toleration("foo", "Bogus", "bar", ""),
        Taint("foo", "bar", NS),
        False,
    ),
]


@pytest.mark.parametrize(
    ("desc", "toleration", "taint", "expected"), TOLERATES_CASES, ids=[c[0] for c in TOLERATES_CASES]
)
def test_toleration_tolerates_taint(desc: str, toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


def _untolerated(
    taints: list[Taint], tolerations: list[Toleration], inclusion: Callable[[Taint], bool] | None
) -> bool:
    """FindMatchingUntoleratedTaint's boolean, over the project's tolerations_tolerate."""
    return any(not tolerations_tolerate(tolerations, t) for t in taints if inclusion is None or inclusion(t))


FIND_CASES: list[tuple[str, list[Toleration], list[Taint], Callable[[Taint], bool] | None, bool]] = [
    ("empty tolerations tolerate empty taints", [], [], lambda t: True, True),
    (
        "non-empty tolerations tolerate empty taints",
        [Toleration("foo", "Exists", "", NS)],
        [],
        lambda t: True,
        True,
    ),
    (
        "tolerations match all taints, expect tolerated",
        [Toleration("foo", "Exists", "", NS)],
        [Taint("foo", "", NS)],
        lambda t: True,
        True,
    ),
    (
        "tolerations don't match taints, but no taints apply to the filter, expect tolerated",
        [Toleration("foo", "Exists", "", NS)],
        [Taint("bar", "", NS)],
        lambda t: False,
        True,
    ),
    (
        "no filterFunc indicated, means all taints apply to the filter, tolerations don't match taints",
        [Toleration("foo", "Exists", "", NS)],
        [Taint("bar", "", NS)],
        None,
        False,
    ),
    (
        "tolerations match taints, expect tolerated",
        [Toleration("foo", "Exists", "", NE)],
        [Taint("foo", "", NE), Taint("bar", "", NS)],
        lambda t: t.effect == NE,
        True,
    ),
    (
        "numeric Gt operator with taint value above threshold (gate off): not tolerated",
        [Toleration("node.kubernetes.io/sla", "Gt", "750", NS)],
        [Taint("node.kubernetes.io/sla", "950", NS)],
        lambda t: True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("desc", "tolerations", "taints", "inclusion", "expect_tolerated"),
    FIND_CASES,
    ids=[c[0] for c in FIND_CASES],
)
def test_find_matching_untolerated_taint(
    desc: str,
    tolerations: list[Toleration],
    taints: list[Taint],
    inclusion: Callable[[Taint], bool] | None,
    expect_tolerated: bool,
) -> None:
    assert _untolerated(taints, tolerations, inclusion) is (not expect_tolerated)


def test_parser_defaults_operator_to_equal_and_rejects_gt() -> None:
    pod = parse_pod({"metadata": {"name": "p"}, "spec": {"tolerations": [{"key": "k", "value": "v"}]}})
    assert pod.tolerations == [Toleration("k", "Equal", "v", "")]
    with pytest.raises(FieldError, match="Unsupported value"):
        parse_pod(
            {
                "metadata": {"name": "p"},
                "spec": {"tolerations": [{"key": "k", "operator": "Gt", "value": "1"}]},
            }
        )
