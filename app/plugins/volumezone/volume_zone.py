"""VolumeZone (``plugins/volumezone/volume_zone.go``).

A bound PersistentVolume labelled with a zone or region (GA or beta topology label; several zones joined
by ``__``) only fits nodes with a matching label. A node with none of the four topology labels fits
every volume, as in kube-scheduler. Claims of a WaitForFirstConsumer class that are not bound yet are
VolumeBinding's business and are skipped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from app.api.objects import (
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    PVC_SOURCE,
    Pod,
)
from app.api.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    LABEL_ZONE_SPLIT,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    not_found,
)
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
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
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, skip, unresolvable
from app.framework.types import NodeInfo
from app.plugins.helper.storage import as_storage_objects, pod_uses_claim, shared_storage_lister

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

#: The topology labels, beta first, in kube-scheduler's order.
TOPOLOGY_LABELS = (LABEL_ZONE_BETA, LABEL_REGION_BETA, LABEL_ZONE, LABEL_REGION)
_TO_GA = {LABEL_REGION_BETA: LABEL_REGION, LABEL_ZONE_BETA: LABEL_ZONE}


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a PV: its key and the zones (or regions) it allows."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: ``a__b`` → {a, b}; None when an element is empty."""
    zones = [z.strip() for z in value.split(LABEL_ZONE_SPLIT)]
    return None if any(not z for z in zones) else frozenset(zones)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """``getPVTopologies``: the PV's topology labels (unparseable values are ignored)."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is not None:
            zones = label_zones_to_set(value)
            if zones is not None:
                out.append(PVTopology(pv.name, key, zones))
    return out


class _State(StateData):
    __slots__ = ("topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.topologies = topologies


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    """Rejects nodes outside the zone (or region) of a pod's bound PersistentVolumes."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.storage = shared_storage_lister(handle.objects)

    def _pv_topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """``getPVbyPod``."""
        out: list[PVTopology] = []
        claims = self.storage.pvcs()
        pvs: dict[str, PersistentVolume] | None = None
        classes: dict[str, StorageClass] | None = None
        for volume in pod.volumes:
            if volume.source != PVC_SOURCE:
                continue
            name = volume.claim_name
            if not name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            pvc: PersistentVolumeClaim | None = claims.get(f"{pod.namespace}/{name}")
            if pvc is None:
                return [], unresolvable(not_found("persistentvolumeclaim", name))
            if not pvc.volume_name:
                class_name = pvc.storage_class_name
                if not class_name:
                    return [], unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                classes = classes if classes is not None else self.storage.storage_classes()
                sc = classes.get(class_name)
                if sc is None:
                    return [], unresolvable(not_found("storageclass.storage.k8s.io", class_name))
                if sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], unresolvable("PersistentVolume had no name")
            pvs = pvs if pvs is not None else self.storage.pvs()
            pv = pvs.get(pvc.volume_name)
            if pv is None:
                return [], unresolvable(not_found("persistentvolume", pvc.volume_name))
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Look the pod's bound PVs' topologies up; Skip when there are none."""
        topologies, status = self._pv_topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Every PV topology label must be on the node (GA spelling accepted for beta) with an allowed value."""
        if not pod.volumes:
            return None
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _State):
            topologies = s.topologies
        else:
            topologies, status = self._pv_topologies(pod)
            if status is not None:
                return status
        node = node_info.node
        labels = node.labels if node is not None else {}
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for t in topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(_TO_GA.get(t.key, t.key))
            if value is None or value not in t.values:
                return unresolvable(ERR_REASON_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """StorageClass added, node added or relabelled, claims and volumes added or updated."""
        return [
            ClusterEventWithHint(
                ClusterEvent(STORAGE_CLASS, ActionType.ADD), self.is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, node_actions(ActionType.ADD | ActionType.UPDATE_NODE_LABEL))
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_volume_change,
            ),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the claim is one of the pod's."""
        _, claim = as_storage_objects(PersistentVolumeClaim, old, new)
        if claim is not None and pod_uses_claim(pod, claim, ephemeral=False):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_added(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a WaitForFirstConsumer class only."""
        _, sc = as_storage_objects(StorageClass, old, new)
        if sc is not None and sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_volume_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue for a new PV, or one whose topology labels changed."""
        original, modified = as_storage_objects(PersistentVolume, old, new)
        if original is None or modified is None:
            return QueueingHint.QUEUE
        if pv_topologies(original) != pv_topologies(modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
