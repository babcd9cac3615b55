"""DRAStore's devices in use, kept up to date claim by claim: after any sequence of informer
updates, assumed writes, restores and in-flight allocations they are what a walk over every claim
gives (``GatherAllocatedState``)."""

from __future__ import annotations

import random
import threading
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


# --- the claim assume cache's events (kube's assumecache TestAssume, TestRestore, TestEvents) -----


def heard(store: DRAStore) -> list[tuple[str | None, str | None]]:
    """What the store's listeners hear about claims, as (old, new) resourceVersions."""
    events: list[tuple[str | None, str | None]] = []

    def listen(kind: str, old: Any, new: Any) -> None:
        assert kind == "ResourceClaim"
        events.append((old and old.resource_version, new and new.resource_version))

    store.listeners.append(listen)
    return events


def claim(version: int, devices: list[int] | None = None) -> Any:
    return parse_resource_claim(claim_raw(1, devices or [], version))


def test_assume_is_heard_at_once_unless_the_written_version_is_older() -> None:
    """TestAssume: same and higher versions are assumed and heard as updates; a lower one is not."""
    for written, used, events in (
        (5, "5", [("5", "5")]),  # success-same-version
        (6, "6", [("5", "6")]),  # success-new-higher-version
        (4, "5", []),  # fail-new-lower-version
    ):
        store = DRAStore()
        store.put("ResourceClaim", claim(5))
        seen = heard(store)
        store.assume(claim(written, [1]))
        current = store.get_claim("default", "c1")
        assert current is not None and current.resource_version == used
        assert seen == events


def test_the_informer_delivering_what_was_assumed_is_not_heard_again() -> None:
    """PreBind's write is heard when assumed; the informer's copy of it, and any older version
    (the finalizer write before it), change nothing (``AssumeCache.add``: "not newer")."""
    store = DRAStore()
    store.put("ResourceClaim", claim(5))
    seen = heard(store)
    store.assume(claim(7, [1]))
    store.put("ResourceClaim", claim(6))  # the finalizer write, delivered late
    store.put("ResourceClaim", claim(7, [1]))  # the status write
    assert seen == [("5", "7")]
    current = store.get_claim("default", "c1")
    assert current is not None and current.resource_version == "7" and current.allocation is not None
    assert walk(store) == store.allocated_state()
    store.restore("default", "c1")  # nothing assumed any more: nothing to restore, nothing heard
    store.put("ResourceClaim", claim(8))  # someone deallocated it
    assert seen == [("5", "7"), ("7", "8")]
    assert store.allocated_state().allocated_devices == set()


def test_restore_is_heard_as_the_way_back_to_the_informers_version() -> None:
    """TestRestore: nothing for an unknown or unchanged claim; the assumed version back to the
    informer's after an Assume."""
    store = DRAStore()
    seen = heard(store)
    store.restore("default", "nothing")
    store.put("ResourceClaim", claim(5))
    store.restore("default", "c1")
    assert seen == [(None, "5")]
    store.assume(claim(6, [1]))
    store.restore("default", "c1")
    assert seen == [(None, "5"), ("5", "6"), ("6", "5")]
    current = store.get_claim("default", "c1")
    assert current is not None and current.allocation is None
    assert store.allocated_state().allocated_devices == set()


def test_informer_events_carry_the_latest_version() -> None:
    """TestEvents: a newer version is heard, an older one is not, a delete carries what was used."""
    store = DRAStore()
    seen = heard(store)
    store.put("ResourceClaim", claim(5))
    store.put("ResourceClaim", claim(6))
    store.put("ResourceClaim", claim(5))  # nop update
    current = store.get_claim("default", "c1")
    assert current is not None and current.resource_version == "6"
    store.assume(claim(7, [1]))
    store.delete("ResourceClaim", "default/c1")
    assert seen == [(None, "5"), ("5", "6"), ("6", "7"), ("7", None)]
    assert store.get_claim("default", "c1") is None


def test_a_claim_prebind_created_is_heard_when_the_informer_adds_it() -> None:
    """kube waits for the informer to see a claim it created (the one for extended resources):
    berth uses the written one at once, and both hear of it from the informer only."""
    store = DRAStore()
    seen = heard(store)
    store.assume(claim(3, [1]))
    current = store.get_claim("default", "c1")
    assert current is not None and current.resource_version == "3"
    assert seen == []
    store.put("ResourceClaim", claim(3, [1]))
    assert seen == [(None, "3")]


def test_claims_without_versions_are_always_taken() -> None:
    """Claims from state files and tests may have no resourceVersion: each delivery counts."""
    store = DRAStore()
    seen = heard(store)
    raw = claim_raw(1, [], 0)
    raw["metadata"].pop("resourceVersion")
    store.put("ResourceClaim", parse_resource_claim(raw))
    store.put("ResourceClaim", parse_resource_claim(raw))
    assert seen == [(None, ""), ("", "")]


def test_prebind_starts_from_the_newest_claim_the_store_knows() -> None:
    """PreBind's write starts from the assumed (or informer's) version when it is newer than the
    pod's PreFilter copy; an older one, or another claim of the same name, leaves the copy."""
    store = DRAStore()
    seen_by_prefilter = claim(3, [])
    store.put("ResourceClaim", claim(3, []))
    assert store.newest_claim(seen_by_prefilter).resource_version == "3"
    store.assume(claim(4, [1]))
    newest = store.newest_claim(seen_by_prefilter)
    assert newest.resource_version == "4" and newest.allocation is not None
    assert store.newest_claim(claim(5, [])).resource_version == "5"  # the store is behind this copy
    recreated = claim_raw(1, [], 6)
    recreated["metadata"]["uid"] = "uid-other"
    assert store.newest_claim(parse_resource_claim(recreated)).uid == "uid-other"
    assert store.newest_claim(parse_resource_claim(claim_raw(2, [], 2))).name == "c2"  # not stored


def test_writes_of_one_claim_take_turns_and_leave_nothing_behind() -> None:
    """A second PreBind of the same claim waits for the first one's turn; another claim does not."""
    store = DRAStore()
    order: list[str] = []
    first_has_turn, release_first = threading.Event(), threading.Event()

    def first() -> None:
        with store.claim_write_turn("uid-1"):
            first_has_turn.set()
            release_first.wait(5)
            order.append("first")

    def second() -> None:
        with store.claim_write_turn("uid-1"):
            order.append("second")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_has_turn.wait(5)
    threads[1].start()
    with store.claim_write_turn("uid-2"):
        order.append("other claim")
    release_first.set()
    for t in threads:
        t.join(5)
    assert order == ["other claim", "first", "second"]
    assert store._claim_writes == {}  # no lock kept for a claim nobody writes


def test_an_informer_claim_not_newer_than_the_one_in_use_is_settled_without_parsing() -> None:
    """The informer's copies of berth's own writes (the finalizer's version, older than the status
    write PreBind assumed; the assumed version itself) are not parsed again, and the store ends as
    parsing them would leave it: over a random sequence of informer updates (versions out of
    order), assumes and restores, a store fed raw objects and one fed parsed objects hear the
    same events and hold the same claims and devices in use."""
    rng = random.Random(11)
    by_raw, by_parsed = DRAStore(), DRAStore()
    seen_raw, seen_parsed = heard_any(by_raw), heard_any(by_parsed)
    for step in range(800):
        i = rng.randrange(3)
        version = max(1, step // 4 + rng.randint(-6, 2))  # mostly rising, often a late or repeated one
        raw = claim_raw(i, rng.sample(range(6), rng.randint(0, 2)), version)
        action = rng.randrange(4)
        for store in (by_raw, by_parsed):
            if action <= 1:
                if store is by_raw:
                    store.upsert("ResourceClaim", f"default/c{i}", raw)
                else:
                    store.put("ResourceClaim", parse_resource_claim(raw))
            elif action == 2:
                store.assume(parse_resource_claim(raw))
            else:
                store.restore("default", f"c{i}")
        assert seen_raw == seen_parsed
        for i in range(3):
            a, b = by_raw.get_claim("default", f"c{i}"), by_parsed.get_claim("default", f"c{i}")
            assert (a and (a.resource_version, a.allocation)) == (b and (b.resource_version, b.allocation))
        assert by_raw.allocated_state() == by_parsed.allocated_state()
    assert len(seen_raw) > 100


def heard_any(store: DRAStore) -> list[tuple[str, str | None, str | None]]:
    """What the store's listeners hear about claims, as (claim, old, new) resourceVersions."""
    events: list[tuple[str, str | None, str | None]] = []
    store.listeners.append(
        lambda kind, old, new: events.append(
            ((old or new).name, old and old.resource_version, new and new.resource_version)
        )
    )
    return events
