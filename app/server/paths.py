"""HTTP path patterns as ``--authorization-always-allow-paths`` takes them (``k8s.io/apiserver/pkg/authorization/path``).

A pattern is a full path, or a prefix ending in ``*``; the leading ``/`` is optional and ``/`` alone
matches the root. A ``*`` anywhere else is an error.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PathPatternError", "PathSet"]


class PathPatternError(ValueError):
    """A pattern with a ``*`` that is not the last character."""


class PathSet:
    """A set of path patterns; :meth:`matches` is a set lookup plus one ``startswith`` per prefix."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        exact: set[str] = set()
        prefixes: list[str] = []
        for pattern in self.patterns:
            p = pattern.removeprefix("/")
            if "*" in p[:-1]:
                raise PathPatternError(f'only trailing * allowed in "{pattern}"')
            if p.endswith("*"):
                prefixes.append(p[:-1])
            else:
                exact.add(p)
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)

    def matches(self, path: str) -> bool:
        """Whether ``path`` is one of the paths or starts with one of the prefixes."""
        p = path.removeprefix("/")
        return p in self._exact or any(p.startswith(prefix) for prefix in self._prefixes)

    def __bool__(self) -> bool:
        return bool(self.patterns)
