"""CycleState: per-attempt data that plugins share between extension points."""

from __future__ import annotations

from typing import Any


class StateData:
    """Data a plugin stores in the cycle state. Subclasses override :meth:`clone` when mutable."""

    __slots__ = ()

    def clone(self) -> StateData:
        """Copy for a nominated-pods or preemption dry run; immutable data returns itself."""
        return self


class CycleState:
    """Key/value store for one scheduling attempt (``framework.CycleState``)."""

    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # The PreBind plugins whose PreBindPreFlight said Skip: their PreBind is not called.
        self.skip_pre_bind_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        """Return the data under ``key``, or raise KeyError (kube-scheduler's ErrNotFound)."""
        return self._data[key]

    def get(self, key: str) -> Any:
        """Return the data under ``key`` or None."""
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self._data[key] = value

    def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """A copy whose StateData values are cloned, for dry runs."""
        copy = CycleState()
        copy._data = {k: (v.clone() if isinstance(v, StateData) else v) for k, v in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy
