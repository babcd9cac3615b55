"""Defaulting: mergePlugins (default_plugins_test.go) and SetDefaults_KubeSchedulerConfiguration (defaults_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import KUBE_SCHEDULER_DEFAULT_PLUGINS, Plugin, Plugins, PluginSet, parse_config
from app.config.defaults import default_plugins, merge_plugins
from app.plugins.defaultpreemption.args import DefaultPreemptionArgs
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs

V1 = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def ps(enabled: list[Plugin] | None = None, disabled: list[str] | None = None) -> PluginSet:
    return PluginSet(enabled or [], [Plugin(n) for n in disabled or []])


def P(name: str, weight: int = 0) -> Plugin:
    return Plugin(name, weight)


MERGE_CASES = {
    "AppendCustomPlugin": (
        Plugins(filter=ps([P("CustomPlugin")])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2"), P("CustomPlugin")])),
    ),
    "InsertAfterDefaultPlugins2": (
        Plugins(filter=ps([P("CustomPlugin"), P("DefaultPlugin2")], ["DefaultPlugin2"])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("CustomPlugin"), P("DefaultPlugin2")], ["DefaultPlugin2"])),
    ),
    "InsertBeforeAllPlugins": (
        Plugins(filter=ps([P("CustomPlugin"), P("DefaultPlugin1"), P("DefaultPlugin2")], ["*"])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(filter=ps([P("CustomPlugin"), P("DefaultPlugin1"), P("DefaultPlugin2")], ["*"])),
    ),
    "ReorderDefaultPlugins": (
        Plugins(filter=ps([P("DefaultPlugin2"), P("DefaultPlugin1")], ["*"])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(filter=ps([P("DefaultPlugin2"), P("DefaultPlugin1")], ["*"])),
    ),
    "ApplyNilCustomPlugin": (
        None,
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(filter=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
    ),
    "CustomPluginOverrideDefaultPlugin": (
        Plugins(filter=ps([P("Plugin1", 2), P("Plugin3", 3)])),
        Plugins(filter=ps([P("Plugin1"), P("Plugin2"), P("Plugin3")])),
        Plugins(filter=ps([P("Plugin1", 2), P("Plugin2"), P("Plugin3", 3)])),
    ),
    "OrderPreserveAfterOverride": (
        Plugins(filter=ps([P("Plugin2", 2), P("Plugin1", 1)])),
        Plugins(filter=ps([P("Plugin1"), P("Plugin2"), P("Plugin3")])),
        Plugins(filter=ps([P("Plugin1", 1), P("Plugin2", 2), P("Plugin3")])),
    ),
    "RepeatedCustomPlugin": (
        Plugins(filter=ps([P("Plugin1"), P("Plugin2", 2), P("Plugin3"), P("Plugin2", 4)])),
        Plugins(filter=ps([P("Plugin1"), P("Plugin2"), P("Plugin3")])),
        Plugins(filter=ps([P("Plugin1"), P("Plugin2", 4), P("Plugin3"), P("Plugin2", 2)])),
    ),
    "Append custom MultiPoint plugin": (
        Plugins(multi_point=ps([P("CustomPlugin")])),
        Plugins(multi_point=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(multi_point=ps([P("DefaultPlugin1"), P("DefaultPlugin2"), P("CustomPlugin")])),
    ),
    "Append disabled Multipoint plugins": (
        Plugins(
            multi_point=ps([P("CustomPlugin"), P("CustomPlugin2")], ["DefaultPlugin2"]),
            score=ps([], ["CustomPlugin2"]),
        ),
        Plugins(multi_point=ps([P("DefaultPlugin1"), P("DefaultPlugin2")])),
        Plugins(
            multi_point=ps([P("DefaultPlugin1"), P("CustomPlugin"), P("CustomPlugin2")], ["DefaultPlugin2"]),
            score=ps([], ["CustomPlugin2"]),
        ),
    ),
    "override default MultiPoint plugins with custom value": (
        Plugins(multi_point=ps([P("DefaultPlugin", 5)])),
        Plugins(multi_point=ps([P("DefaultPlugin")])),
        Plugins(multi_point=ps([P("DefaultPlugin", 5)])),
    ),
    "disabled MultiPoint plugin in default set": (
        Plugins(multi_point=ps([P("CustomPlugin")])),
        Plugins(multi_point=ps([P("DefaultPlugin")], ["DefaultPlugin2"])),
        Plugins(multi_point=ps([P("DefaultPlugin"), P("CustomPlugin")], ["DefaultPlugin2"])),
    ),
    "disabled MultiPoint plugin in default set for specific extension point": (
        Plugins(multi_point=ps([P("CustomPlugin")])),
        Plugins(multi_point=ps([P("DefaultPlugin")]), score=ps([], ["DefaultPlugin2"])),
        Plugins(multi_point=ps([P("DefaultPlugin"), P("CustomPlugin")]), score=ps([], ["DefaultPlugin2"])),
    ),
    "multipoint with only disabled gets merged": (
        Plugins(multi_point=ps([], ["DefaultPlugin"])),
        Plugins(multi_point=ps([P("DefaultPlugin")])),
        Plugins(multi_point=ps([], ["DefaultPlugin"])),
    ),
}


@pytest.mark.parametrize("name", list(MERGE_CASES))
def test_merge_plugins(name: str) -> None:
    custom, default, expected = MERGE_CASES[name]
    assert merge_plugins(default, custom) == expected


BERTH_DEFAULT = [
    P("SchedulingGates"),
    P("PrioritySort"),
    P("NodeUnschedulable"),
    P("NodeName"),
    P("TaintToleration", 3),
    P("NodeAffinity", 2),
    P("NodePorts"),
    P("NodeResourcesFit", 1),
    P("NodeResourcesBalancedAllocation", 1),
    P("ImageLocality", 1),
    P("DefaultBinder"),
]


def test_default_plugins_follow_the_catalog(catalog: Any, full_catalog: Any) -> None:
    assert default_plugins(catalog) == Plugins(multi_point=PluginSet(BERTH_DEFAULT))
    names = [p.name for p in default_plugins(full_catalog).multi_point.enabled]
    assert names == [
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    ]
    weights = {p.name: p.weight for p in KUBE_SCHEDULER_DEFAULT_PLUGINS}
    assert weights["PodTopologySpread"] == 2 and weights["InterPodAffinity"] == 2


def test_empty_config_defaults(catalog: Any) -> None:
    cfg = parse_config(V1, catalog)
    assert cfg.parallelism == 16
    assert cfg.enable_profiling and cfg.enable_contention_profiling
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "kube-scheduler",
    )
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/vnd.kubernetes.protobuf")
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.delay_cache_until_active is False
    [prof] = cfg.profiles
    assert prof.scheduler_name == "default-scheduler"
    assert prof.percentage_of_nodes_to_score is None
    assert prof.plugins == Plugins(multi_point=PluginSet(BERTH_DEFAULT))
    # Default args of enabled plugins with args types, sorted by name (pluginsNames uses sets.List).
    assert [pc.name for pc in prof.plugin_config] == [
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
    ]
    assert prof.args_for("NodeAffinity") == NodeAffinityArgs()
    assert prof.args_for("NodeResourcesFit") == NodeResourcesFitArgs()
    assert prof.args_for("NodeResourcesBalancedAllocation") == NodeResourcesBalancedAllocationArgs()


def test_full_catalog_default_plugin_config(full_catalog: Any) -> None:
    [prof] = parse_config(V1, full_catalog).profiles
    assert [pc.name for pc in prof.plugin_config] == [
        "DefaultPreemption",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
    ]
    assert prof.args_for("DefaultPreemption") == DefaultPreemptionArgs(10, 100)
    assert prof.args_for("InterPodAffinity") == InterPodAffinityArgs(1)
    assert prof.args_for("PodTopologySpread") == PodTopologySpreadArgs([], "System")


def test_no_scheduler_name_single_profile(catalog: Any) -> None:
    cfg = parse_config({**V1, "profiles": [{}]}, catalog)
    assert cfg.profiles[0].scheduler_name == "default-scheduler"


def test_two_profiles(catalog: Any) -> None:
    catalog.add("BarPlugin", {"bind"})
    raw = {
        **V1,
        "profiles": [
            {"schedulerName": "first"},
            {
                "schedulerName": "custom-scheduler",
                "plugins": {
                    "bind": {"enabled": [{"name": "BarPlugin"}], "disabled": [{"name": "DefaultBinder"}]}
                },
            },
        ],
    }
    cfg = parse_config(raw, catalog)
    second = cfg.profiles[1]
    assert second.plugins.bind == PluginSet([P("BarPlugin")], [P("DefaultBinder")])
    assert second.plugins.multi_point == PluginSet(BERTH_DEFAULT)
    # With two profiles, an unset name is not defaulted (and then fails validation).
    with pytest.raises(Exception, match=r"profiles\[0\].schedulerName: Required value"):
        parse_config({**V1, "profiles": [{}, {"schedulerName": "b"}]}, catalog)


@pytest.mark.parametrize(
    ("raw", "attr", "want"),
    [
        ({"parallelism": 8}, "parallelism", 8),
        ({"delayCacheUntilActive": True}, "delay_cache_until_active", True),
        ({"percentageOfNodesToScore": 50}, "percentage_of_nodes_to_score", 50),
        ({"enableProfiling": False}, "enable_contention_profiling", False),
        ({"enableProfiling": False, "enableContentionProfiling": True}, "enable_contention_profiling", True),
    ],
)
def test_non_default_values(catalog: Any, raw: dict[str, object], attr: str, want: object) -> None:
    assert getattr(parse_config({**V1, **raw}, catalog), attr) == want


def test_profile_percentage_is_not_propagated(catalog: Any) -> None:
    cfg = parse_config(
        {**V1, "percentageOfNodesToScore": 10, "profiles": [{"percentageOfNodesToScore": 50}]}, catalog
    )
    assert cfg.percentage_of_nodes_to_score == 10
    assert cfg.profiles[0].percentage_of_nodes_to_score == 50


def test_completed_plugin_config_is_sorted_by_name_and_defaulted(catalog: Any) -> None:
    """The framework keeps the args sorted by plugin name (``NewFramework``), whatever the file's order."""
    raw = {
        **V1,
        "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["foo"]}}]}],
    }
    [prof] = parse_config(raw, catalog).profiles
    assert [pc.name for pc in prof.plugin_config] == [
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
    ]
    fit = prof.args_for("NodeResourcesFit")
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.ignored_resources == ["foo"] and fit.scoring_strategy.type == "LeastAllocated"


def test_empty_args_are_defaulted(catalog: Any) -> None:
    raw = {
        **V1,
        "profiles": [
            {"pluginConfig": [{"name": "NodeResourcesFit", "args": None}, {"name": "NodeAffinity"}]}
        ],
    }
    [prof] = parse_config(raw, catalog).profiles
    assert prof.args_for("NodeResourcesFit") == NodeResourcesFitArgs()
    assert prof.args_for("NodeAffinity") == NodeAffinityArgs()


def test_untyped_args_kept_raw(catalog: Any) -> None:
    catalog.add("OutOfTreePlugin", {"filter"})
    raw = {
        **V1,
        "profiles": [
            {
                "plugins": {"filter": {"enabled": [{"name": "OutOfTreePlugin"}]}},
                "pluginConfig": [{"name": "OutOfTreePlugin", "args": {"foo": "bar"}}, {"name": "NodePorts"}],
            }
        ],
    }
    [prof] = parse_config(raw, catalog).profiles
    assert prof.args_for("OutOfTreePlugin") == {"foo": "bar"}
    # An entry without args is not kept (the framework keeps only args that are set).
    assert "NodePorts" not in [pc.name for pc in prof.plugin_config]


def test_args_of_plugins_not_run_are_accepted_and_dropped(catalog: Any) -> None:
    """kube-scheduler accepts pluginConfig for a disabled plugin or one no registry has, and its
    completed configuration leaves them out."""
    raw = {
        **V1,
        "profiles": [
            {
                "plugins": {"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}},
                "pluginConfig": [
                    {"name": "SomeoneElsesPlugin", "args": {"anything": "goes"}},
                    {"name": "NodeAffinity", "args": {}},
                ],
            }
        ],
    }
    [prof] = parse_config(raw, catalog).profiles
    assert [pc.name for pc in prof.plugin_config] == ["NodeResourcesBalancedAllocation", "NodeResourcesFit"]


def test_disabled_plugin_gets_no_default_args(catalog: Any) -> None:
    raw = {**V1, "profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}}]}
    [prof] = parse_config(raw, catalog).profiles
    assert "NodeResourcesFit" not in [pc.name for pc in prof.plugin_config]
