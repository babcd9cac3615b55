"""Resource, PodInfo, NodeInfo and HostPortInfo, ported from kube-scheduler v1.36.3
pkg/scheduler/framework/types_test.go and staging kube-scheduler framework/types_test.go."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from app.api.objects import Pod
from app.api.quantity import parse_quantity
from app.api.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from app.framework.types import HostPortInfo, NodeInfo, PodInfo, Resource
from builders import make_node, make_pod

MI = 1024 * 1024


def _container(
    requests: dict[str, str], ports: Sequence[tuple[str, int, str]] = (), **extra: Any
) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "busybox",
        "resources": {"requests": requests},
        "ports": [
            {"hostIP": ip, "hostPort": port, "protocol": proto, "containerPort": port}
            for ip, port, proto in ports
        ],
        **extra,
    }


def _pod(
    name: str,
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> Pod:
    if init:
        spec["initContainers"] = init
    return make_pod(name, None, containers=containers, nodeName="test-node", uid=name, **spec)


# --- Resource -------------------------------------------------------------------------------------


def test_new_resource_empty() -> None:
    assert Resource.from_list({}) == Resource()


def test_new_resource_complex() -> None:
    # TestNewResource "complex resource"
    r = Resource.from_list(
        {
            "cpu": parse_quantity("4m"),
            "memory": parse_quantity("2000"),
            "pods": parse_quantity("80"),
            "ephemeral-storage": parse_quantity("5000"),
            "scalar.test/scalar1": parse_quantity("1"),
            "hugepages-test": parse_quantity("2"),
        }
    )
    assert (r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number) == (4, 2000, 5000, 80)
    assert r.scalar == {"scalar.test/scalar1": 1, "hugepages-test": 2}


def test_new_resource_rounds_up_and_ignores_non_scalar_names() -> None:
    r = Resource.from_list(
        {
            "cpu": parse_quantity("0.1m"),  # MilliValue rounds up
            "memory": parse_quantity("1.5"),
            "storage": parse_quantity("1Gi"),  # not a scheduler resource
            "Example.com/bad": parse_quantity("1"),  # not an extended resource name
            "kubernetes.io/native": parse_quantity("3"),
        }
    )
    assert (r.milli_cpu, r.memory) == (1, 2)
    assert r.scalar == {"kubernetes.io/native": 3}
    assert r.get("cpu") == 1 and r.get("kubernetes.io/native") == 3 and r.get("absent/x") == 0


def test_resource_clone_is_independent() -> None:
    # TestResourceClone
    r = Resource(4, 2000, 5000, 80, {"scalar.test/scalar1": 1, "hugepages-test": 2})
    c = r.clone()
    r.milli_cpu += 1000
    r.scalar["hugepages-test"] = 9
    assert c == Resource(4, 2000, 5000, 80, {"scalar.test/scalar1": 1, "hugepages-test": 2})


def test_resource_add_scalar_and_subtract() -> None:
    # TestResourceAddScalar via Resource.add
    r = Resource(4, 2000, 5000, 80, {"hugepages-test": 2})
    r.add(Resource(scalar={"scalar2": 200}))
    assert r == Resource(4, 2000, 5000, 80, {"hugepages-test": 2, "scalar2": 200})
    r.add(Resource(1, 1, 1, 0, {"scalar2": 200}), sign=-1)
    assert r == Resource(3, 1999, 4999, 80, {"hugepages-test": 2})  # zero scalars compare as absent
    assert Resource().is_zero() and not r.is_zero()


# --- PodInfo (TestPodInfoCalculateResources) --------------------------------------------------

CALCULATE = [
    (
        "requestless container",
        [{}],
        [],
        None,
        None,
        (0, 0),
        (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
    ),
    (
        "1X container with requests",
        [{"cpu": "500m", "memory": "500Mi"}],
        [],
        None,
        None,
        (500, 500 * MI),
        (500, 500 * MI),
    ),
    (
        "2X container with requests",
        [{"cpu": "500m", "memory": "500Mi"}, {"cpu": "700m", "memory": "800Mi"}],
        [],
        None,
        None,
        (1200, 1300 * MI),
        (1200, 1300 * MI),
    ),
    (
        "1X container and 1X init container with pod-level requests",
        [{"cpu": "500m", "memory": "500Mi"}],
        [{"cpu": "500m", "memory": "500Mi"}],
        {"cpu": "1200m", "memory": "1200Mi"},
        None,
        (1200, 1200 * MI),
        (1200, 1200 * MI),
    ),
    (
        "1X container with pod-level memory requests",
        [{}],
        [],
        {"memory": "1200Mi"},
        None,
        (0, 1200 * MI),
        (DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
    ),
    (
        "1X container with pod-level cpu requests",
        [{}],
        [],
        {"cpu": "500m"},
        None,
        (500, 0),
        (500, DEFAULT_MEMORY_REQUEST),
    ),
    (
        "1X container unsupported resources and pod-level supported resources",
        [{"ephemeral-storage": "800Mi"}],
        [{"ephemeral-storage": "500Mi"}],
        {"cpu": "500m"},
        None,
        (500, 0),
        (500, DEFAULT_MEMORY_REQUEST),
    ),
    # getNonMissingContainerRequests with pod-level requests: a container that states memory
    # means no defaulting for memory at all, even for the container that does not.
    (
        "pod-level cpu; one of two containers requests memory",
        [{"memory": "100Mi"}, {}],
        [],
        {"cpu": "1"},
        None,
        (1000, 100 * MI),
        (1000, 100 * MI),
    ),
    (
        "pod-level cpu; memory only from overhead",
        [{}],
        [],
        {"cpu": "1"},
        {"memory": "10Mi"},
        (1000, 10 * MI),
        (1000, 10 * MI),
    ),
    (
        "every container and init container requests cpu and memory: non-zero is the request",
        [{"cpu": "200m", "memory": "1Gi"}],
        [{"cpu": "1", "memory": "2Gi"}],
        None,
        None,
        (1000, 2048 * MI),
        (1000, 2048 * MI),
    ),
    (
        "an init container without a cpu request gets the default in the non-zero max",
        [{"cpu": "50m", "memory": "1Gi"}],
        [{"memory": "2Gi"}],
        None,
        None,
        (50, 2048 * MI),
        (DEFAULT_MILLI_CPU_REQUEST, 2048 * MI),
    ),
    (
        "no pod-level; overhead does not stop per-container defaults",
        [{}],
        [],
        None,
        {"memory": "10Mi"},
        (0, 10 * MI),
        (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST + 10 * MI),
    ),
]


@pytest.mark.parametrize(
    ("containers", "init", "pod_level", "overhead", "requested", "non_zero"),
    [case[1:] for case in CALCULATE],
    ids=[case[0] for case in CALCULATE],
)
def test_pod_info_calculate_resources(
    containers: list[dict[str, str]],
    init: list[dict[str, str]],
    pod_level: dict[str, str] | None,
    overhead: dict[str, str] | None,
    requested: tuple[int, int],
    non_zero: tuple[int, int],
) -> None:
    spec: dict[str, Any] = {}
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    if overhead is not None:
        spec["overhead"] = overhead
    if init:
        spec["initContainers"] = [_container(r) for r in init]
    pi = PodInfo(make_pod("p", containers, **spec))
    assert (pi.requests.milli_cpu, pi.requests.memory) == requested
    assert (pi.non0_cpu, pi.non0_mem) == non_zero


def test_pod_info_ephemeral_storage_only() -> None:
    # TestEphemeralStorageResource (cache_test.go): ephemeral storage is requested, cpu/mem default.
    pi = PodInfo(make_pod("p", [{"ephemeral-storage": "500"}]))
    assert pi.requests == Resource(ephemeral_storage=500)
    assert (pi.non0_cpu, pi.non0_mem) == (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST)


# --- NodeInfo -----------------------------------------------------------------------------------


def _add_pod_fixture() -> list[Pod]:
    """TestNodeInfoAddPod's three pods (overheads, ports and an init container)."""
    return [
        _pod(
            "test-1",
            [_container({"cpu": "100m", "memory": "500"}, [("127.0.0.1", 80, "TCP")])],
            overhead={"cpu": "500m"},
        ),
        _pod(
            "test-2",
            [_container({"cpu": "200m"}, [("127.0.0.1", 8080, "TCP")])],
            overhead={"cpu": "500m", "memory": "500"},
        ),
        _pod(
            "test-3",
            [_container({"cpu": "200m"}, [("127.0.0.1", 8080, "TCP")])],
            init=[_container({"cpu": "500m", "memory": "200Mi"})],
            overhead={"cpu": "500m", "memory": "500"},
        ),
    ]


def test_node_info_add_pod() -> None:
    ni = NodeInfo(make_node("test-node", {}))
    gen = ni.generation
    for pod in _add_pod_fixture():
        ni.add_pod(pod)
        assert ni.generation > gen
        gen = ni.generation
    assert ni.requested == Resource(2300, 209716700)  # 1500 + 200Mi of the init container
    assert ni.non_zero_requested == Resource(2300, 419431900)  # + 200Mi default for test-2
    assert ni.used_ports.ports == {"127.0.0.1": {("TCP", 80), ("TCP", 8080)}}
    assert [p.pod.name for p in ni.pods] == ["test-1", "test-2", "test-3"]
    assert ni.allocatable == Resource()


def test_node_info_remove_pod() -> None:
    # TestNodeInfoRemovePod
    pods = [
        _pod("test-1", [_container({"cpu": "100m", "memory": "500"}, [("127.0.0.1", 80, "TCP")])]),
        _pod("test-2", [_container({"cpu": "200m", "memory": "1Ki"}, [("127.0.0.1", 8080, "TCP")])]),
    ]
    overhead = {"cpu": parse_quantity("500m"), "memory": parse_quantity("500")}
    for p in pods:
        p.overhead = dict(overhead)
    ni = NodeInfo(make_node("test-node", {}), [PodInfo(p) for p in pods])
    assert ni.requested == Resource(1300, 2524)

    # a pod not on the node: an error in Go, False here, nothing changes
    gen = ni.generation
    assert ni.remove_pod(_pod("non-exist", [_container({})])) is False
    assert ni.generation == gen and len(ni.pods) == 2

    assert ni.remove_pod(pods[0]) is True
    assert ni.generation > gen
    assert ni.requested == Resource(700, 1524)
    assert ni.non_zero_requested == Resource(700, 1524)
    assert ni.used_ports.ports == {"127.0.0.1": {("TCP", 8080)}}
    assert [p.pod.name for p in ni.pods] == ["test-2"]


def test_node_info_remove_pod_swaps_with_last() -> None:
    ni = NodeInfo(make_node("n"), [PodInfo(make_pod(f"p{i}")) for i in range(4)])
    ni.remove_pod(make_pod("p1"))
    assert [p.pod.name for p in ni.pods] == ["p0", "p3", "p2"]


ANTI_REQUIRED = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}
AFFINITY_PREFERRED = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"}}
        ]
    }
}


def test_node_info_affinity_lists() -> None:
    plain = make_pod("plain")
    anti = make_pod("anti", affinity=ANTI_REQUIRED)
    soft = make_pod("soft", affinity=AFFINITY_PREFERRED)
    ni = NodeInfo(make_node("n"))
    for p in (plain, anti, soft):
        ni.add_pod(p)
    assert [p.pod.name for p in ni.pods_with_affinity] == ["anti", "soft"]
    assert [p.pod.name for p in ni.pods_with_required_anti_affinity] == ["anti"]
    ni.remove_pod(anti)
    assert [p.pod.name for p in ni.pods_with_affinity] == ["soft"]
    assert ni.pods_with_required_anti_affinity == []


def test_node_info_snapshot_is_independent() -> None:
    # TestNodeInfoClone: the copy's lists, ports and aggregates do not follow the original.
    ni = NodeInfo(make_node("n"), [PodInfo(_pod("a", [_container({"cpu": "1"}, [("", 80, "TCP")])]))])
    snap = ni.snapshot()
    ni.add_pod(_pod("b", [_container({"cpu": "1"}, [("", 81, "UDP")])]))
    assert [p.pod.name for p in snap.pods] == ["a"]
    assert snap.requested.milli_cpu == 1000 and ni.requested.milli_cpu == 2000
    assert snap.used_ports.ports == {"0.0.0.0": {("TCP", 80)}}
    assert snap.generation < ni.generation


@pytest.mark.parametrize(
    "removed",
    [["p1"], ["p1", "p3"], ["p4", "p0", "p2"], ["p0", "p1", "p2", "p3", "p4", "p5"], ["p2", "absent"], []],
)
def test_node_info_snapshot_without_is_remove_pod_in_turn(removed: list[str]) -> None:
    # The preemption dry run's one-pass removal: the same pods in the same (swap-with-last) order,
    # affinity lists, requests and ports as removing each victim in turn; the original is untouched.
    pods = [
        _pod(f"p{i}", [_container({"cpu": f"{100 * (i + 1)}m"}, [("", 8000 + i, "TCP")])]) for i in range(6)
    ]
    pods[1].pod_anti_affinity = make_pod("a", affinity=ANTI_REQUIRED).pod_anti_affinity
    pods[3].pod_affinity = make_pod("s", affinity=AFFINITY_PREFERRED).pod_affinity
    ni = NodeInfo(make_node("n"), [PodInfo(p) for p in pods])
    by_name = {pi.pod.name: pi for pi in ni.pods}
    victims = [by_name.get(name) or PodInfo(_pod(name, [_container({})])) for name in removed]
    before = [p.pod.name for p in ni.pods], ni.requested.clone(), ni.used_ports.clone().ports, ni.generation

    expected = ni.snapshot()
    for v in victims:
        expected.remove_pod(v.pod)
    got = ni.snapshot_without(victims)

    assert [p.pod.name for p in got.pods] == [p.pod.name for p in expected.pods]
    assert [p.pod.name for p in got.pods_with_affinity] == [p.pod.name for p in expected.pods_with_affinity]
    assert [p.pod.name for p in got.pods_with_required_anti_affinity] == [
        p.pod.name for p in expected.pods_with_required_anti_affinity
    ]
    assert got.requested == expected.requested
    assert got.non_zero_requested == expected.non_zero_requested
    assert got.used_ports.ports == expected.used_ports.ports
    assert got.generation > before[3]
    assert ([p.pod.name for p in ni.pods], ni.requested, ni.used_ports.ports, ni.generation) == before


@pytest.mark.parametrize("affinity", [None, ANTI_REQUIRED, AFFINITY_PREFERRED])
@pytest.mark.parametrize("added_since", [False, True])
def test_node_info_undo_add_pod_info_is_remove_pod(
    affinity: dict[str, Any] | None, added_since: bool
) -> None:
    # The dry run's failed reprieve takes back the pod it just added: the same lists and
    # aggregates as RemovePod, also when another pod came after it (then RemovePod itself runs).
    base = [
        make_pod("p0", affinity=ANTI_REQUIRED),
        make_pod("p1", affinity=AFFINITY_PREFERRED),
        make_pod("p2"),
    ]
    ni = NodeInfo(make_node("n"), [PodInfo(p) for p in base])
    back = PodInfo(_pod("back", [_container({"cpu": "300m"}, [("", 9000, "UDP")])]))
    back.pod.pod_affinity = make_pod("x", affinity=affinity).pod_affinity if affinity else None
    back.pod.pod_anti_affinity = make_pod("x", affinity=affinity).pod_anti_affinity if affinity else None
    ni.add_pod_info(back)
    if added_since:
        ni.add_pod(make_pod("after", affinity=ANTI_REQUIRED))
    expected = ni.snapshot()
    expected.remove_pod(back.pod)
    gen = ni.generation

    ni.undo_add_pod_info(back)

    def lists(info: NodeInfo) -> list[list[str]]:
        return [
            [p.pod.name for p in lst]
            for lst in (info.pods, info.pods_with_affinity, info.pods_with_required_anti_affinity)
        ]

    assert lists(ni) == lists(expected)
    assert "back" not in [p.pod.name for p in ni.pods]
    assert ni.requested == expected.requested and ni.non_zero_requested == expected.non_zero_requested
    assert ni.used_ports.ports == expected.used_ports.ports
    assert ni.generation > gen


def test_node_info_set_node_and_ghost() -> None:
    ni = NodeInfo(make_node("n", {"cpu": "2", "memory": "1Gi", "pods": "10", "example.com/gpu": "4"}))
    assert ni.allocatable == Resource(2000, 1024 * MI, 0, 10, {"example.com/gpu": 4})
    assert ni.name == "n"
    gen = ni.generation
    ni.remove_node()
    assert ni.node is None and ni.name == "" and ni.generation > gen


def test_used_ports_shared_port_is_freed_by_one_removal() -> None:
    # HostPortInfo is a set: two pods on one port, one leaves, the port is free (as in Go).
    a = _pod("a", [_container({}, [("", 80, "TCP")])])
    b = _pod("b", [_container({}, [("", 80, "TCP")])])
    ni = NodeInfo(make_node("n"), [PodInfo(a), PodInfo(b)])
    ni.remove_pod(a)
    assert not ni.used_ports.conflicts("", "TCP", 80)


# --- HostPortInfo (TestHostPortInfo_AddRemove / _Check) ---------------------------------------

P = tuple[str, str, int]  # (protocol, ip, port), the order of hostPortInfoParam
NORMAL: list[P] = [
    ("TCP", "127.0.0.1", 79),
    ("UDP", "127.0.0.1", 80),
    ("TCP", "127.0.0.1", 81),
    ("TCP", "127.0.0.1", 82),
    ("TCP", "0.0.0.0", 79),
    ("UDP", "0.0.0.0", 80),
    ("TCP", "0.0.0.0", 81),
    ("TCP", "0.0.0.0", 82),
]

ADD_REMOVE = [
    ("normal add case", [*NORMAL, ("TCP", "0.0.0.0", 0), ("TCP", "0.0.0.0", -1)], [], 8),
    (
        "empty ip and protocol add should work",
        [
            ("", "127.0.0.1", 79),
            ("UDP", "127.0.0.1", 80),
            ("", "127.0.0.1", 81),
            ("", "127.0.0.1", 82),
            ("", "", 79),
            ("UDP", "", 80),
            ("", "", 81),
            ("", "", 82),
            ("", "", 0),
            ("", "", -1),
        ],
        [],
        8,
    ),
    ("normal remove case", NORMAL, NORMAL, 0),
    (
        "empty ip and protocol remove should work",
        NORMAL,
        [
            ("", "127.0.0.1", 79),
            ("", "127.0.0.1", 81),
            ("", "127.0.0.1", 82),
            ("UDP", "127.0.0.1", 80),
            ("", "", 79),
            ("", "", 81),
            ("", "", 82),
            ("UDP", "", 80),
        ],
        0,
    ),
]


@pytest.mark.parametrize(
    ("added", "removed", "length"), [c[1:] for c in ADD_REMOVE], ids=[c[0] for c in ADD_REMOVE]
)
def test_host_port_info_add_remove(added: list[P], removed: list[P], length: int) -> None:
    hp = HostPortInfo()
    for proto, ip, port in added:
        hp.add(ip, proto, port)
    for proto, ip, port in removed:
        hp.remove(ip, proto, port)
    assert len(hp) == length


CHECK = [
    ("empty check should check 0.0.0.0 and TCP", [("TCP", "127.0.0.1", 80)], ("", "", 81), False),
    ("empty check should check 0.0.0.0 and TCP (conflicted)", [("TCP", "127.0.0.1", 80)], ("", "", 80), True),
    ("empty port check should pass", [("TCP", "127.0.0.1", 80)], ("", "", 0), False),
    ("0.0.0.0 should check all registered IPs", [("TCP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), True),
    (
        "0.0.0.0 with different protocol should be allowed",
        [("UDP", "127.0.0.1", 80)],
        ("TCP", "0.0.0.0", 80),
        False,
    ),
    (
        "0.0.0.0 with different port should be allowed",
        [("TCP", "127.0.0.1", 79), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)],
        ("TCP", "0.0.0.0", 80),
        False,
    ),
    (
        "normal ip should check all registered 0.0.0.0",
        [("TCP", "0.0.0.0", 80)],
        ("TCP", "127.0.0.1", 80),
        True,
    ),
    (
        "normal ip with different port/protocol should be allowed (0.0.0.0)",
        [("TCP", "0.0.0.0", 79), ("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 81), ("TCP", "0.0.0.0", 82)],
        ("TCP", "127.0.0.1", 80),
        False,
    ),
    (
        "normal ip with different port/protocol should be allowed",
        [
            ("TCP", "127.0.0.1", 79),
            ("UDP", "127.0.0.1", 80),
            ("TCP", "127.0.0.1", 81),
            ("TCP", "127.0.0.1", 82),
        ],
        ("TCP", "127.0.0.1", 80),
        False,
    ),
]


@pytest.mark.parametrize(("added", "check", "expect"), [c[1:] for c in CHECK], ids=[c[0] for c in CHECK])
def test_host_port_info_check(added: list[P], check: P, expect: bool) -> None:
    hp = HostPortInfo()
    for proto, ip, port in added:
        hp.add(ip, proto, port)
    proto, ip, port = check
    assert hp.conflicts(ip, proto, port) is expect


def test_host_port_info_clone_is_independent() -> None:
    hp = HostPortInfo()
    hp.add("", "TCP", 80)
    c = hp.clone()
    hp.add("", "TCP", 81)
    hp.remove("", "TCP", 80)
    assert c.ports == {"0.0.0.0": {("TCP", 80)}} and len(c) == 1
