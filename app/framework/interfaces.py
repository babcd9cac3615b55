"""Plugin interfaces, one base class per extension point (``framework/interface.go``).

A plugin is a class deriving from :class:`Plugin` and from the extension-point classes it
implements; the runtime finds its extension points with ``isinstance``. Success is returned as
``None`` (or a Success :class:`Status`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from app.api.objects import Pod
from app.framework.aggregate import A
from app.framework.cycle_state import CycleState
from app.framework.events import ClusterEventWithHint
from app.framework.status import NodeToStatus, Status
from app.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class NodeInfoLister(Protocol):
    """The snapshot as plugins see it (``SharedLister.NodeInfos``)."""

    def list(self) -> builtins.list[NodeInfo]:
        """All nodes in node-tree order."""
        ...

    def get(self, name: str) -> NodeInfo | None:
        """One node by name, or None."""
        ...

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have (anti-)affinity."""
        ...

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        """Nodes with pods that have required anti-affinity."""
        ...

    def num_nodes(self) -> int:
        """How many nodes the snapshot holds."""
        ...

    def aggregate(
        self,
        key: Hashable,
        factory: Callable[[], A],
        candidates: Callable[[], builtins.list[NodeInfo]] | None = None,
    ) -> A:
        """The per-node sum named ``key`` over :meth:`list`, kept current across cycles.

        See :mod:`app.framework.aggregate`: ``key`` names what the contributions depend on;
        ``candidates``, if given, lists the only nodes contributing now (called to build a sum).
        """
        ...


class ObjectLister(Protocol):
    """Cluster objects other than pods and nodes that plugins read (Services, ReplicaSets, ...)."""

    def list(self, kind: str, namespace: str) -> builtins.list[Mapping[str, Any]]:
        """Raw objects of ``kind`` in ``namespace``."""
        ...

    def list_cluster(self, kind: str) -> builtins.list[Mapping[str, Any]]:
        """Raw cluster-scoped objects of ``kind`` (Namespaces, ...), whatever their metadata.namespace."""
        ...


class Binder(Protocol):
    """Where a bind goes: the API server (standalone), or the cache (simulate, tests)."""

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """Bind ``pod`` to ``node_name``."""
        ...


class PodNominator(Protocol):
    """Pods nominated to nodes by preemption (``fwk.PodNominator``)."""

    def nominated_pods_for_node(self, node_name: str) -> builtins.list[PodInfo]:
        """The pods nominated to ``node_name``, most recent versions."""
        ...


class ClusterActions(Protocol):
    """What preemption does to the cluster (``Executor.PreemptPod``, ``clearNominatedNodeName``).

    Without an API server (simulate, the extender) the victims leave the cache; against an API
    server a victim gets the DisruptionTarget condition, is deleted and a Preempted event is sent.
    """

    def preempt_pod(self, preemptor: Pod, victim: Pod, node_name: str, plugin: str) -> Status | None:
        """Evict ``victim`` from ``node_name`` for ``preemptor``; None on success."""
        ...

    def clear_nominated_node_name(self, pods: Sequence[Pod]) -> Status | None:
        """Clear the nominated node of ``pods`` (lower-priority pods nominated to the preempted node)."""
        ...


class Handle(Protocol):
    """What the framework gives plugins (``framework.Handle``)."""

    @property
    def snapshot(self) -> NodeInfoLister:
        """The snapshot of the current cycle."""
        ...

    @property
    def objects(self) -> ObjectLister:
        """Other cluster objects."""
        ...

    @property
    def binder(self) -> Binder:
        """The binding backend."""
        ...

    @property
    def parallelism(self) -> int:
        """Configured parallelism."""
        ...


class Plugin:
    """Base of every plugin. Subclasses set ``name`` and, if they take args, ``args_type``.

    ``args_type`` is a class with ``decode(raw, path)`` and ``to_dict()``; the configuration
    loader decodes pluginConfig args with it and passes the result to ``__init__``.
    """

    name: ClassVar[str] = ""
    args_type: ClassVar[Any] = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue (``framework.QueuedPodInfo``)."""

    pod_info: PodInfo
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    sequence: int = 0

    @property
    def pod(self) -> Pod:
        """The pod."""
        return self.pod_info.pod


class PreEnqueuePlugin(Plugin):
    """Decides whether a pod may enter the active queue at all."""

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Return a non-success status to keep the pod gated."""
        raise NotImplementedError

    def gated_until_deleted(self, pod: Pod) -> str | None:
        """Asked right after :meth:`pre_enqueue` rejected ``pod``: the UID of the one pod whose
        deletion alone can make this plugin admit ``pod`` again (an ``Activate`` aside), or None
        (the default) when any event the plugin registered may.

        berth's addition, not kube-scheduler's: the queue then looks at the gated pod only when that
        pod is deleted, and asks again when that pod is updated, instead of re-running the hints
        and PreEnqueue of every gated pod on every matching event only for them to gate it again.
        Where the pods go stays kube-scheduler's; what is saved are calls whose answer is known."""
        return None


class QueueSortPlugin(Plugin):
    """Orders the active queue."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True when ``a`` should be scheduled before ``b``."""
        raise NotImplementedError


@dataclass(slots=True)
class PreFilterResult:
    """Narrowing of the candidate nodes; ``node_names`` None means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        """No narrowing."""
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """Intersection of two results (``PreFilterResult.Merge``)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


class PreFilterExtensions:
    """Incremental updates of PreFilter state when pods are added or removed (preemption, nominated pods)."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """``pod_to_add`` is assumed to run on ``node_info``."""
        raise NotImplementedError

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """``pod_to_remove`` is assumed gone from ``node_info``."""
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    """Runs once per attempt before Filter; may Skip the plugin's Filter or narrow the nodes."""

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Compute per-cycle state. Return Skip to skip this plugin's Filter."""
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """AddPod/RemovePod support, or None."""
        return None


class FilterPlugin(Plugin):
    """Decides whether a node can run the pod."""

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Return None (fits) or a rejection status with reasons."""
        raise NotImplementedError

    def filter_all(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> builtins.list[Status | None] | None:
        """:meth:`filter`'s verdict on each of ``nodes``, in order, or None when every node fits.

        The framework calls this once per cycle, instead of :meth:`filter` once per node, when it
        filters a given set of nodes in full (an extender's /filter). A plugin that can decide many
        nodes at once faster than one by one (nothing to check for this pod, or a loop without the
        per-call overhead) overrides it; the verdicts must be :meth:`filter`'s. A
        :class:`PluginError` raised here makes the framework ask :meth:`filter` node by node.
        """
        verdict = self.filter
        return [verdict(state, pod, info) for info in nodes]

    def passes_every_node(self, pod: Pod) -> bool:
        """Whether :meth:`filter` passes every node for ``pod``, decided from the pod alone (nothing
        in a node or the cycle state could make it reject). The algorithm then leaves the plugin out
        of the per-node loop of an unsampled cycle; it is still counted as evaluated, as kube counts
        it. Only for plugins without a PreFilter that could say Skip instead (kube's NodeName)."""
        return False


@dataclass(slots=True)
class PostFilterResult:
    """A node nominated by PostFilter (preemption): ``NominatingInfo``.

    Mode "override" sets the pod's nominated node to ``nominated_node_name`` ("" or None clears
    it); "noop" keeps the pod's own ``status.nominatedNodeName``. ``victims`` is berth's addition:
    the pods preempted for this nomination, to explain the attempt.
    """

    nominated_node_name: str | None = None
    mode: str = "noop"  # "noop" | "override"
    victims: builtins.list[Pod] = field(default_factory=list, compare=False)


class PostFilterPlugin(Plugin):
    """Runs when no node fits (preemption)."""

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Try to make the pod schedulable; ``filtered_node_status`` says why each node failed."""
        raise NotImplementedError


class PreScorePlugin(Plugin):
    """Runs once before Score; Skip skips the plugin's Score."""

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Compute per-cycle scoring state."""
        raise NotImplementedError


class ScorePlugin(Plugin):
    """Ranks feasible nodes. Override :meth:`normalize_score` and set ``normalizes`` to normalize."""

    normalizes: ClassVar[bool] = False

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """A score for the node; raise :class:`PluginError` for an internal error."""
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node of ``nodes``, in order: what the framework calls when it does
        not time each call. Override it only to compute the same scores in a cheaper loop (the
        per-node call overhead is a large part of scoring in CPython); the results must be identical."""
        score = self.score
        return [score(state, pod, n) for n in nodes]

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """Rewrite ``scores`` (aligned with ``nodes``) in place into [0, 100]."""
        return None


class ReservePlugin(Plugin):
    """Reserves resources for the chosen node before binding."""

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve; a failure triggers Unreserve of every Reserve plugin."""
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo :meth:`reserve`; must be idempotent."""
        raise NotImplementedError


class PermitPlugin(Plugin):
    """Approves, rejects or delays binding."""

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Return (status, timeout seconds); Wait delays binding up to the timeout."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    """Runs before Bind."""

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Prepare the binding."""
        raise NotImplementedError

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """``PreBindPreFlight``: whether :meth:`pre_bind` has work for ``pod`` on ``node_name``.

        Success (None) when it has, Skip when it has not (its PreBind is then not called), an
        Error when the cycle state is unusable; any other code is refused as kube-scheduler
        refuses it. kube's interface makes every PreBind plugin say; a plugin that does not is
        taken to have work (so the pod is nominated to its node before PreBind runs)."""
        return None


class BindPlugin(Plugin):
    """Binds the pod; return Skip to leave it to the next bind plugin."""

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the pod to the node."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    """Informational, after a successful bind."""

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Called after binding."""
        raise NotImplementedError


class EnqueueExtensions:
    """The cluster events that may make a pod this plugin rejected schedulable (``fwk.EnqueueExtensions``).

    Only PreEnqueue, PreFilter, Filter, Reserve and Permit plugins are asked. A plugin of those
    kinds without this interface is assumed to care about every event of every resource; one
    that returns no events can only be unblocked by an update of the pod itself or the
    five-minute flush.
    """

    def events_to_register(self) -> builtins.list[ClusterEventWithHint]:
        """The events, each with an optional hint function."""
        raise NotImplementedError


class PluginError(Exception):
    """An internal plugin error; the runtime turns it into an Error status."""


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
"""Config field name of each extension point → the interface a plugin must implement."""


def extension_points_of(plugin_class: type[Plugin]) -> frozenset[str]:
    """The extension points a plugin class implements."""
    return frozenset(name for name, iface in EXTENSION_POINTS.items() if issubclass(plugin_class, iface))


EXTENDER_NAME = "Extender"
"""``framework.ExtenderName``: what a pod's unschedulable plugins record when extenders rejected nodes."""

ExtenderVictims = dict[str, tuple[list[Pod], int]]
"""Node name → (the pods to evict there, the PDB violations they cause): ``map[string]*Victims``."""


class ExtenderError(Exception):
    """A call to an extender failed (no answer, a non-200 answer, an answer that does not decode, or
    an answer carrying an ``Error``); the message is kube-scheduler's for the same failure."""


class Extender(Protocol):
    """An HTTP scheduler extender (``framework.Extender``), called by the scheduling cycle and preemption.

    Every call raises :class:`ExtenderError` on failure; what the caller does then depends on
    :attr:`ignorable`, as in kube-scheduler.
    """

    name: str
    """The extender's ``urlPrefix`` (kube-scheduler names extenders by it in logs and scores)."""
    ignorable: bool
    weight: int

    def is_interested(self, pod: Pod) -> bool:
        """Whether ``pod`` is the extender's business (any managed resource, or none configured)."""
        ...

    def is_filter(self) -> bool:
        """Whether the extender has a filter verb."""
        ...

    def is_prioritizer(self) -> bool:
        """Whether the extender has a prioritize verb."""
        ...

    def is_binder(self) -> bool:
        """Whether the extender has a bind verb."""
        ...

    def supports_preemption(self) -> bool:
        """Whether the extender has a preempt verb."""
        ...

    def filter(
        self, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], Mapping[str, str], Mapping[str, str]]:
        """The nodes that pass, FailedNodes and FailedAndUnresolvableNodes."""
        ...

    def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
        """(host, score 0..10) pairs; multiplied by :attr:`weight` by the caller."""
        ...

    def process_preemption(
        self, pod: Pod, victims: ExtenderVictims, lister: NodeInfoLister
    ) -> ExtenderVictims:
        """The candidates the extender keeps, their victims resolved in ``lister``'s pods."""
        ...

    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name`` through the extender."""
        ...
