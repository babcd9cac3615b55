"""NodeVolumeLimits (``plugins/nodevolumelimits/csi.go``, kube-scheduler's CSILimits).

A node's CSINode reports, per CSI driver, how many volumes the node can attach. The pod's new volumes
(claims bound to CSI PVs, claims still to be provisioned by a CSI class, migrated in-tree volumes) are
counted by driver against that limit, together with the volumes of the pods on the node and the node's
VolumeAttachments. A volume already on the node is not counted twice.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any, ClassVar

from app import logs
from app.api.objects import EPHEMERAL_SOURCE, PVC_SOURCE, Pod, Volume, pod_claim_name
from app.api.storage import (
    CSINode,
    PersistentVolumeClaim,
    VolumeAttachment,
    ephemeral_claim_error,
    not_found,
)
from app.framework.cycle_state import CycleState, StateData
from app.framework.events import (
    CSI_NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    as_pods,
)
from app.framework.interfaces import EnqueueExtensions, FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from app.framework.status import Status, error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo
from app.plugins.helper.csi_translation import (
    IN_TREE_PLUGIN_OF_SOURCE,
    TranslationError,
    csi_driver_of_plugin,
    in_tree_handle,
    is_migration_on,
)
from app.plugins.helper.storage import (
    StorageLister,
    as_storage_objects,
    pod_uses_claim,
    shared_storage_lister,
)

NAME = "NodeVolumeLimits"
STATE_KEY = "PreFilter" + NAME
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"


class _ClaimNotFound(Exception):
    """A new pod's claim is missing: UnschedulableAndUnresolvable."""


#: At most this many nodes' claim-volume counts are kept (NodeVolumeLimits._existing_claim_volumes).
_MAX_CACHED_NODES = 65536


class _Lookups(StateData):
    """This cycle's storage objects (looked up once in PreFilter, read for every node)."""

    __slots__ = ("attachments", "classes", "csi_nodes", "new_drivers", "new_volumes", "pvcs", "pvs")

    def __init__(self, storage: StorageLister) -> None:
        # The pod's countable volumes (or why they cannot be counted), by whether the node has a CSINode.
        self.new_volumes: dict[bool, dict[str, str] | Status] = {}
        # The drivers of new_volumes' values, once each.
        self.new_drivers: dict[bool, tuple[str, ...]] = {}
        self.pvcs = storage.pvcs()
        self.pvs = storage.pvs()
        self.classes = storage.storage_classes()
        self.csi_nodes = storage.csi_nodes()
        self.attachments = storage.attachments_by_node()


def is_inline_migratable(volume: Volume) -> bool:
    """``IsInlineMigratable`` for the volume types whose migration the scheduler counts."""
    return volume.source in IN_TREE_PLUGIN_OF_SOURCE


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    """Rejects nodes where the pod's CSI volumes would exceed a driver's attach limit."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.storage = shared_storage_lister(handle.objects)
        # The handle of a claim not provisioned yet is unknown: kube makes up a unique one per claim.
        self.random_volume_id_prefix = secrets.token_hex(16)
        # Node name -> (NodeInfo generation, _existing_claim_volumes at that generation).
        self._claim_volumes: dict[str, tuple[int, int]] = {}

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods without a claim, generic ephemeral or migratable in-tree volume."""
        if any(v.is_claim or is_inline_migratable(v) for v in pod.volumes):
            state.write(STATE_KEY, _Lookups(self.storage))
            return None, None
        return None, skip()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Count new and attached volumes per driver against the CSINode's limits."""
        if not pod.volumes or node_info.node is None:
            return None
        lookups = state.get(STATE_KEY)
        if not isinstance(lookups, _Lookups):
            lookups = _Lookups(self.storage)
        node_name = node_info.node.name
        csi_node = lookups.csi_nodes.get(node_name)
        # The pod's own volumes depend on the node only through whether it has a CSINode (migration
        # of in-tree volumes): computed once per cycle for each of the two cases.
        has_csi_node = csi_node is not None
        outcome = lookups.new_volumes.get(has_csi_node)
        if outcome is None:
            outcome = {}
            try:
                self._attachable_volumes(lookups, pod, csi_node, True, outcome)
            except _ClaimNotFound as err:
                outcome = unresolvable(str(err))
            except (TranslationError, ValueError) as err:
                outcome = error(str(err))
            lookups.new_volumes[has_csi_node] = outcome
            lookups.new_drivers[has_csi_node] = (
                () if isinstance(outcome, Status) else tuple(set(outcome.values()))
            )
        if isinstance(outcome, Status):
            return outcome
        if not outcome:
            return None
        limits = csi_node.limits if csi_node is not None else {}
        if not limits:
            return None
        # The fast path, inline (it runs for every node): does the node fit whatever its pods' volumes
        # turn out to be? Each volume of a pod on the node, and each VolumeAttachment, counts at most
        # once for one driver, so if all of them with the pod's new volumes stay within the smallest
        # limit concerned, the count (one lookup per volume per node) cannot reject.
        smallest = -1
        for driver in lookups.new_drivers[has_csi_node]:
            driver_limit = limits.get(driver, -1)
            if driver_limit >= 0 and (smallest < 0 or driver_limit < smallest):
                smallest = driver_limit
        if smallest < 0:
            return None  # no limit concerns the pod's volumes
        existing_volumes = self._existing_claim_volumes(node_info)
        if (
            existing_volumes >= 0
            and smallest - len(outcome) - len(lookups.attachments.get(node_name, ())) >= existing_volumes
        ):
            return None
        counts = self._driver_counts(lookups, node_info, csi_node, outcome)
        if isinstance(counts, Status):
            return counts
        for attached_count, new_count, limit in counts.values():
            if limit is not None and attached_count + new_count > limit:
                return unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _driver_counts(
        self, lookups: _Lookups, node_info: NodeInfo, csi_node: CSINode | None, outcome: dict[str, str]
    ) -> dict[str, tuple[int, int, int | None]] | Status:
        """Per driver of the pod's new volumes (``outcome``, unique name → driver): the volumes the
        node has attached (its pods' and its VolumeAttachments'), the pod's volumes not among them,
        and the CSINode's limit (None: no limit)."""
        node_name = node_info.name
        new_volumes = dict(outcome)
        attached: dict[str, str] = {}
        try:
            for existing in node_info.pods:
                self._attachable_volumes(lookups, existing.pod, csi_node, False, attached)
        except (TranslationError, ValueError) as err:
            return error(str(err))
        attached_count: dict[str, int] = {}
        for unique_name, driver in attached.items():
            new_volumes.pop(unique_name, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique_name, driver in self._node_attachments(lookups, node_name).items():
            if unique_name not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        limits = csi_node.limits if csi_node is not None else {}
        return {
            driver: (attached_count.get(driver, 0), count, limits.get(driver))
            for driver, count in new_count.items()
        }

    def volume_counts(self, pod: Pod, node_info: NodeInfo) -> dict[str, tuple[int, int, int | None]]:
        """For explanations: per CSI driver of ``pod``'s new volumes, (volumes attached on the node,
        the pod's new ones, the node's limit or None), as :meth:`filter` counts them; empty when the
        count cannot be made (a claim not found, a volume that cannot be translated)."""
        if node_info.node is None:
            return {}
        lookups = _Lookups(self.storage)
        csi_node = lookups.csi_nodes.get(node_info.node.name)
        outcome: dict[str, str] = {}
        try:
            self._attachable_volumes(lookups, pod, csi_node, True, outcome)
        except (_ClaimNotFound, TranslationError, ValueError):
            return {}
        counts = self._driver_counts(lookups, node_info, csi_node, outcome)
        return {} if isinstance(counts, Status) else counts

    def _existing_claim_volumes(self, node_info: NodeInfo) -> int:
        """The claim volumes of the node's pods, -1 when one of them is a volume the count may reject
        with an error (generic ephemeral, inline migratable, a claim without a name: such pods are
        counted in full, so that the errors stay kube-scheduler's). Kept per node until its generation
        changes: pods come and go far less often than each pod's Filter asks."""
        cached = self._claim_volumes.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            return cached[1]
        count = 0
        for existing in node_info.pods:
            for volume in existing.pod.volumes:
                if (
                    volume.source == EPHEMERAL_SOURCE
                    or is_inline_migratable(volume)
                    or (volume.source == PVC_SOURCE and not volume.claim_name)
                ):
                    count = -1
                    break
                if volume.source == PVC_SOURCE:
                    count += 1
            if count < 0:
                break
        if len(self._claim_volumes) >= _MAX_CACHED_NODES:
            self._claim_volumes.clear()  # names of nodes long gone (autoscaled away) do not pile up
        self._claim_volumes[node_info.name] = (node_info.generation, count)
        return count

    def _attachable_volumes(
        self, lookups: _Lookups, pod: Pod, csi_node: CSINode | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """``filterAttachableVolumes``: add the pod's countable volumes, unique name → driver."""
        for volume in pod.volumes:
            if not volume.is_claim:
                self._inline_volume(volume, csi_node, result)
                continue
            claim_name = pod_claim_name(pod, volume)
            if not claim_name:
                raise ValueError("PersistentVolumeClaim had no name")
            pvc = lookups.pvcs.get(f"{pod.namespace}/{claim_name}")
            if pvc is None:
                if new_pod:
                    raise _ClaimNotFound(
                        f"looking up PVC {pod.namespace}/{claim_name}: "
                        + not_found("persistentvolumeclaim", claim_name)
                    )
                logs.info("Unable to look up PVC info", 5, pod=pod.key, PVC=f"{pod.namespace}/{claim_name}")
                continue
            if volume.source == EPHEMERAL_SOURCE:
                message = ephemeral_claim_error(pod.namespace, pod.name, pod.uid, pvc)
                if message:
                    raise ValueError(message)
            driver, handle = self._csi_driver_info(lookups, csi_node, pvc)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    @staticmethod
    def _inline_volume(volume: Volume, csi_node: CSINode | None, result: dict[str, str]) -> None:
        """``checkAttachableInlineVolume``: a migrated in-tree volume counts under its CSI driver."""
        if volume.disk is None or not is_inline_migratable(volume):
            return
        plugin = IN_TREE_PLUGIN_OF_SOURCE[volume.source]
        if not is_migration_on(csi_node is not None, plugin):
            return
        driver = csi_driver_of_plugin(plugin)
        if driver:
            result[f"{driver}/{in_tree_handle(volume.disk)}"] = driver

    def _csi_driver_info(
        self, lookups: _Lookups, csi_node: CSINode | None, pvc: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """``getCSIDriverInfo``: the driver and handle of the claim's PV, else of its class."""
        if not pvc.volume_name:
            return self._csi_driver_info_from_class(lookups, csi_node, pvc)
        pv = lookups.pvs.get(pvc.volume_name)
        if pv is None:
            return self._csi_driver_info_from_class(lookups, csi_node, pvc)
        if pv.csi is not None:
            return pv.csi.driver, pv.csi.volume_handle
        if pv.disk is None or pv.disk.kind not in IN_TREE_PLUGIN_OF_SOURCE:
            return "", ""
        plugin = IN_TREE_PLUGIN_OF_SOURCE[pv.disk.kind]
        if not is_migration_on(csi_node is not None, plugin):
            return "", ""
        try:
            handle = in_tree_handle(pv.disk, pv)
        except TranslationError:
            return "", ""
        return csi_driver_of_plugin(plugin) or "", handle

    def _csi_driver_info_from_class(
        self, lookups: _Lookups, csi_node: CSINode | None, pvc: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: a claim to provision counts under its class's provisioner."""
        if not pvc.storage_class_name:
            return "", ""
        sc = lookups.classes.get(pvc.storage_class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.namespace}/{pvc.name}"
        migrated = csi_driver_of_plugin(sc.provisioner)
        if migrated is not None:
            if not is_migration_on(csi_node is not None, sc.provisioner):
                return "", ""
            return migrated, handle
        return sc.provisioner, handle

    @staticmethod
    def _node_attachments(lookups: _Lookups, node_name: str) -> dict[str, str]:
        """``getNodeVolumeAttachmentInfo``: CSI volumes attached to the node, unique name → attacher."""
        out: dict[str, str] = {}
        attachments: list[VolumeAttachment] = lookups.attachments.get(node_name, [])
        for va in attachments:
            if not va.attacher or va.persistent_volume_name is None:
                continue
            pv = lookups.pvs.get(va.persistent_volume_name)
            if pv is None or pv.csi is None:
                continue
            out[f"{va.attacher}/{pv.csi.volume_handle}"] = va.attacher
        return out

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """CSINode added or updated, pod deleted, claim added, VolumeAttachment deleted."""
        return [
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(CSI_NODE, ActionType.UPDATE), self.is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.is_schedulable_after_claim_added
            ),
            ClusterEventWithHint(
                ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_attachment_deleted,
            ),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when an assigned (or nominated) pod with a countable volume went away."""
        deleted, _ = as_pods(old, None)
        if deleted is None or not deleted.volumes:
            return QueueingHint.QUEUE_SKIP
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        if any(v.is_claim or is_inline_migratable(v) for v in deleted.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_claim_added(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the new claim is one of the pod's (generic ephemeral claims included)."""
        _, claim = as_storage_objects(PersistentVolumeClaim, old, new)
        if claim is not None and pod_uses_claim(pod, claim):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_attachment_deleted(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pod has a claim, or a migrated inline volume of the attachment's driver."""
        deleted, _ = as_storage_objects(VolumeAttachment, old, new)
        if deleted is None:
            return QueueingHint.QUEUE_SKIP
        for volume in pod.volumes:
            if volume.source == PVC_SOURCE:
                return QueueingHint.QUEUE
            if not is_inline_migratable(volume):
                continue
            if csi_driver_of_plugin(IN_TREE_PLUGIN_OF_SOURCE[volume.source]) == deleted.attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a driver's attach limit went up (an absent count is 0)."""
        original, modified = as_storage_objects(CSINode, old, new)
        if original is None or modified is None:
            return QueueingHint.QUEUE
        old_limits = {d.name: d.allocatable_count or 0 for d in original.drivers}
        for d in modified.drivers:
            if (d.allocatable_count or 0) > old_limits.get(d.name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
