"""The comparison and the minimizer of the parity harness: a difference is caught in the aspect it belongs
to, and a mismatching scenario shrinks to what the mismatch needs."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from parity.generator import Scenario, generate
from parity.harness import compare, minimize

_RECORD: dict[str, Any] = {
    "pod": "default/pending",
    "node": "n2",
    "status": "Scheduled",
    "message": "",
    "feasibleNodes": 2,
    "evaluatedNodes": 3,
    "nominatedNode": None,
    "victims": [],
    "filter": {
        "n1": {
            "plugin": "NodeResourcesFit",
            "status": "Unschedulable",
            "reasons": ["Insufficient cpu", "Insufficient example.com/gpu", "Insufficient hugepages-2Mi"],
        }
    },
    "scores": {
        "n2": {"NodeResourcesFit": 80, "ImageLocality": 0, "total": 80},
        "n3": {"NodeResourcesFit": 60, "ImageLocality": 0, "total": 60},
    },
}


def _oracle() -> dict[str, Any]:
    return {"pods": [{**copy.deepcopy(_RECORD), "bestNodes": ["n2"]}]}


def _berth(change: Any = None) -> dict[str, Any]:
    record = copy.deepcopy(_RECORD)
    if change is not None:
        change(record)
    return {"pods": [record]}


def test_identical_verdicts_agree() -> None:
    c = compare(_berth(), _oracle())
    assert c.ok and (c.score_values, c.score_values_equal) == (6, 6)


@pytest.mark.parametrize(
    ("aspect", "change"),
    [
        ("feasibility", lambda r: r["filter"].pop("n1")),
        ("reasons", lambda r: r["filter"]["n1"].update(status="UnschedulableAndUnresolvable")),
        ("scores", lambda r: r["scores"]["n3"].update(NodeResourcesFit=61)),
        ("best", lambda r: r.update(node="n3")),
        ("message", lambda r: r.update(message="0/3 nodes are available")),
        ("counts", lambda r: r.update(evaluatedNodes=2)),
        ("preemption", lambda r: r.update(nominatedNode="n1", victims=["default/low"])),
    ],
)
def test_a_difference_is_caught_in_its_aspect(aspect: str, change: Any) -> None:
    c = compare(_berth(change), _oracle())
    assert not c.agree[aspect]
    assert "berth" in c.details[aspect] and "oracle" in c.details[aspect]


def test_map_ordered_resource_reasons_compare_as_a_set() -> None:
    """kube-scheduler lists extended-resource and hugepages reasons in Go map order."""

    def swap(r: dict[str, Any]) -> None:
        r["filter"]["n1"]["reasons"] = [
            "Insufficient cpu",
            "Insufficient hugepages-2Mi",
            "Insufficient example.com/gpu",
        ]

    assert compare(_berth(swap), _oracle()).agree["reasons"]

    def cpu_last(r: dict[str, Any]) -> None:
        r["filter"]["n1"]["reasons"] = [
            "Insufficient example.com/gpu",
            "Insufficient hugepages-2Mi",
            "Insufficient cpu",
        ]

    assert not compare(_berth(cpu_last), _oracle()).agree["reasons"]


def test_an_oracle_error_is_a_mismatch() -> None:
    c = compare(_berth(), {"pods": [], "error": "state.yaml: document 3: bad"})
    assert not c.ok and "bad" in c.details["oracle"]


def test_minimize_keeps_what_the_mismatch_needs() -> None:
    scenario = generate(7)
    scenario = Scenario(scenario.seed, scenario.objects, {"kind": "KubeSchedulerConfiguration"}, [])
    needed = next(o for o in scenario.objects if o["kind"] == "Node")

    def still_fails(candidate: Scenario) -> bool:
        return needed in candidate.objects

    small = minimize(scenario, still_fails)
    assert small.config is None
    assert small.objects == [needed, scenario.objects[-1]]  # the pending pod always stays
