"""NodePorts, ported from plugins/nodeports/node_ports_test.go (v1.36.3), plus the
HostPortInfo conflict table (TestHostPortInfo_Check, kube-scheduler framework types_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.status import Code, Status, error, skip, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.nodeports.node_ports import ERR_REASON, NodePorts, fits, get_host_ports
from builders import make_pod
from fakes import FakeHandle


def _ports(infos: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for info in infos:
        protocol, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol})
    return out


def new_pod(host: str, *host_port_infos: str) -> Pod:
    """Go's newPod: one container with the given "PROTO/IP/PORT" host ports."""
    return make_pod("p", nodeName=host, containers=[{"name": "c", "ports": _ports(host_port_infos)}])


def new_node_info(*host_port_infos: str) -> NodeInfo:
    return NodeInfo(None, [PodInfo(new_pod("p1", *host_port_infos))])


def init_container_pod(sidecar: bool) -> Pod:
    init: dict[str, Any] = {
        "name": "init",
        "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    return make_pod("p", initContainers=[init])


REJECT = unschedulable(ERR_REASON)

NODE_PORTS_CASES: list[tuple[str, Pod, NodeInfo, Status | None, Status | None]] = [
    ("skip filter", make_pod("p"), NodeInfo(), skip(), None),
    ("other port", new_pod("m1", "UDP/127.0.0.1/8080"), new_node_info("UDP/127.0.0.1/9090"), None, None),
    ("same udp port", new_pod("m1", "UDP/127.0.0.1/8080"), new_node_info("UDP/127.0.0.1/8080"), None, REJECT),
    ("same tcp port", new_pod("m1", "TCP/127.0.0.1/8080"), new_node_info("TCP/127.0.0.1/8080"), None, REJECT),
    (
        "different host ip",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        new_node_info("TCP/127.0.0.2/8080"),
        None,
        None,
    ),
    (
        "different protocol",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        new_node_info("TCP/127.0.0.1/8080"),
        None,
        None,
    ),
    (
        "second udp port conflict",
        new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        new_node_info("UDP/127.0.0.1/8080"),
        None,
        REJECT,
    ),
    (
        "first tcp port conflict",
        new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        new_node_info("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        None,
        REJECT,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/0.0.0.0/8001"),
        new_node_info("TCP/127.0.0.1/8001"),
        None,
        REJECT,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        new_node_info("TCP/127.0.0.1/8001"),
        None,
        REJECT,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/127.0.0.1/8001"),
        new_node_info("TCP/0.0.0.0/8001"),
        None,
        REJECT,
    ),
    (
        "second different protocol",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        new_node_info("TCP/0.0.0.0/8001"),
        None,
        None,
    ),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        new_node_info("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        None,
        REJECT,
    ),
    (
        "non-sidecar initContainer using hostPort",
        init_container_pod(sidecar=False),
        new_node_info("TCP/0.0.0.0/8001"),
        skip(),
        None,
    ),
    (
        "TCP hostPort conflict from sidecar initContainer",
        init_container_pod(sidecar=True),
        new_node_info("TCP/0.0.0.0/8001"),
        None,
        REJECT,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "node_info", "want_pre_filter", "want_filter"),
    NODE_PORTS_CASES,
    ids=[c[0] for c in NODE_PORTS_CASES],
)
def test_node_ports(
    name: str, pod: Pod, node_info: NodeInfo, want_pre_filter: Status | None, want_filter: Status | None
) -> None:
    p = NodePorts(None, FakeHandle())
    state = CycleState()
    result, status = p.pre_filter(state, pod, [])
    assert result is None
    assert status == want_pre_filter
    if status is not None:
        return
    got = p.filter(state, pod, node_info)
    assert got == want_filter
    if got is not None:
        assert got.code is Code.UNSCHEDULABLE


def test_pre_filter_disabled() -> None:
    got = NodePorts(None, FakeHandle()).filter(CycleState(), make_pod("p"), NodeInfo())
    assert got == error('reading "PreFilterNodePorts" from cycleState: not found')
    assert got is not None and got.code is Code.ERROR


FITS_CASES = [
    ("non-conflicting ports", new_pod("p", "TCP/127.0.0.1/80"), new_node_info("TCP/127.0.0.1/9090"), True),
    (
        "multiple non-conflicting ports",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        new_node_info("TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"),
        True,
    ),
    (
        "same ports on different protocols",
        new_pod("m1", "TCP/127.0.0.1/80"),
        new_node_info("UDP/127.0.0.1/80"),
        True,
    ),
    ("conflicting ports", new_pod("m1", "TCP/127.0.0.1/80"), new_node_info("TCP/127.0.0.1/80"), False),
    (
        "multiple ports, some conflicting",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        new_node_info("TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"),
        False,
    ),
]


@pytest.mark.parametrize(("desc", "pod", "existing", "expect"), FITS_CASES, ids=[c[0] for c in FITS_CASES])
def test_fits(desc: str, pod: Pod, existing: NodeInfo, expect: bool) -> None:
    assert fits(pod, existing) is expect


def test_get_host_ports_order_and_defaults() -> None:
    pod = make_pod(
        "p",
        initContainers=[
            {"name": "s", "restartPolicy": "Always", "ports": [{"containerPort": 1, "hostPort": 1}]}
        ],
        containers=[
            {
                "name": "c",
                "ports": [{"containerPort": 2, "hostPort": 2, "hostIP": "10.0.0.1"}, {"containerPort": 3}],
            }
        ],
    )
    # Sidecars first; protocol defaults to TCP; container ports without a host port are ignored.
    assert get_host_ports(pod) == [("", "TCP", 1), ("10.0.0.1", "TCP", 2)]
