"""VolumeBinding (``plugins/volumebinding/volume_binding.go``).

PreFilter rejects a pod whose claims are missing, being deleted, lost, or unbound in an Immediate class
(the PV controller binds those; the pod waits for it). Filter keeps the nodes where every claim can be
satisfied (see :mod:`app.plugins.volumebinding.binder`). Reserve assumes the chosen PVs and claims;
PreBind writes them and waits for the PV controller, for at most ``bindTimeoutSeconds``; Unreserve
undoes the assumptions. Score only with the StorageCapacityScoring gate (alpha, off in v1.36).

PreBind's writes go to the handle's ``volume_writer``: the API server under ``berth run``, the engine's
own objects in ``berth simulate`` and the extender (where the binding completes at once, as if the PV
controller were instantaneous).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from app import featuregates as gates
from app.api.objects import EPHEMERAL_SOURCE, Pod, pod_claim_name
from app.api.storage import (
    ANN_MIGRATED_PLUGINS,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
    ephemeral_claim_error,
    not_found,
)
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    node_actions,
)
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginError,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.status import Status, error, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.helper.storage import as_storage_objects, pod_uses_claim, shared_storage_lister
from app.plugins.noderesources.resource_allocation import shape_table
from app.plugins.volumebinding.args import STORAGE_CAPACITY_SCORING, VolumeBindingArgs
from app.plugins.volumebinding.binder import (
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    VolumeWriter,
)

NAME = "VolumeBinding"
STATE_KEY = NAME
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
MAX_UTILIZATION = 100


class _State(StateData):
    """The pod's claims and, per feasible node, what binding them there takes (shared by clones, as
    kube's stateData: preemption's dry runs see the same decisions)."""

    __slots__ = (
        "all_bound",
        "claims",
        "has_static_bindings",
        "lock",
        "node_independent",
        "pod_volumes_by_node",
    )

    def __init__(self, claims: PodVolumeClaims | None, node_independent: bool = False) -> None:
        self.claims = claims
        # Filter's answer is the same on every node (VolumeBinder.bound_claims_fit_every_node).
        self.node_independent = node_independent
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        self.has_static_bindings = False
        self.all_bound = False
        self.lock = threading.Lock()


def _capacity_scorer(args: VolumeBindingArgs) -> Any:
    """``buildScorerFunction``: the mean over classes of the shape at each class's utilization."""
    table = shape_table(args.shape or [])

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return table[MAX_UTILIZATION]
        return table[requested * MAX_UTILIZATION // capacity]

    def score(resources: dict[str, list[int]]) -> int:
        if not resources:
            return 0
        total = sum(class_score(requested, capacity) for requested, capacity in resources.values())
        return math.floor(total / len(resources) + 0.5)

    return score


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    """Binds the pod's unbound claims on the chosen node (static binding or dynamic provisioning)."""

    name: ClassVar[str] = NAME
    args_type: ClassVar[Any] = VolumeBindingArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        args = args if isinstance(args, VolumeBindingArgs) else VolumeBindingArgs()
        super().__init__(args, handle)
        self.storage = shared_storage_lister(handle.objects)
        self.binder = VolumeBinder(self.storage, float(args.bind_timeout_seconds))
        self.scorer = _capacity_scorer(args) if gates.DEFAULT.enabled(STORAGE_CAPACITY_SCORING) else None
        self.capacity_scoring = self.scorer is not None

    # --- PreFilter / Filter ---------------------------------------------------------------------------

    def _pod_has_claims(self, pod: Pod) -> tuple[bool, str]:
        """``podHasPVCs``: (has claims, the reason they cannot be used yet or "")."""
        has = False
        claims = self.storage.pvcs()
        for volume in pod.volumes:
            if not volume.is_claim:
                continue
            has = True
            name = pod_claim_name(pod, volume)
            pvc = claims.get(f"{pod.namespace}/{name}")
            if pvc is None:
                if volume.source == EPHEMERAL_SOURCE:
                    return (
                        has,
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"',
                    )
                return has, not_found("persistentvolumeclaim", name)
            if pvc.phase == "Lost":
                return (
                    has,
                    f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"',
                )
            if pvc.deletion_timestamp:
                return has, f'persistentvolumeclaim "{pvc.name}" is being deleted'
            if volume.source == EPHEMERAL_SOURCE:
                # Here, not in the binder: kube rejects a claim the pod does not own as unresolvable.
                message = ephemeral_claim_error(pod.namespace, pod.name, pod.uid, pvc)
                if message:
                    return has, message
        return has, ""

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Sort the pod's claims; reject unusable or Immediate-unbound ones; Skip pods without claims."""
        has, reason = self._pod_has_claims(pod)
        if reason:
            return None, unresolvable(reason)
        if not has:
            state.write(STATE_KEY, _State(None))
            return None, skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except BinderError as err:
            return None, error(str(err))
        if claims.unbound_claims_immediate:
            return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims, self.binder.bound_claims_fit_every_node(claims)))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Whether the node can satisfy every claim; records how, for Reserve."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.claims is None:
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        if s.node_independent:
            # FindPodVolumes would find nothing to bind and no conflict; Reserve then sees all bound.
            return None
        node = node_info.node
        if node is None:
            return error("node not found")
        try:
            volumes, reasons = self.binder.find_pod_volumes(s.claims, node)
        except BinderError as err:
            return error(str(err))
        if reasons:
            return unresolvable(*reasons)
        with s.lock:
            s.pod_volumes_by_node[node.name] = volumes
            s.has_static_bindings = s.has_static_bindings or bool(volumes.static_bindings)
        return None

    # --- Score (StorageCapacityScoring only) ------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip unless the gate is on and there are bindings (or provisions) to score."""
        if self.scorer is None:
            return skip()
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        if s.has_static_bindings or self.capacity_scoring:
            return None
        return skip()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The shape's score of the requested/capacity ratio per class, averaged."""
        if self.scorer is None:
            return 0
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            raise PluginError(f'reading "{STATE_KEY}" from cycleState: not found')
        volumes = s.pod_volumes_by_node.get(node_info.name)
        if volumes is None:
            return 0
        resources: dict[str, list[int]] = {}
        if volumes.static_bindings or not self.capacity_scoring:
            for binding in volumes.static_bindings:
                requested, capacity = binding.requested_and_capacity()
                entry = resources.setdefault(binding.storage_class_name(), [0, 0])
                entry[0] += requested
                entry[1] += capacity
        else:
            for provision in volumes.dynamic_provisions:
                if provision.node_capacity is None:
                    continue
                entry = resources.setdefault(provision.pvc.storage_class_name, [0, 0])
                limit = provision.node_capacity.capacity
                entry[1] = 0 if limit is None else math.ceil(limit)
                entry[0] += 0 if provision.pvc.request is None else math.ceil(provision.pvc.request)
        return int(self.scorer(resources))

    # --- Reserve / PreBind ----------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Assume the node's bindings and provisions, unless every claim is bound already."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            s.all_bound = True
            return None
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except BinderError as err:
            return error(str(err))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Revert the assumed PVs and claims."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind has work unless Reserve found every volume bound."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        if s.all_bound:
            return skip()
        if node_name not in s.pod_volumes_by_node:
            return error(f'no pod volume found for node "{node_name}"')
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Write the bindings and wait until the claims are bound."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        if s.all_bound:
            return None
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return error(f'no pod volume found for node "{node_name}"')
        writer: VolumeWriter | None = getattr(self.handle, "volume_writer", None)
        if writer is None:
            return error("volume binding: this scheduler has no way to write PersistentVolumes")
        node_info = self.handle.snapshot.get(node_name)
        node = node_info.node if node_info is not None else None
        try:
            self.binder.bind_pod_volumes(pod, node, volumes, writer)
        except BinderError as err:
            return error(str(err))
        return None

    def reservation_notes(self, state: CycleState, node_name: str) -> list[str]:
        """What Reserve assumed on ``node_name``, in words: each PV a claim binds, each claim provisioned."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound:
            return []
        volumes: PodVolumes | None = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return []
        notes = [f"claim {b.pvc.key} binds PersistentVolume {b.pv.name}" for b in volumes.static_bindings]
        notes.extend(
            f"claim {p.pvc.key} is provisioned on {node_name} (StorageClass {p.pvc.storage_class_name})"
            for p in volumes.dynamic_provisions
        )
        return notes

    # --- QueueingHints ---------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Storage classes, claims, volumes, nodes, CSINodes, CSIDrivers and capacities."""
        return [
            ClusterEventWithHint(
                ClusterEvent(STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(
                ClusterEvent(NODE, node_actions(ActionType.ADD | ActionType.UPDATE_NODE_LABEL))
            ),
            ClusterEventWithHint(
                ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(CSI_DRIVER, ActionType.UPDATE), self.is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_capacity_change,
            ),
        ]

    def is_schedulable_after_csi_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new CSINode, or a change of its migrated-plugins annotation."""
        original, modified = as_storage_objects(CSINode, old, new)
        if original is None or modified is None:
            return QueueingHint.QUEUE
        if original.annotations.get(ANN_MIGRATED_PLUGINS) != modified.annotations.get(ANN_MIGRATED_PLUGINS):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_claim_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the claim is one of the pod's (generic ephemeral claims included)."""
        _, claim = as_storage_objects(PersistentVolumeClaim, old, new)
        if claim is not None and pod_uses_claim(pod, claim):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new class, or a change of allowedTopologies."""
        original, modified = as_storage_objects(StorageClass, old, new)
        if original is None or modified is None or original.allowed_topologies != modified.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_capacity_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new capacity, or one whose volume limit grew (or appeared)."""
        original, modified = as_storage_objects(CSIStorageCapacity, old, new)
        if original is None or modified is None:
            return QueueingHint.QUEUE
        old_limit, new_limit = original.volume_limit(), modified.volume_limit()
        if new_limit is not None and (old_limit is None or math.ceil(new_limit) > math.ceil(old_limit)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a driver of the pod's inline CSI volumes stopped asking for capacity checks."""
        original, modified = as_storage_objects(CSIDriver, old, new)
        if original is None or modified is None:
            return QueueingHint.QUEUE_SKIP
        for volume in pod.volumes:
            if volume.csi_driver != modified.name:
                continue
            if original.storage_capacity and not modified.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
