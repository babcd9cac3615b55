"""Inter-pod affinity end to end: the default profile, real engine and FitError messages."""

from __future__ import annotations

import json
from pathlib import Path

from simulate.simhelpers import default_setup, run_text

from app.simulate import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str = "zone-a") -> str:
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{{HOSTNAME}: {name}, {ZONE}: {zone}}}}}\n"
        'status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}\n---\n'
    )


def pod(
    name: str, labels: str = "{}", affinity: str = "", node_name: str = "", namespace: str = "default"
) -> str:
    """A pod; ``affinity`` is the YAML flow mapping of ``spec.affinity``."""
    spec = f"  affinity: {affinity}\n" if affinity else ""
    if node_name:
        spec += f"  nodeName: {node_name}\n"
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}\n"
        f'spec:\n{spec}  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]\n---\n'
    )


def required(kind: str, selector: str, key: str, extra: str = "") -> str:
    """``{<kind>: {required...: [{labelSelector: <selector>, topologyKey: <key>, ...}]}}``."""
    return f"{{{kind}: {{requiredDuringSchedulingIgnoredDuringExecution: [{{labelSelector: {selector}, topologyKey: {key}{extra}}}]}}}}"


WEB_ANTI = required("podAntiAffinity", "{matchLabels: {app: web}}", HOSTNAME)


def summary(text: str) -> list[tuple[str, str, str | None]]:
    return [(r.pod.name, r.status, r.node) for r in run_text(text).records]


def test_anti_affinity_group_runs_out_of_nodes() -> None:
    text = node("n1") + node("n2") + node("n3")
    text += "".join(pod(f"web-{i}", "{app: web}", WEB_ANTI) for i in range(1, 5))
    result = run_text(text)
    records = result.records
    placed = [r.node for r in records[:3]]
    assert all(r.status == "Scheduled" for r in records[:3])
    assert sorted(placed) == ["n1", "n2", "n3"]  # type: ignore[type-var]
    assert records[3].status == "Unschedulable"
    assert records[3].message == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_existing_pods_anti_affinity_rejects_matching_newcomers() -> None:
    """The symmetry rule: a running pod's anti-affinity keeps a pod it selects out of its zone."""
    loner = required("podAntiAffinity", "{matchLabels: {app: noisy}}", ZONE)
    text = node("n1", "zone-a") + node("n2", "zone-a") + node("n3", "zone-b")
    text += pod("loner", "{app: loner}", loner, node_name="n3")
    text += pod("noisy-1", "{app: noisy}") + pod("noisy-2", "{app: noisy}")
    records = run_text(text).records
    assert all(r.status == "Scheduled" for r in records)
    assert {r.node for r in records} <= {"n1", "n2"}

    text = (
        node("n3", "zone-b")
        + pod("loner", "{app: loner}", loner, node_name="n3")
        + pod("noisy", "{app: noisy}")
    )
    (record,) = run_text(text).records
    assert (
        record.message
        == "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_affinity_places_a_pod_next_to_its_peer() -> None:
    text = node("n1") + node("n2") + node("n3")
    text += pod("db", "{app: db}", node_name="n2")
    text += pod("cache", "{app: cache}", required("podAffinity", "{matchLabels: {app: db}}", HOSTNAME))
    assert summary(text) == [("cache", "Scheduled", "n2")]


def test_affinity_without_a_peer_is_unresolvable() -> None:
    text = node("n1") + node("n2")
    text += pod("cache", "{app: cache}", required("podAffinity", "{matchLabels: {app: db}}", HOSTNAME))
    (record,) = run_text(text).records
    assert record.status == "Unschedulable"
    assert record.message == (
        "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_first_pod_of_a_self_affine_group_starts_it_and_the_rest_follow() -> None:
    """The first pod matches its own terms and nothing else does, so it may go anywhere; then the zone is set."""
    group = required("podAffinity", "{matchLabels: {app: batch}}", ZONE)
    text = node("a1", "zone-a") + node("b1", "zone-b") + node("b2", "zone-b")
    text += "".join(pod(f"batch-{i}", "{app: batch}", group) for i in range(4))
    records = run_text(text).records
    assert all(r.status == "Scheduled" for r in records)
    zones = {"a1": "zone-a", "b1": "zone-b", "b2": "zone-b"}
    assert len({zones[r.node] for r in records if r.node}) == 1


def test_preferred_anti_affinity_spreads_pods() -> None:
    spread = (
        "{podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
        f"[{{weight: 100, podAffinityTerm: {{labelSelector: {{matchLabels: {{app: api}}}}, topologyKey: {HOSTNAME}}}}}]}}}}"
    )
    text = node("n1") + node("n2") + node("n3")
    text += "".join(pod(f"api-{i}", "{app: api}", spread) for i in range(3))
    nodes = [n for _, _, n in summary(text)]
    assert sorted(nodes) == ["n1", "n2", "n3"]  # type: ignore[type-var]


def test_namespace_selector_over_namespace_objects() -> None:
    """Anti-affinity across the namespaces of a team, read from Namespace objects."""
    namespaces = (
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a-1, labels: {team: a}}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b-1, labels: {team: b}}\n---\n"
    )
    anti = required(
        "podAntiAffinity",
        "{matchLabels: {app: web}}",
        HOSTNAME,
        ", namespaceSelector: {matchLabels: {team: a}}",
    )
    text = namespaces + node("n1") + node("n2")
    text += pod("web-a", "{app: web}", node_name="n1", namespace="team-a-1")
    text += pod("web-b", "{app: web}", node_name="n2", namespace="team-b-1")
    text += pod("new", "{app: other}", anti)
    assert summary(text) == [("new", "Scheduled", "n2")]


def test_example_runs() -> None:
    cfg, registry = default_setup()
    text, _ = simulate(str(EXAMPLES / "anti-affinity.yaml"), cfg, registry, seed=1, output="json")
    pods = json.loads(text)["pods"]
    assert [p["status"] for p in pods] == [
        "Scheduled",
        "Scheduled",
        "Scheduled",
        "Unschedulable",
        "Scheduled",
    ]
    assert pods[3]["message"] == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert pods[4]["node"] == "n3"
