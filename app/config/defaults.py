"""v1 defaulting: SetDefaults_KubeSchedulerConfiguration, the default plugins and mergePlugins.

Ported from ``pkg/scheduler/apis/config/v1/{defaults.go,default_plugins.go}`` of kube-scheduler v1.36.3.
"""

from __future__ import annotations

from collections.abc import Iterable

from app import featuregates
from app.config.types import EXTENSION_POINTS, Plugin, PluginCatalog, Plugins, PluginSet

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE",
    "DEFAULT_SCHEDULER_NAME",
    "KUBE_SCHEDULER_DEFAULT_PLUGINS",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
    "merge_plugins_with_origins",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
#: ``config.DefaultPercentageOfNodesToScore``: 0 means "adaptive" (50% - nodes/125, at least 5%).
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
DEFAULT_PARALLELISM = 16
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
#: The extender client's timeout when ``httpTimeout`` is 0 (``extender.DefaultExtenderTimeout``). Not v1
#: defaulting, but kube-scheduler's client sets it in the configuration it was given, so the completed
#: configuration shows it.
DEFAULT_EXTENDER_TIMEOUT = 5.0

#: kube-scheduler v1.36 ``getDefaultPlugins().MultiPoint.Enabled`` with its default feature gates applied
#: (DynamicResourceAllocation inserts DynamicResources before DefaultPreemption; NodeDeclaredFeatures,
#: beta and on in 1.36, is appended). Order and weights are kube-scheduler's; berth keeps only the ones
#: its registry has (:func:`default_plugins`), so plugins registered later join at these positions.
KUBE_SCHEDULER_DEFAULT_PLUGINS: tuple[Plugin, ...] = (
    Plugin("SchedulingGates"),
    Plugin("PrioritySort"),
    Plugin("NodeUnschedulable"),
    Plugin("NodeName"),
    Plugin("TaintToleration", 3),
    Plugin("NodeAffinity", 2),
    Plugin("NodePorts"),
    Plugin("NodeResourcesFit", 1),
    Plugin("VolumeRestrictions"),
    Plugin("NodeVolumeLimits"),
    Plugin("VolumeBinding"),
    Plugin("VolumeZone"),
    Plugin("PodTopologySpread", 2),
    Plugin("InterPodAffinity", 2),
    Plugin("DynamicResources", 2),
    Plugin("DefaultPreemption"),
    Plugin("NodeResourcesBalancedAllocation", 1),
    Plugin("ImageLocality", 1),
    Plugin("DefaultBinder"),
    Plugin("NodeDeclaredFeatures"),
)


def default_plugins(registry: PluginCatalog) -> Plugins:
    """berth's default plugins: kube-scheduler's MultiPoint list, minus plugins the registry lacks."""
    return Plugins(
        multi_point=PluginSet(
            enabled=[p for p in KUBE_SCHEDULER_DEFAULT_PLUGINS if registry.has(p.name) and _gated_in(p.name)]
        )
    )


def _gated_in(name: str) -> bool:
    """``applyFeatureGates``: DynamicResources is a default plugin only with DynamicResourceAllocation
    on (off by default at ``--emulated-version=1.33``)."""
    return name != "DynamicResources" or featuregates.DEFAULT.enabled("DynamicResourceAllocation")


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: apply a profile's set for one extension point over the default set.

    * ``disabled`` = the custom disabled entries, then the default's (weights dropped);
    * unless ``"*"`` is disabled, default plugins stay in order, except disabled ones; a default plugin
      that is also custom-enabled is replaced in place by the (last) custom entry;
    * every other custom entry is appended in order (duplicates included: the framework rejects them).
    """
    return _merge_plugin_set(default, custom)[0]


def _merge_plugin_set(default: PluginSet, custom: PluginSet) -> tuple[PluginSet, list[int | None]]:
    """:func:`merge_plugin_set`, and for each merged ``enabled`` entry the index of the custom entry
    it is (None for a default plugin kept as it was)."""
    disabled = [Plugin(p.name) for p in custom.disabled] + [Plugin(p.name) for p in default.disabled]
    disabled_names = {p.name for p in disabled}
    # Like Go's map, a repeated custom plugin keeps its last index.
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    origins: list[int | None] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            i = custom_index.get(plugin.name)
            if i is not None:
                plugin = custom.enabled[i]
                replaced.add(i)
            enabled.append(plugin)
            origins.append(i)
    for i, p in enumerate(custom.enabled):
        if i not in replaced:
            enabled.append(p)
            origins.append(i)
    return PluginSet(enabled=enabled, disabled=disabled), origins


_POINTS: tuple[str, ...] = ("multiPoint", *EXTENSION_POINTS)
_ATTRS: tuple[str, ...] = tuple(Plugins.__dataclass_fields__)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """mergePlugins: :func:`merge_plugin_set` for MultiPoint and every extension point."""
    return merge_plugins_with_origins(default, custom)[0]


def merge_plugins_with_origins(
    default: Plugins, custom: Plugins | None
) -> tuple[Plugins, dict[str, list[int | None]]]:
    """:func:`merge_plugins`, and per extension point (v1 name) where each merged ``enabled`` entry
    is in the user's list (None: one of the defaults), so errors can point into the user's file."""
    if custom is None:
        return default, {}
    merged: dict[str, PluginSet] = {}
    origins: dict[str, list[int | None]] = {}
    for point, attr in zip(_POINTS, _ATTRS, strict=True):
        merged[attr], origins[point] = _merge_plugin_set(getattr(default, attr), getattr(custom, attr))
    return Plugins(**merged), origins


def enabled_plugin_names(plugins: Plugins) -> list[str]:
    """pluginsNames: the sorted set of plugins enabled at any extension point (MultiPoint included)."""
    names: set[str] = set()
    for attr in _ATTRS:
        names.update(p.name for p in getattr(plugins, attr).enabled)
    return sorted(names)


def point_names() -> Iterable[str]:
    """``multiPoint`` followed by every extension point, in v1 field order."""
    return _POINTS
