"""Static authorization rules, always-allow path patterns and the review cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.server.authn import UserInfo
from app.server.paths import PathPatternError, PathSet
from app.server.rules import RulesError, StaticRules
from app.server.ttlcache import TTLCache


def test_path_patterns_are_full_paths_or_trailing_star_prefixes() -> None:
    paths = PathSet(["/healthz", "metrics", "/debug/*", "/"])
    assert paths.matches("/healthz") and paths.matches("/metrics") and paths.matches("/")
    assert paths.matches("/debug/pods/ns/name") and paths.matches("/debug/")
    assert not paths.matches("/healthz/ping") and not paths.matches("/debug")
    with pytest.raises(PathPatternError, match=r'only trailing \* allowed in "/a\*/b"'):
        PathSet(["/a*/b"])


def test_rules_grant_by_user_or_group_path_and_verb(tmp_path: Path) -> None:
    file = tmp_path / "rules.yaml"
    file.write_text(
        "rules:\n"
        "- users: [system:kube-scheduler]\n  paths: [/filter, /prioritize, /bind]\n  verbs: [post]\n"
        "- groups: [monitoring]\n  paths: ['/metrics*']\n  verbs: ['*']\n"
    )
    rules = StaticRules.load(str(file))
    scheduler = UserInfo("system:kube-scheduler")
    prometheus = UserInfo("prom", groups=("monitoring",))
    assert rules.allows(scheduler, "post", "/filter")
    assert not rules.allows(scheduler, "get", "/filter")
    assert not rules.allows(scheduler, "get", "/metrics")
    assert rules.allows(prometheus, "get", "/metrics/resources")
    assert not rules.allows(UserInfo("monitoring"), "get", "/metrics")  # a group is not a user name


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], 'expected a mapping with one key, "rules"'),
        ({"rules": [{"users": ["a"], "paths": ["/x"]}]}, r"rules\[0\].verbs: Required value"),
        ({"rules": [{"paths": ["/x"], "verbs": ["get"]}]}, r"rules\[0\]: needs users or groups"),
        ({"rules": [{"users": ["a"], "paths": ["/x"], "verbs": ["GET"]}]}, "lower-case HTTP methods"),
        ({"rules": [{"users": "a", "paths": ["/x"], "verbs": ["get"]}]}, r"rules\[0\].users: must be a list"),
        ({"rules": [{"user": ["a"], "paths": ["/x"], "verbs": ["get"]}]}, 'unknown field "user"'),
        (
            {"rules": [{"users": ["a"], "paths": ["/*x"], "verbs": ["get"]}]},
            r"rules\[0\].paths: only trailing",
        ),
    ],
)
def test_malformed_rules_name_the_field(doc: object, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        StaticRules.parse(doc, "rules.yaml")


def test_unreadable_rules_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match=r"missing\.yaml: No such file"):
        StaticRules.load(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [")
    with pytest.raises(RulesError, match=r"bad\.yaml: not valid YAML"):
        StaticRules.load(str(bad))


def test_cache_entries_expire_and_the_oldest_make_room() -> None:
    now = [0.0]
    cache: TTLCache[str, int] = TTLCache(max_entries=2, clock=lambda: now[0])
    cache.put("a", 1, 10)
    cache.put("b", 2, 5)
    cache.put("zero", 3, 0)  # a ttl of 0 keeps nothing
    assert (cache.get("a"), cache.get("b"), cache.get("zero")) == (1, 2, None)
    now[0] = 6
    assert cache.get("b") is None and cache.get("a") == 1
    cache.put("c", 3, 10)
    cache.put("d", 4, 10)  # full: "a" (oldest) goes
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (None, 3, 4)
    assert len(cache) == 2
