"""Pod effective requests, ported from component-helpers resource/helpers_test.go (v0.36.3):
TestPodResourceRequests, TestPodLevelResourceRequests and TestPodRequestsAndLimits, plus the
resource-name classification of ``IsScalarResourceName``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.api.objects import Pod, parse_pod
from app.api.quantity import parse_quantity
from app.api.resources import (
    NON_MISSING_DEFAULTS,
    is_pod_level_requests_set,
    is_scalar_resource,
    pod_limits,
    pod_requests,
)
from builders import make_pod, pod_dict

Requests = dict[str, str]


def _init(requests: Requests, sidecar: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "init", "image": "busybox", "resources": {"requests": requests}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def _pod(
    containers: list[Requests] | None = None,
    init: list[dict[str, Any]] | None = None,
    overhead: Requests | None = None,
    pod_level: Requests | None = None,
) -> Pod:
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    pod = make_pod("p", containers if containers is not None else [{}], **spec)
    if containers == []:
        # A new list: the parsed one may be shared with other pods of the same containers.
        pod = dataclasses.replace(pod, containers=[])
    return pod


def _q(rl: Requests) -> dict[str, Any]:
    return {k: parse_quantity(v) for k, v in rl.items()}


# TestPodResourceRequests (the cases without status resources / resize).
POD_RESOURCE_REQUESTS = [
    ("nil options, larger init container", [{"cpu": "1"}], [_init({"cpu": "4"})], None, {"cpu": "4"}),
    (
        "nil options, larger containers",
        [{"cpu": "2"}, {"cpu": "3"}],
        [_init({"cpu": "2"})],
        None,
        {"cpu": "5"},
    ),
    (
        "pod overhead included",
        [{"cpu": "2"}, {"cpu": "3"}],
        [_init({"cpu": "2"})],
        {"cpu": "1", "memory": "1Gi"},
        {"cpu": "6", "memory": "1Gi"},
    ),
    ("restartable init container", [{"cpu": "1"}], [_init({"cpu": "1"}, sidecar=True)], None, {"cpu": "2"}),
    (
        "multiple restartable init containers",
        [{"cpu": "1"}],
        [
            _init({"cpu": "5"}),
            _init({"cpu": "1"}, sidecar=True),
            _init({"cpu": "2"}, sidecar=True),
            _init({"cpu": "3"}, sidecar=True),
        ],
        None,
        {"cpu": "7"},
    ),
    (
        "multiple restartable and regular init containers",
        [{"cpu": "1"}],
        [
            _init({"cpu": "5"}),
            _init({"cpu": "1"}, sidecar=True),
            _init({"cpu": "2"}, sidecar=True),
            _init({"cpu": "5"}),
            _init({"cpu": "3"}, sidecar=True),
        ],
        None,
        {"cpu": "8"},
    ),
    (
        "restartable-init, init and regular",
        [{"cpu": "100"}],
        [_init({"cpu": "10"}, sidecar=True), _init({"cpu": "200"})],
        None,
        {"cpu": "210"},
    ),
]


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "expected"),
    [case[1:] for case in POD_RESOURCE_REQUESTS],
    ids=[case[0] for case in POD_RESOURCE_REQUESTS],
)
def test_pod_resource_requests(
    containers: list[Requests], init: list[dict[str, Any]], overhead: Requests | None, expected: Requests
) -> None:
    assert pod_requests(_pod(containers, init, overhead)) == _q(expected)


MI3 = {"memory": "3Mi", "cpu": "2m"}
INIT5 = {"memory": "5Mi", "cpu": "4m"}
SIDE6 = {"memory": "6Mi", "cpu": "8m"}

# TestPodLevelResourceRequests (PodLevelResources on; SkipPodLevelResources false).
POD_LEVEL = [
    ("nil", None, [], [], {}),
    ("pod level memory resource", {"memory": "2Mi"}, [], [], {"memory": "2Mi"}),
    (
        "pod level memory and container level cpu resources",
        {"memory": "2Mi"},
        [{"cpu": "2m"}],
        [],
        {"memory": "2Mi", "cpu": "2m"},
    ),
    (
        "pod level unsupported resources set at both pod-level and container-level",
        {"storage": "2Mi"},
        [{"storage": "3Mi"}],
        [],
        {"storage": "3Mi"},
    ),
    (
        "pod level unsupported resources set at pod-level",
        {"storage": "2Mi"},
        [{"memory": "3Mi"}],
        [],
        {"memory": "3Mi"},
    ),
    ("only container level resources set", None, [MI3], [], MI3),
    (
        "both container-level and pod-level resources set",
        {"memory": "6Mi", "cpu": "8m"},
        [MI3],
        [],
        {"memory": "6Mi", "cpu": "8m"},
    ),
    ("container-level resources and init container set", None, [MI3], [_init(INIT5)], INIT5),
    (
        "container-level resources and sidecar container set",
        None,
        [MI3],
        [_init(INIT5, sidecar=True)],
        {"memory": "8Mi", "cpu": "6m"},
    ),
    (
        "container-level resources, init and sidecar container set",
        None,
        [MI3],
        [_init(INIT5, sidecar=True), _init(SIDE6)],
        {"memory": "11Mi", "cpu": "12m"},
    ),
    (
        "pod-level resources, container-level resources, init and sidecar container set",
        {"memory": "15Mi", "cpu": "18m"},
        [MI3],
        [_init(INIT5, sidecar=True), _init(SIDE6)],
        {"memory": "15Mi", "cpu": "18m"},
    ),
    (
        "pod-level resources, hugepage request single page size",
        {"memory": "10Mi", "hugepages-2Mi": "2Mi"},
        [],
        [],
        {"memory": "10Mi", "hugepages-2Mi": "2Mi"},
    ),
    (
        "pod-level resources, hugepage request multiple page sizes",
        {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
        [],
        [],
        {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
    ),
    (
        "pod-level resources, container-level resources, hugepage single page size",
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
        [{"hugepages-2Mi": "6Mi"}],
        [],
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
    ),
    (
        "pod-level resources, container-level resources, hugepage multiple page sizes",
        {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
        [{"cpu": "1", "hugepages-1Gi": "2Gi"}],
        [],
        {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
    ),
    (
        "hugepage page sizes split between pod-level and container-level",
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
        [{"memory": "4Mi", "hugepages-1Gi": "1Gi"}],
        [],
        {"cpu": "1", "memory": "4Mi", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "1Gi"},
    ),
]


@pytest.mark.parametrize(
    ("pod_level", "containers", "init", "expected"),
    [case[1:] for case in POD_LEVEL],
    ids=[case[0] for case in POD_LEVEL],
)
def test_pod_level_resource_requests(
    pod_level: Requests | None, containers: list[Requests], init: list[dict[str, Any]], expected: Requests
) -> None:
    assert pod_requests(_pod(containers, init, pod_level=pod_level)) == _q(expected)


def test_pod_requests_and_limits_with_overhead() -> None:
    # TestPodRequestsAndLimits: overhead is added to the container sum.
    pod = _pod([{"cpu": "1", "memory": "1Gi"}, {"cpu": "500m"}], overhead={"cpu": "250m", "memory": "120Mi"})
    assert pod_requests(pod) == _q({"cpu": "1750m", "memory": "1144Mi"})


def test_limits_default_requests() -> None:
    # API defaulting: an unset container request defaults to its limit.
    pod = make_pod("p", [{}])
    raw_pod = make_pod(
        "q",
        None,
        containers=[{"name": "c", "image": "x", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
    )
    assert pod_requests(pod) == {}
    assert pod_requests(raw_pod) == _q({"cpu": "2", "memory": "1Gi"})


# NonMissingContainerRequests (the scoring defaults, 100m / 200Mi per container).
NON_MISSING = [
    ("requestless container", [{}], [], None, {"cpu": "100m", "memory": "200Mi"}),
    ("two requestless containers", [{}, {}], [], None, {"cpu": "200m", "memory": "400Mi"}),
    ("explicit zero stays zero", [{"cpu": "0", "memory": "0"}], [], None, {"cpu": "0", "memory": "0"}),
    ("missing memory only", [{"cpu": "1"}], [], None, {"cpu": "1", "memory": "200Mi"}),
    (
        "init container missing requests",
        [{"cpu": "50m"}],
        [_init({})],
        None,
        {"cpu": "100m", "memory": "200Mi"},
    ),
    (
        "overhead is added after defaults",
        [{}],
        [],
        {"cpu": "10m", "memory": "1Mi"},
        {"cpu": "110m", "memory": "201Mi"},
    ),
]


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "expected"),
    [case[1:] for case in NON_MISSING],
    ids=[case[0] for case in NON_MISSING],
)
def test_non_missing_container_requests(
    containers: list[Requests], init: list[dict[str, Any]], overhead: Requests | None, expected: Requests
) -> None:
    assert pod_requests(_pod(containers, init, overhead), NON_MISSING_DEFAULTS) == _q(expected)


def test_pod_without_containers_has_no_defaulted_requests() -> None:
    # PodRequests only defaults per container; no container, nothing to default.
    assert pod_requests(_pod([]), NON_MISSING_DEFAULTS) == {}


def test_is_pod_level_requests_set() -> None:
    assert not is_pod_level_requests_set(_pod([{"cpu": "1"}]))
    assert not is_pod_level_requests_set(_pod([{"cpu": "1"}], pod_level={"storage": "1Gi"}))
    assert is_pod_level_requests_set(_pod([{"cpu": "1"}], pod_level={"memory": "1Gi"}))
    assert is_pod_level_requests_set(_pod([{"cpu": "1"}], pod_level={"hugepages-2Mi": "2Mi"}))


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("cpu", False),
        ("memory", False),
        ("pods", False),
        ("ephemeral-storage", False),
        ("storage", False),
        ("example.com/gpu", True),
        ("example.com/Foo_Bar", True),
        ("hugepages-2Mi", True),
        ("attachable-volumes-aws-ebs", True),
        ("kubernetes.io/something", True),  # prefixed native
        ("subdomain.kubernetes.io/something", True),
        ("requests.example.com/gpu", False),  # a quota name
        ("Example.com/gpu", False),  # requests.Example.com is not a DNS subdomain
        ("a/b/c", False),
        ("example.com/", False),
        ("example.com/-gpu", False),
    ],
)
def test_is_scalar_resource(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


def _limited(limits: Requests, **extra: Any) -> dict[str, Any]:
    return {"name": extra.pop("name", "c"), "image": "busybox", "resources": {"limits": limits}, **extra}


def test_pod_limits_follow_pod_limits_rules() -> None:
    """TestPodLimits: containers summed, sidecars added, max with init containers, overhead only
    on limited resources, pod-level limits override."""
    raw = pod_dict(
        "p",
        overhead={"cpu": "250m", "memory": "64Mi"},
        resources={"limits": {"memory": "8Gi"}},
    )
    raw["spec"]["containers"] = [_limited({"cpu": "1", "memory": "1Gi"}), _limited({"cpu": "2"}, name="d")]
    raw["spec"]["initContainers"] = [
        _limited({"cpu": "1"}, name="sidecar", restartPolicy="Always"),
        _limited({"cpu": "5", "ephemeral-storage": "1Gi"}, name="init"),
    ]
    limits = pod_limits(parse_pod(raw))
    # containers 3 + sidecar 1 = 4 cpu; the init container runs with the sidecar: 5 + 1 = 6 > 4.
    assert limits == _q({"cpu": "6250m", "memory": "8256Mi", "ephemeral-storage": "1Gi"})


def test_pod_limits_of_a_pod_without_limits_is_empty() -> None:
    assert pod_limits(make_pod("p", [{"cpu": "1"}], overhead={"cpu": "1"})) == {}


def test_pod_level_requests_are_ignored_with_the_gate_off() -> None:
    """PodLevelResources off (its default at --emulated-version=1.33): kube-scheduler computes
    requests with ``SkipPodLevelResources`` and never treats pod-level requests as set."""
    from app import featuregates
    from app.framework.types import PodInfo

    pod = _pod([{"cpu": "100m"}], pod_level={"cpu": "2", "memory": "1Gi"})
    assert is_pod_level_requests_set(pod)
    assert pod_requests(pod)["cpu"] == parse_quantity("2")
    try:
        featuregates.DEFAULT.set_emulation(33)
        assert not is_pod_level_requests_set(pod)
        assert pod_requests(pod) == {"cpu": parse_quantity("100m")}
        info = PodInfo(pod)
        assert info.requests.milli_cpu == 100 and info.non0_mem == 200 * 1024 * 1024  # default memory
    finally:
        featuregates.DEFAULT.reset()
