"""The part of ``k8s.io/csi-translation-lib`` the storage plugins use: which in-tree volume types are
migrated to which CSI driver, and the CSI volume handle of a migrated volume.

NodeVolumeLimits counts a migrated in-tree volume (GCE PD, AWS EBS, Azure Disk, Cinder, Portworx) against
its CSI driver's attach limit under the handle the translation gives it, so that the same disk mounted
as an in-tree volume and as a CSI PV is counted once.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from app.api.objects import DiskSource
from app.api.selectors import NodeSelector, parse_node_selector
from app.api.storage import LABEL_ZONE_SPLIT, PersistentVolume

__all__ = [
    "IN_TREE_PLUGIN_OF_SOURCE",
    "MIGRATED_CSI_DRIVERS",
    "TranslationError",
    "csi_driver_of_plugin",
    "in_tree_handle",
    "is_migration_on",
    "is_plugin_migrated_on_node",
    "migrated_plugin_of_pv",
    "translated_node_affinity",
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

#: In-tree plugin name → the CSI driver's zone topology key a PV's zone translates to (the plugins whose
#: ``TranslateInTreePVToCSI`` calls ``translateTopologyFromInTreeToCSI``; Azure Disk and Portworx do not).
CSI_TOPOLOGY_KEYS = {
    "kubernetes.io/gce-pd": "topology.gke.io/zone",
    "kubernetes.io/aws-ebs": "topology.ebs.csi.aws.com/zone",
    "kubernetes.io/cinder": "topology.cinder.csi.openstack.org/zone",
}
_ZONE, _REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
_BETA_ZONE, _BETA_REGION = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
)

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


# --- PersistentVolumes: VolumeBinding's tryTranslatePVToCSI ------------------------------------------------


def migrated_plugin_of_pv(pv: PersistentVolume) -> str | None:
    """The in-tree plugin of a PV the translation library can migrate (``IsPVMigratable`` and
    ``isCSIMigrationOnForPlugin``: GCE PD, AWS EBS, Azure Disk, Cinder, Portworx), or None."""
    return IN_TREE_PLUGIN_OF_SOURCE.get(pv.disk.kind) if pv.disk is not None else None


def is_plugin_migrated_on_node(plugin: str, migrated_plugins: set[str] | None) -> bool:
    """``isPluginMigratedToCSIOnNode``: the node's CSINode (None: there is none) lists the plugin in its
    ``storage.alpha.kubernetes.io/migrated-plugins`` annotation."""
    return migrated_plugins is not None and plugin in migrated_plugins


def _expressions(terms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for t in terms for e in (t.get("matchExpressions") or [])]


def _topology_values(terms: list[dict[str, Any]], key: str) -> list[str]:
    """``getTopologyValues``: the values of every requirement on ``key``, deduplicated and sorted."""
    return sorted({str(v) for e in _expressions(terms) if e.get("key") == key for v in e.get("values") or []})


def _replace_topology(terms: list[dict[str, Any]], old: str, new: str) -> None:
    for e in _expressions(terms):
        if e.get("key") == old:
            e["key"] = new


def _topology_labels(pv: PersistentVolume, terms: list[dict[str, Any]]) -> tuple[str, str]:
    """``getTopologyLabel``: GA or beta zone/region keys, by the node affinity first, then the labels."""
    keys = {e.get("key") for e in _expressions(terms)}
    if _ZONE in keys:
        return _ZONE, _REGION
    if _BETA_ZONE in keys:
        return _BETA_ZONE, _BETA_REGION
    if _ZONE in pv.labels:
        return _ZONE, _REGION
    if _BETA_ZONE in pv.labels:
        return _BETA_ZONE, _BETA_REGION
    return _ZONE, _REGION


def translated_node_affinity(pv: PersistentVolume) -> NodeSelector | None:
    """The node affinity of ``pv`` once ``TranslateInTreePVToCSI`` made it a CSI PV: the zone requirement
    moved to the CSI driver's topology key (or, without one, made from the PV's zone label, ``a__b``
    listing several), a beta region requirement made GA. Raises :class:`TranslationError` where the
    library fails (a GCE PD's zones in several regions, a malformed AWS volume ID)."""
    plugin = migrated_plugin_of_pv(pv)
    if plugin is None or pv.disk is None:
        return pv.node_affinity
    in_tree_handle(pv.disk, pv)  # the library builds the handle first: its errors come first
    key = CSI_TOPOLOGY_KEYS.get(plugin)
    if key is None:
        return pv.node_affinity
    spec = pv.raw.get("spec") or {}
    required = (spec.get("nodeAffinity") or {}).get("required")
    terms: list[dict[str, Any]] = copy.deepcopy(list((required or {}).get("nodeSelectorTerms") or []))
    zone_label, region_label = _topology_labels(pv, terms)
    if _topology_values(terms, zone_label):
        _replace_topology(terms, zone_label, key)
    elif zone_label in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone_label].split(LABEL_ZONE_SPLIT)} - {""})
        if zones:  # addTopology: one In requirement added to every term (to a new one if none)
            terms = terms or [{}]
            for term in terms:
                term["matchExpressions"] = [
                    *(term.get("matchExpressions") or []),
                    {"key": key, "operator": "In", "values": zones},
                ]
    if region_label == _BETA_REGION and _topology_values(terms, _BETA_REGION):
        _replace_topology(terms, _BETA_REGION, _REGION)
    if required is None and not terms:
        return None
    return parse_node_selector({**(required or {}), "nodeSelectorTerms": terms}, "spec.nodeAffinity.required")
