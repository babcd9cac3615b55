"""Cluster events and queueing hints (kube-scheduler's ``fwk.ClusterEvent``, ``fwk.QueueingHint``).

A plugin that rejects pods says, through :class:`~app.framework.interfaces.EnqueueExtensions`,
which cluster events may make such a pod schedulable again, each with an optional hint function
that looks at the changed object and answers :data:`QueueingHint.QUEUE` or ``QUEUE_SKIP``. The
scheduling queue keeps a rejected pod aside until an event a rejecting plugin registered arrives
and its hint says Queue.

An event is a resource plus an :class:`ActionType` bit set. The informer side reports events as
specific as it can (a node update that changed labels is ``Node/UpdateNodeLabel``); a registered
event matches an incoming one when it is the same or more general (:func:`match_cluster_events`).
Pods are reported as ``AssignedPod`` or ``UnschedulablePod``; a plugin registers ``Pod``, which
matches both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum, IntFlag
from typing import TypeVar

from app import featuregates
from app.api.objects import Node, Pod

__all__ = [
    "ASSIGNED_POD",
    "BACKOFF_COMPLETE",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "DEVICE_CLASS",
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_ASSIGNED_POD_UPDATE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_NODE_DELETE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_DELETE",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "FORCE_ACTIVATE",
    "NODE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD",
    "POP_FROM_BACKOFF_Q",
    "RESOURCE_CLAIM",
    "RESOURCE_SLICE",
    "SCHEDULE_ATTEMPT_FAILURE",
    "STORAGE_CLASS",
    "UNSCHEDULABLE_TIMEOUT",
    "UNSCHEDULED_POD",
    "VOLUME_ATTACHMENT",
    "WILDCARD",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "HintError",
    "HintKeys",
    "HintScope",
    "PodHintKeys",
    "QueueingHint",
    "QueueingHintFn",
    "QueueingHintFunction",
    "QueueingHintMap",
    "always_queue",
    "as_nodes",
    "as_pods",
    "build_queueing_hint_map",
    "match_any_cluster_event",
    "match_cluster_events",
    "unroll_wildcard_resource",
]


class ActionType(IntFlag):
    """What happened to a resource (``fwk.ActionType``), same bits as kube-scheduler."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    # A change of spec.taints, or spec.unschedulable becoming false.
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    # Any resource request of the pod went down (or away).
    UPDATE_POD_SCALE_DOWN = 1 << 9
    # The API only lets tolerations be added, so any change is an addition.
    UPDATE_POD_TOLERATION = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    ALL = (1 << 13) - 1
    # Every specific update: a generic Update registration hears them all.
    UPDATE = ALL & ~(ADD | DELETE)

    @property
    def label(self) -> str:
        """kube's ``ActionType.String()`` ("" for a combination without a name)."""
        return _ACTION_LABELS.get(self, "")


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}

# Event resources (``fwk.EventResource``): group/kind names as kube-scheduler spells them.
POD = "Pod"
# Incoming pod events only: plugins register POD, which matches both.
ASSIGNED_POD = "AssignedPod"
UNSCHEDULED_POD = "UnschedulablePod"
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
CSI_NODE = "storage.k8s.io/CSINode"
CSI_DRIVER = "storage.k8s.io/CSIDriver"
CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
DEVICE_CLASS = "resource.k8s.io/DeviceClass"
RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
WILDCARD = "*"

# Labels of the queue's own moves (``scheduler_queue_incoming_pods_total{event}``).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A resource and what happened to it; ``custom_label`` names the queue's special events.

    Its hash and label are computed once: the queue looks events up in its tables and labels its
    metrics for every pod an event concerns (an enum's hash and label are Python calls)."""

    resource: str
    action_type: ActionType
    custom_label: str = ""
    _hash: int = field(init=False, repr=False, compare=False)
    _label: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.resource, int(self.action_type), self.custom_label)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def label(self) -> str:
        """The name in logs and metrics, e.g. ``NodeAdd`` or ``UnschedulableTimeout``."""
        label = self._label
        if not label:
            label = self.custom_label or f"{self.resource}{self.action_type.label}"
            object.__setattr__(self, "_label", label)
        return label

    def is_wildcard(self) -> bool:
        """``*`` with every action: it moves every pod (``ClusterEventIsWildCard``)."""
        return self.resource == WILDCARD and self.action_type == ActionType.ALL


EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)
EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, FORCE_ACTIVATE)


def _resources_match(registered: str, incoming: str) -> bool:
    if registered in (WILDCARD, incoming):
        return True
    return registered == POD and incoming in (ASSIGNED_POD, UNSCHEDULED_POD)


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Whether ``incoming`` is the same as or more specific than ``registered`` (``MatchClusterEvents``).

    A wildcard registration matches everything; an incoming wildcard matches only a wildcard
    registration. A registered Update hears UpdateNodeLabel, not the other way round.
    """
    if registered.is_wildcard():
        return True
    reg, inc = registered.action_type, incoming.action_type
    return _resources_match(registered.resource, incoming.resource) and bool(reg & inc) and inc <= reg


def match_any_cluster_event(incoming: ClusterEvent, registered: Sequence[ClusterEvent]) -> bool:
    """Whether any of ``registered`` matches ``incoming`` (``MatchAnyClusterEvent``)."""
    return any(match_cluster_events(r, incoming) for r in registered)


class QueueingHint(IntEnum):
    """A hint function's answer (``fwk.QueueingHint``)."""

    QUEUE_SKIP = 0
    QUEUE = 1

    @property
    def label(self) -> str:
        """``Queue`` / ``QueueSkip``, as kube prints it."""
        return "Queue" if self is QueueingHint.QUEUE else "QueueSkip"


QueueingHintFn = Callable[[Pod, object, object], QueueingHint]
"""``fn(pod, old_obj, new_obj)``: may this event make ``pod``, rejected by the plugin, schedulable?

``old_obj`` is None for an add and ``new_obj`` None for a delete. A function that cannot tell
raises (any exception, :class:`HintError` for a wrong object type); the queue then takes Queue.
"""


class HintError(TypeError):
    """A hint function got an object it cannot interpret."""


class HintScope(Enum):
    """What an event is about, when it is not one object a :class:`HintKeys` can name."""

    UNKEYED = "unkeyed"
    """Not about one object the keys decide (a claim deallocated: it may help any pod): the pods
    whose :class:`PodHintKeys` say ``unkeyed`` are asked."""
    EVERY_POD = "every-pod"
    """The keys decide nothing (objects the hint cannot read, so it raises): every pod is asked."""


@dataclass(frozen=True, slots=True)
class PodHintKeys:
    """For one pod: the keys (``namespace/name``) of the objects whose events may get anything but
    QueueSkip from the hint, and whether events that are about no one key (:data:`HintScope.UNKEYED`)
    may. A function of the pod alone: the queue derives it again after every change of the pod."""

    keys: frozenset[str]
    unkeyed: bool = True


@dataclass(frozen=True, slots=True)
class HintKeys:
    """berth's addition to a hint registration: which objects' events can change the hint's answer.

    ``for_pod(pod)`` tells, for a pod the plugin rejected or gates, the objects whose events may get
    anything but QueueSkip; ``of_event(old, new)`` tells which object an event of the registered
    resource is about (its key), or a :class:`HintScope`. The scheduling queue then asks the hint
    about a pod only for events its keys admit: the answers it skips are QueueSkip by this contract,
    so which pods move, when and where is kube-scheduler's. Both must be pure, cheap and exact: a key
    left out loses a move.
    """

    for_pod: Callable[[Pod], PodHintKeys]
    of_event: Callable[[object, object], str | HintScope]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and its hint function; no function means always Queue. ``keys``, with a
    hint function, lets the queue skip the calls whose answer is known to be QueueSkip."""

    event: ClusterEvent
    hint_fn: QueueingHintFn | None = None
    keys: HintKeys | None = None


@dataclass(frozen=True, slots=True)
class QueueingHintFunction:
    """One plugin's hint for one registered event (``internalqueue.QueueingHintFunction``), with
    the registration's :class:`HintKeys` if any."""

    plugin_name: str
    hint_fn: QueueingHintFn
    keys: HintKeys | None = None


QueueingHintMap = dict[ClusterEvent, list[QueueingHintFunction]]
"""A profile's registered events and, for each, the plugins' hint functions."""

_T = TypeVar("_T")


def _as(kind: type[_T], old: object, new: object) -> tuple[_T | None, _T | None]:
    """``util.As``: both objects as ``kind`` (None stays None), or :class:`HintError`."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, kind):
            raise HintError(f"expected a {kind.__name__}, got {type(obj).__name__}")
    return old, new  # type: ignore[return-value]


def as_pods(old: object, new: object) -> tuple[Pod | None, Pod | None]:
    """The event's objects as pods."""
    return _as(Pod, old, new)


def as_nodes(old: object, new: object) -> tuple[Node | None, Node | None]:
    """The event's objects as nodes."""
    return _as(Node, old, new)


def unroll_wildcard_resource() -> list[ClusterEventWithHint]:
    """What a plugin without EnqueueExtensions registers: every resource, every action, no hint.

    kube spells the resources out rather than registering ``*`` because the list also decides
    which informers run (``UnrollWildCardResource``).
    """
    resources = (
        POD,
        NODE,
        PERSISTENT_VOLUME,
        PERSISTENT_VOLUME_CLAIM,
        CSI_NODE,
        CSI_DRIVER,
        CSI_STORAGE_CAPACITY,
        STORAGE_CLASS,
        RESOURCE_CLAIM,
        DEVICE_CLASS,
    )
    return [ClusterEventWithHint(ClusterEvent(r, ActionType.ALL)) for r in resources]


def always_queue(pod: Pod, old: object, new: object) -> QueueingHint:
    """The hint of an event registered without one (``defaultQueueingHintFn``)."""
    return QueueingHint.QUEUE


_NODE_TAINT_UPDATE = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)


def build_queueing_hint_map(
    registrations: Iterable[tuple[str, Sequence[ClusterEventWithHint]]],
) -> QueueingHintMap:
    """A profile's hint map from each plugin's registered events (``buildQueueingHintMap``).

    A plugin registering Node/Add but not Node/UpdateNodeTaint also gets UpdateNodeTaint with
    an always-Queue hint: kube keeps this workaround (kubernetes#109437) so that a node that
    appears tainted and is untainted later still requeues the pods.
    """
    hint_map: QueueingHintMap = {}
    for plugin, events in registrations:
        node_added = node_taint_updated = False
        for e in events:
            if e.event.resource == NODE:
                node_added = node_added or bool(e.event.action_type & ActionType.ADD)
                node_taint_updated = node_taint_updated or bool(
                    e.event.action_type & ActionType.UPDATE_NODE_TAINT
                )
            hint_map.setdefault(e.event, []).append(
                QueueingHintFunction(plugin, e.hint_fn or always_queue, e.keys if e.hint_fn else None)
            )
        if node_added and not node_taint_updated:
            hint_map.setdefault(_NODE_TAINT_UPDATE, []).append(QueueingHintFunction(plugin, always_queue))
    return hint_map


def queueing_hints_enabled() -> bool:
    """SchedulerQueueingHints (locked on in v1.36, off by default at ``--emulated-version=1.33``).
    Without hints kube's plugins register node taint and label updates too (the node ``preCheck``
    may have dropped the Node/Add that would have helped, kubernetes#109437)."""
    return featuregates.DEFAULT.enabled("SchedulerQueueingHints")


NODE_ADD_TAINT_LABEL = ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
"""The node actions the plugins registering Node/Add register with SchedulerQueueingHints off."""


def node_actions(with_hints: ActionType, without_hints: ActionType = NODE_ADD_TAINT_LABEL) -> ActionType:
    """The Node actions a plugin registers: ``with_hints`` under SchedulerQueueingHints, else
    ``without_hints`` (by default Node/Add with taint and label updates, see :func:`queueing_hints_enabled`)."""
    return with_hints if queueing_hints_enabled() else without_hints
