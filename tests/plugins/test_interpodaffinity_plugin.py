"""InterPodAffinity queueing hints, ported from plugins/interpodaffinity/plugin_test.go (v1.36.3).

``True`` stands for ``fwk.Queue`` and ``False`` for ``fwk.QueueSkip``. TestPodAffinitySignature is not
ported: berth has no pod signing (OpportunisticBatching).
"""

from __future__ import annotations

import pytest

from app.api.objects import Node, Pod
from app.config import load_config
from app.framework.interfaces import (
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.registry import IN_TREE_PLUGINS, in_tree_registry
from plugins.interpodaffinity_helpers import (
    affinity,
    exists_term,
    in_term,
    node,
    plugin,
    pod,
    term,
)

QUEUE, SKIP = True, False


def _aff_in() -> dict[str, object]:
    return affinity([in_term("service", "region", "securityscan", "value2")])


def _anti_in() -> dict[str, object]:
    return affinity(anti=[in_term("service", "region", "securityscan", "value2")])


def target(aff: dict[str, object] | None = None, labels: dict[str, str] | None = None, uid: str = "p") -> Pod:
    return pod(labels, aff=aff, name="p", uid=uid)


def other(labels: dict[str, str] | None = None, node_name: str = "fake-node", **kw: object) -> Pod:
    return pod(labels, node_name, uid=str(kw.pop("uid", "other")), **kw)  # type: ignore[arg-type]


POD_CHANGE_CASES: list[tuple[str, Pod, Pod | None, Pod | None, bool]] = [
    # (name, pod, old, new, want)
    (
        "add a pod which matches the pod affinity",
        target(_aff_in()),
        None,
        other({"service": "securityscan"}),
        QUEUE,
    ),
    ("add an un-scheduled pod", target(_aff_in()), None, other({"service": "securityscan"}, ""), SKIP),
    ("add a pod which doesn't match the pod affinity", target(_aff_in()), None, other({"aaa": "a"}), SKIP),
    (
        "update a pod from non-match to match pod affinity",
        target(_aff_in()),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        QUEUE,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        target(_aff_in()),
        other({"service": "value2"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        target(_aff_in()),
        other({"aaa": "a"}, ""),
        other({"service": "securityscan"}, ""),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        target(_aff_in()),
        other({"service": "securityscan"}),
        other({"aaa": "a"}),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        target(affinity([exists_term("aaa", "hostname"), exists_term("bbb", "hostname")])),
        other({"aaa": "a"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        target(affinity([exists_term("aaa", "hostname"), exists_term("bbb", "hostname")])),
        other({"aaa": "a"}),
        other({"aaa": "", "bbb": ""}),
        QUEUE,
    ),
    (
        "updated pod is the target pod",
        target(labels={"foo": "baz"}),
        pod({"foo": "bar"}, name="p", uid="p"),
        pod({"foo": "baz"}, name="p", uid="p"),
        QUEUE,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        target(_anti_in()),
        other({"service": "securityscan"}),
        other({"service": "aaaa"}),
        QUEUE,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        target(_anti_in()),
        other({"service": "bbb"}),
        other({"service": "securityscan"}),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        target(_anti_in()),
        other({"aaa": "a"}),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        target(_anti_in()),
        other({"service": "securityscan"}),
        None,
        QUEUE,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        target(labels={"service": "securityscan"}, uid=""),
        pod(node="fake-node", aff=_anti_in()),
        None,
        QUEUE,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        target(labels={"service": "foo"}, uid=""),
        pod(node="fake-node", aff=_anti_in()),
        None,
        SKIP,
    ),
    (
        "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match "
        "pending pod",
        target(_anti_in(), {"service": "foo"}, uid=""),
        pod({"service": "foo"}, "fake-node", aff=_anti_in()),
        None,
        SKIP,
    ),
    (
        "delete a nominated pod which doesn't match pod's anti-affinity",
        target(_anti_in(), uid=""),
        pod({"aaa": "a"}, nominated="fake-node"),
        None,
        SKIP,
    ),
    (
        "delete a nominated pod which matches pod's anti-affinity",
        target(_anti_in(), uid=""),
        pod({"service": "securityscan"}, nominated="fake-node"),
        None,
        QUEUE,
    ),
]


@pytest.mark.parametrize(("name", "target_pod", "old", "new", "want"), POD_CHANGE_CASES, ids=lambda v: "")
def test_is_schedulable_after_pod_change(
    name: str, target_pod: Pod, old: Pod | None, new: Pod | None, want: bool
) -> None:
    assert plugin().is_schedulable_after_pod_change(target_pod, old, new) is want, name


def _zone_aff() -> dict[str, object]:
    return affinity([in_term("service", "zone", "securityscan", "value2")])


def _zone_anti() -> dict[str, object]:
    return affinity(anti=[term({"matchLabels": {"another": "label"}}, "zone")])


NODE_CHANGE_CASES: list[tuple[str, dict[str, object], Node | None, Node, bool]] = [
    # affinity
    (
        "add a new node with matched pod affinity topologyKey",
        _zone_aff(),
        None,
        node("node-a", {"zone": "zone1"}),
        QUEUE,
    ),
    (
        "add a new node without matched topologyKey",
        affinity([in_term("service", "region", "securityscan", "value2")]),
        None,
        node("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node label but not topologyKey",
        _zone_aff(),
        node("node-a", {"aaa": "a"}),
        node("node-a", {"aaa": "b"}),
        SKIP,
    ),
    (
        "update node label that isn't related to the pod affinity",
        _zone_aff(),
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        _zone_aff(),
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone2"}),
        QUEUE,
    ),
    (
        "update node to have the affinity topology label",
        _zone_aff(),
        node("node-a", {"aaa": "a"}),
        node("node-a", {"zone": "zone1"}),
        QUEUE,
    ),
    # anti-affinity
    (
        "add a new node with matched pod anti-affinity topologyKey",
        _zone_anti(),
        None,
        node("node-a", {"zone": "zone1"}),
        QUEUE,
    ),
    (
        "add a new node without matched pod anti-affinity topologyKey",
        _zone_anti(),
        None,
        node("node-a"),
        QUEUE,
    ),
    (
        "update node label that isn't related to the pod anti-affinity",
        _zone_anti(),
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _zone_anti(),
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"zone": "zone2"}),
        QUEUE,
    ),
    (
        "update node to have the anti-affinity topology label",
        _zone_anti(),
        node("node-a", {"aaa": "a"}),
        node("node-a", {"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _zone_anti(),
        node("node-a", {"zone": "zone1"}),
        node("node-a", {"aaa": "a"}),
        QUEUE,
    ),
]


@pytest.mark.parametrize(("name", "aff", "old", "new", "want"), NODE_CHANGE_CASES, ids=lambda v: "")
def test_is_schedulable_after_node_change(
    name: str, aff: dict[str, object], old: Node | None, new: Node, want: bool
) -> None:
    assert plugin().is_schedulable_after_node_change(pod(aff=aff, name="p"), old, new) is want, name


# --- Registration ------------------------------------------------------------------------------------


def test_registered_in_tree_with_its_extension_points() -> None:
    assert InterPodAffinity in IN_TREE_PLUGINS
    for iface in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
        assert issubclass(InterPodAffinity, iface)
    assert plugin().pre_filter_extensions() is not None


def test_default_profile_enables_it_with_weight_two() -> None:
    cfg = load_config(None, in_tree_registry())
    fwk_weights = {p.name: p.weight for p in cfg.profiles[0].plugins.multi_point.enabled}
    assert fwk_weights["InterPodAffinity"] == 2
