"""Storage objects for the parity suite's scenarios: what VolumeBinding, VolumeZone, VolumeRestrictions and
NodeVolumeLimits read.

A share of the scenarios (``STORAGE_SHARE``) gets a storage layer over the generator's cluster: CSIDrivers
(``attachRequired``, ``storageCapacity``), StorageClasses of both binding modes (no provisioner, a CSI
provisioner with ``allowedTopologies``, a capacity-tracked one, the in-tree GCE PD provisioner, one that
does not exist), CSINodes with attach limits and the in-tree migration annotation, CSIStorageCapacity per
zone, PersistentVolumes (local ones pinned to a node, zonal CSI ones, migrated in-tree GCE PD / AWS EBS
ones with zone labels; available or bound), PersistentVolumeClaims (bound, WaitForFirstConsumer and
Immediate unbound, with a selected node, of a missing class, bound to a missing PV, being deleted,
ReadWriteOncePod), VolumeAttachments, and pod volumes: claims, generic ephemeral volumes and in-tree
GCE PD, AWS EBS, iSCSI and RBD disks on running pods and the pending one.

The layer draws from its own random stream (seeded from the scenario's seed), so a scenario without it is
the one the generator made before storage existed. Objects are what a cluster's API server would hold: a
bound PV has the claim's ``claimRef`` (with its UID), a bound claim ``volumeName`` and the PV controller's
``pv.kubernetes.io/bind-completed`` annotation, phases as the PV controller sets them.
"""

from __future__ import annotations

import random
from typing import Any

Obj = dict[str, Any]

#: Share of scenarios with storage objects (``run.py --storage-share`` changes it for a pass).
STORAGE_SHARE = 0.4
#: The kinds this module adds (the real-binary check in test_oracle.py does not create them).
STORAGE_KINDS = frozenset(
    {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
    }
)

ZONE_LABEL = "topology.kubernetes.io/zone"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
CSI_DRIVER = "csi.example.com"
CAPACITY_DRIVER = "capacity.example.com"
GCE_PD_DRIVER = "pd.csi.storage.gke.io"
EBS_DRIVER = "ebs.csi.aws.com"
#: The zone keys of the migrated drivers' topology (csi-translation-lib's GCEPDTopologyKey, AWSEBSTopologyKey).
CSI_TOPOLOGY_KEYS = {GCE_PD_DRIVER: "topology.gke.io/zone", EBS_DRIVER: "topology.ebs.csi.aws.com/zone"}
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
SIZES = ("1Gi", "2Gi", "5Gi", "10Gi", "20Gi")
SIZE_GI = {s: int(s[:-2]) for s in SIZES}
DISKS = ("disk-1", "disk-2", "disk-3")

#: StorageClass name -> (provisioner, volumeBindingMode or None for the API default, Immediate).
CLASSES: dict[str, tuple[str, str | None]] = {
    "local": ("kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
    "csi-wffc": (CSI_DRIVER, "WaitForFirstConsumer"),
    "capacity": (CAPACITY_DRIVER, "WaitForFirstConsumer"),
    "gce-pd": ("kubernetes.io/gce-pd", "WaitForFirstConsumer"),
    "fast": (CSI_DRIVER, None),
    "ebs-immediate": (EBS_DRIVER, "Immediate"),
}

#: Classes of the unbound claims, mostly WaitForFirstConsumer ones (an unbound Immediate claim, or one of
#: a class that does not exist, rejects the pod at PreFilter: a few of those go a long way).
UNBOUND_CLASSES = ("local", "csi-wffc", "capacity", "gce-pd", "fast", "ebs-immediate", "missing", "")
UNBOUND_WEIGHTS = (3, 3, 2, 1, 0.4, 0.3, 0.3, 0.3)


class _StorageGen:
    def __init__(self, seed: int, nodes: list[Obj]) -> None:
        # A stream of its own: the rest of the scenario does not change with the storage layer.
        self.rng = random.Random(seed * 1_000_003 + 18)
        self.nodes = nodes
        self.features: list[str] = []
        self.claims: list[Obj] = []
        self.pvs: list[Obj] = []
        self.running_disks: list[tuple[str, Obj]] = []  # (kind, source) of the running pods' in-tree disks
        self.zones = sorted({n["metadata"]["labels"].get(ZONE_LABEL, "") for n in nodes} - {""})

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: list[str] | tuple[str, ...]) -> str:
        return self.rng.choice(list(seq))

    # --- cluster-scoped objects ---------------------------------------------------------------------

    def drivers(self) -> list[Obj]:
        out = []
        for name, capacity in ((CSI_DRIVER, False), (CAPACITY_DRIVER, True), (GCE_PD_DRIVER, False)):
            if not self.chance(0.8):
                continue
            spec: Obj = {"attachRequired": self.chance(0.7)}
            if capacity:
                spec["storageCapacity"] = self.chance(0.85)
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSIDriver",
                    "metadata": {"name": name},
                    "spec": spec,
                }
            )
        return out

    def classes(self) -> list[Obj]:
        out = []
        for name, (provisioner, mode) in CLASSES.items():
            if not self.chance(0.95):
                continue  # claims of a class that does not exist
            sc: Obj = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
            }
            if mode is not None:
                sc["volumeBindingMode"] = mode
            if name in ("csi-wffc", "gce-pd") and self.chance(0.5) and self.zones:
                zones = sorted(self.rng.sample(self.zones, self.rng.randint(1, len(self.zones))))
                sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE_LABEL, "values": zones}]}]
            out.append(sc)
        return out

    def csi_nodes(self) -> list[Obj]:
        out = []
        for node in self.nodes:
            if not self.chance(0.7):
                continue
            name = node["metadata"]["name"]
            drivers = []
            for driver in (CSI_DRIVER, CAPACITY_DRIVER, GCE_PD_DRIVER, EBS_DRIVER):
                if not self.chance(0.6):
                    continue
                entry: Obj = {"name": driver, "nodeID": f"{name}-{driver}", "topologyKeys": [ZONE_LABEL]}
                topology_key = CSI_TOPOLOGY_KEYS.get(driver)
                labels = node["metadata"]["labels"]
                if topology_key and ZONE_LABEL in labels and self.chance(0.7):
                    # What the driver's node plugin registers: migrated PVs' zones translate to this key.
                    labels[topology_key] = labels[ZONE_LABEL]
                    entry["topologyKeys"] = [topology_key]
                if self.chance(0.75):
                    entry["allocatable"] = {"count": self.rng.randint(0, 3)}
                drivers.append(entry)
            meta: Obj = {"name": name}
            if self.chance(0.4):
                plugins = self.rng.sample(
                    ["kubernetes.io/gce-pd", "kubernetes.io/aws-ebs"], self.rng.randint(1, 2)
                )
                meta["annotations"] = {MIGRATED_PLUGINS: ",".join(sorted(plugins))}
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": meta,
                    "spec": {"drivers": drivers},
                }
            )
        return out

    def capacities(self) -> list[Obj]:
        out = []
        for i, zone in enumerate(self.zones):
            if not self.chance(0.7):
                continue
            cap: Obj = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"capacity-{i}", "namespace": "default"},
                "storageClassName": "capacity",
                "nodeTopology": {"matchLabels": {ZONE_LABEL: zone}},
                "capacity": self.pick(("0", "1Gi", "5Gi", "50Gi")),
            }
            if self.chance(0.3):
                cap["maximumVolumeSize"] = self.pick(("2Gi", "10Gi"))
            out.append(cap)
        return out

    # --- volumes and claims ---------------------------------------------------------------------------

    def pv(self, name: str, storage_class: str, source: Obj, affinity_terms: list[Obj] | None) -> Obj:
        spec: Obj = {
            "capacity": {"storage": self.pick(SIZES)},
            "accessModes": [
                self.pick(("ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany"))
            ],
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": "Retain",
            **source,
        }
        if self.chance(0.1):
            spec["volumeMode"] = "Block"
        if affinity_terms:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": affinity_terms}}
        labels: Obj = {}
        if self.chance(0.4):
            labels["disk"] = self.pick(("ssd", "hdd"))
        meta: Obj = {"name": name, "uid": f"uid-pv-{name}"}
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": meta,
            "spec": spec,
            "status": {"phase": "Available"},
        }
        if labels:
            meta["labels"] = labels
        self.pvs.append(pv)
        return pv

    def volumes(self) -> None:
        for node in self.nodes:
            if not self.chance(0.5):
                continue
            name = node["metadata"]["name"]
            for j in range(self.rng.randint(1, 2)):
                term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [name]}]}
                self.pv(f"local-{name}-{j}", "local", {"local": {"path": f"/mnt/disk{j}"}}, [term])
        for i in range(self.rng.randint(0, 3)):
            zone = self.pick(self.zones) if self.zones else "zone-a"
            terms = None
            if self.chance(0.6):
                terms = [{"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}]
            pv = self.pv(
                f"zonal-{i}",
                self.pick(("csi-wffc", "fast", "capacity")),
                {"csi": {"driver": CSI_DRIVER, "volumeHandle": f"handle-{i}"}},
                terms,
            )
            if self.chance(0.6):
                pv["metadata"].setdefault("labels", {})[ZONE_LABEL] = (
                    zone if self.chance(0.8) else "zone-a__zone-b"
                )
        for i in range(self.rng.randint(0, 2)):
            # Migrated in-tree disks: zone labels as the PV admission set them, no node affinity.
            kind, driver_field = self.pick(("gcePersistentDisk", "awsElasticBlockStore")), ""
            driver_field = "pdName" if kind == "gcePersistentDisk" else "volumeID"
            pv = self.pv(
                f"intree-{i}", "gce-pd", {kind: {driver_field: f"intree-disk-{i}", "fsType": "ext4"}}, None
            )
            zone = self.pick(self.zones) if self.zones else "zone-a"
            pv["metadata"].setdefault("labels", {})[self.pick((ZONE_LABEL, BETA_ZONE_LABEL))] = zone

    def claim(self, namespace: str, name: str, storage_class: str, size: str, modes: list[str]) -> Obj:
        claim: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pvc-{namespace}-{name}"},
            "spec": {
                "accessModes": modes,
                "resources": {"requests": {"storage": size}},
                "storageClassName": storage_class,
            },
            "status": {"phase": "Pending"},
        }
        self.claims.append(claim)
        return claim

    def bind(self, claim: Obj, pv: Obj) -> None:
        """What the PV controller leaves behind once it bound ``claim`` to ``pv``."""
        meta = claim["metadata"]
        pv["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
        pv["status"] = {"phase": "Bound"}
        claim["spec"]["volumeName"] = pv["metadata"]["name"]
        meta["annotations"] = {BIND_COMPLETED: "yes"}
        claim["status"] = {
            "phase": "Bound",
            "accessModes": list(pv["spec"]["accessModes"]),
            "capacity": dict(pv["spec"]["capacity"]),
        }

    def claims_for(self, namespaces: list[str]) -> None:
        n = 0

        def next_name() -> str:
            nonlocal n
            n += 1
            return f"data-{n}"

        for pv in self.pvs:
            if not self.chance(0.35):
                continue
            spec = pv["spec"]
            size = self.pick([s for s in SIZES if SIZE_GI[s] <= SIZE_GI[spec["capacity"]["storage"]]])
            claim = self.claim(
                self.pick(namespaces), next_name(), spec["storageClassName"], size, list(spec["accessModes"])
            )
            if "volumeMode" in spec:
                claim["spec"]["volumeMode"] = spec["volumeMode"]
            self.bind(claim, pv)
        for _ in range(self.rng.randint(1, 4)):
            storage_class = self.rng.choices(UNBOUND_CLASSES, UNBOUND_WEIGHTS)[0]
            mode = self.pick(("ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany"))
            claim = self.claim(self.pick(namespaces), next_name(), storage_class, self.pick(SIZES), [mode])
            if self.chance(0.2):
                claim["spec"]["selector"] = {"matchLabels": {"disk": self.pick(("ssd", "hdd"))}}
            if self.chance(0.1):
                claim["spec"]["volumeMode"] = "Block"
            if self.chance(0.12):
                claim["metadata"]["annotations"] = {
                    SELECTED_NODE: self.pick([nd["metadata"]["name"] for nd in self.nodes])
                }
        if self.chance(0.15):
            lost = self.claim(self.pick(namespaces), next_name(), "fast", "1Gi", ["ReadWriteOnce"])
            lost["spec"]["volumeName"] = "gone-pv"
            lost["metadata"]["annotations"] = {BIND_COMPLETED: "yes"}
            lost["status"] = {"phase": "Lost"}
        if self.chance(0.1) and self.claims:
            doomed = self.pick([c["metadata"]["name"] for c in self.claims])
            for c in self.claims:
                if c["metadata"]["name"] == doomed:
                    c["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
                    c["metadata"]["finalizers"] = ["kubernetes.io/pvc-protection"]

    def attachments(self) -> list[Obj]:
        out = []
        for i, pv in enumerate(p for p in self.pvs if "csi" in p["spec"] and p["status"]["phase"] == "Bound"):
            if not self.chance(0.4):
                continue
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"attachment-{i}"},
                    "spec": {
                        "attacher": pv["spec"]["csi"]["driver"],
                        "nodeName": self.pick([n["metadata"]["name"] for n in self.nodes]),
                        "source": {"persistentVolumeName": pv["metadata"]["name"]},
                    },
                }
            )
        return out

    # --- pod volumes ------------------------------------------------------------------------------------

    def inline_disk(self, name: str, pending: bool) -> Obj:
        if pending and self.running_disks and self.chance(0.6):
            # A disk a running pod mounts: VolumeRestrictions' conflicts (unless both are read-only).
            kind, used = self.rng.choice(self.running_disks)
            source = {**used, "readOnly": self.chance(0.4)}
            self.features.append(f"storage:{kind}")
            self.features.append("storage:disk-in-use")
            return {"name": name, kind: source}
        kind = self.pick(("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd"))
        disk = self.pick(DISKS)
        read_only = self.chance(0.4)
        if kind == "gcePersistentDisk":
            source: Obj = {"pdName": disk, "readOnly": read_only}
        elif kind == "awsElasticBlockStore":
            source = {"volumeID": disk, "readOnly": read_only}
        elif kind == "iscsi":
            source = {
                "targetPortal": "10.0.0.1:3260",
                "iqn": f"iqn.2025-01.com.example:{disk}",
                "lun": 0,
                "readOnly": read_only,
            }
        else:
            source = {
                "monitors": [self.pick(("10.0.0.1:6789", "10.0.0.2:6789"))],
                "image": disk,
                "readOnly": read_only,
            }
            if self.chance(0.3):
                source["pool"] = "fast"
        self.features.append(f"storage:{kind}")
        if not pending:
            self.running_disks.append((kind, source))
        return {"name": name, kind: source}

    def pod_volumes(self, pod: Obj, pending: bool) -> list[Obj]:
        namespace = pod["metadata"]["namespace"]
        own = [c for c in self.claims if c["metadata"]["namespace"] == namespace]
        out: list[Obj] = []
        used: set[str] = set()
        for i in range(self.rng.randint(1, 2) if pending else 1):
            roll = self.rng.random()
            name = f"vol-{i}"
            if roll < 0.7 and own:
                claim = self.rng.choice(own)
                claim_name = claim["metadata"]["name"]
                if claim_name in used or (not pending and claim["status"]["phase"] != "Bound"):
                    continue
                used.add(claim_name)
                out.append({"name": name, "persistentVolumeClaim": {"claimName": claim_name}})
                if pending:
                    self.features.append(self.claim_feature(claim))
            elif roll < 0.73 and pending:
                out.append({"name": name, "persistentVolumeClaim": {"claimName": "no-such-claim"}})
                self.features.append("storage:missing-claim")
            elif roll < 0.8 and pending:
                out.append(self.ephemeral(pod, name))
            else:
                out.append(self.inline_disk(name, pending))
        return out

    def claim_feature(self, claim: Obj) -> str:
        if claim["metadata"].get("deletionTimestamp"):
            return "storage:claim-deleting"
        if claim["spec"].get("volumeName"):
            return "storage:claim-bound" if claim["status"]["phase"] == "Bound" else "storage:claim-lost"
        if "ReadWriteOncePod" in claim["spec"]["accessModes"]:
            self.features.append("storage:rwop")
        mode = CLASSES.get(claim["spec"]["storageClassName"], ("", "missing"))[1] or "Immediate"
        return f"storage:unbound-{mode}"

    def ephemeral(self, pod: Obj, name: str) -> Obj:
        """A generic ephemeral volume; its claim exists (owned by the pod) most of the time."""
        meta = pod["metadata"]
        storage_class = self.pick(("csi-wffc", "local", "capacity"))
        if self.chance(0.8):
            claim = self.claim(
                meta["namespace"],
                f"{meta['name']}-{name}",
                storage_class,
                self.pick(SIZES),
                ["ReadWriteOnce"],
            )
            if self.chance(0.9):
                claim["metadata"]["ownerReferences"] = [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ]
        self.features.append("storage:ephemeral")
        template = {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "1Gi"}},
            }
        }
        return {"name": name, "ephemeral": {"volumeClaimTemplate": template}}


def has_storage(scenario: Any) -> bool:
    """Whether a scenario has a storage layer: storage objects or pod volumes."""
    return any(o["kind"] in STORAGE_KINDS or o.get("spec", {}).get("volumes") for o in scenario.objects)


def add_storage(
    seed: int, nodes: list[Obj], running: list[Obj], pending: Obj, features: list[str]
) -> list[Obj]:
    """Give the scenario of ``seed`` its storage layer (or none, for 1 - STORAGE_SHARE of the seeds): the
    objects to add to the state; pod volumes are set on ``running`` and ``pending`` in place and what
    the pending pod exercises is appended to ``features``."""
    s = _StorageGen(seed, nodes)
    if not s.chance(STORAGE_SHARE):
        return []
    drivers, classes, csi_nodes, capacities = s.drivers(), s.classes(), s.csi_nodes(), s.capacities()
    s.volumes()
    s.claims_for(sorted({p["metadata"]["namespace"] for p in [*running, pending]}))
    for pod in running:
        if s.chance(0.3):
            pod["spec"]["volumes"] = s.pod_volumes(pod, pending=False) or [
                {"name": "scratch", "emptyDir": {}}
            ]
    s.features = []  # what the running pods' volumes exercised is not the pending pod's
    volumes = s.pod_volumes(pending, pending=True)
    if volumes:
        pending["spec"]["volumes"] = volumes
    features.extend(sorted(set(s.features)))
    return [*drivers, *classes, *csi_nodes, *capacities, *s.pvs, *s.claims, *s.attachments()]
