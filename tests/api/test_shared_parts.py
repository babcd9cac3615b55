"""Pods of one workload share their parsed containers, tolerations and affinity (``app/api/objects.py``): a
shared part is exactly what parsing the pod alone gives, a pod that differs in anything the parse
reads gets its own, and malformed pods fail with the same errors after a well-formed one."""

from __future__ import annotations

import copy
import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from app.api.errors import FieldError
from app.api.objects import Pod, parse_pod
from app.backend.cache.cache import Cache
from app.backend.cache.snapshot import Snapshot
from app.framework.types import Resource
from builders import make_node


def template_pod(name: str) -> dict[str, Any]:
    """A Deployment's pod: two containers (ports without host ports), an init container, two
    tolerations, node affinity, pod affinity and anti-affinity."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": "node-1",
            "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
            "containers": [
                {
                    "name": "app",
                    "image": "web:v1",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "128Mi"}},
                },
                {"name": "proxy", "image": "proxy:v1", "resources": {"limits": {"memory": "64Mi"}}},
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "dedicated", "value": "web", "effect": "NoSchedule"},
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                        ]
                    }
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                    ]
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": "web"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                },
            },
        },
    }


def parsed_alone(raw: dict[str, Any]) -> Pod:
    """``raw`` parsed the long way: containers, tolerations and affinity given as read-only
    mappings, which are never keyed for sharing."""
    doc = copy.deepcopy(raw)
    spec = doc["spec"]
    for key in ("containers", "initContainers", "tolerations"):
        spec[key] = [MappingProxyType(item) for item in spec.get(key, [])]
    if "affinity" in spec:
        spec["affinity"] = MappingProxyType(spec["affinity"])
    return parse_pod(doc, "Pod")


def parsed_fields(pod: Pod) -> dict[str, Any]:
    return {f.name: getattr(pod, f.name) for f in dataclasses.fields(pod) if f.name != "raw"}


def test_copies_of_a_template_share_parts_equal_to_a_pod_parsed_alone() -> None:
    a, b = parse_pod(template_pod("web-1"), "Pod"), parse_pod(template_pod("web-2"), "Pod")
    assert a.containers is b.containers
    assert a.init_containers is b.init_containers
    assert a.tolerations is b.tolerations
    assert a.node_affinity is b.node_affinity and a.node_affinity is not None
    assert a.pod_affinity is b.pod_affinity and a.pod_affinity is not None
    assert a.pod_anti_affinity is b.pod_anti_affinity and a.pod_anti_affinity is not None
    alone = parsed_alone(template_pod("web-2"))
    assert alone.containers is not b.containers and alone.pod_affinity is not b.pod_affinity
    assert parsed_fields(b) == parsed_fields(alone)
    # The requests default to the limits where unset, as for any pod.
    assert b.containers[1].requests == {"memory": 64 * 2**20}
    assert b.init_containers[0].restartable


def _changed(edit: str) -> dict[str, Any]:
    raw = template_pod("web-x")
    spec = raw["spec"]
    app = spec["containers"][0]
    if edit == "image":
        app["image"] = "web:v2"
    elif edit == "requests":
        app["resources"]["requests"]["cpu"] = "200m"
    elif edit == "limits":
        spec["containers"][1]["resources"]["limits"]["memory"] = "65Mi"
    elif edit == "host port":
        app["ports"].append({"containerPort": 9090, "hostPort": 9090})
    elif edit == "init restart policy":
        del spec["initContainers"][0]["restartPolicy"]
    elif edit == "restart rules":
        app["restartPolicyRules"] = [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
    elif edit == "toleration":
        spec["tolerations"][1]["value"] = "db"
    elif edit == "pod affinity":
        spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
            "topologyKey"
        ] = "rack"
    elif edit == "node affinity":
        del spec["affinity"]["nodeAffinity"]
    return raw


@pytest.mark.parametrize(
    "edit",
    [
        "image",
        "requests",
        "limits",
        "host port",
        "init restart policy",
        "restart rules",
        "toleration",
        "pod affinity",
        "node affinity",
    ],
)
def test_a_pod_differing_in_a_parsed_field_is_parsed_for_itself(edit: str) -> None:
    template = parse_pod(template_pod("web-1"), "Pod")
    changed = parse_pod(_changed(edit), "Pod")
    assert parsed_fields(changed) == parsed_fields(parsed_alone(_changed(edit)))
    assert parsed_fields(changed) != parsed_fields(parsed_alone(template_pod("web-x")))
    if edit == "toleration":
        assert changed.tolerations is not template.tolerations
    elif edit.endswith("affinity"):
        assert changed.pod_affinity is not template.pod_affinity
    else:
        assert changed.containers is not template.containers or (
            changed.init_containers is not template.init_containers
        )


def test_a_malformed_pod_fails_as_before_after_a_well_formed_copy() -> None:
    parse_pod(template_pod("web-1"), "Pod")
    bad = template_pod("web-2")
    bad["spec"]["containers"][1]["resources"]["limits"]["memory"] = "lots"
    with pytest.raises(FieldError, match=r"Pod\.spec\.containers\[1\]\.resources\.limits\.memory"):
        parse_pod(bad, "Pod")
    bad = template_pod("web-3")
    bad["spec"]["tolerations"][0]["operator"] = "Maybe"
    with pytest.raises(FieldError, match=r"Pod\.spec\.tolerations\[0\]\.operator"):
        parse_pod(bad, "Pod")
    bad = template_pod("web-4")
    bad["spec"]["containers"][0]["ports"][0]["hostPort"] = "80"
    with pytest.raises(FieldError, match=r"Pod\.spec\.containers\[0\]\.ports\[0\]\.hostPort"):
        parse_pod(bad, "Pod")
    bad = template_pod("web-5")
    bad["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "topologyKey"
    ] = 7
    with pytest.raises(
        FieldError,
        match=r"Pod\.spec\.affinity\.podAffinity\.requiredDuringSchedulingIgnoredDuringExecution\[0\]",
    ):
        parse_pod(bad, "Pod")


def test_the_cache_counts_template_copies_as_pods_parsed_alone() -> None:
    shared, alone = Cache(), Cache()
    for cache in (shared, alone):
        cache.add_node(make_node("node-1"))
    for i in range(3):
        shared.add_pod(parse_pod(template_pod(f"web-{i}"), "Pod"))
        alone.add_pod(parsed_alone(template_pod(f"web-{i}")))
        # Copies of another template in between.
        other = _changed("limits")
        other["metadata"]["uid"] = f"uid-other-{i}"
        shared.add_pod(parse_pod(copy.deepcopy(other), "Pod"))
        alone.add_pod(parsed_alone(other))
    changed = parse_pod(_changed("requests"), "Pod")
    shared.add_pod(changed)
    alone.add_pod(parsed_alone(_changed("requests")))
    # A new version of a cached pod, its containers unchanged.
    shared.update_pod(changed, parse_pod(_changed("requests"), "Pod"))
    snapshots = []
    for cache in (shared, alone):
        snapshot = Snapshot()
        cache.update_snapshot(snapshot)
        snapshots.append(snapshot.get("node-1"))
    got, want = snapshots
    assert got is not None and want is not None
    # 6 x 100m + 200m (the changed copy), and 128Mi + 64Mi (65Mi) of memory each (requests from limits).
    assert got.requested == want.requested == Resource(800, 4 * 192 * 2**20 + 3 * 193 * 2**20)
    assert got.non_zero_requested == want.non_zero_requested
    assert [(p.non0_cpu, p.non0_mem) for p in got.pods] == [(p.non0_cpu, p.non0_mem) for p in want.pods]
