"""app.gcpolicy: what survives a full collection leaves the collector's reach, pauses are counted."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app import gcpolicy


@pytest.fixture
def policy() -> Iterator[None]:
    gcpolicy.install()
    try:
        yield
    finally:
        gcpolicy.uninstall()


class Node:
    """A container object the collector tracks."""

    def __init__(self, i: int) -> None:
        self.labels = {"i": i}


def test_install_freezes_the_live_heap_and_sets_the_thresholds(policy: None) -> None:
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == gcpolicy.THRESHOLDS


def test_survivors_of_a_full_collection_are_frozen_and_the_pause_is_counted(policy: None) -> None:
    before = gcpolicy.stats()
    cache = [Node(i) for i in range(20_000)]  # long-lived, like nodes added after the initial sync
    frozen = gc.get_freeze_count()
    gc.collect()
    after = gcpolicy.stats()
    assert gc.get_freeze_count() >= frozen + len(cache)  # the next full pass will not walk them
    assert after.collections[2] == before.collections[2] + 1
    assert after.seconds[2] > before.seconds[2]
    assert after.longest[2] > 0


def test_compaction_reclaims_a_cycle_that_died_frozen(policy: None) -> None:
    a, b = Node(1), Node(2)
    a.labels["peer"] = b  # type: ignore[assignment]
    b.labels["peer"] = a  # type: ignore[assignment]
    gc.collect()  # the cycle is alive: frozen
    del a, b
    gc.collect()  # frozen objects are out of reach: the dead cycle stays
    held = gc.get_freeze_count()
    gcpolicy.compact()
    assert gc.get_freeze_count() < held
    assert gcpolicy.stats().compactions >= 1


def test_compaction_waits_for_the_heap_to_double_and_the_interval(
    policy: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not gcpolicy.compact_if_due()  # just installed: too soon
    monkeypatch.setattr(gcpolicy, "COMPACTION_MIN_INTERVAL", 0.0)
    assert not gcpolicy.compact_if_due()  # the frozen heap has not doubled
    keep = [Node(i) for i in range(2 * gc.get_freeze_count())]
    gc.collect()
    assert gcpolicy.compact_if_due()
    assert len(keep) > 0


def test_uninstall_restores_the_defaults() -> None:
    defaults = gc.get_threshold()
    gcpolicy.install((5000, 5, 5))
    gcpolicy.uninstall()
    assert gc.get_threshold() == defaults
    assert gc.get_freeze_count() == 0
    assert gcpolicy.stats().summary()["frozen"] == 0


def test_freed_c_heap_pages_are_returned_at_most_once_per_interval(policy: None) -> None:
    if gcpolicy._malloc_trim is None:
        pytest.skip("the C library has no malloc_trim (not glibc)")
    start = gcpolicy._trimmed_at + gcpolicy.TRIM_INTERVAL + 1.0
    assert gcpolicy.trim_if_due(start)
    assert not gcpolicy.trim_if_due(start + gcpolicy.TRIM_INTERVAL / 2)  # too soon
    assert gcpolicy.trim_if_due(start + gcpolicy.TRIM_INTERVAL)


def test_nothing_is_trimmed_without_the_policy() -> None:
    gcpolicy.uninstall()
    assert not gcpolicy.trim_if_due(gcpolicy._trimmed_at + 10 * gcpolicy.TRIM_INTERVAL)
