"""The part of ``k8s.io/csi-translation-lib`` the storage plugins use: which in-tree volume types are
migrated to which CSI driver, and the CSI volume handle of a migrated volume.

NodeVolumeLimits counts a migrated in-tree volume (GCE PD, AWS EBS, Azure Disk, Cinder, Portworx) against
its CSI driver's attach limit under the handle the translation gives it, so that the same disk mounted
as an in-tree volume and as a CSI PV is counted once.
"""

from __future__ import annotations

import re

from app.api.objects import DiskSource
from app.api.storage import LABEL_ZONE_SPLIT, PersistentVolume

__all__ = [
    "IN_TREE_PLUGIN_OF_SOURCE",
    "MIGRATED_CSI_DRIVERS",
    "TranslationError",
    "csi_driver_of_plugin",
    "in_tree_handle",
    "is_migration_on",
]

#: VolumeSource field → in-tree plugin name, for the volume types the scheduler treats as migratable.
IN_TREE_PLUGIN_OF_SOURCE = {
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "azureDisk": "kubernetes.io/azure-disk",
    "cinder": "kubernetes.io/cinder",
    "portworxVolume": "kubernetes.io/portworx-volume",
}

#: In-tree plugin name → CSI driver name (``GetCSINameFromInTreeName``).
MIGRATED_CSI_DRIVERS = {
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
}

#: The plugins whose CSI migration kube-scheduler considers on (``isCSIMigrationOn``).
_MIGRATION_ON = frozenset(IN_TREE_PLUGIN_OF_SOURCE.values())
_AWS_VOLUME = re.compile(r"^vol-[^/]*$")
_UNSPECIFIED = "UNSPECIFIED"


class TranslationError(ValueError):
    """An in-tree volume the translation library refuses (a malformed AWS volume ID, GCE zones)."""


def is_migration_on(csi_node_exists: bool, plugin: str) -> bool:
    """``isCSIMigrationOn``: the node has a CSINode object and the plugin is one of the migrated five."""
    return csi_node_exists and plugin in _MIGRATION_ON


def csi_driver_of_plugin(plugin: str) -> str | None:
    """The CSI driver an in-tree plugin (or provisioner) migrated to, or None."""
    return MIGRATED_CSI_DRIVERS.get(plugin)


def _ebs_volume_id(volume_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://zone/vol-x`` → ``vol-x``."""
    if not volume_id.startswith("aws://"):
        return volume_id
    aws_id = volume_id[len("aws://") :].partition("/")[2].strip("/")
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({volume_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def in_tree_handle(disk: DiskSource, pv: PersistentVolume | None = None) -> str:
    """The CSI volume handle of a migrated in-tree disk (an inline volume's, or ``pv``'s).

    A GCE PD PV's handle names its zone (or region) from the PV's zone label; an inline one's is
    unspecified. Raises :class:`TranslationError` where the translation library fails.
    """
    if disk.kind == "gcePersistentDisk":
        if pv is None:
            return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{disk.disk_id}"
        label = pv.labels.get("failure-domain.beta.kubernetes.io/zone") or pv.labels.get(
            "topology.kubernetes.io/zone", ""
        )
        zones = label.split(LABEL_ZONE_SPLIT)
        if len(zones) == 1 and zones[0]:
            return f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{disk.disk_id}"
        if len(zones) > 1:
            return f"projects/{_UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{disk.disk_id}"
        return f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{disk.disk_id}"
    if disk.kind == "awsElasticBlockStore":
        return _ebs_volume_id(disk.disk_id)
    return disk.disk_id
