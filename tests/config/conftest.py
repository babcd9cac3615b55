"""A small in-test PluginCatalog with berth's in-tree plugins (the real registry lives elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.config.types import ArgsType
from app.plugins.defaultpreemption.args import DefaultPreemptionArgs
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs

BERTH_PLUGINS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": frozenset({"preFilter", "filter"}),
    "NodeResourcesFit": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodeResourcesBalancedAllocation": frozenset({"preScore", "score"}),
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
}

ARGS: dict[str, ArgsType] = {
    "NodeAffinity": NodeAffinityArgs,
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
}

#: Plugins berth does not have yet, with their kube-scheduler extension points (for "later" tests).
LATER_PLUGINS: dict[str, frozenset[str]] = {
    "PodTopologySpread": frozenset({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "DefaultPreemption": frozenset({"preEnqueue", "postFilter"}),
}


@dataclass
class Catalog:
    """PluginCatalog over a name → extension points table."""

    plugins: dict[str, frozenset[str]] = field(default_factory=lambda: dict(BERTH_PLUGINS))

    def has(self, name: str) -> bool:
        return name in self.plugins

    def args_type(self, name: str) -> ArgsType | None:
        return ARGS.get(name)

    def extension_points(self, name: str) -> frozenset[str]:
        return self.plugins.get(name, frozenset())

    def add(self, name: str, points: set[str]) -> Catalog:
        self.plugins[name] = frozenset(points)
        return self


@pytest.fixture
def catalog() -> Catalog:
    """berth's current in-tree plugins."""
    return Catalog()


@pytest.fixture
def full_catalog() -> Catalog:
    """berth's plugins plus PodTopologySpread, InterPodAffinity and DefaultPreemption."""
    return Catalog({**BERTH_PLUGINS, **LATER_PLUGINS})
