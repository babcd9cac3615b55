"""The storage listers over the engine's objects: parsed once, updated by the changes only, malformed
objects left out (as if absent) rather than crashing a cycle."""

from __future__ import annotations

from app.plugins.helper.storage import StorageLister, shared_storage_lister
from app.scheduler.scheduler import CHANGE_LOG_SIZE, ClusterObjects
from plugins.storage_helpers import pv, pvc


def test_changes_are_applied_incrementally() -> None:
    objects = ClusterObjects({"": [pv("a"), pvc("c1")]})
    lister = StorageLister(objects)
    first = lister.pvs()
    assert list(first) == ["a"]
    assert lister.pvs() is first  # no change: the same index
    objects.upsert("PersistentVolume", "b", pv("b"))
    objects.delete("PersistentVolume", "a")
    objects.upsert("PersistentVolumeClaim", "default/c2", pvc("c2"))
    assert list(lister.pvs()) == ["b"]
    assert sorted(lister.pvcs()) == ["default/c1", "default/c2"]
    assert list(first) == ["a"]  # a reader of the earlier index keeps it unchanged
    objects.delete("PersistentVolumeClaim", "default/c1")
    assert list(lister.pvcs()) == ["default/c2"]


def test_a_log_too_short_falls_back_to_a_full_read() -> None:
    objects = ClusterObjects()
    lister = StorageLister(objects)
    assert lister.pvs() == {}
    for i in range(3 * CHANGE_LOG_SIZE):
        objects.upsert("PersistentVolume", f"pv-{i % 10}", pv(f"pv-{i % 10}"))
    assert sorted(lister.pvs()) == sorted(f"pv-{i}" for i in range(10))


def test_malformed_objects_are_left_out() -> None:
    objects = ClusterObjects({"": [pv("good"), pv("bad", capacity={"storage": "lots"})]})
    assert list(StorageLister(objects).pvs()) == ["good"]
    objects.upsert("PersistentVolume", "worse", pv("worse", accessModes="RWO"))
    lister = shared_storage_lister(objects)
    assert list(lister.pvs()) == ["good"]
    assert shared_storage_lister(objects) is lister
