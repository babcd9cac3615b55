"""Seeded random cluster states for the parity suite: one pending pod against a random cluster.

Every scenario is a list of Kubernetes objects in ``berth simulate``'s state format (Nodes, running and
pending Pods, PriorityClasses, PDBs, Services, ReplicaSets, StatefulSets, Namespaces) plus an optional
KubeSchedulerConfiguration. Objects are valid as the API server would accept them (hugepages and
extended resources with limits equal to requests, one value per ``metadata.name`` field selector, ...):
the oracle applies defaulting and admission, not validation. Clusters stay under 100 nodes so both
schedulers evaluate every node.

Running pods get distinct ``status.startTime`` values, so DefaultPreemption's last tie-break (the latest
start time of the most important victims) separates any two candidate nodes: the nominee never depends
on the random offset at which kube-scheduler starts its candidate search.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from parity.gen_dra import add_dra
from parity.gen_storage import add_storage

Obj = dict[str, Any]

ZONES = ("zone-a", "zone-b", "zone-c")
REGIONS = ("east", "west")
APPS = ("web", "db", "cache")
TIERS = ("front", "back")
NAMESPACES = ("default", "team-a", "team-b")
IMAGES = ("nginx:1.27", "redis:7", "postgres:16", "busybox:1.36", "example.com/big/model:v3")
#: One size per image, as on real nodes: kube-scheduler's cache keeps the size of the first node it saw
#: with an image, and the informers' order over a fake clientset is not the file's.
IMAGE_SIZES = {
    "nginx:1.27": 60 * 1024 * 1024,
    "redis:7": 140 * 1024 * 1024,
    "postgres:16": 430 * 1024 * 1024,
    "busybox:1.36": 4 * 1024 * 1024,
    "example.com/big/model:v3": 2900 * 1024 * 1024,
}
EXTENDED = "example.com/gpu"
#: The class of the pods with an overhead.
RUNTIME_CLASS: Obj = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "sandboxed"},
    "handler": "sandboxed",
    "overhead": {"podFixed": {"cpu": "100m", "memory": "64Mi"}},
}
HUGEPAGES = "hugepages-2Mi"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
#: Plugins whose score weight or enablement a random configuration may change.
SCORE_PLUGINS = (
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
)


@dataclass
class Scenario:
    """A generated cluster state and configuration (None: kube-scheduler's defaults)."""

    seed: int
    objects: list[Obj]
    config: Obj | None = None
    features: list[str] = field(default_factory=list)  # what the pending pod exercises, for reports


class _Gen:
    """One scenario's random choices; ``features`` records what the pending pod exercises."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.features: list[str] = []
        self.nodes: list[Obj] = []
        self.start = 0

    # --- small pieces -----------------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: tuple[str, ...] | list[str]) -> str:
        return self.rng.choice(list(seq))

    def some(self, seq: tuple[str, ...] | list[str], low: int = 1, high: int | None = None) -> list[str]:
        items = list(seq)
        k = self.rng.randint(low, min(len(items), high if high is not None else len(items)))
        return sorted(self.rng.sample(items, k))

    def labels(self) -> dict[str, str]:
        labels = {"app": self.pick(APPS)}
        if self.chance(0.6):
            labels["tier"] = self.pick(TIERS)
        if self.chance(0.3):
            labels["version"] = self.pick(("v1", "v2"))
        return labels

    def label_selector(self, allow_empty: bool = True) -> Obj:
        """A labelSelector over the pod labels: matchLabels and/or matchExpressions."""
        selector: Obj = {}
        if self.chance(0.7):
            selector["matchLabels"] = {"app": self.pick(APPS)}
        if self.chance(0.4) or (not selector and not allow_empty):
            op = self.pick(("In", "NotIn", "Exists", "DoesNotExist"))
            key = self.pick(("app", "tier", "version"))
            expr: Obj = {"key": key, "operator": op}
            if op in ("In", "NotIn"):
                expr["values"] = self.some(
                    APPS if key == "app" else TIERS if key == "tier" else ("v1", "v2"), 1, 2
                )
            selector["matchExpressions"] = [expr]
        return selector

    # --- nodes ------------------------------------------------------------------------------------

    def node(self, i: int) -> Obj:
        name = f"node-{i}"
        labels = {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": ZONES[i % len(ZONES)] if self.chance(0.9) else self.pick(ZONES),
        }
        if self.chance(0.8):
            labels["topology.kubernetes.io/region"] = self.pick(REGIONS)
        if self.chance(0.7):
            labels["disk"] = self.pick(("ssd", "hdd"))
        if self.chance(0.7):
            labels["generation"] = str(self.rng.randint(1, 6))
        allocatable = {
            "cpu": self.pick(("1", "2", "4", "8", "3500m")),
            "memory": self.pick(("2Gi", "4Gi", "8Gi", "16Gi")),
            "pods": self.pick(("110", "110", "110", "4")),
            "ephemeral-storage": self.pick(("10Gi", "50Gi", "100Gi")),
        }
        if self.chance(0.3):
            allocatable[HUGEPAGES] = self.pick(("128Mi", "1Gi"))
        if self.chance(0.3):
            allocatable[EXTENDED] = str(self.rng.randint(1, 4))
        spec: Obj = {}
        if self.chance(0.2):
            taints: dict[tuple[str, str], Obj] = {}
            for _ in range(self.rng.randint(1, 2)):
                taint = {
                    "key": self.pick(("dedicated", "gpu", "maintenance")),
                    "value": self.pick(("true", "infra", "batch")),
                    "effect": self.pick(TAINT_EFFECTS),
                }
                # Two taints with one key and effect are invalid: the first stays.
                taints.setdefault((taint["key"], taint["effect"]), taint)
            spec["taints"] = list(taints.values())
        if self.chance(0.05):
            spec["unschedulable"] = True
        status: Obj = {"allocatable": allocatable, "capacity": dict(allocatable)}
        if self.chance(0.6):
            status["images"] = [
                {"names": [image, f"docker.io/library/{image}"], "sizeBytes": IMAGE_SIZES[image]}
                for image in self.some(IMAGES, 1, 3)
            ]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": status,
        }

    # --- pod specs --------------------------------------------------------------------------------

    def resources(self, allow_special: bool) -> Obj:
        requests: Obj = {}
        limits: Obj = {}
        if self.chance(0.8):
            requests["cpu"] = self.pick(("100m", "250m", "500m", "1", "1500m", "3"))
        if self.chance(0.7):
            requests["memory"] = self.pick(("128Mi", "512Mi", "1Gi", "3Gi", "6Gi"))
        if self.chance(0.2):
            requests["ephemeral-storage"] = self.pick(("1Gi", "5Gi", "20Gi", "60Gi"))
        if allow_special and self.chance(0.06):
            requests[HUGEPAGES] = limits[HUGEPAGES] = self.pick(("64Mi", "256Mi"))
            self.features.append("hugepages")
        if allow_special and self.chance(0.08):
            requests[EXTENDED] = limits[EXTENDED] = str(self.rng.randint(1, 3))
            self.features.append("extended")
        if self.chance(0.15) and "cpu" in requests:
            # Limits only: the API server defaults requests from them.
            limits["cpu"] = requests.pop("cpu")
            self.features.append("limits-only")
        if HUGEPAGES in requests and not ({"cpu", "memory"} & (set(requests) | set(limits))):
            requests["memory"] = "128Mi"  # validation: hugepages need a cpu or memory request
        out: Obj = {}
        if requests:
            out["requests"] = requests
        if limits:
            out["limits"] = limits
        return out

    def container(self, name: str, allow_special: bool, ports: bool = False) -> Obj:
        c: Obj = {"name": name, "image": self.pick(IMAGES)}
        res = self.resources(allow_special)
        if res:
            c["resources"] = res
        if ports and self.chance(0.25):
            port: Obj = {
                "containerPort": 8080,
                "hostPort": self.pick(("8080", "9090")),
                "protocol": self.pick(("TCP", "UDP")),
            }
            port["hostPort"] = int(port["hostPort"])
            if self.chance(0.3):
                port["hostIP"] = self.pick(("127.0.0.1", "0.0.0.0"))
            c["ports"] = [port]
            self.features.append("hostPort")
        return c

    def pod_spec(self, pending: bool) -> Obj:
        allow_special = True
        containers = [
            self.container(f"c{i}", allow_special, ports=True) for i in range(self.rng.randint(1, 2))
        ]
        # A host port may appear once per pod (protocol, hostIP and port): validation.
        seen_ports: set[tuple[str, int]] = set()
        for c in containers:
            ports = [p for p in c.get("ports", []) if (p["protocol"], p["hostPort"]) not in seen_ports]
            seen_ports.update((p["protocol"], p["hostPort"]) for p in ports)
            if ports:
                c["ports"] = ports
            else:
                c.pop("ports", None)
        spec: Obj = {"containers": containers}
        if self.chance(0.25):
            inits = []
            for i in range(self.rng.randint(1, 2)):
                init = self.container(f"init{i}", False)
                if self.chance(0.5):
                    init["restartPolicy"] = "Always"  # a sidecar
                    self.features.append("sidecar")
                inits.append(init)
            spec["initContainers"] = inits
            self.features.append("init")
        if self.chance(0.1):
            # The RuntimeClass admission plugin sets (and checks) the overhead of a class's pods.
            spec["runtimeClassName"] = RUNTIME_CLASS["metadata"]["name"]
            spec["overhead"] = dict(RUNTIME_CLASS["overhead"]["podFixed"])
            self.features.append("overhead")
        if self.chance(0.12):
            spec["resources"] = self.pod_level(containers + spec.get("initContainers", []))
            self.features.append("pod-level")
        return spec

    def pod_level(self, containers: list[Obj]) -> Obj:
        """Pod-level requests (and equal limits) at least every container's requests and limits summed,
        init containers included: what API validation asks, with room to spare."""

        def total(resource: str, unit: Any) -> int:
            return sum(
                unit(c.get("resources", {}).get(kind, {}).get(resource, "0"))
                for c in containers
                for kind in ("requests", "limits")
            )

        cpu_m, mem_mi = max(total("cpu", _milli), 100), max(total("memory", _mebi), 64)
        requests = {
            "cpu": f"{cpu_m + self.rng.choice((0, 500, 1500))}m",
            "memory": f"{mem_mi + self.rng.choice((0, 256, 2048))}Mi",
        }
        return {"requests": requests, "limits": dict(requests)}

    def node_selector_term(self) -> Obj:
        term: Obj = {}
        if self.chance(0.8):
            exprs = []
            for _ in range(self.rng.randint(1, 2)):
                op = self.pick(SELECTOR_OPERATORS)
                self.features.append(f"nodeAffinity:{op}")
                if op in ("Gt", "Lt"):
                    exprs.append(
                        {"key": "generation", "operator": op, "values": [str(self.rng.randint(1, 6))]}
                    )
                elif op in ("In", "NotIn"):
                    key = self.pick(("disk", "topology.kubernetes.io/zone", "topology.kubernetes.io/region"))
                    values = {"disk": ("ssd", "hdd"), "topology.kubernetes.io/zone": ZONES}.get(key, REGIONS)
                    exprs.append({"key": key, "operator": op, "values": self.some(values, 1, 2)})
                else:
                    exprs.append({"key": self.pick(("disk", "generation", "gpu")), "operator": op})
            term["matchExpressions"] = exprs
        if self.chance(0.3) or not term:
            op = self.pick(("In", "NotIn"))
            self.features.append(f"matchFields:{op}")
            term["matchFields"] = [
                {
                    "key": "metadata.name",
                    "operator": op,
                    "values": [self.pick([n["metadata"]["name"] for n in self.nodes])],
                }
            ]
        return term

    def node_affinity(self) -> Obj:
        affinity: Obj = {}
        if self.chance(0.7):
            terms = [self.node_selector_term() for _ in range(self.rng.randint(1, 2))]
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if self.chance(0.5):
            self.features.append("preferredNodeAffinity")
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": self.rng.randint(1, 100), "preference": self.node_selector_term()}
                for _ in range(self.rng.randint(1, 2))
            ]
        return affinity

    def tolerations(self) -> list[Obj]:
        out = []
        for _ in range(self.rng.randint(1, 3)):
            tol: Obj = {
                "key": self.pick(("dedicated", "gpu", "maintenance")),
                "operator": self.pick(("Equal", "Exists")),
            }
            if tol["operator"] == "Equal":
                tol["value"] = self.pick(("true", "infra", "batch"))
            if self.chance(0.7):
                tol["effect"] = self.pick(TAINT_EFFECTS)
                if tol["effect"] == "NoExecute" and self.chance(0.5):
                    tol["tolerationSeconds"] = 300
            if self.chance(0.05):
                tol = {"operator": "Exists"}  # tolerates everything
            out.append(tol)
        self.features.append("tolerations")
        return out

    def affinity_term(self, namespace: str) -> Obj:
        term: Obj = {"labelSelector": self.label_selector(), "topologyKey": self.pick(TOPOLOGY_KEYS)}
        choice = self.rng.random()
        if choice < 0.2:
            term["namespaces"] = self.some(NAMESPACES, 1, 2)
            self.features.append("affinity:namespaces")
        elif choice < 0.4:
            term["namespaceSelector"] = (
                {} if self.chance(0.3) else {"matchLabels": {"team": self.pick(("a", "b"))}}
            )
            self.features.append("affinity:namespaceSelector")
        if self.chance(0.2):
            # A key may not be both in the selector and in matchLabelKeys (validation).
            free = [k for k in ("tier", "version") if k not in _selector_keys(term["labelSelector"])]
            if free:
                term[self.pick(("matchLabelKeys", "mismatchLabelKeys"))] = [self.pick(free)]
            self.features.append("affinity:labelKeys")
        return term

    def pod_affinity(self, namespace: str, existing: bool) -> Obj:
        affinity: Obj = {}
        for kind in ("podAffinity", "podAntiAffinity"):
            if not self.chance(0.4):
                continue
            self.features.append(kind if not existing else f"existing:{kind}")
            section: Obj = {}
            if self.chance(0.6):
                section["requiredDuringSchedulingIgnoredDuringExecution"] = [self.affinity_term(namespace)]
            if self.chance(0.6):
                section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": self.rng.randint(1, 100), "podAffinityTerm": self.affinity_term(namespace)}
                    for _ in range(self.rng.randint(1, 2))
                ]
            if section:
                affinity[kind] = section
        return affinity

    def spread_constraints(self) -> list[Obj]:
        out = []
        keys = self.some(TOPOLOGY_KEYS, 1, 2)
        for key in keys:
            c: Obj = {
                "maxSkew": self.rng.randint(1, 3),
                "topologyKey": key,
                "whenUnsatisfiable": self.pick(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": self.label_selector(allow_empty=False),
            }
            if c["whenUnsatisfiable"] == "DoNotSchedule" and self.chance(0.3):
                c["minDomains"] = self.rng.randint(1, 4)
                self.features.append("spread:minDomains")
            if self.chance(0.3):
                c["nodeAffinityPolicy"] = self.pick(("Honor", "Ignore"))
                self.features.append("spread:nodeAffinityPolicy")
            if self.chance(0.3):
                c["nodeTaintsPolicy"] = self.pick(("Honor", "Ignore"))
                self.features.append("spread:nodeTaintsPolicy")
            if self.chance(0.2):
                free = [k for k in ("tier", "version") if k not in _selector_keys(c["labelSelector"])]
                if free:
                    c["matchLabelKeys"] = [self.pick(free)]
                self.features.append("spread:matchLabelKeys")
            self.features.append(f"spread:{c['whenUnsatisfiable']}")
            out.append(c)
        return out

    # --- pods -------------------------------------------------------------------------------------

    def pod(self, name: str, namespace: str, node: str | None, classes: list[str], owners: list[Obj]) -> Obj:
        pending = node is None
        meta: Obj = {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": self.labels(),
        }
        saved = self.features
        if not pending:
            self.features = []  # only the pending pod's features are reported
        spec = self.pod_spec(pending)
        status: Obj = {}
        if node is not None:
            spec["nodeName"] = node
            self.start += 1
            status = {
                "phase": "Running",
                "startTime": f"2025-01-01T{self.start // 3600:02d}:{self.start // 60 % 60:02d}:{self.start % 60:02d}Z",
            }
            if self.chance(0.1):
                # Existing pods' own (anti-)affinity terms constrain the incoming pod too.
                aff = self.pod_affinity(namespace, existing=True)
                if aff:
                    spec["affinity"] = aff
        else:
            if self.chance(0.2):
                spec["nodeSelector"] = {"disk": self.pick(("ssd", "hdd"))}
                self.features.append("nodeSelector")
            affinity: Obj = {}
            if self.chance(0.35):
                na = self.node_affinity()
                if na:
                    affinity["nodeAffinity"] = na
            if self.chance(0.35):
                affinity.update(self.pod_affinity(namespace, existing=False))
            if affinity:
                spec["affinity"] = affinity
            if self.chance(0.4):
                spec["tolerations"] = self.tolerations()
            if self.chance(0.3):
                spec["topologySpreadConstraints"] = self.spread_constraints()
            if self.chance(0.03):
                spec["schedulingGates"] = [{"name": "example.com/quota"}]
                self.features.append("schedulingGates")
        if classes and self.chance(0.6 if pending else 0.5):
            spec["priorityClassName"] = self.pick(classes)
            if pending:
                self.features.append("priority")
        matching = [o for o in owners if o["metadata"]["namespace"] == namespace and o["kind"] != "Service"]
        if matching and self.chance(0.5):
            owner = self.rng.choice(matching)
            meta["labels"] = dict(owner["spec"]["selector"]["matchLabels"])
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ]
            if pending:
                self.features.append(f"owner:{owner['kind']}")
        self.features = saved if not pending else self.features
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if status:
            pod["status"] = status
        return pod

    # --- other objects ----------------------------------------------------------------------------

    def owners(self) -> list[Obj]:
        out: list[Obj] = []
        for i in range(self.rng.randint(0, 3)):
            ns = self.pick(NAMESPACES[:2])
            app = self.pick(APPS)
            kind = self.pick(("Service", "ReplicaSet", "StatefulSet"))
            meta = {"name": f"{kind.lower()}-{i}", "namespace": ns, "uid": f"uid-{kind.lower()}-{i}"}
            if kind == "Service":
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "metadata": meta,
                        "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
                    }
                )
                continue
            selector = {"matchLabels": {"app": app, "owner": meta["name"]}}
            template = {
                "metadata": {"labels": dict(selector["matchLabels"])},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            }
            spec: Obj = {"replicas": 3, "selector": selector, "template": template}
            if kind == "StatefulSet":
                spec["serviceName"] = "svc"
            out.append({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec})
        return out

    def priority_classes(self) -> list[Obj]:
        out = []
        for name, value in (("low", 10), ("mid", 100), ("high", 1000), ("polite", 500)):
            if not self.chance(0.7):
                continue
            pc: Obj = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            if name == "polite" or self.chance(0.1):
                pc["preemptionPolicy"] = "Never"
            if name == "low" and self.chance(0.3):
                pc["globalDefault"] = True
            out.append(pc)
        return out

    def pdbs(self) -> list[Obj]:
        out = []
        for i in range(self.rng.randint(0, 2)):
            spec: Obj = {"selector": {"matchLabels": {"app": self.pick(APPS)}}}
            spec["minAvailable" if self.chance(0.5) else "maxUnavailable"] = self.rng.randint(0, 2)
            out.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": f"pdb-{i}", "namespace": self.pick(NAMESPACES[:2])},
                    "spec": spec,
                    "status": {
                        "disruptionsAllowed": self.rng.randint(0, 2),
                        "currentHealthy": 2,
                        "desiredHealthy": 1,
                        "expectedPods": 3,
                    },
                }
            )
        return out

    def namespaces(self) -> list[Obj]:
        team = {"default": None, "team-a": "a", "team-b": "b"}
        return [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "labels": {"kubernetes.io/metadata.name": ns, **({"team": t} if t else {})},
                },
            }
            for ns, t in team.items()
        ]

    # --- configuration ----------------------------------------------------------------------------

    def config(self) -> Obj | None:
        if self.chance(0.6):
            return None
        plugins: Obj = {}
        args: list[Obj] = []
        if self.chance(0.4):
            weighted = self.some(SCORE_PLUGINS, 1, 3)
            plugins.setdefault("multiPoint", {})["enabled"] = [
                {"name": n, "weight": self.rng.randint(1, 5)} for n in weighted
            ]
            self.features.append("config:weights")
        if self.chance(0.25):
            disabled = self.some(
                (
                    "ImageLocality",
                    "PodTopologySpread",
                    "InterPodAffinity",
                    "NodeResourcesBalancedAllocation",
                    "TaintToleration",
                ),
                1,
                2,
            )
            enabled = {e["name"] for e in plugins.get("multiPoint", {}).get("enabled", [])}
            disabled = [d for d in disabled if d not in enabled]
            if disabled:
                plugins.setdefault("multiPoint", {})["disabled"] = [{"name": n} for n in disabled]
                self.features.append("config:disabled")
        if self.chance(0.5):
            strategy = self.pick(("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"))
            resources = [
                {"name": "cpu", "weight": self.rng.randint(1, 3)},
                {"name": "memory", "weight": self.rng.randint(1, 3)},
            ]
            if self.chance(0.4):
                resources.append({"name": EXTENDED, "weight": self.rng.randint(1, 5)})
            scoring: Obj = {"type": strategy, "resources": resources}
            if strategy == "RequestedToCapacityRatio":
                scoring["requestedToCapacityRatio"] = {
                    "shape": [
                        {"utilization": 0, "score": self.rng.randint(0, 10)},
                        {"utilization": 100, "score": self.rng.randint(0, 10)},
                    ]
                }
            fit_args: Obj = {"scoringStrategy": scoring}
            if self.chance(0.2):
                fit_args["ignoredResources"] = [EXTENDED]
            args.append({"name": "NodeResourcesFit", "args": fit_args})
            self.features.append(f"config:{strategy}")
        if self.chance(0.3):
            if self.chance(0.5):
                spread: Obj = {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": self.rng.randint(1, 3),
                            "topologyKey": self.pick(TOPOLOGY_KEYS[:2]),
                            "whenUnsatisfiable": self.pick(("DoNotSchedule", "ScheduleAnyway")),
                        }
                    ],
                }
            else:
                spread = {"defaultingType": "System"}
            args.append({"name": "PodTopologySpread", "args": spread})
            self.features.append(f"config:spread-{spread['defaultingType']}")
        if self.chance(0.2):
            args.append(
                {
                    "name": "InterPodAffinity",
                    "args": {
                        "hardPodAffinityWeight": self.rng.randint(0, 100),
                        "ignorePreferredTermsOfExistingPods": self.chance(0.5),
                    },
                }
            )
            self.features.append("config:InterPodAffinity")
        if self.chance(0.15):
            args.append(
                {
                    "name": "NodeAffinity",
                    "args": {
                        "addedAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "generation", "operator": "Exists"}]}
                                ]
                            }
                        }
                    },
                }
            )
            self.features.append("config:addedAffinity")
        if self.chance(0.15):
            args.append(
                {
                    "name": "NodeResourcesBalancedAllocation",
                    "args": {
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                            {"name": EXTENDED, "weight": 1},
                        ]
                    },
                }
            )
            self.features.append("config:balanced-resources")
        profile: Obj = {"schedulerName": "default-scheduler"}
        if plugins:
            profile["plugins"] = plugins
        if args:
            profile["pluginConfig"] = args
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        }


def _selector_keys(selector: Obj) -> set[str]:
    return set(selector.get("matchLabels", {})) | {e["key"] for e in selector.get("matchExpressions", [])}


def _milli(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def _mebi(q: str) -> int:
    return int(q[:-2]) * 1024 if q.endswith("Gi") else int(q[:-2]) if q.endswith("Mi") else 0


def generate(seed: int) -> Scenario:
    """The scenario of ``seed``: the same seed always gives the same scenario."""
    g = _Gen(seed)
    g.nodes = [g.node(i) for i in range(g.rng.randint(1, 3) if g.chance(0.15) else g.rng.randint(4, 14))]
    classes = g.priority_classes()
    class_names = [pc["metadata"]["name"] for pc in classes]
    owners = g.owners()
    running = []
    # Half the clusters are roomy (most pods fit: scoring is compared), the others crowded (Insufficient
    # reasons and, for a pending pod of a high class, preemption).
    crowded = g.chance(0.5)
    for i in range(g.rng.randint(0, (3 if crowded else 1) * len(g.nodes) + 2)):
        node = g.pick([n["metadata"]["name"] for n in g.nodes])
        namespace = g.pick(NAMESPACES[:2]) if g.chance(0.9) else "team-b"
        running.append(g.pod(f"run-{i}", namespace, node, class_names, owners))
    pending = g.pod("pending", g.pick(NAMESPACES[:2]), None, class_names, owners)
    g.features.append("crowded" if crowded else "roomy")
    if crowded and g.chance(0.5):
        # A preemptor: the highest class (created if the dice left it out) and a sizeable request.
        if "high" not in class_names:
            classes.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "high"},
                    "value": 1000,
                }
            )
        pending["spec"]["priorityClassName"] = "high"
        first = pending["spec"]["containers"][0]
        requests = first.setdefault("resources", {}).setdefault("requests", {})
        requests["cpu"] = g.pick(("500m", "1", "2"))
        requests["memory"] = g.pick(("256Mi", "1Gi"))
        requests.pop("ephemeral-storage", None)
        if "resources" in pending["spec"]:  # pod-level requests cover the containers' new ones
            pending["spec"]["resources"] = g.pod_level(
                pending["spec"]["containers"] + pending["spec"].get("initContainers", [])
            )
        first["resources"].get("limits", {}).pop("cpu", None)
        g.features.append("preemptor")
    config = g.config()
    storage = add_storage(seed, g.nodes, running, pending, g.features)
    objects = [
        *g.namespaces(),
        RUNTIME_CLASS,
        *g.nodes,
        *classes,
        *owners,
        *g.pdbs(),
        *storage,
        *running,
        pending,
    ]
    add_dra(seed, objects, g.features)  # DRA and declared features in a share of scenarios (gen_dra.py)
    return Scenario(seed, objects, config, sorted(set(g.features)))
