"""PodTopologySpread end to end: the default configuration, the real engine and simulate."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from simulate.simhelpers import default_setup, run_text

from app.simulate import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"


def _node(name: str, zone: str | None, cpu: str = "8", extra_labels: str = "") -> str:
    zone_label = f", topology.kubernetes.io/zone: {zone}" if zone else ""
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}"
        f"{zone_label}{extra_labels}}}}}\n"
        f'status: {{allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}}}\n---\n'
    )


STATEFUL_SET = (
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web, namespace: default}\n"
    "spec: {selector: {matchLabels: {app: web}}}\n---\n"
)


def _web_pod(i: int, owned: bool = True) -> str:
    owner = (
        ", ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: web-uid, controller: true}]"
        if owned
        else ""
    )
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: default, labels: {{app: web}}{owner}}}\n"
        'spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]}\n---\n'
    )


def _zones_cluster() -> str:
    """zone-a: two 32-cpu nodes; zone-b and zone-c: two 8-cpu nodes each."""
    return (
        _node("a-1", "zone-a", "32")
        + _node("a-2", "zone-a", "32")
        + _node("b-1", "zone-b")
        + _node("b-2", "zone-b")
        + _node("c-1", "zone-c")
        + _node("c-2", "zone-c")
    )


def _per_zone(text: str, seed: int) -> dict[str, int]:
    result = run_text(text, seed)
    assert all(r.status == "Scheduled" for r in result.records)
    return dict(sorted(collections.Counter(str(r.node).split("-")[0] for r in result.records).items()))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_statefulset_pods_spread_over_zones_by_system_defaults(seed: int) -> None:
    """System defaulting selects the StatefulSet's pods by its selector and spreads them 2/2/2."""
    text = _zones_cluster() + STATEFUL_SET + "".join(_web_pod(i) for i in range(6))
    assert _per_zone(text, seed) == {"a": 2, "b": 2, "c": 2}


@pytest.mark.parametrize("seed", [1, 2])
def test_pods_without_controller_are_not_spread(seed: int) -> None:
    """No Service or controller selects them: the default selector is empty, so no spreading; the
    resource scores then put every pod on the big zone-a nodes."""
    text = _zones_cluster() + STATEFUL_SET + "".join(_web_pod(i, owned=False) for i in range(6))
    assert _per_zone(text, seed) == {"a": 6}


def test_service_selector_also_drives_system_spreading() -> None:
    service = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n"
        "spec: {selector: {app: web}}\n---\n"
    )
    text = _zones_cluster() + service + "".join(_web_pod(i, owned=False) for i in range(6))
    assert _per_zone(text, 1) == {"a": 2, "b": 2, "c": 2}


def _db_pod(i: int, constraint: str, selector: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: db-{i}, namespace: default, labels: {{app: db}}}}\n"
        f"spec:\n{selector}  topologySpreadConstraints:\n{constraint}"
        "  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]\n---\n"
    )


HARD_ZONE = (
    "  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,\n"
    "     labelSelector: {matchLabels: {app: db}}}\n"
)


def _tainted_cluster() -> str:
    """z1: two nodes; z2: one node tainted NoSchedule, which the pods do not tolerate."""
    # _node ends its document with ---; splice the spec in before it.
    tainted = _node("t1", "z2").replace(
        "---\n", "spec: {taints: [{key: maintenance, effect: NoSchedule}]}\n---\n"
    )
    return _node("n1", "z1") + _node("n2", "z1") + tainted


def test_do_not_schedule_skew_fit_error() -> None:
    """nodeTaintsPolicy defaults to Ignore: the tainted z2 still counts, with 0 pods, as the minimum, so
    the second pod would make z1's skew 2: no node fits."""
    text = _tainted_cluster() + "".join(_db_pod(i, HARD_ZONE) for i in range(2))
    records = run_text(text).records
    assert records[0].status == "Scheduled" and records[0].node in ("n1", "n2")
    assert records[1].status == "Unschedulable"
    assert records[1].message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match pod topology spread constraints. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )
    assert {n: s.plugin for n, s in records[1].filter.items()} == {
        "n1": "PodTopologySpread",
        "n2": "PodTopologySpread",
        "t1": "TaintToleration",
    }
    assert records[1].filter["n1"].code.label == "Unschedulable"


def test_node_taints_policy_honor_leaves_tainted_domains_out() -> None:
    """With nodeTaintsPolicy Honor the tainted z2 is no domain: z1 alone, skew 0, both pods fit."""
    honor = (
        "  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,\n"
        "     nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app: db}}}\n"
    )
    records = run_text(_tainted_cluster() + "".join(_db_pod(i, honor) for i in range(2))).records
    assert [r.status for r in records] == ["Scheduled", "Scheduled"]


def test_missing_topology_label_is_unresolvable() -> None:
    """A node without the topology key is UnschedulableAndUnresolvable; the rest still count."""
    text = _node("n1", "z1") + _node("bare", None) + _db_pod(0, HARD_ZONE) + _db_pod(1, HARD_ZONE)
    records = run_text(text).records
    assert [(r.status, r.node) for r in records] == [("Scheduled", "n1"), ("Scheduled", "n1")]
    # n1 is the only domain (skew 0), so both pods fit there; "bare" is rejected as unresolvable.
    status = records[0].filter["bare"]
    assert status.code.label == "UnschedulableAndUnresolvable"
    assert status.reasons == ["node(s) didn't match pod topology spread constraints (missing required label)"]


def test_min_domains_and_node_affinity_policy_fit_error() -> None:
    """Only nodeSelector-matching nodes count (nodeAffinityPolicy Honor); two domains < minDomains 3."""
    constraint = (
        "  - {maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone,\n"
        "     whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: db}}}\n"
    )
    selector = "  nodeSelector: {tier: db}\n"
    text = (
        _node("a-1", "zone-a", extra_labels=", tier: db")
        + _node("b-1", "zone-b", extra_labels=", tier: db")
        + _node("c-1", "zone-c")
        + "".join(_db_pod(i, constraint, selector) for i in range(3))
    )
    records = run_text(text).records
    assert [r.status for r in records] == ["Scheduled", "Scheduled", "Unschedulable"]
    assert {records[0].node, records[1].node} == {"a-1", "b-1"}
    assert records[2].message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't match pod topology spread constraints. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )


def test_spread_zones_example() -> None:
    cfg, registry = default_setup()
    text, warnings = simulate(str(EXAMPLES / "spread-zones.yaml"), cfg, registry, seed=1, output="json")
    pods = {p["pod"].split("/")[1]: p for p in json.loads(text)["pods"]}
    zones = collections.Counter(pods[f"web-{i}"]["node"].split("-")[0] for i in range(6))
    assert zones == {"a": 2, "b": 2, "c": 2}
    assert [pods[f"db-{i}"]["status"] for i in range(3)] == ["Scheduled", "Scheduled", "Unschedulable"]
    assert {pods["db-0"]["node"], pods["db-1"]["node"]} == {"a-1", "b-1"}
    assert pods["db-2"]["message"] == (
        "0/6 nodes are available: 2 node(s) didn't match pod topology spread constraints, "
        "4 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/6 nodes are available: 2 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
    )
    assert warnings == [
        f"{EXAMPLES / 'spread-zones.yaml'}: 1 StatefulSet object(s) not simulated (kept for plugins that read them)"
    ]
