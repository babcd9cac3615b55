"""VolumeRestrictions (``plugins/volumerestrictions/volume_restrictions.go``).

- Disk conflicts: a GCE PD, AWS EBS, iSCSI or RBD disk used by a pod on the node conflicts with the same
  disk in the pod, unless both mount it read-only (an AWS EBS volume conflicts even then, and RBD disks
  are the same when their monitors overlap and pool and image are equal).
- ReadWriteOncePod: a claim with that access mode that any scheduled pod already uses makes every node
  Unschedulable (not Unresolvable: preemption may free the claim, which PreFilterExtensions accounts for).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from app.api.objects import PVC_SOURCE, Pod, Volume
from app.api.storage import PersistentVolumeClaim, not_found
from app.framework.aggregate import NodeAggregate
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_pods,
    node_actions,
)
from app.framework.interfaces import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from app.framework.status import Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.helper.storage import as_storage_objects, pod_uses_claim, shared_storage_lister

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_CHECKED_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")


def needs_restrictions_check(volume: Volume) -> bool:
    """``needsRestrictionsCheck``: a GCE PD, AWS EBS, RBD or iSCSI volume."""
    return volume.source in _CHECKED_DISKS


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """``isVolumeConflict``: whether ``volume`` conflicts with one of ``pod``'s volumes."""
    disk = volume.disk
    if disk is None:
        return False
    for existing in pod.volumes:
        other = existing.disk
        if other is None or other.kind != disk.kind:
            continue
        if disk.kind == "gcePersistentDisk" or disk.kind == "iscsi":
            if disk.disk_id == other.disk_id and not (disk.read_only and other.read_only):
                return True
        elif disk.kind == "awsElasticBlockStore":
            if disk.disk_id == other.disk_id:
                return True
        elif (
            disk.kind == "rbd"
            and set(disk.monitors) & set(other.monitors)
            and disk.pool == other.pool
            and disk.disk_id == other.disk_id
            and not (disk.read_only and other.read_only)
        ):
            return True
    return False


def satisfy_volume_conflicts(pod: Pod, pods: Sequence[PodInfo]) -> bool:
    """``satisfyVolumeConflicts``: none of the pod's checked disks is in use by ``pods``."""
    for volume in pod.volumes:
        if not needs_restrictions_check(volume):
            continue
        for existing in pods:
            if is_volume_conflict(volume, existing.pod):
                return False
    return True


def pod_pvc_keys(pod: Pod) -> list[str]:
    """The ``namespace/claimName`` of the pod's persistentVolumeClaim volumes (``PVCRefCounts``)."""
    return [f"{pod.namespace}/{v.claim_name}" for v in pod.volumes if v.source == PVC_SOURCE]


class UsedClaims(NodeAggregate[Counter[str]]):
    """How many scheduled pods use each claim (the snapshot's ``usedPVCSet``, with counts)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def contribution(self, node_info: NodeInfo) -> Counter[str] | None:
        """The claims of the node's pods."""
        keys = [k for p in node_info.pods for k in pod_pvc_keys(p.pod)]
        return Counter(keys) if keys else None

    def add(self, contribution: Counter[str]) -> None:
        """Count them."""
        self.counts.update(contribution)

    def subtract(self, contribution: Counter[str]) -> None:
        """Uncount them."""
        self.counts.subtract(contribution)

    def used(self, key: str) -> bool:
        """``IsPVCUsedByPods``."""
        return self.counts.get(key, 0) > 0


class _State(StateData):
    """The pod's ReadWriteOncePod claims, and how many scheduled pods' volumes use them."""

    __slots__ = ("conflicting_pvc_ref_count", "read_write_once_pod_pvcs")

    def __init__(self, pvcs: frozenset[str], count: int) -> None:
        self.read_write_once_pod_pvcs = pvcs
        self.conflicting_pvc_ref_count = count

    def update_with_pod(self, pod: Pod, multiplier: int) -> None:
        """``updateWithPod``: add (or remove) the pod's references to the claims."""
        self.conflicting_pvc_ref_count += multiplier * sum(
            1 for v in pod.volumes if v.source == PVC_SOURCE and v.claim_name in self.read_write_once_pod_pvcs
        )

    def clone(self) -> _State:
        return _State(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, PreFilterExtensions, EnqueueExtensions):
    """Rejects nodes where the pod's disk is in use, and every node while its RWOP claim is in use."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.storage = shared_storage_lister(handle.objects)

    def _read_write_once_pod_pvcs(self, pod: Pod) -> tuple[frozenset[str], Status | None]:
        claims: dict[str, PersistentVolumeClaim] | None = None
        out = set()
        for volume in pod.volumes:
            if volume.source != PVC_SOURCE:
                continue
            claims = claims if claims is not None else self.storage.pvcs()
            pvc = claims.get(f"{pod.namespace}/{volume.claim_name}")
            if pvc is None:
                return frozenset(), unresolvable(not_found("persistentvolumeclaim", volume.claim_name))
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                out.add(pvc.name)
        return frozenset(out), None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count the scheduled pods using the pod's RWOP claims; Skip when nothing needs checking."""
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        pvcs, status = self._read_write_once_pod_pvcs(pod)
        if status is not None:
            return None, status
        count = 0
        if pvcs:
            used = self.handle.snapshot.aggregate((NAME, "usedPVCs"), UsedClaims)
            count = sum(1 for name in pvcs if used.used(f"{pod.namespace}/{name}"))
        if not needs_check and count == 0:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _State(pvcs, count))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        """AddPod/RemovePod keep the RWOP count right in preemption's dry runs."""
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """``pod_to_add`` now uses its claims."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _State):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add.pod, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """``pod_to_remove`` no longer uses its claims."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _State):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove.pod, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Disk conflict on this node, then a RWOP claim in use anywhere."""
        if not satisfy_volume_conflicts(pod, node_info.pods):
            return unschedulable(ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _State):
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod deleted, a node added, a claim added."""
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions(ActionType.ADD))),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.is_schedulable_after_claim_added
            ),
        ]

    def is_schedulable_after_claim_added(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the new claim is one the pod refers to."""
        _, claim = as_storage_objects(PersistentVolumeClaim, old, new)
        if claim is not None and pod_uses_claim(pod, claim, ephemeral=False):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the deleted pod held a conflicting disk or one of the pod's claims."""
        deleted, _ = as_pods(old, None)
        if deleted is None or deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfy_volume_conflicts(pod, [PodInfo(deleted)]):
            return QueueingHint.QUEUE
        claims = {v.claim_name for v in pod.volumes if v.source == PVC_SOURCE}
        if any(v.source == PVC_SOURCE and v.claim_name in claims for v in deleted.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
