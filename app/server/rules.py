"""``--authorization-static-rules FILE``: authorization without SubjectAccessReview access.

For clusters where berth may not create SubjectAccessReviews (or has no cluster at all), a small
YAML or JSON file grants non-resource URLs to users and groups::

    rules:
    - users: ["system:kube-scheduler"]          # client-certificate CN or TokenReview username
      paths: ["/filter", "/prioritize", "/preempt", "/bind"]
      verbs: ["post"]
    - groups: ["monitoring"]                     # certificate O or TokenReview groups
      paths: ["/metrics", "/configz"]
      verbs: ["get"]

A rule allows a request when its user is in ``users`` or one of its groups is in ``groups``, its
path matches ``paths`` (full paths or prefixes ending in ``*``) and its verb is in ``verbs``
(lower-case HTTP methods, or ``*``). Rules only allow; whatever no rule allows goes on to the
SubjectAccessReview, if any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from app.server.authn import UserInfo
from app.server.paths import PathPatternError, PathSet

__all__ = ["Rule", "RulesError", "StaticRules"]

_KEYS = ("users", "groups", "paths", "verbs")


class RulesError(Exception):
    """The rules file cannot be read or is malformed; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One grant: who (users or groups), where (paths) and how (verbs)."""

    users: frozenset[str]
    groups: frozenset[str]
    paths: PathSet
    verbs: frozenset[str]

    def allows(self, user: UserInfo, verb: str, path: str) -> bool:
        """Whether this rule grants ``verb`` on ``path`` to ``user``."""
        if user.name not in self.users and self.groups.isdisjoint(user.groups):
            return False
        return ("*" in self.verbs or verb in self.verbs) and self.paths.matches(path)


class StaticRules:
    """The rules of one file."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)

    def allows(self, user: UserInfo, verb: str, path: str) -> bool:
        """Whether any rule grants the request."""
        return any(rule.allows(user, verb, path) for rule in self.rules)

    @classmethod
    def load(cls, path: str) -> StaticRules:
        """Read and validate the file at ``path``."""
        try:
            with open(path, encoding="utf-8") as fh:
                doc = yaml.safe_load(fh)
        except OSError as err:
            raise RulesError(f"{path}: {err.strerror or err}") from err
        except yaml.YAMLError as err:
            raise RulesError(f"{path}: not valid YAML or JSON: {err}") from err
        return cls.parse(doc, path)

    @classmethod
    def parse(cls, doc: Any, source: str) -> StaticRules:
        """Validate a decoded rules document; ``source`` names it in errors."""
        if not isinstance(doc, dict) or set(doc) != {"rules"} or not isinstance(doc["rules"], list):
            raise RulesError(f'{source}: expected a mapping with one key, "rules", holding a list of rules')
        return cls([_rule(raw, f"{source}: rules[{i}]") for i, raw in enumerate(doc["rules"])])


def _strings(raw: dict[str, Any], key: str, where: str) -> frozenset[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RulesError(f"{where}.{key}: must be a list of non-empty strings")
    return frozenset(value)


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise RulesError(f"{where}: must be a mapping with {', '.join(_KEYS)}")
    for key in raw:
        if key not in _KEYS:
            raise RulesError(f'{where}: unknown field "{key}" (want {", ".join(_KEYS)})')
    users, groups = _strings(raw, "users", where), _strings(raw, "groups", where)
    paths, verbs = _strings(raw, "paths", where), _strings(raw, "verbs", where)
    if not users and not groups:
        raise RulesError(f"{where}: needs users or groups")
    if not paths:
        raise RulesError(f"{where}.paths: Required value")
    if not verbs:
        raise RulesError(f"{where}.verbs: Required value")
    if any(v != v.lower() for v in verbs):
        raise RulesError(f"{where}.verbs: verbs are lower-case HTTP methods (get, post, ...) or *")
    try:
        path_set = PathSet(sorted(paths))
    except PathPatternError as err:
        raise RulesError(f"{where}.paths: {err}") from err
    return Rule(users, groups, path_set, verbs)
