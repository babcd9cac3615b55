"""Dynamic Resource Allocation and NodeDeclaredFeatures for the parity suite's scenarios.

:func:`add_dra` turns some generated scenarios into DRA ones: DeviceClasses (CEL selectors over
attributes, capacity quantities and versions, an ``extendedResourceName``), ResourceSlices (one pool
per node, sometimes split over two slices or left incomplete; node-selector and all-nodes slices),
ResourceClaims allocated and reserved for running pods, and claims for the pending pod: by name or
made from a ResourceClaimTemplate (as the resourceclaim controller makes them, or not made yet),
with ExactCount, count and All requests, ``firstAvailable`` subrequests, CEL selectors,
``matchAttribute`` constraints, admin access, a claim another pod already holds; extended resources
backed by a class; nodes declaring features and pods needing them.

It draws from its own random stream (``dra:<seed>``), so the scenarios it leaves alone are exactly
those of the plain generator. ``PARITY_DRA`` is the share of scenarios it changes (0.15 by default;
1 for a DRA-heavy pass).
"""

from __future__ import annotations

import os
import random
from typing import Any

Obj = dict[str, Any]

GROUP = "resource.k8s.io/v1"
GPU = "gpu.example.com"
NIC = "nic.example.com"
DRA_EXTENDED = "example.com/dra-gpu"
MODELS = ("a100", "h100", "l4")
FEATURES = ("RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport")
DEFAULT_SHARE = 0.15

#: The selectors a request or a class may carry: attributes, quantities and versions, and one that
#: fails at run time on devices without the attribute (kube's "CEL runtime error").
SELECTORS = (
    f'device.attributes["{GPU}"].model == "h100"',
    f'device.attributes["{GPU}"].model in ["a100", "h100"]',
    f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) > 0',
    f'device.attributes["{GPU}"].driverVersion.isGreaterThan(semver("1.2.0"))',
    f'device.attributes["{GPU}"].numa == 1',
    f'has(device.attributes["{GPU}"].model) && device.attributes["{GPU}"].model != "l4"',
)
RUNTIME_ERROR_SELECTOR = f'device.attributes["{GPU}"].rack == "r1"'


def share() -> float:
    """The share of scenarios with DRA objects (``PARITY_DRA``)."""
    return float(os.environ.get("PARITY_DRA", DEFAULT_SHARE))


def cel(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


class _Dra:
    def __init__(self, seed: int, objects: list[Obj], features: list[str]) -> None:
        self.rng = random.Random(f"dra:{seed}")
        self.objects = objects
        self.features = features
        self.nodes = [o for o in objects if o["kind"] == "Node"]
        self.pods = [o for o in objects if o["kind"] == "Pod"]
        self.pending = self.pods[-1]
        self.running = [p for p in self.pods[:-1] if p["spec"].get("nodeName")]
        self.new: list[Obj] = []
        self.devices: dict[str, list[tuple[str, str, str]]] = {}  # node -> (driver, pool, device)
        self.taken: set[tuple[str, str, str]] = set()
        self.claims = 0

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # --- classes and slices -----------------------------------------------------------------------

    def classes(self) -> list[str]:
        names = []
        for name, driver, extra, extended in (
            ("gpu", GPU, [], None),
            ("big-gpu", GPU, [SELECTORS[2]], None),
            ("nic", NIC, [], None),
            ("dra-gpu", GPU, [], DRA_EXTENDED),
        ):
            spec: Obj = {"selectors": [cel(f'device.driver == "{driver}"'), *(cel(e) for e in extra)]}
            if extended:
                spec["extendedResourceName"] = extended
            if name == "gpu" and self.chance(0.05):
                spec["selectors"].append(cel(RUNTIME_ERROR_SELECTOR))
                self.features.append("dra:cel-runtime-error")
            self.new.append(
                {"apiVersion": GROUP, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
            )
            names.append(name)
        return names

    def gpu(self, name: str) -> Obj:
        attributes: Obj = {
            "model": {"string": self.rng.choice(MODELS)},
            "numa": {"int": self.rng.randint(0, 1)},
            "driverVersion": {"version": self.rng.choice(("1.1.0", "1.2.0", "1.3.1"))},
        }
        return {
            "name": name,
            "attributes": attributes,
            "capacity": {"memory": {"value": self.rng.choice(("24Gi", "40Gi", "80Gi"))}},
        }

    def node_slices(self) -> None:
        for node in self.nodes:
            if not self.chance(0.75):
                continue
            name = node["metadata"]["name"]
            devices = [self.gpu(f"gpu-{i}") for i in range(self.rng.randint(1, 6))]
            split = len(devices) > 1 and self.chance(0.2)
            parts = [devices[: len(devices) // 2], devices[len(devices) // 2 :]] if split else [devices]
            incomplete = split and self.chance(0.3)
            for i, part in enumerate(parts[:1] if incomplete else parts):
                self.new.append(
                    {
                        "apiVersion": GROUP,
                        "kind": "ResourceSlice",
                        "metadata": {"name": f"{name}-{GPU}-{i}"},
                        "spec": {
                            "driver": GPU,
                            "nodeName": name,
                            "pool": {"name": name, "generation": 1, "resourceSliceCount": len(parts)},
                            "devices": part,
                        },
                    }
                )
            if incomplete:
                self.features.append("dra:incomplete-pool")
                continue
            self.devices[name] = [(GPU, name, d["name"]) for d in devices]

    def shared_slices(self) -> None:
        if self.chance(0.3):
            label = self.rng.choice(("ssd", "hdd"))
            self.new.append(
                {
                    "apiVersion": GROUP,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"fabric-{label}"},
                    "spec": {
                        "driver": NIC,
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "disk", "operator": "In", "values": [label]}]}
                            ]
                        },
                        "pool": {"name": f"fabric-{label}", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"nic-{i}"} for i in range(self.rng.randint(1, 2))],
                    },
                }
            )
            self.features.append("dra:node-selector-slice")
        if self.chance(0.2):
            self.new.append(
                {
                    "apiVersion": GROUP,
                    "kind": "ResourceSlice",
                    "metadata": {"name": "everywhere"},
                    "spec": {
                        "driver": NIC,
                        "allNodes": True,
                        "pool": {"name": "everywhere", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "shared-nic-0"}],
                    },
                }
            )
            self.features.append("dra:all-nodes-slice")

    # --- claims ------------------------------------------------------------------------------------

    def claim(self, name: str, namespace: str, spec: Obj, status: Obj | None = None, **meta: Any) -> Obj:
        self.claims += 1
        metadata: Obj = {"name": name, "namespace": namespace, "uid": f"claim-uid-{self.claims}", **meta}
        out: Obj = {"apiVersion": GROUP, "kind": "ResourceClaim", "metadata": metadata, "spec": spec}
        if status:
            out["status"] = status
        return out

    def allocated_for_running(self) -> Obj | None:
        """A running pod holding a device of its node through a claim; the claim, or None."""
        holders = [p for p in self.running if self.devices.get(p["spec"]["nodeName"])]
        if not holders:
            return None
        pod = self.rng.choice(holders)
        node = pod["spec"]["nodeName"]
        free = [d for d in self.devices[node] if d not in self.taken]
        if not free:
            return None
        device = self.rng.choice(free)
        self.taken.add(device)
        name = f"{pod['metadata']['name']}-gpu-{self.claims}"
        namespace = pod["metadata"]["namespace"]
        claim = self.claim(
            name,
            namespace,
            {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "gpu", "driver": device[0], "pool": device[1], "device": device[2]}
                        ]
                    },
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                        ]
                    },
                },
                "reservedFor": [
                    {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
                ],
            },
            finalizers=["resource.kubernetes.io/delete-protection"],
        )
        refs = pod["spec"].setdefault("resourceClaims", [])
        refs.append({"name": f"gpu-{len(refs)}", "resourceClaimName": name})
        self.new.append(claim)
        return claim

    def request(self, name: str) -> tuple[Obj, list[Obj]]:
        """A request of the pending pod's claim, and the claim's constraints for it."""
        roll = self.rng.random()
        constraints: list[Obj] = []
        if roll < 0.15 and self.devices:
            self.features.append("dra:first-available")
            subs = [
                {"name": "big", "deviceClassName": "big-gpu", "count": 1},
                {"name": "any", "deviceClassName": "gpu", "count": self.rng.randint(1, 2)},
            ]
            if self.chance(0.3):
                subs.insert(0, {"name": "h100", "deviceClassName": "gpu", "selectors": [cel(SELECTORS[0])]})
            return {"name": name, "firstAvailable": subs}, constraints
        exactly: Obj = {"deviceClassName": self.rng.choice(("gpu", "gpu", "big-gpu", "nic"))}
        if roll < 0.22:
            exactly["allocationMode"] = "All"
            self.features.append("dra:all")
        elif roll < 0.45:
            exactly["count"] = self.rng.randint(2, 3)
            self.features.append("dra:count")
            if exactly["deviceClassName"] != "nic" and self.chance(0.5):
                constraints.append({"requests": [name], "matchAttribute": f"{GPU}/numa"})
                self.features.append("dra:match-attribute")
        if exactly["deviceClassName"] != "nic" and self.chance(0.4):
            exactly["selectors"] = [cel(self.rng.choice(SELECTORS))]
            self.features.append("dra:cel")
        if self.chance(0.05):
            exactly["adminAccess"] = True
            self.features.append("dra:admin-access")
        return {"name": name, "exactly": exactly}, constraints

    def pending_claims(self) -> None:
        pod = self.pending
        namespace = pod["metadata"]["namespace"]
        pod_name, pod_uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        refs: list[Obj] = []
        statuses: list[Obj] = []
        for i in range(self.rng.randint(1, 2)):
            requests, constraints = [], []
            for j in range(self.rng.randint(1, 2)):
                request, more = self.request(f"req-{j}")
                requests.append(request)
                constraints.extend(more)
            devices: Obj = {"requests": requests}
            if constraints:
                devices["constraints"] = constraints
            spec = {"devices": devices}
            ref = f"dev-{i}"
            if self.chance(0.35):
                template = f"{pod_name}-template-{i}"
                self.new.append(
                    {
                        "apiVersion": GROUP,
                        "kind": "ResourceClaimTemplate",
                        "metadata": {"name": template, "namespace": namespace},
                        "spec": {"spec": spec},
                    }
                )
                refs.append({"name": ref, "resourceClaimTemplateName": template})
                self.features.append("dra:template")
                if self.chance(0.1):
                    self.features.append("dra:template-claim-missing")
                    continue
                generated = f"{pod_name}-{ref}-x7k2p"
                self.new.append(
                    self.claim(
                        generated,
                        namespace,
                        spec,
                        annotations={"resource.kubernetes.io/pod-claim-name": ref},
                        ownerReferences=[
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "name": pod_name,
                                "uid": pod_uid,
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    )
                )
                statuses.append({"name": ref, "resourceClaimName": generated})
            else:
                name = f"{pod_name}-claim-{i}"
                self.new.append(self.claim(name, namespace, spec))
                refs.append({"name": ref, "resourceClaimName": name})
        pod["spec"]["resourceClaims"] = refs
        if statuses:
            pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
        self.features.append("dra:claims")

    def share_a_claim(self, claim: Obj) -> None:
        """The pending pod also uses a claim a running pod holds (same namespace only)."""
        if claim["metadata"]["namespace"] != self.pending["metadata"]["namespace"]:
            return
        self.pending["spec"].setdefault("resourceClaims", []).append(
            {"name": "shared", "resourceClaimName": claim["metadata"]["name"]}
        )
        self.features.append("dra:shared-claim")

    def extended_resource(self) -> None:
        """The pending pod's first container asks for the class-backed extended resource."""
        name = DRA_EXTENDED if self.chance(0.7) else "deviceclass.resource.kubernetes.io/gpu"
        count = str(self.rng.randint(1, 2))
        container = self.pending["spec"]["containers"][0]
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})[name] = count
        resources.setdefault("limits", {})[name] = count
        if "resources" in self.pending["spec"]:
            # Pod-level resources may not name extended resources: leave them to the containers.
            self.pending["spec"].pop("resources")
        self.features.append("dra:extended-resource")

    def relax(self) -> None:
        """Most generated pending pods fit nowhere for reasons of their own; in half the DRA scenarios
        the pending pod asks for little else, so that devices decide where it goes (and scores count)."""
        spec = self.pending["spec"]
        for key in (
            "nodeSelector",
            "affinity",
            "topologySpreadConstraints",
            "resources",
            "priorityClassName",
        ):
            spec.pop(key, None)
        for container in spec["containers"] + spec.get("initContainers", []):
            container.pop("ports", None)
            container["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
        self.features.append("dra:relaxed")

    # --- node declared features ----------------------------------------------------------------------

    def declared_features(self) -> None:
        for node in self.nodes:
            if self.chance(0.6):
                node["status"]["declaredFeatures"] = sorted(self.rng.sample(FEATURES, self.rng.randint(1, 2)))
        spec = self.pending["spec"]
        if self.chance(0.5):
            container = spec["containers"][-1]
            container["restartPolicy"] = "Never"
            container["restartPolicyRules"] = [
                {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
            ]
            self.features.append("declared:restart-all-containers")
        else:
            spec["hostNetwork"] = True
            spec["hostUsers"] = False
            for container in spec["containers"] + spec.get("initContainers", []):
                container.pop("ports", None)  # host ports with hostNetwork must equal container ports
            self.features.append("declared:user-namespace-host-network")


def add_dra(seed: int, objects: list[Obj], features: list[str]) -> None:
    """Add DRA and declared-feature objects to a share of scenarios (in place, before the pending pod)."""
    d = _Dra(seed, objects, features)
    if d.rng.random() >= share():
        return
    if d.chance(0.5):
        d.relax()
    d.classes()
    d.node_slices()
    d.shared_slices()
    held = [c for c in (d.allocated_for_running() for _ in range(d.rng.randint(0, 3))) if c is not None]
    roll = d.rng.random()
    if roll < 0.7:
        d.pending_claims()
    if held and d.chance(0.2):
        d.share_a_claim(d.rng.choice(held))
    if roll >= 0.55 and d.chance(0.6):
        d.extended_resource()
    if d.chance(0.25):
        d.declared_features()
    objects[-1:-1] = d.new  # the pending pod stays last


def has_dra(scenario: Any) -> bool:
    """Whether :func:`add_dra` gave a scenario its DRA or declared-feature layer."""
    return any(f.startswith(("dra:", "declared:")) for f in scenario.features) or any(
        o["kind"] in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
        for o in scenario.objects
    )
