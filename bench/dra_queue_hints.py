"""The queue's cost of ResourceClaim events while pods wait for the resourceclaim controller.

SchedulingWithResourceClaimTemplate's pods are created faster than kube-controller-manager makes
their claims: hundreds wait, gated by DynamicResources' PreEnqueue (their template entry has no
``resourceClaimStatuses`` entry yet). For each pod in turn, as the controller and the scheduler
write them, the queue hears: the claim created (ResourceClaim/Add), the pod's status naming it (the
pod's update ungates it; it is popped), then the scheduler's finalizer and allocation writes (two
ResourceClaim/Updates). Every claim event asks DynamicResources' hint about every waiting pod unless
the queue's key index (``HintKeys``) narrows it to the pods naming the claim.

Prints, for the same sequence, the queue as berth runs it (with the index) and the same queue with
the keys stripped from the hints (asking every waiting pod, as kube-scheduler does in Go): CPU per
claim event and the hint calls made.

Usage: ``.venv/bin/python bench/dra_queue_hints.py [--waiting 300] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from app.api.objects import Pod, parse_pod  # noqa: E402
from app.api.resource import ResourceClaim, parse_resource_claim  # noqa: E402
from app.backend.queue.scheduling_queue import PriorityQueue  # noqa: E402
from app.framework.dra import DRAStore  # noqa: E402
from app.framework.events import (  # noqa: E402
    RESOURCE_CLAIM,
    ActionType,
    ClusterEvent,
    QueueingHint,
    QueueingHintFunction,
    QueueingHintMap,
    build_queueing_hint_map,
)
from app.plugins.dynamicresources.plugin import NAME, DynamicResources  # noqa: E402
from app.plugins.queuesort.priority_sort import PrioritySort  # noqa: E402
from fakes import FakeHandle  # noqa: E402

PROFILE = "default-scheduler"
CLAIM_ADD = ClusterEvent(RESOURCE_CLAIM, ActionType.ADD)
CLAIM_UPDATE = ClusterEvent(RESOURCE_CLAIM, ActionType.UPDATE)


def pod_raw(i: int, generated: bool) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-{i}"},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}],
        },
    }
    if generated:
        raw["status"] = {
            "resourceClaimStatuses": [{"name": "resource", "resourceClaimName": f"pod-{i}-claim"}]
        }
    return raw


def claim_raw(i: int, finalizer: bool = False, allocated: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"pod-{i}-claim",
        "namespace": "default",
        "uid": f"claim-{i}",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{i}", "uid": f"uid-{i}", "controller": True}
        ],
    }
    if finalizer:
        meta["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    raw: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}},
    }
    if allocated:
        raw["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "req-0", "driver": "d", "pool": "p", "device": f"dev-{i}"}]
                }
            }
        }
    return raw


class Run:
    """One queue over one store; counts the claim hint's calls."""

    def __init__(self, keyed: bool) -> None:
        self.store = DRAStore()
        self.calls = 0
        plugin = DynamicResources(None, FakeHandle(), self.store)
        hint_map = build_queueing_hint_map([(NAME, plugin.events_to_register())])
        claim_hint = plugin.is_schedulable_after_claim_change

        def counted(pod: Pod, old: object, new: object) -> QueueingHint:
            self.calls += 1
            return claim_hint(pod, old, new)

        wrapped: QueueingHintMap = {}
        for event, fns in hint_map.items():
            wrapped[event] = [
                QueueingHintFunction(f.plugin_name, counted, f.keys if keyed else None)
                if event.resource == RESOURCE_CLAIM
                else QueueingHintFunction(f.plugin_name, f.hint_fn)
                for f in fns
            ]
        sort = PrioritySort(None, FakeHandle())
        self.queue = PriorityQueue(
            sort.less,
            sort_key=sort.sort_key,
            queueing_hints={PROFILE: wrapped},
            pre_enqueue={PROFILE: [plugin]},
        )

    def claim_event(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        self.store.upsert("ResourceClaim", f"default/{new['metadata']['name']}", new)
        old_claim: ResourceClaim | None = parse_resource_claim(old) if old is not None else None
        event = CLAIM_ADD if old is None else CLAIM_UPDATE
        self.queue.move_all_to_active_or_backoff_queue(event, old_claim, parse_resource_claim(new))


def measure(keyed: bool, waiting: int) -> tuple[float, int, int]:
    """CPU seconds spent in the claim events, their number, and the hint calls."""
    run = Run(keyed)
    pods = {i: parse_pod(pod_raw(i, False)) for i in range(waiting)}
    for pod in pods.values():
        run.queue.add(pod)
    claims_cpu = 0.0
    events = 0
    for i in range(waiting):
        created, finalized, allocated = claim_raw(i), claim_raw(i, True), claim_raw(i, True, True)
        start = time.process_time()
        run.claim_event(None, created)
        claims_cpu += time.process_time() - start
        updated = parse_pod(pod_raw(i, True))
        run.queue.update(pods[i], updated)
        qpi = run.queue.pop(timeout=0)
        assert qpi is not None and qpi.pod.name == f"pod-{i}", "the pod named by its status must be ungated"
        run.queue.done(qpi.pod.uid)
        start = time.process_time()
        run.claim_event(created, finalized)
        run.claim_event(finalized, allocated)
        claims_cpu += time.process_time() - start
        events += 3
    return claims_cpu, events, run.calls


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--waiting", type=int, default=300, help="pods waiting for their claims at the start")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each queue (best kept)")
    args = parser.parse_args()
    if args.waiting < 1 or args.rounds < 1:
        parser.error("--waiting and --rounds must be at least 1")
    best: dict[bool, tuple[float, int, int]] = {}
    for _ in range(args.rounds):
        for keyed in (False, True):
            result = measure(keyed, args.waiting)
            if keyed not in best or result[0] < best[keyed][0]:
                best[keyed] = result
    print(
        f"{args.waiting} pods waiting for the controller, then scheduled one by one (best of {args.rounds})"
    )
    print(f"{'queue':<34} {'claim events':>12} {'CPU ms':>8} {'us/event':>9} {'hint calls':>11}")
    for keyed, label in ((False, "asking every waiting pod (kube)"), (True, "key index (berth)")):
        cpu, events, calls = best[keyed]
        print(f"{label:<34} {events:>12} {cpu * 1e3:>8.1f} {cpu / events * 1e6:>9.1f} {calls:>11}")


if __name__ == "__main__":
    main()
