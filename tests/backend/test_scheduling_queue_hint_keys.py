"""The queue's key index for hints registered with HintKeys (DynamicResources' claim hint).

A pod waiting for its claims is asked about a ResourceClaim event only when the event's claim is one
it names (or a deallocation, when its claims can resolve): the calls skipped answer QueueSkip, so a
queue with the index makes the same moves, in the same order, as one that asks every pod. Checked
here with the real plugin and store, against the same queue with the keys stripped from its hints.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from backend.queue_helpers import PROFILE, SORT, FakeClock

from app import metrics
from app.api.objects import Pod, parse_pod
from app.api.resource import parse_resource_claim
from app.backend.queue.scheduling_queue import PriorityQueue
from app.framework.dra import DRAStore
from app.framework.events import (
    RESOURCE_CLAIM,
    ActionType,
    ClusterEvent,
    QueueingHint,
    QueueingHintFunction,
    QueueingHintMap,
    build_queueing_hint_map,
)
from app.plugins.dynamicresources.plugin import NAME, DynamicResources
from fakes import FakeHandle
from plugins.dra_helpers import claim_raw, exact

CLAIM_ADD = ClusterEvent(RESOURCE_CLAIM, ActionType.ADD)
CLAIM_UPDATE = ClusterEvent(RESOURCE_CLAIM, ActionType.UPDATE)
ALLOCATION = {
    "devices": {"results": [{"request": "req-1", "driver": "d", "pool": "p", "device": "dev-0"}]},
}


def pod_raw(
    name: str, *, named: str | None = None, template: bool = False, generated: str | None = None
) -> dict[str, Any]:
    """A pod naming the claim ``named`` and/or one from a template; ``generated`` is the name the
    resourceclaim controller recorded in the pod's status for the template entry."""
    claims: list[dict[str, Any]] = []
    if named is not None:
        claims.append({"name": "shared", "resourceClaimName": named})
    if template:
        claims.append({"name": "own", "resourceClaimTemplateName": "tmpl"})
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "resourceClaims": claims},
    }
    if generated is not None:
        raw["status"] = {"resourceClaimStatuses": [{"name": "own", "resourceClaimName": generated}]}
    return raw


def claim_of(name: str, owner: str | None = None, allocated: bool = False, finalizer: bool = False) -> Any:
    raw = claim_raw(name, exact("req-1", "cls", 1), owner_uid=owner)
    if allocated:
        raw["status"] = {"allocation": ALLOCATION}
    if finalizer:
        raw["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    return raw


def without_keys(hint_map: QueueingHintMap) -> QueueingHintMap:
    """The same registrations without HintKeys: the queue asks every pod, as kube-scheduler does."""
    return {
        event: [QueueingHintFunction(f.plugin_name, f.hint_fn) for f in fns]
        for event, fns in hint_map.items()
    }


@dataclass
class Harness:
    """One queue with DynamicResources (PreEnqueue and hints) over a store the test feeds."""

    keyed: bool
    store: DRAStore = field(default_factory=DRAStore)
    clock: FakeClock = field(default_factory=FakeClock)
    claim_hint_calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.plugin = DynamicResources(None, FakeHandle(), self.store)
        hint_map = build_queueing_hint_map([(NAME, self.plugin.events_to_register())])
        if not self.keyed:
            hint_map = without_keys(hint_map)
        original = self.plugin.is_schedulable_after_claim_change

        def counted(pod: Pod, old: object, new: object) -> QueueingHint:
            self.claim_hint_calls.append(pod.name)
            return original(pod, old, new)

        hint_map = {
            event: [
                QueueingHintFunction(f.plugin_name, counted, f.keys)
                if getattr(f.hint_fn, "__name__", "") == "is_schedulable_after_claim_change"
                else f
                for f in fns
            ]
            for event, fns in hint_map.items()
        }
        self.queue = PriorityQueue(
            SORT.less,
            sort_key=SORT.sort_key,
            clock=self.clock,
            queueing_hints={PROFILE: hint_map},
            pre_enqueue={PROFILE: [self.plugin]},
        )
        self.pods: dict[str, Pod] = {}
        self.claims: dict[str, dict[str, Any]] = {}

    def add_pod(self, raw: dict[str, Any]) -> None:
        pod = parse_pod(raw)
        self.pods[pod.name] = pod
        self.queue.add(pod)

    def update_pod(self, raw: dict[str, Any]) -> None:
        new = parse_pod(raw)
        old = self.pods[new.name]
        self.pods[new.name] = new
        self.queue.update(old, new)

    def put_claim(self, raw: dict[str, Any]) -> None:
        name = raw["metadata"]["name"]
        old = self.claims.get(name)
        self.claims[name] = raw
        self.store.upsert("ResourceClaim", f"default/{name}", raw)
        event = CLAIM_ADD if old is None else CLAIM_UPDATE
        old_claim = parse_resource_claim(old) if old is not None else None
        self.queue.move_all_to_active_or_backoff_queue(event, old_claim, parse_resource_claim(raw))

    def pop_and_fail(self) -> None:
        """An attempt DynamicResources rejects (its Filter found no devices)."""
        qpi = self.queue.pop(timeout=0)
        if qpi is not None:
            qpi.unschedulable_plugins = {NAME}
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())

    def tick(self, seconds: float) -> None:
        self.clock.step(seconds)
        self.queue.flush_backoff_q_completed()

    def where(self) -> tuple[list[str], list[str], list[str], dict[str, int]]:
        q = self.queue
        return (
            [p.name for p in q.pods_in_active_q()],
            [p.name for p in q.pods_in_backoff_q()],
            [p.name for p in q.unschedulable_pods()],
            q.counts(),
        )


@contextmanager
def recorded_moves() -> Iterator[list[tuple[str, str]]]:
    """Every ``scheduler_queue_incoming_pods_total`` increment, in order."""
    moves: list[tuple[str, str]] = []
    original = metrics.observe_queue_incoming

    def record(queue: str, event: str) -> None:
        moves.append((queue, event))
        original(queue, event)

    metrics.observe_queue_incoming = record  # type: ignore[assignment]
    try:
        yield moves
    finally:
        metrics.observe_queue_incoming = original  # type: ignore[assignment]


Step = Callable[[Harness], None]


def random_steps(rng: random.Random, count: int) -> list[Step]:
    """Pods with template claims, with a shared named claim, or both; the controller creating their
    claims and recording them in the pods' status in any order; claims allocated, given finalizers
    and deallocated; attempts failing; time passing."""
    pods = [f"p{i}" for i in range(12)]
    kinds = {p: rng.choice(("template", "named", "both")) for p in pods}
    shared = ["s0", "s1", "s2"]
    named = {p: rng.choice(shared) for p in pods}

    def spec(p: str, generated: str | None) -> dict[str, Any]:
        kind = kinds[p]
        return pod_raw(
            p,
            named=named[p] if kind in ("named", "both") else None,
            template=kind in ("template", "both"),
            generated=generated,
        )

    def claim_name(p: str) -> str:
        return f"{p}-own"

    steps: list[Step] = []
    for _ in range(count):
        p = rng.choice(pods)
        action = rng.randrange(9)
        if action == 0:
            steps.append(lambda h, p=p: h.add_pod(spec(p, None)) if p not in h.pods else None)
        elif action == 1:
            steps.append(lambda h, p=p: h.update_pod(spec(p, claim_name(p))) if p in h.pods else None)
        elif action == 2:
            steps.append(lambda h, p=p: h.put_claim(claim_of(claim_name(p), owner=f"uid-{p}")))
        elif action == 3:
            s = rng.choice(shared)
            steps.append(lambda h, s=s: h.put_claim(claim_of(s)))
        elif action == 4:
            name = rng.choice([*shared, claim_name(p)])
            owner = None if name in shared else f"uid-{p}"
            steps.append(
                lambda h, n=name, o=owner: (
                    h.put_claim(claim_of(n, o, allocated=True, finalizer=True)) if n in h.claims else None
                )
            )
        elif action == 5:
            name = rng.choice([*shared, claim_name(p)])
            owner = None if name in shared else f"uid-{p}"
            steps.append(
                lambda h, n=name, o=owner: (
                    h.put_claim(claim_of(n, o, finalizer=True)) if n in h.claims else None
                )
            )
        elif action in (6, 7):
            steps.append(Harness.pop_and_fail)
        else:
            seconds = rng.choice((0.5, 1.0, 3.0, 11.0))
            steps.append(lambda h, s=seconds: h.tick(s))
    return steps


def run(keyed: bool, steps: list[Step]) -> tuple[list[Any], list[tuple[str, str]], Harness]:
    harness = Harness(keyed)
    states: list[Any] = []
    with recorded_moves() as moves:
        for step in steps:
            step(harness)
            states.append(harness.where())
    return states, moves, harness


@pytest.mark.parametrize("seed", range(40))
def test_the_key_index_makes_the_same_moves_as_asking_every_pod(seed: int) -> None:
    steps = random_steps(random.Random(seed), 120)
    keyed_states, keyed_moves, keyed = run(True, steps)
    plain_states, plain_moves, plain = run(False, steps)
    assert keyed_moves == plain_moves
    assert keyed_states == plain_states
    assert len(keyed.claim_hint_calls) <= len(plain.claim_hint_calls)


def test_the_index_asks_far_fewer_hints_when_many_pods_wait_for_the_controller() -> None:
    steps: list[Step] = [lambda h, i=i: h.add_pod(pod_raw(f"p{i}", template=True)) for i in range(50)]
    steps += [
        lambda h, i=i: h.put_claim(claim_of(f"p{i}-own", owner=f"uid-p{i}", finalizer=True))
        for i in range(50)
    ]
    _, keyed_moves, keyed = run(True, steps)
    _, plain_moves, plain = run(False, steps)
    assert keyed_moves == plain_moves
    assert len(plain.claim_hint_calls) == 50 * 50  # every waiting pod, for every claim created
    assert keyed.claim_hint_calls == []  # none of them can resolve its claims without its status entry


def gated_harness() -> Harness:
    return Harness(keyed=True)


def test_a_template_pod_without_its_status_entry_is_not_asked_about_its_own_claim() -> None:
    h = gated_harness()
    h.add_pod(pod_raw("p", template=True))
    h.put_claim(claim_of("p-own", owner="uid-p"))
    assert h.claim_hint_calls == []
    assert h.where()[2] == ["p"] and h.queue.counts()["gated"] == 1
    # The controller records the claim in the pod's status: the pod update ungates it.
    h.update_pod(pod_raw("p", template=True, generated="p-own"))
    assert h.where()[0] == ["p"]


def test_a_named_claim_missing_then_added_asks_only_its_pod() -> None:
    h = gated_harness()
    h.add_pod(pod_raw("a", named="s0"))
    h.add_pod(pod_raw("b", named="s1"))
    assert h.queue.counts()["gated"] == 2
    h.put_claim(claim_of("s0"))
    assert h.claim_hint_calls == ["a"]
    assert h.where()[0] == ["a"] and h.where()[2] == ["b"]


def test_another_pods_claim_asks_nobody_and_a_status_update_adds_the_pods_own_key() -> None:
    h = gated_harness()
    h.add_pod(pod_raw("a", template=True))
    h.add_pod(pod_raw("b", template=True))
    h.put_claim(claim_of("b-own", owner="uid-b"))
    assert h.claim_hint_calls == []
    # a's status names its claim, which does not exist yet: a stays gated, now keyed by it.
    h.update_pod(pod_raw("a", template=True, generated="a-own"))
    assert h.where()[2] == ["a", "b"]
    h.put_claim(claim_of("a-own", owner="uid-a"))
    assert h.claim_hint_calls == ["a"]
    assert h.where()[0] == ["a"]


def test_a_deallocation_asks_the_pods_whose_claims_resolve_and_moves_them() -> None:
    h = gated_harness()
    h.put_claim(claim_of("mine"))
    h.put_claim(claim_of("other", allocated=True))
    h.add_pod(pod_raw("resolvable", named="mine"))
    h.add_pod(pod_raw("waiting", template=True))
    h.pop_and_fail()  # "resolvable" is rejected by DynamicResources' Filter
    assert h.where()[2] == ["waiting", "resolvable"]
    h.tick(11.0)
    h.put_claim(claim_of("other"))  # deallocated: devices were freed
    assert h.claim_hint_calls == ["resolvable"]
    assert h.where()[0] == ["resolvable"]


def test_a_claim_event_with_an_object_the_hint_cannot_read_asks_every_pod() -> None:
    h = gated_harness()
    h.add_pod(pod_raw("p", template=True))
    h.queue.move_all_to_active_or_backoff_queue(CLAIM_ADD, None, "not a claim")
    # The hint raised, which counts as Queue; PreEnqueue gates the pod again.
    assert h.claim_hint_calls == ["p"]
    assert h.queue.counts()["gated"] == 1
