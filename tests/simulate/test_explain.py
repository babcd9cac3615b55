"""Explanations with amounts (``filter[node].details``), score weights and the wide view's weighted scores."""

from __future__ import annotations

import json
from pathlib import Path

from simulate.simhelpers import default_setup

from app.simulate import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"


def run(name: str, output: str) -> str:
    cfg, registry = default_setup()
    text, _ = simulate(str(EXAMPLES / name), cfg, registry, seed=1, output=output)
    return text


def block(text: str, title: str) -> list[str]:
    """The lines of the table's block that starts with ``title``."""
    return next(b for b in text.split("\n\n") if b.startswith(title)).splitlines()


def test_details_name_nodes_and_amounts_in_json_and_wide() -> None:
    doc = json.loads(run("unschedulable.yaml", "json"))
    big = doc["pods"][0]
    assert {node: entry["details"] for node, entry in big["filter"].items()} == {
        "cordoned": ["node is cordoned (spec.unschedulable: true)"],
        "other-tier": ["nodeSelector tier=general: node has tier=edge"],
        "small": ["Insufficient cpu: requests 4, free 2 of 2"],
        "tainted": ["untolerated taint dedicated=batch:NoSchedule"],
    }
    # kube-scheduler's reasons are untouched next to them.
    assert big["filter"]["small"]["reasons"] == ["Insufficient cpu"]
    assert block(run("unschedulable.yaml", "wide"), "Why not") == [
        "Why not (per failing node, with amounts):",
        "  default/big       cordoned: node is cordoned (spec.unschedulable: true)",
        "                    other-tier: nodeSelector tier=general: node has tier=edge",
        "                    small: Insufficient cpu: requests 4, free 2 of 2",
        "                    tainted: untolerated taint dedicated=batch:NoSchedule",
        "  default/small-3   cordoned: node is cordoned (spec.unschedulable: true)",
        "                    other-tier: nodeSelector tier=general: node has tier=edge",
        "                    small: Insufficient cpu: requests 1, free 0 of 2",
        "                    tainted: untolerated taint dedicated=batch:NoSchedule",
    ]


def test_details_of_ports_affinity_terms_and_spread() -> None:
    assert block(run("hints.yaml", "wide"), "Why not") == [
        "Why not (per failing node, with amounts):",
        "  default/urgent    n1: Insufficient cpu: requests 3, free 1 of 4",
        "                    n2: nodeSelector zone=z1: node has zone=z2",
        "  default/proxy     n1: nodeAffinity term 1 unmatched: zone In [z2] (node has zone=z1)",
        "                    n2: host port 8080/TCP in use by default/proxy-old",
        "  default/gpu-job   n1: nodeAffinity term 1 unmatched: gpu Exists (node has no gpu label)",
        "                    n2: nodeAffinity term 1 unmatched: zone In [z1] (node has zone=z2); gpu Exists (node has no gpu label)",
    ]
    spread = json.loads(run("spread-zones.yaml", "json"))["pods"][-1]
    assert spread["filter"]["a-1"]["details"] == [
        "topology spread on topology.kubernetes.io/zone: zone-a has 1 matching pods + this one, the minimum is 0 "
        "(only 2 eligible domains, fewer than minDomains 3): skew 2 > maxSkew 1"
    ]


def test_weights_and_weighted_scores() -> None:
    doc = json.loads(run("basic.yaml", "json"))
    web = doc["pods"][2]
    assert web["weights"] == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    for per_plugin in web["scores"].values():
        assert per_plugin["total"] == sum(
            v * web["weights"][k] for k, v in per_plugin.items() if k != "total"
        )
    winner = web["scores"][web["winner"]["node"]]
    contributions = " + ".join(
        f"{k} {v}*{web['weights'][k]}" for k, v in winner.items() if k != "total" and v
    )
    lines = block(run("basic.yaml", "wide"), "Scores")
    assert lines[0] == "Scores (normalized score*weight per plugin; the total is their sum):"
    assert lines[1] == f"  prod/web-1   node-b {winner['total']} = {contributions}"
    assert lines[2].split()[:3] == ["runner-up", "node-a", str(web["runnerUp"]["total"])]


def test_details_of_inter_pod_anti_affinity_name_the_pods() -> None:
    web4 = json.loads(run("anti-affinity.yaml", "json"))["pods"][3]
    assert web4["pod"] == "default/web-4"
    assert web4["filter"]["n1"]["details"] == [
        "pod anti-affinity: default/web-1 in kubernetes.io/hostname=n1 (selected by the pod's term)",
        "existing pod default/web-1 in kubernetes.io/hostname=n1 refuses the pod (its anti-affinity)",
    ]
