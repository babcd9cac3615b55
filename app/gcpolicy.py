"""The garbage collector's policy for long-running berth processes (``berth run``, ``berth serve``).

A scheduler's heap is mostly long-lived: the cache's nodes and pods, the informers' stores, the
queue. CPython's cyclic collector re-walks all of it on every full (generation-2) collection, which
its default thresholds set off every few thousand allocations' worth of survivors: with 5,000 nodes
and 10,000 pods cached each full pass takes 0.6-1.4 s and frees nothing, and nothing is scheduled
meanwhile. kube-scheduler (Go) has no such pause. The policy:

- **freeze what survives**: after the initial sync, and again after every full collection, the
  survivors go to the permanent generation (``gc.freeze()``), so the next full pass only walks what
  was allocated since. Objects freed by reference counting leave the permanent generation as usual;
  only a reference cycle that dies while frozen stays until the next compaction.
- **compaction**: when the frozen population has doubled since the last one, one full pass over
  everything (``gc.unfreeze()``, collect, freeze) reclaims such cycles, at most every five minutes.
  Its cost is paid once per doubling of the heap, so it is amortised; the runner calls :func:`compact_if_due`
  from its idle loop, never from a scheduling cycle.
- **thresholds**: CPython's defaults (700, 10, 10), measured against a larger generation 0. On
  SchedulingBasic/5000Nodes the young collections freed nothing (2,572 generation-0 and 233
  generation-1 collections, 0 objects), so fewer looked cheaper; but with generation 0 at 50,000
  (every 20 for generation 1) a run on SchedulingNodeAffinity/5000Nodes had one generation-1
  collection of 0.59 s of CPU (it walks the survivors of a million allocations), longer than any
  pause the defaults gave with the freezing above (0.19 s wall for generation 1, 0.61 s wall for a
  full pass on a machine at load 15-20). Small, frequent young collections keep every pause short;
  the freezing keeps the full passes from growing with the cache. A generation 0 of 10,000 was
  measured too (``bench/scheduler_perf.py``, berth alone, runs alternated): it halves the
  collector's CPU (SchedulingBasic/5000Nodes 0.95-1.07 → 0.43-0.51 s a run, PreemptionBasic
  0.84-1.38 → 0.36-0.43 s), but over 30,000 pods at 5,000 nodes berth's CPU per pod was the same
  (1.15 ms both) and its longest pause doubled: a generation-1 pass, over the survivors of up to
  100,000 allocations, of 349 ms wall against a full pass of 185 ms. So the defaults stay.
- **returning freed memory**: glibc's malloc keeps the pages of freed blocks (the watch streams'
  buffers, a cycle's transient lists, most of them allocated by other threads than the main one, so
  in per-thread arenas) for reuse and returns little to the system on its own; :func:`compact_if_due`
  calls ``malloc_trim(0)`` every :data:`TRIM_INTERVAL` seconds once the policy is installed. On
  PreemptionBasic/1000Nodes it brought the RSS after the burst from about 270 to 231 MiB (a thread
  arena from 40 to 15 MiB); the peak, during the burst, hardly moves (253 and 264 against 265-273).
  Not on glibc: nothing to call.
- **observed**: every collection is timed from :data:`gc.callbacks`, in wall time (the pause the
  scheduling loop sees) and in the thread's CPU time (what the collector cost; on a loaded machine
  the wall time also counts the seconds the process was not running); :func:`stats` gives the
  counts and the longest pause per generation, full passes longer than 100 ms are logged at ``-v=2``, and
  the totals at exit (``berth run`` logs them on shutdown).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from app import logs

__all__ = [
    "THRESHOLDS",
    "TRIM_INTERVAL",
    "GcStats",
    "compact",
    "compact_if_due",
    "install",
    "stats",
    "trim_if_due",
    "uninstall",
]

THRESHOLDS = (700, 10, 10)
"""``gc.set_threshold``'s values under this policy (generation 0, 1, 2)."""

LONG_PAUSE = 0.1
"""A full collection longer than this many seconds is logged at -v=2."""


@dataclass
class GcStats:
    """Collections per generation, their total and longest pause (seconds), and compactions."""

    collections: list[int] = field(default_factory=lambda: [0, 0, 0])
    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    cpu_seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    longest: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    collected: list[int] = field(default_factory=lambda: [0, 0, 0])
    compactions: int = 0
    frozen: int = 0

    def summary(self) -> dict[str, Any]:
        """The numbers as log fields."""
        return {
            "collections": ",".join(map(str, self.collections)),
            "pauseSeconds": ",".join(f"{s:.3f}" for s in self.seconds),
            "cpuSeconds": ",".join(f"{s:.3f}" for s in self.cpu_seconds),
            "longestPauseSeconds": ",".join(f"{s:.3f}" for s in self.longest),
            "collected": ",".join(map(str, self.collected)),
            "compactions": self.compactions,
            "frozen": gc.get_freeze_count(),
        }


_lock = threading.Lock()
_stats = GcStats()
_started = 0.0
_started_cpu = 0.0
_installed = False
_previous_thresholds: tuple[int, int, int] | None = None
_frozen_at_compaction = 0
_compacted_at = 0.0

COMPACTION_MIN_INTERVAL = 300.0
"""Seconds between two compactions at least, however fast the heap grows."""

TRIM_INTERVAL = 2.0
"""Seconds between two ``malloc_trim`` calls at least (each takes a few milliseconds)."""


def _find_malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), "malloc_trim", None) if library else None
    except OSError:
        return None


_malloc_trim = _find_malloc_trim()
_trimmed_at = 0.0


def _on_collection(phase: str, info: dict[str, int]) -> None:
    """gc's callback: time the collection; after a full one, freeze its survivors."""
    global _started, _started_cpu
    if phase == "start":
        _started = time.perf_counter()
        _started_cpu = time.thread_time()
        return
    elapsed = time.perf_counter() - _started
    generation = info["generation"]
    _stats.collections[generation] += 1
    _stats.seconds[generation] += elapsed
    _stats.cpu_seconds[generation] += time.thread_time() - _started_cpu
    _stats.collected[generation] += info["collected"]
    if elapsed > _stats.longest[generation]:
        _stats.longest[generation] = elapsed
    if generation == 2:
        gc.freeze()
        if elapsed > LONG_PAUSE and logs.enabled(2):
            logs.info(
                "Long garbage collection",
                2,
                generation=2,
                seconds=round(elapsed, 3),
                collected=info["collected"],
            )


def install(thresholds: tuple[int, int, int] = THRESHOLDS) -> None:
    """Apply the policy to this process: thresholds, the timing callback, and a first freeze of
    whatever is alive now (call it once the long-lived state is built)."""
    global _installed, _previous_thresholds, _frozen_at_compaction, _compacted_at
    with _lock:
        if not _installed:
            _previous_thresholds = gc.get_threshold()
            gc.callbacks.append(_on_collection)
            _installed = True
        gc.set_threshold(*thresholds)
        gc.collect()  # frees what the startup left as garbage, and freezes the rest (callback)
        gc.freeze()
        _frozen_at_compaction = gc.get_freeze_count()
        _compacted_at = time.monotonic()


def uninstall() -> None:
    """Undo :func:`install` (tests): default thresholds, no callback, nothing frozen."""
    global _installed
    with _lock:
        if _installed:
            gc.callbacks.remove(_on_collection)
            if _previous_thresholds is not None:
                gc.set_threshold(*_previous_thresholds)
            _installed = False
        gc.unfreeze()


def compact() -> None:
    """One full collection over everything, frozen or not, then freeze the survivors again: reclaims
    reference cycles that died after being frozen."""
    global _frozen_at_compaction, _compacted_at
    with _lock:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _stats.compactions += 1
        _frozen_at_compaction = gc.get_freeze_count()
        _compacted_at = time.monotonic()


def trim_if_due(now: float | None = None) -> bool:
    """Return the C heap's free pages to the system (``malloc_trim(0)``) when the policy is installed,
    the C library has it, and the last trim was :data:`TRIM_INTERVAL` seconds ago; whether it ran."""
    global _trimmed_at
    now = time.monotonic() if now is None else now
    if not _installed or _malloc_trim is None or now - _trimmed_at < TRIM_INTERVAL:
        return False
    _malloc_trim(0)
    _trimmed_at = now
    return True


def compact_if_due() -> bool:
    """:func:`trim_if_due`, then :func:`compact` when the frozen population has doubled since the
    last compaction, which was at least :data:`COMPACTION_MIN_INTERVAL` ago; whether it compacted."""
    trim_if_due()
    if not _installed or time.monotonic() - _compacted_at < COMPACTION_MIN_INTERVAL:
        return False
    if gc.get_freeze_count() < 2 * _frozen_at_compaction:
        return False
    compact()
    return True


def stats() -> GcStats:
    """A copy of the collection counts and pauses since the process started."""
    copy = GcStats(
        list(_stats.collections),
        list(_stats.seconds),
        list(_stats.cpu_seconds),
        list(_stats.longest),
        list(_stats.collected),
        _stats.compactions,
        gc.get_freeze_count(),
    )
    return copy
