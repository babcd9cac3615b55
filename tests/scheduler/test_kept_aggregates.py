"""PodTopologySpread's counts and InterPodAffinity's topology scores kept by the snapshot across
cycles decide exactly as summing them afresh in every cycle (kube-scheduler's way): two engines,
one of them never keeping a sum, schedule the same pods through the same cluster changes (pods
deleted and relabelled, nodes relabelled across zones, added and removed) and must agree on every
node, score and message."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Hashable
from typing import Any

import pytest

from app.api.objects import Node, Pod
from app.backend.cache.cache import Cache
from app.backend.cache.snapshot import Snapshot
from app.config import load_config
from app.framework.aggregate import A
from app.framework.cycle_state import CycleState
from app.framework.types import NodeInfo
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import ClusterObjects, Engine
from builders import make_node, make_pod
from fakes import FakeHandle

ZONES = ("z1", "z2", "z3")
#: Nodes move into these zones too: "z4" fills and empties, so domains appear and disappear.
MOVES = (*ZONES, "z4")
APPS = ("web", "db", "cache")


def node(i: int, zone: str | None) -> Node:
    labels = {"topology.kubernetes.io/zone": zone} if zone is not None else {}
    return make_node(f"node-{i}", {"cpu": "4", "memory": "16Gi", "pods": "30"}, labels)


def pod(i: int, rng: random.Random) -> Pod:
    """A pod of one of three apps, spread over zones, with preferred (anti-)affinity, sometimes required.

    An app's pods share their affinity terms, as a Deployment's do; their spreading varies.
    """
    n = rng.randrange(len(APPS))
    app, other = APPS[n], APPS[(n + 1) % len(APPS)]
    spread = {
        "maxSkew": rng.choice((1, 2, 3)),
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
        "labelSelector": {"matchLabels": {"app": app}},
    }
    hostname_term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    zone_term = {
        "labelSelector": {"matchLabels": {"app": other}},
        "topologyKey": "topology.kubernetes.io/zone",
    }
    affinity: dict[str, Any] = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10 * (n + 1), "podAffinityTerm": hostname_term}
            ]
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5 + n, "podAffinityTerm": zone_term}
            ]
        },
    }
    if rng.random() < 0.1:
        affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [hostname_term]
    if rng.random() < 0.05:
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [zone_term]
    # Some pods have no constraints of their own: the system defaults spread them (a Service selects them).
    spreading = [spread] if rng.random() < 0.7 else []
    return make_pod(
        f"pod-{i}",
        [{"cpu": "100m", "memory": "100Mi"}],
        labels={"app": app},
        topologySpreadConstraints=spreading,
        affinity=affinity,
        uid=f"pod-{i}",
    )


SERVICES = [
    {"kind": "Service", "metadata": {"name": app, "namespace": "default"}, "spec": {"selector": {"app": app}}}
    for app in APPS
]


def engine(nodes: list[Node], *, keep: bool) -> tuple[Engine, list[int]]:
    """An engine; without ``keep`` its snapshot sums every aggregate afresh. Also returns a counter
    of the aggregates built, [built, asked for]."""
    registry = in_tree_registry()
    e = Engine(load_config(None, registry), registry, seed=7, objects=ClusterObjects({"Service": SERVICES}))
    for n in nodes:
        e.cache.add_node(n)
    snapshot = e.algorithm.snapshot
    kept_aggregate = snapshot.aggregate
    counter = [0, 0]

    def aggregate(
        key: Hashable, factory: Callable[[], A], candidates: Callable[[], list[NodeInfo]] | None = None
    ) -> A:
        def counting_factory() -> A:
            counter[0] += 1
            return factory()

        counter[1] += 1
        if keep:
            return kept_aggregate(key, counting_factory, candidates)
        fresh = counting_factory()
        fresh.add_all(snapshot.list())  # every node: candidates must give the same sum
        return fresh

    snapshot.aggregate = aggregate  # type: ignore[method-assign]
    return e, counter


def decision(e: Engine, p: Pod) -> tuple[Any, ...]:
    attempt = e.schedule_one(p)
    scores = None
    if attempt.result is not None:
        scores = [(s.name, s.total, tuple(sorted(s.plugin_scores.items()))) for s in attempt.result.scores]
    return attempt.status, attempt.node, attempt.message, scores


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_sums_decide_as_fresh_ones(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [node(i, ZONES[i % 3]) for i in range(14)] + [node(14, None)]
    kept, kept_count = engine(nodes, keep=True)
    fresh, _ = engine(nodes, keep=False)
    bound: list[Pod] = []
    next_node = len(nodes)
    for i in range(160):
        p = pod(i, rng)
        got = decision(kept, p)
        assert got == decision(fresh, p), f"attempt {i} of {p.key}"
        if got[0] == "Scheduled":
            cached = kept.cache.get_pod(p.uid)
            assert cached is not None
            bound.append(cached)
        roll, zone = rng.random(), rng.choice(ZONES)
        for e in (kept, fresh):
            if roll < 0.15 and bound:
                e.cache.remove_pod(bound[-1])
            elif roll < 0.25 and bound:
                # Relabelled into another app: counted by other selectors from now on.
                old = bound[0]
                e.cache.update_pod(old, dataclasses.replace(old, labels={"app": APPS[i % 3]}))
            elif roll < 0.32:
                # A node moves to another zone: same position in the node list, new domain.
                n = nodes[i % len(nodes)]
                e.cache.update_node(n, node(int(n.name.split("-")[1]), MOVES[i % 4]))
            elif roll < 0.35:
                e.cache.add_node(node(next_node, zone))
            elif roll < 0.37:
                e.cache.remove_node(nodes[(i * 7) % len(nodes)])
        if roll < 0.15 and bound:
            bound.pop()
        elif roll < 0.25 and bound:
            bound.pop(0)
        elif 0.32 <= roll < 0.35:
            next_node += 1
    built, asked = kept_count
    # The kept engine reused its sums in most attempts (PreScore asks in each, PreFilter with
    # DoNotSchedule constraints).
    assert asked >= 160 and built < asked / 3, (built, asked)


# --- what a kept sum must forget ------------------------------------------------------------------


def kept_plugins() -> tuple[Cache, Snapshot, PodTopologySpread, InterPodAffinity]:
    """Both plugins over a real cache's snapshot (so that sums are kept and fed its changes)."""
    cache, snapshot, handle = Cache(), Snapshot(), FakeHandle()
    handle.snapshot = snapshot  # type: ignore[assignment]
    spread = PodTopologySpread(PodTopologySpreadArgs([], "List"), handle)
    affinity = InterPodAffinity(InterPodAffinityArgs(1, False), handle)
    return cache, snapshot, spread, affinity


def spread_counts(cache: Cache, snapshot: Snapshot, plugin: PodTopologySpread, p: Pod) -> dict[str, int]:
    cache.update_snapshot(snapshot)
    return plugin.cal_pre_filter_state(p, snapshot.list()).tp_value_to_match_num[0]


def test_a_zone_left_by_its_last_node_is_no_longer_a_domain() -> None:
    cache, snapshot, spread, _ = kept_plugins()
    cache.add_node(node(1, "z1"))
    cache.add_node(node(2, "z4"))
    cache.add_pod(dataclasses.replace(pod(0, random.Random(1)), node_name="node-1"))
    probe = pod(1, random.Random(1))
    assert spread_counts(cache, snapshot, spread, probe) == {"z1": 1, "z4": 0}
    assert spread_counts(cache, snapshot, spread, probe) == {"z1": 1, "z4": 0}  # now kept
    cache.update_node(node(2, "z4"), node(2, "z1"))
    # z4 has no node left: with it counted at 0, every z1 node would be over maxSkew.
    assert spread_counts(cache, snapshot, spread, probe) == {"z1": 1}


def test_topology_scores_no_pod_contributes_to_any_more_are_gone() -> None:
    cache, snapshot, _, affinity = kept_plugins()
    cache.add_node(node(1, "z1"))
    existing = dataclasses.replace(pod(0, random.Random(1)), node_name="node-1")
    cache.add_pod(existing)
    probe = pod(1, random.Random(1))
    for _ in range(2):  # the second time, kept
        cache.update_snapshot(snapshot)
        state = CycleState()
        assert affinity.pre_score(state, probe, snapshot.list()) is None
        assert state.get(PRE_SCORE_STATE_KEY).topology_score  # type: ignore[union-attr]
    cache.remove_pod(existing)
    cache.update_snapshot(snapshot)
    # As a fresh sum: no entry at all, so PreScore skips.
    status = affinity.pre_score(CycleState(), probe, snapshot.list())
    assert status is not None and status.is_skip()


def test_a_group_whose_last_pod_left_can_start_again() -> None:
    # Required affinity to its own group: with no pod of the group left anywhere, the first-pod rule
    # admits the pod again, which needs the kept affinity counts to be empty, not zero.
    cache, snapshot, _, affinity = kept_plugins()
    cache.add_node(node(1, "z1"))
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "topology.kubernetes.io/zone"}
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    existing = make_pod("first", labels={"app": "x"}, nodeName="node-1", **spec)
    probe = make_pod("next", labels={"app": "x"}, **spec)
    cache.add_pod(existing)
    for _ in range(2):  # the second time, kept
        cache.update_snapshot(snapshot)
        state = CycleState()
        affinity.pre_filter(state, probe, snapshot.list())
        assert affinity.filter(state, probe, snapshot.list()[0]) is None
    cache.remove_pod(existing)
    cache.update_snapshot(snapshot)
    state = CycleState()
    affinity.pre_filter(state, probe, snapshot.list())
    assert affinity.filter(state, probe, snapshot.list()[0]) is None
