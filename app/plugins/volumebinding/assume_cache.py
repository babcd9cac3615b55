"""The assume caches of PersistentVolumes and claims (``volumebinding/assume_cache.go``).

Reserve records the PV a claim will bind to (its claimRef set) and the claim a node was chosen for
(its selected-node annotation) before the API server knows: the next pod's cycle then sees the PV as
taken, so two pods never get the same PV. An assumed object stays until the informer brings a newer
version of it (the API write landed, or someone else changed it) or Unreserve restores it.

Versions are ``metadata.resourceVersion`` read as integers, as kube's ``APIObjectVersioner`` does; an
object without one (a state file) counts as version 0.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class _Versioned(Protocol):
    @property
    def resource_version(self) -> str: ...


T = TypeVar("T", bound=_Versioned)


class AssumeError(Exception):
    """Assuming an object failed (it is gone, or the assumed copy is out of date)."""


def object_version(obj: _Versioned) -> int:
    """``metadata.resourceVersion`` as an integer (0 when absent or not a number)."""
    try:
        return int(obj.resource_version)
    except ValueError:
        return 0


class AssumeCache(Generic[T]):
    """Assumed versions of objects over the informer's (``api``: key → object, read on every lookup)."""

    def __init__(self, description: str, api: Callable[[], dict[str, T]]) -> None:
        self.description = description
        self._api = api
        self._lock = threading.Lock()
        self._assumed: dict[str, tuple[T, int]] = {}

    def _latest(self, key: str, api_obj: T | None) -> T | None:
        entry = self._assumed.get(key)
        if entry is None:
            return api_obj
        if api_obj is None or object_version(api_obj) > entry[1]:
            # Deleted, or the informer has a newer version: the assumption is over.
            del self._assumed[key]
            return api_obj
        return entry[0]

    def get(self, key: str) -> T | None:
        """The assumed object if any and still current, else the informer's (``Get``)."""
        with self._lock:
            return self._latest(key, self._api().get(key))

    def get_api(self, key: str) -> T | None:
        """The informer's object, ignoring assumptions (``GetAPIObj``)."""
        return self._api().get(key)

    def latest_of(self, key: str, api_obj: T) -> T:
        """``api_obj`` or its assumed replacement (for lists built from the informer's objects)."""
        with self._lock:
            if key not in self._assumed:
                return api_obj
            latest = self._latest(key, api_obj)
            return latest if latest is not None else api_obj

    def assume(self, key: str, obj: T) -> None:
        """Record ``obj`` as the object's new version; it must be based on the latest version."""
        with self._lock:
            current = self._latest(key, self._api().get(key))
            if current is None:
                raise AssumeError(f'{self.description} "{key}" not found')
            new, stored = object_version(obj), object_version(current)
            if new != stored:
                raise AssumeError(
                    f'{self.description} "{key}" is out of sync (stored: {stored}, assume: {new})'
                )
            self._assumed[key] = (obj, new)

    def restore(self, key: str) -> None:
        """Drop the assumed version (``Restore``)."""
        with self._lock:
            self._assumed.pop(key, None)

    def assumed_keys(self) -> list[str]:
        """The keys with an assumed version (for tests and explanations)."""
        with self._lock:
            return list(self._assumed)
