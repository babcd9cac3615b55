"""Validation: the cases of validation_test.go plus the framework-construction checks berth runs at load."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from app.api.errors import FieldError
from app.config import ConfigErrors, expand_plugins, parse_config
from app.config.types import Plugin

V1 = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def valid_config() -> dict[str, Any]:
    """validation_test.go's validConfig in v1 form (plus what berth needs to build the frameworks)."""
    queue_sort = {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "PrioritySort"}]}
    return {
        **V1,
        "parallelism": 8,
        "clientConnection": {
            "acceptContentTypes": "application/json",
            "contentType": "application/json",
            "qps": 10,
            "burst": 10,
        },
        "leaderElection": {
            "resourceLock": "leases",
            "leaderElect": True,
            "leaseDuration": "30s",
            "renewDeadline": "15s",
            "retryPeriod": "5s",
            "resourceNamespace": "name",
            "resourceName": "name",
        },
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "profiles": [
            {
                "schedulerName": "me",
                "percentageOfNodesToScore": 35,
                "plugins": {"queueSort": copy.deepcopy(queue_sort), "score": {"disabled": [{"name": "*"}]}},
                "pluginConfig": [
                    {
                        "name": "DefaultPreemption",
                        "args": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
                    }
                ],
            },
            {
                "schedulerName": "other",
                "percentageOfNodesToScore": 35,
                "plugins": {
                    "queueSort": copy.deepcopy(queue_sort),
                    "bind": {"enabled": [{"name": "CustomBind"}]},
                },
            },
        ],
        "extenders": [{"urlPrefix": "http://127.0.0.1:8888", "prioritizeVerb": "prioritize", "weight": 1}],
    }


@pytest.fixture
def cat(full_catalog: Any) -> Any:
    return (
        full_catalog.add("CustomSort", {"queueSort"})
        .add("AnotherSort", {"queueSort"})
        .add("CustomBind", {"bind"})
    )


def error_paths(raw: dict[str, Any], catalog: Any) -> list[str]:
    try:
        parse_config(raw, catalog)
    except ConfigErrors as err:
        return [e.path for e in err.errors]
    except FieldError as err:
        return [err.path]
    return []


def mutate(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    cfg = valid_config()
    fn(cfg)
    return cfg


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(cfg: dict[str, Any]) -> None:
        target = cfg
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return apply


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], list[str]]] = {
    "good": (lambda c: None, []),
    "bad-parallelism-invalid-value": (_set(["parallelism"], 0), ["parallelism"]),
    "bad-resource-name-not-set": (_set(["leaderElection", "resourceName"], ""), []),  # "" is defaulted in v1
    "bad-resource-lock-not-leases": (
        _set(["leaderElection", "resourceLock"], "configmap"),
        ["leaderElection.resourceLock"],
    ),
    "bad-percentage-of-nodes-to-score": (
        _set(["percentageOfNodesToScore"], 101),
        ["percentageOfNodesToScore"],
    ),
    "negative-percentage-of-nodes-to-score": (
        _set(["percentageOfNodesToScore"], -1),
        ["percentageOfNodesToScore"],
    ),
    "scheduler-name-not-set": (_set(["profiles", 1, "schedulerName"], ""), ["profiles[1].schedulerName"]),
    "repeated-scheduler-name": (
        _set(["profiles", 0, "schedulerName"], "other"),
        ["profiles[1].schedulerName"],
    ),
    "greater-than-100-profile-percentage-of-nodes-to-score": (
        _set(["profiles", 1, "percentageOfNodesToScore"], 101),
        ["profiles[1].percentageOfNodesToScore"],
    ),
    "negative-profile-percentage-of-nodes-to-score": (
        _set(["profiles", 1, "percentageOfNodesToScore"], -1),
        ["profiles[1].percentageOfNodesToScore"],
    ),
    "different-queue-sort": (
        _set(["profiles", 1, "plugins", "queueSort", "enabled", 0, "name"], "AnotherSort"),
        ["profiles[1].plugins.queueSort"],
    ),
    "one-empty-queue-sort": (_set(["profiles", 0, "plugins"], None), ["profiles[1].plugins.queueSort"]),
    "extender-negative-weight": (_set(["extenders", 0, "weight"], -1), ["extenders[0].weight"]),
    "extender-duplicate-managed-resources": (
        _set(
            ["extenders", 0, "managedResources"], [{"name": "example.com/foo"}, {"name": "example.com/foo"}]
        ),
        ["extenders[0].managedResources[1].name"],
    ),
    "extender-duplicate-bind": (
        lambda c: (
            c["extenders"][0].update(bindVerb="foo"),
            c["extenders"].append(
                {"urlPrefix": "http://x", "prioritizeVerb": "prioritize", "bindVerb": "bar", "weight": 1}
            ),
        ),
        ["extenders"],
    ),
    "invalid-node-percentage": (
        _set(["profiles", 0, "pluginConfig", 0, "args", "minCandidateNodesPercentage"], 200),
        ["profiles[0].pluginConfig[0].args.minCandidateNodesPercentage"],
    ),
    "invalid-plugin-args": (
        _set(["profiles", 0, "pluginConfig", 0, "args"], {"kind": "InterPodAffinityArgs"}),
        ["profiles[0].pluginConfig[0].args.kind"],
    ),
    "duplicated-plugin-config": (
        _set(["profiles", 0, "pluginConfig"], [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]),
        ["profiles[0].pluginConfig[1]"],
    ),
    "invalid-plugins": (
        _set(
            ["profiles", 0, "plugins", "score", "enabled"],
            [{"name": n} for n in ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")],
        ),
        [f"profiles[0].plugins.score.enabled[{i}]" for i in range(4)],
    ),
    "valid-plugins": (
        _set(["profiles", 0, "plugins", "score", "enabled"], [{"name": "PodTopologySpread", "weight": 2}]),
        [],
    ),
    "extender-no-url-prefix": (_set(["extenders", 0, "urlPrefix"], ""), []),
    "burst-negative": (_set(["clientConnection", "burst"], -1), ["clientConnection.burst"]),
    "backoff-initial-zero-is-defaulted-only-when-unset": (
        _set(["podInitialBackoffSeconds"], 0),
        ["podInitialBackoffSeconds"],
    ),
    "backoff-max-below-initial": (
        lambda c: c.update(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
        ["podMaxBackoffSeconds"],
    ),
    "lease-not-greater-than-renew": (
        _set(["leaderElection", "leaseDuration"], "15s"),
        ["leaderElection.leaseDuration"],
    ),
    "renew-not-greater-than-retry-jitter": (
        _set(["leaderElection", "retryPeriod"], "13s"),
        ["leaderElection.renewDeadline"],
    ),
    "leader-election-off-skips-checks": (
        lambda c: c["leaderElection"].update(leaderElect=False, leaseDuration="1s", resourceLock="configmap"),
        [],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_validate_configuration(name: str, cat: Any) -> None:
    fn, want = CASES[name]
    assert error_paths(mutate(fn), cat) == want


def test_messages(cat: Any) -> None:
    def message(fn: Callable[[dict[str, Any]], None]) -> str:
        with pytest.raises(FieldError) as exc:
            parse_config(mutate(fn), cat)
        return str(exc.value)

    assert (
        message(_set(["parallelism"], 0))
        == "parallelism: Invalid value: 0: should be an integer value greater than zero"
    )
    assert message(_set(["profiles", 0, "schedulerName"], "other")) == (
        'profiles[1].schedulerName: Duplicate value: "profiles[0].schedulerName"'
    )
    assert message(_set(["percentageOfNodesToScore"], 101)) == (
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
    )
    assert message(_set(["extenders", 0, "weight"], -1)) == (
        "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"
    )
    assert message(_set(["leaderElection", "resourceLock"], "configmap")) == (
        'leaderElection.resourceLock: Invalid value: "configmap": resourceLock value must be "leases"'
    )
    assert message(_set(["profiles", 0, "plugins", "score", "enabled"], [{"name": "EBSLimits"}])) == (
        'profiles[0].plugins.score.enabled[0]: Invalid value: "EBSLimits": was invalid in version "v1" '
        '(KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")'
    )
    assert message(_set(["extenders", 0, "managedResources"], [{"name": "foo"}])) == (
        'extenders[0].managedResources[0].name: Invalid value: "foo": is an invalid extended resource name'
    )


def test_multiple_errors_are_all_reported(cat: Any) -> None:
    cfg = mutate(lambda c: c.update(parallelism=0, percentageOfNodesToScore=101))
    with pytest.raises(ConfigErrors) as exc:
        parse_config(cfg, cat)
    assert [e.path for e in exc.value.errors] == ["parallelism", "percentageOfNodesToScore"]
    assert str(exc.value).startswith("[parallelism: Invalid value: 0")


# --- framework-construction checks ------------------------------------------------------------------------


def one_profile(plugins: dict[str, Any], plugin_config: list[Any] | None = None) -> dict[str, Any]:
    return {**V1, "profiles": [{"plugins": plugins, "pluginConfig": plugin_config or []}]}


def test_unknown_plugin_at_extension_point(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(one_profile({"filter": {"enabled": [{"name": "NodeName"}, {"name": "Foo"}]}}), catalog)
    assert (
        str(exc.value)
        == 'profiles[0].plugins.filter.enabled[1].name: Invalid value: "Foo": FilterPlugin "Foo" does not exist'
    )


def test_unknown_plugin_in_multipoint_is_named_at_its_place_in_the_file(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(
            one_profile(
                {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 3}, {"name": "Foo"}]}}
            ),
            catalog,
        )
    # enabled[1] of the file, not the position after berth's default plugins in the merged list.
    assert (
        str(exc.value)
        == 'profiles[0].plugins.multiPoint.enabled[1].name: Invalid value: "Foo": plugin "Foo" does not exist'
    )
    # Args for a plugin no registry has are no error (kube-scheduler ignores them).
    parse_config(one_profile({}, [{"name": "VolumeBinding", "args": {}}]), catalog)


def test_plugin_not_extending_point(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(one_profile({"score": {"enabled": [{"name": "NodePorts"}]}}), catalog)
    assert str(exc.value) == (
        'profiles[0].plugins.score.enabled[0].name: Invalid value: "NodePorts": plugin "NodePorts" does not extend ScorePlugin plugin'
    )


def test_double_registration(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(
            one_profile({"filter": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}}), catalog
        )
    assert exc.value.message.endswith('plugin "NodeName" already registered as "FilterPlugin"')
    with pytest.raises(FieldError) as exc:
        # The last repeat replaces the default in place; the first one is appended at [11].
        parse_config(
            one_profile({"multiPoint": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}}), catalog
        )
    assert exc.value.path == "profiles[0].plugins.multiPoint.enabled[0].name"


def test_queue_sort_and_bind_counts(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(one_profile({"multiPoint": {"disabled": [{"name": "PrioritySort"}]}}), catalog)
    assert str(exc.value) == (
        "profiles[0].plugins.queueSort: Invalid value: 0: only one queue sort plugin required for profile with "
        'scheduler name "default-scheduler", but got 0'
    )
    with pytest.raises(FieldError) as exc:
        parse_config(one_profile({"bind": {"disabled": [{"name": "*"}]}}), catalog)
    assert str(exc.value) == (
        'profiles[0].plugins.bind: Required value: at least one bind plugin is needed for profile with scheduler name "default-scheduler"'
    )


def test_effective_queue_sort_must_match(catalog: Any) -> None:
    catalog.add("CustomSort", {"queueSort"})
    raw = {
        **V1,
        "profiles": [
            {"schedulerName": "a"},
            {
                "schedulerName": "b",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "CustomSort"}],
                        "disabled": [{"name": "PrioritySort"}],
                    },
                },
            },
        ],
    }
    with pytest.raises(FieldError) as exc:
        parse_config(raw, catalog)
    assert str(exc.value) == (
        'profiles[1].plugins.queueSort: Invalid value: "CustomSort": different queue sort plugins for profile "b": '
        '"CustomSort", first: "PrioritySort"'
    )


def test_negative_score_weight(catalog: Any) -> None:
    with pytest.raises(FieldError) as exc:
        parse_config(one_profile({"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}}), catalog)
    assert (
        str(exc.value)
        == "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1: must not be negative"
    )


def test_expand_plugins_order_and_weights(catalog: Any) -> None:
    raw = one_profile(
        {
            "score": {
                "enabled": [{"name": "ImageLocality", "weight": 5}],
                "disabled": [{"name": "TaintToleration"}],
            },
            "filter": {"enabled": [{"name": "NodePorts"}]},
        }
    )
    cfg = parse_config(raw, catalog)
    points = expand_plugins(cfg.profiles[0].plugins, catalog).points
    assert [p.name for p in points["filter"]] == [
        "NodePorts",  # explicitly re-enabled: overrides come first
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
    ]
    assert points["score"] == [
        Plugin("ImageLocality", 5),
        Plugin("NodeAffinity", 2),
        Plugin("NodeResourcesFit", 1),
        Plugin("NodeResourcesBalancedAllocation", 1),
    ]
    assert [p.name for p in points["queueSort"]] == ["PrioritySort"]
    assert [p.name for p in points["bind"]] == ["DefaultBinder"]
    assert [p.name for p in points["preEnqueue"]] == ["SchedulingGates"]
