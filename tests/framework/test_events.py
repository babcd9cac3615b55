"""Cluster events and hint maps: kube-scheduler v1.36.3 framework/types_test.go TestCloudEvent_Match,
the event labels the metrics use, buildQueueingHintMap's rules (scheduler.go) and the hint map of
the default profile (each in-tree plugin's EventsToRegister)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from app.api.objects import Pod
from app.config import load_config
from app.framework.cycle_state import CycleState
from app.framework.events import (
    ASSIGNED_POD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    NODE,
    POD,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintMap,
    always_queue,
    build_queueing_hint_map,
    match_any_cluster_event,
    match_cluster_events,
)
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, ScorePlugin
from app.framework.registry import Registry
from app.framework.runtime import Framework, PluginRef, ProfileSpec
from app.framework.status import Status
from app.framework.types import NodeInfo
from app.plugins.defaultbinder.default_binder import DefaultBinder
from app.plugins.queuesort.priority_sort import PrioritySort
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from fakes import FakeHandle

A = ActionType

MATCH_CASES = [
    (
        "wildcard event matches with all kinds of coming events",
        (WILDCARD, A.ALL),
        (POD, A.UPDATE_NODE_LABEL),
        True,
    ),
    (
        "resource Pod matching with coming events carries same actionType",
        (POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
        (POD, A.UPDATE_NODE_LABEL),
        True,
    ),
    (
        "resource Pod matching with coming events carries unschedulablePod",
        (POD, A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
        (UNSCHEDULED_POD, A.UPDATE_NODE_LABEL),
        True,
    ),
    (
        "resource * matching with same actionType",
        (WILDCARD, A.UPDATE_NODE_LABEL),
        (POD, A.UPDATE_NODE_LABEL),
        True,
    ),
    (
        "resource * matching with different actionType",
        (WILDCARD, A.UPDATE_NODE_LABEL),
        (POD, A.UPDATE_NODE_ALLOCATABLE),
        False,
    ),
    ("coming event carries * resources", (POD, A.UPDATE_NODE_LABEL), (WILDCARD, A.UPDATE_NODE_LABEL), False),
    ("coming event carries a too broad actionType", (WILDCARD, A.UPDATE_NODE_LABEL), (POD, A.UPDATE), False),
    (
        "coming event carries a more specific actionType",
        (WILDCARD, A.UPDATE),
        (POD, A.UPDATE_NODE_LABEL),
        True,
    ),
    ("Pod matches AssignedPod", (POD, A.ADD), (ASSIGNED_POD, A.ADD), True),
    ("Node does not match Pod", (NODE, A.ALL), (ASSIGNED_POD, A.ADD), False),
]


@pytest.mark.parametrize(
    ("name", "registered", "incoming", "want"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES]
)
def test_match_cluster_events(
    name: str, registered: tuple[str, ActionType], incoming: tuple[str, ActionType], want: bool
) -> None:
    assert match_cluster_events(ClusterEvent(*registered), ClusterEvent(*incoming)) is want


def test_match_any_cluster_event() -> None:
    incoming = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
    assert match_any_cluster_event(incoming, [ClusterEvent(POD, A.ALL), ClusterEvent(NODE, A.UPDATE)])
    assert not match_any_cluster_event(incoming, [ClusterEvent(NODE, A.ADD)])
    assert not match_any_cluster_event(incoming, [])


def test_labels_are_kubes_metric_labels() -> None:
    assert EVENT_UNSCHEDULED_POD_ADD.label == "UnschedulablePodAdd"
    assert ClusterEvent(NODE, A.UPDATE_NODE_ALLOCATABLE).label == "NodeUpdateNodeAllocatable"
    assert ClusterEvent(POD, A.UPDATE).label == "PodUpdate"
    assert ClusterEvent(NODE, A.ADD | A.DELETE).label == "Node"  # no name for a combination
    assert EVENT_UNSCHEDULABLE_TIMEOUT.label == "UnschedulableTimeout"
    assert EVENT_FORCE_ACTIVATE.is_wildcard() and not ClusterEvent(WILDCARD, A.ADD).is_wildcard()
    assert A.UPDATE & A.UPDATE_POD_LABEL and not A.UPDATE & (A.ADD | A.DELETE)


def _hint_plugins(hint_map: QueueingHintMap) -> dict[str, list[str]]:
    """Registered event (``Resource/ACTION|ACTION``) -> plugins with a hint for it."""
    return {
        f"{e.resource}/{e.action_type.name}": sorted(f.plugin_name for f in fns)
        for e, fns in hint_map.items()
    }


def test_node_add_without_taint_update_gets_a_taint_update_with_queue() -> None:
    def skip(pod: Pod, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE_SKIP

    hint_map = build_queueing_hint_map(
        [
            ("adds", [ClusterEventWithHint(ClusterEvent(NODE, A.ADD), skip)]),
            (
                "adds-and-taints",
                [ClusterEventWithHint(ClusterEvent(NODE, A.ADD | A.UPDATE_NODE_TAINT), skip)],
            ),
            ("pods", [ClusterEventWithHint(ClusterEvent(POD, A.ADD))]),
        ]
    )
    taint = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
    assert [(f.plugin_name, f.hint_fn) for f in hint_map[taint]] == [("adds", always_queue)]
    # No hint function means always Queue.
    assert hint_map[ClusterEvent(POD, A.ADD)][0].hint_fn is always_queue
    assert hint_map[ClusterEvent(NODE, A.ADD)][0].hint_fn is skip


class _Legacy(FilterPlugin):
    """A filter without EnqueueExtensions: every resource, every action."""

    name: ClassVar[str] = "Legacy"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


class _Silent(FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = "Silent"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


class _ScoreOnly(ScorePlugin):
    name: ClassVar[str] = "ScoreOnly"

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return 0


def _framework(*plugins: type[FilterPlugin] | type[ScorePlugin]) -> Framework:
    points = {
        "queueSort": ([PluginRef("PrioritySort")], []),
        "bind": ([PluginRef("DefaultBinder")], []),
        "filter": ([PluginRef(p.name) for p in plugins if issubclass(p, FilterPlugin)], []),
        "score": ([PluginRef(p.name) for p in plugins if issubclass(p, ScorePlugin)], []),
    }
    registry = Registry([PrioritySort, DefaultBinder, *plugins])
    return Framework(ProfileSpec("default-scheduler", points, {}), registry, FakeHandle())


def test_framework_hint_map_unrolls_plugins_without_enqueue_extensions() -> None:
    plugins = _hint_plugins(_framework(_Legacy, _Silent, _ScoreOnly).queueing_hint_map())
    # Legacy registers every resource with All; Silent (no events) and the score plugin nothing.
    assert plugins == {
        f"{r}/ALL": ["Legacy"]
        for r in (
            "Pod",
            "Node",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "storage.k8s.io/CSINode",
            "storage.k8s.io/CSIDriver",
            "storage.k8s.io/CSIStorageCapacity",
            "storage.k8s.io/StorageClass",
            "resource.k8s.io/ResourceClaim",
            "resource.k8s.io/DeviceClass",
        )
    }


# How a generic Update registration prints: every specific update bit.
_EVERY_UPDATE = "UPDATE_NODE_ALLOCATABLE|UPDATE_NODE_LABEL|UPDATE_NODE_TAINT|UPDATE_NODE_CONDITION|UPDATE_NODE_ANNOTATION|UPDATE_NODE_DECLARED_FEATURE|UPDATE_POD_LABEL|UPDATE_POD_SCALE_DOWN|UPDATE_POD_TOLERATION|UPDATE_POD_SCHEDULING_GATES_ELIMINATED|UPDATE_POD_GENERATED_RESOURCE_CLAIM"


def test_default_profile_hint_map() -> None:
    """Every in-tree plugin's EventsToRegister as in v1.36.3 with QueueingHints on (DRAExtendedResource
    on: NodeResourcesFit registers DeviceClass add/update too), plus the UpdateNodeTaint workaround."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry)
    plugins = _hint_plugins(engine.profiles["default-scheduler"].queueing_hint_map())
    add_or_update = (ActionType.ADD | ActionType.UPDATE).name
    assert plugins == {
        "Pod/UPDATE_POD_SCHEDULING_GATES_ELIMINATED": ["SchedulingGates"],
        "Node/ADD|UPDATE_NODE_TAINT": ["NodeUnschedulable", "TaintToleration"],
        "Pod/UPDATE_POD_TOLERATION": ["NodeUnschedulable", "TaintToleration"],
        "Node/ADD": ["NodeName", "NodePorts", "VolumeRestrictions"],
        "Node/UPDATE_NODE_TAINT": [
            "DynamicResources",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeDeclaredFeatures",
            "NodeName",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeBinding",
            "VolumeRestrictions",
            "VolumeZone",
        ],
        "Node/ADD|UPDATE_NODE_LABEL": ["InterPodAffinity", "NodeAffinity", "VolumeBinding", "VolumeZone"],
        "Pod/DELETE": ["DefaultPreemption", "NodePorts", "NodeVolumeLimits", "VolumeRestrictions"],
        "Pod/DELETE|UPDATE_POD_SCALE_DOWN": ["NodeResourcesFit"],
        "Node/ADD|UPDATE_NODE_ALLOCATABLE": ["NodeResourcesFit"],
        "Pod/ADD|DELETE|UPDATE_POD_LABEL|UPDATE_POD_TOLERATION": ["PodTopologySpread"],
        "Node/ADD|DELETE|UPDATE_NODE_LABEL|UPDATE_NODE_TAINT": ["PodTopologySpread"],
        "Pod/ADD|DELETE|UPDATE_POD_LABEL": ["InterPodAffinity"],
        "Node/ADD|UPDATE_NODE_DECLARED_FEATURE": ["NodeDeclaredFeatures"],
        "Pod/UPDATE": ["NodeDeclaredFeatures"],
        "Node/ADD|UPDATE_NODE_ALLOCATABLE|UPDATE_NODE_LABEL": ["DynamicResources"],
        f"resource.k8s.io/ResourceClaim/ADD|{_EVERY_UPDATE}": ["DynamicResources"],
        "Pod/UPDATE_POD_GENERATED_RESOURCE_CLAIM": ["DynamicResources"],
        f"resource.k8s.io/DeviceClass/ADD|{_EVERY_UPDATE}": ["DynamicResources", "NodeResourcesFit"],
        f"resource.k8s.io/ResourceSlice/ADD|{_EVERY_UPDATE}": ["DynamicResources"],
        # --- the volume plugins ---
        f"PersistentVolume/{add_or_update}": ["VolumeBinding", "VolumeZone"],
        f"PersistentVolumeClaim/{add_or_update}": ["VolumeBinding", "VolumeZone"],
        "PersistentVolumeClaim/ADD": ["NodeVolumeLimits", "VolumeRestrictions"],
        f"storage.k8s.io/StorageClass/{add_or_update}": ["VolumeBinding"],
        "storage.k8s.io/StorageClass/ADD": ["VolumeZone"],
        f"storage.k8s.io/CSINode/{add_or_update}": ["VolumeBinding"],
        "storage.k8s.io/CSINode/ADD": ["NodeVolumeLimits"],
        "storage.k8s.io/CSINode/UPDATE": ["NodeVolumeLimits"],
        "storage.k8s.io/CSIDriver/UPDATE": ["VolumeBinding"],
        f"storage.k8s.io/CSIStorageCapacity/{add_or_update}": ["VolumeBinding"],
        "storage.k8s.io/VolumeAttachment/DELETE": ["NodeVolumeLimits"],
    }
