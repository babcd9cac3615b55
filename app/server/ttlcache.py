"""A small bounded cache whose entries expire, for TokenReview and SubjectAccessReview answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["TTLCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """Entries live for the ttl given when they were put; at most ``max_entries`` are kept.

    When full, expired entries go first, then the oldest. Safe to share between threads.
    """

    def __init__(self, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The live value for ``key``, or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (a ttl of 0 or less keeps nothing)."""
        if ttl <= 0:
            return
        with self._lock:
            now = self._clock()
            if key not in self._entries and len(self._entries) >= self.max_entries:
                self._evict(now)
            self._entries[key] = (now + ttl, value)

    def _evict(self, now: float) -> None:
        for key in [k for k, (expires, _) in self._entries.items() if expires <= now]:
            del self._entries[key]
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]  # dicts keep insertion order: the oldest

    def __len__(self) -> int:
        return len(self._entries)
