"""The nominator (nominator.go): add/update/delete and per-node listing."""

from __future__ import annotations

import dataclasses

from app.backend.queue.nominator import MODE_NOOP, MODE_OVERRIDE, Nominator
from app.framework.types import PodInfo
from tests.builders import make_pod


def names(n: Nominator, node: str) -> list[str]:
    return [pi.pod.name for pi in n.nominated_pods_for_node(node)]


def test_override_nominates_and_replaces_the_previous_nomination() -> None:
    n = Nominator()
    p = make_pod("p")
    n.add_nominated_pod(PodInfo(p), MODE_OVERRIDE, "a")
    assert names(n, "a") == ["p"] and n.nominated_node_of(p) == "a"
    n.add_nominated_pod(PodInfo(p), MODE_OVERRIDE, "b")
    assert names(n, "a") == [] and names(n, "b") == ["p"] and len(n) == 1


def test_noop_uses_the_pods_status_and_empty_override_clears() -> None:
    n = Nominator()
    p = dataclasses.replace(make_pod("p"), nominated_node_name="a")
    n.add_nominated_pod(PodInfo(p), MODE_NOOP)
    assert names(n, "a") == ["p"]
    n.add_nominated_pod(PodInfo(p), MODE_OVERRIDE, "")
    assert names(n, "a") == [] and n.nominated_node_of(p) is None
    n.add_nominated_pod(PodInfo(make_pod("q")), MODE_NOOP)  # no status.nominatedNodeName: nothing
    assert len(n) == 0


def test_update_keeps_an_in_memory_nomination() -> None:
    n = Nominator()
    old = make_pod("p")
    n.add_nominated_pod(PodInfo(old), MODE_OVERRIDE, "a")
    new = dataclasses.replace(old, labels={"v": "2"})
    n.update_nominated_pod(old, PodInfo(new))
    assert [pi.pod.labels for pi in n.nominated_pods_for_node("a")] == [{"v": "2"}]
    # The status now names another node: that wins.
    newer = dataclasses.replace(new, nominated_node_name="b")
    n.update_nominated_pod(new, PodInfo(newer))
    assert names(n, "a") == [] and names(n, "b") == ["p"]


def test_delete_and_pod_lister_checks() -> None:
    bound = make_pod("bound", nodeName="x")
    n = Nominator(pod_lister=lambda p: None if p.name == "gone" else (bound if p.name == "bound" else p))
    n.add_nominated_pod(PodInfo(make_pod("gone")), MODE_OVERRIDE, "a")
    n.add_nominated_pod(PodInfo(make_pod("bound")), MODE_OVERRIDE, "a")
    p = make_pod("p")
    n.add_nominated_pod(PodInfo(p), MODE_OVERRIDE, "a")
    assert names(n, "a") == ["p"]
    n.delete_nominated_pod_if_exists(p)
    n.delete_nominated_pod_if_exists(p)  # idempotent
    assert names(n, "a") == [] and len(n) == 0
