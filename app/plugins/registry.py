"""The in-tree plugins (``framework/plugins/registry.go``)."""

from __future__ import annotations

from app.framework.registry import Registry
from app.plugins.defaultbinder.default_binder import DefaultBinder
from app.plugins.defaultpreemption.default_preemption import DefaultPreemption
from app.plugins.dynamicresources.plugin import DynamicResources
from app.plugins.imagelocality.image_locality import ImageLocality
from app.plugins.interpodaffinity.plugin import InterPodAffinity
from app.plugins.nodeaffinity.node_affinity import NodeAffinity
from app.plugins.nodedeclaredfeatures.node_declared_features import NodeDeclaredFeatures
from app.plugins.nodename.node_name import NodeName
from app.plugins.nodeports.node_ports import NodePorts
from app.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from app.plugins.noderesources.fit import NodeResourcesFit
from app.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable
from app.plugins.nodevolumelimits.csi import NodeVolumeLimits
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from app.plugins.queuesort.priority_sort import PrioritySort
from app.plugins.schedulinggates.scheduling_gates import SchedulingGates
from app.plugins.tainttoleration.taint_toleration import TaintToleration
from app.plugins.volumebinding.volume_binding import VolumeBinding
from app.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions
from app.plugins.volumezone.volume_zone import VolumeZone

IN_TREE_PLUGINS = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    DefaultBinder,
    NodeDeclaredFeatures,
)


def in_tree_registry() -> Registry:
    """A new registry holding every in-tree plugin."""
    return Registry(IN_TREE_PLUGINS)
