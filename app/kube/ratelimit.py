"""Client-side rate limiting: client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``).

Every request berth sends to the API server takes one token first, so that a relist storm or a burst
of binds never exceeds ``clientConnection.qps`` on average, with at most ``burst`` requests at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """A thread-safe token bucket: ``qps`` tokens per second, at most ``burst`` saved up.

    The bucket starts full, as client-go's does, so the first ``burst`` requests go out at once.
    ``qps <= 0`` disables limiting (kube-scheduler's clients treat a non-positive QPS the same way
    once defaulting has run).
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        """Whether the bucket never makes a caller wait."""
        return self.qps <= 0

    def reserve(self) -> float:
        """Take a token now and return how long the caller must wait before using it.

        Reserving under the lock and sleeping outside it keeps waiters in FIFO order of arrival
        without holding the lock while asleep.
        """
        if self.unlimited:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def accept(self) -> float:
        """Block until a token is available (client-go's ``Accept``); the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return max(delay, 0.0)
