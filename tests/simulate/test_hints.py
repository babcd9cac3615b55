"""Counterfactual "fits if…" hints: the lines a user reads, the JSON, and that every hint is true: with its
change applied to the state file, a whole new simulation schedules the pod."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from simulate.simhelpers import default_setup, run_text

from app.cli.main import main
from app.simulate import simulate
from app.simulate.hints import HINT_KINDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"


def run_file(path: Path, output: str) -> str:
    cfg, registry = default_setup()
    text, _ = simulate(str(path), cfg, registry, seed=1, output=output)
    return text


def fits_if(text: str) -> list[str]:
    return next(b for b in text.split("\n\n") if b.startswith("Fits if")).splitlines()


def test_table_shows_the_best_two_hints_per_pod() -> None:
    assert fits_if(run_file(EXAMPLES / "unschedulable.yaml", "table")) == [
        "Fits if… (each change verified by running the pod's filters again with it applied):",
        "  default/big       tolerate taint dedicated=batch:NoSchedule: fits on tainted",
        "                    drop nodeSelector tier=general: fits on other-tier",
        "  default/small-3   tolerate taint dedicated=batch:NoSchedule: fits on tainted",
        "                    drop nodeSelector tier=general: fits on other-tier",
    ]


def test_wide_shows_every_kind_of_hint() -> None:
    assert fits_if(run_file(EXAMPLES / "hints.yaml", "wide")) == [
        "Fits if… (each change verified by running the pod's filters again with it applied):",
        "  default/urgent    drop nodeSelector zone=z1: fits on n2",
        "                    lower the cpu request to 1 (from 3): fits on n1",
        "                    label node(s) n2 with zone=z1: fits there",
        "                    evict lower-priority pod(s) jobs/batch-2 from n1: fits there "
        "(preemptionPolicy Never forbids the scheduler to do it)",
        "                    add 1 node like n1: fits on the new node",
        "  default/proxy     drop the required nodeAffinity (zone In [z2]): fits on n1",
        "                    label node(s) n1 with zone=z2: fits there",
        "                    add 1 node like n2: fits on the new node",
        "  default/gpu-job   drop gpu Exists from nodeAffinity term 1: fits on n1",
        "                    label node(s) n1 with gpu=true: fits there",
        "                    label node(s) n2 with gpu=true, zone=z1: fits there",
    ]
    assert fits_if(run_file(EXAMPLES / "spread-zones.yaml", "wide"))[1:] == [
        "  default/db-2   drop nodeSelector tier=db: fits on c-1, c-2",
        "                 relax topology spread on topology.kubernetes.io/zone to maxSkew 2: fits on a-1, b-1",
        "                 label node(s) c-1, c-2 with tier=db: fits there",
    ]


def test_json_hints_follow_the_contract() -> None:
    doc = json.loads(run_file(EXAMPLES / "unschedulable.yaml", "json"))
    big = doc["pods"][0]
    assert big["hints"] == [
        {
            "kind": "tolerate-taint",
            "summary": "tolerate taint dedicated=batch:NoSchedule: fits on tainted",
            "change": {
                "toleration": {
                    "key": "dedicated",
                    "operator": "Equal",
                    "value": "batch",
                    "effect": "NoSchedule",
                }
            },
            "nodes": ["tainted"],
            "verified": True,
        },
        {
            "kind": "drop-node-affinity-term",
            "summary": "drop nodeSelector tier=general: fits on other-tier",
            "change": {"nodeSelector": "tier"},
            "nodes": ["other-tier"],
            "verified": True,
        },
        {
            "kind": "lower-request",
            "summary": "lower the cpu request to 2 (from 4): fits on small",
            "change": {"resource": "cpu", "request": "2", "from": "4"},
            "nodes": ["small"],
            "verified": True,
        },
        {
            "kind": "label-nodes",
            "summary": "label node(s) other-tier with tier=general: fits there",
            "change": {"labels": {"tier": "general"}, "nodes": ["other-tier"]},
            "nodes": ["other-tier"],
            "verified": True,
        },
    ]
    assert all(p["hints"] == [] for p in doc["pods"] if p["status"] != "Unschedulable")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_hints_change_no_decision(example: str) -> None:
    """The copy the hints are checked on is the run's own business: same seed, same placements,
    messages and victims, storage and DRA examples included."""
    text = (EXAMPLES / example).read_text()
    plain = [
        (r.pod.key, r.status, r.node, r.message, [v.key for v in r.victims]) for r in run_text(text).records
    ]
    doc = json.loads(run_file(EXAMPLES / example, "json"))
    assert [(p["pod"], p["status"], p["node"], p["message"], p["victims"]) for p in doc["pods"]] == plain


# --- every hint, applied to the state file, lets a fresh simulation schedule the pod ----------------


def _key(doc: dict[str, Any]) -> str:
    return f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}"


def apply_hint(docs: list[dict[str, Any]], pod_key: str, hint: dict[str, Any]) -> list[dict[str, Any]]:
    """The state with ``hint``'s change made the way a user would make it, by editing the manifests."""
    docs = copy.deepcopy(docs)
    pod = next(d for d in docs if d["kind"] == "Pod" and _key(d) == pod_key)
    spec, change, kind = pod["spec"], hint["change"], hint["kind"]
    nodes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Node"}
    if kind == "tolerate-taint":
        spec.setdefault("tolerations", []).append(change["toleration"])
    elif kind == "drop-node-affinity-term" and "nodeSelector" in change:
        del spec["nodeSelector"][change["nodeSelector"]]
    elif kind == "drop-node-affinity-term":
        required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        term = required["nodeSelectorTerms"][change["term"] - 1]
        key = change["requirement"].split()[0]
        term["matchExpressions"] = [e for e in term["matchExpressions"] if e["key"] != key]
        if not term["matchExpressions"]:
            del spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    elif kind == "lower-request":
        spec["containers"][0]["resources"]["requests"][change["resource"]] = change["request"]
    elif kind == "relax-spread":
        constraint = spec["topologySpreadConstraints"][change["constraint"] - 1]
        constraint.update({k: v for k, v in change.items() if k != "constraint"})
    elif kind == "label-nodes":
        for name in change["nodes"]:
            nodes[name]["metadata"]["labels"].update(change["labels"])
    elif kind == "preempt":
        docs = [d for d in docs if not (d["kind"] == "Pod" and _key(d) in change["evict"])]
    elif kind == "add-nodes":
        new = copy.deepcopy(nodes[change["like"]])
        new["metadata"]["name"] = change["name"]
        new["metadata"]["labels"]["kubernetes.io/hostname"] = change["name"]
        docs.append(new)
    else:
        raise AssertionError(f"unknown hint kind {kind}")
    return docs


@pytest.mark.parametrize(
    "example", ["unschedulable.yaml", "hints.yaml", "spread-zones.yaml", "gated-priority.yaml"]
)
def test_every_hint_holds_in_a_fresh_simulation(example: str, tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / example).read_text()) if d]
    doc = json.loads(run_file(EXAMPLES / example, "json"))
    seen = set()
    for pod in doc["pods"]:
        if pod["status"] != "Unschedulable":
            continue
        assert pod["hints"], f"{pod['pod']} got no hint"
        for hint in pod["hints"]:
            assert hint["verified"] is True and hint["kind"] in HINT_KINDS and hint["nodes"]
            seen.add(hint["kind"])
            changed = tmp_path / "changed.yaml"
            changed.write_text(yaml.safe_dump_all(apply_hint(docs, pod["pod"], hint)))
            rerun = json.loads(run_file(changed, "json"))
            after = next(p for p in rerun["pods"] if p["pod"] == pod["pod"])
            assert after["status"] == "Scheduled", (hint["summary"], after["message"])
    assert seen  # every example has some unschedulable pod with hints


def test_max_hints_bounds_the_search_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "unschedulable.yaml")
    assert main(["simulate", path, "--seed", "1", "--max-hints", "1"]) == 0
    out, err = capsys.readouterr()
    assert fits_if(out)[1:] == [
        "  default/big   tolerate taint dedicated=batch:NoSchedule: fits on tainted",
        "                drop nodeSelector tier=general: fits on other-tier",
    ]
    assert err == (
        "Warning: hints were searched for the first 1 unschedulable pods only, 1 more have none "
        "(--max-hints N to search more)\n"
    )
    assert main(["simulate", path, "--seed", "1", "--max-hints", "0"]) == 0
    assert "Fits if" not in capsys.readouterr().out
    assert main(["simulate", path, "--max-hints", "-1"]) == 1
    assert capsys.readouterr().err == "Error: invalid --max-hints -1: must be 0 or more\n"
