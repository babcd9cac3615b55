"""DRAStore's devices in use, kept up to date claim by claim: after any sequence of informer
updates, assumed writes, restores and in-flight allocations they are what a walk over every claim
gives (``GatherAllocatedState``)."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from app.api.resource import parse_resource_claim
from app.framework.dra import AllocatedState, DRAStore


def claim_raw(
    i: int, devices: list[int], version: int, admin: bool = False, share: bool = False
) -> dict[str, Any]:
    results = []
    for d in devices:
        result: dict[str, Any] = {"request": "r", "driver": "drv", "pool": "pool", "device": f"dev-{d}"}
        if admin:
            result["adminAccess"] = True
        if share:
            result["shareID"] = f"{i:08d}-0000-0000-0000-000000000000"
            result["consumedCapacity"] = {"memory": "1Gi"}
        results.append(result)
    raw: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"c{i}",
            "namespace": "default",
            "uid": f"uid-{i}",
            "resourceVersion": str(version),
        },
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
    }
    if devices:
        raw["status"] = {"allocation": {"devices": {"results": results}}}
    return raw


def walk(store: DRAStore) -> AllocatedState:
    """What kube's GatherAllocatedState computes: every current claim and every in-flight one."""
    state = AllocatedState()
    claims = store.list_claims() + [c for c in (store.pending_allocation(f"uid-{i}") for i in range(8)) if c]
    for claim in claims:
        for result in claim.allocation.results if claim.allocation else []:
            if result.admin_access:
                continue
            device = (result.driver, result.pool, result.device)
            if result.share_id:
                state.shared_device_ids.add((device, result.share_id))
                consumed = state.aggregated_capacity.setdefault(device, {})
                for name, amount in result.consumed_capacity.items():
                    consumed[name] = consumed.get(name, Fraction(0)) + amount
            else:
                state.allocated_devices.add(device)
    return state


def test_counts_follow_every_change() -> None:
    rng = random.Random(7)
    store = DRAStore()
    for version in range(1, 601):
        i = rng.randrange(8)
        devices = rng.sample(range(6), rng.randint(0, 2))
        raw = claim_raw(i, devices, version, admin=rng.random() < 0.1, share=rng.random() < 0.2)
        action = rng.randrange(6)
        if action == 0:
            store.upsert("ResourceClaim", f"default/c{i}", raw)
        elif action == 1:
            store.delete("ResourceClaim", f"default/c{i}")
        elif action == 2:
            store.assume(parse_resource_claim(raw))
        elif action == 3:
            store.restore("default", f"c{i}")
        elif action == 4:
            store.signal_pending_allocation(parse_resource_claim(raw))
        else:
            store.remove_pending_allocation(f"uid-{i}")
        assert store.allocated_state() == walk(store)
