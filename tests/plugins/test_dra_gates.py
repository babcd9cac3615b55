"""The DRA feature gates that are off by default in kube-scheduler v1.36.3: with them off (the
default) berth behaves as kube-scheduler does with them off; turning on one whose behaviour berth
lacks is refused at start-up with a clear message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app import featuregates
from app.api.objects import parse_pod
from app.framework.cycle_state import CycleState
from app.framework.dra import AllocatedState, DRAStore
from app.framework.status import Code, Status
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.allocator import AllocationError, Allocator, Features
from app.plugins.dynamicresources.cel import CelCache
from app.plugins.dynamicresources.plugin import DynamicResources
from builders import make_node
from fakes import FakeHandle
from plugins.dra_helpers import claim, claim_raw, dev, device_class, exact, resource_slice, slice_raw

DRIVER = "driver-a"


@pytest.fixture(autouse=True)
def _reset_gates() -> Iterator[None]:
    yield
    featuregates.DEFAULT.reset()


@pytest.mark.parametrize(
    ("gates", "needs"),
    [
        ("DRADeviceTaintRules=true", "DeviceTaintRule objects"),
        ("DRANodeAllocatableResources=true", "status.nodeAllocatableResourceClaimStatuses"),
        ("GenericWorkload=true,DRAWorkloadResourceClaims=true", "claims reserved for PodGroups"),
    ],
)
def test_an_unimplemented_dra_gate_turned_on_is_refused_at_start(gates: str, needs: str) -> None:
    featuregates.DEFAULT.set(gates)
    gate = gates.rsplit(",", 1)[-1].split("=")[0]
    with pytest.raises(ValueError, match=f"feature gate {gate} is enabled, but berth implements") as err:
        DynamicResources(None, FakeHandle())
    assert needs in str(err.value)


def test_the_list_type_attributes_gate_is_accepted() -> None:
    featuregates.DEFAULT.set("DRAListTypeAttributes=true")
    plugin = DynamicResources(None, FakeHandle())
    assert plugin.cel_cache.list_type_attributes


def test_the_resource_pool_status_gate_does_not_touch_the_scheduler() -> None:
    featuregates.DEFAULT.set("DRAResourcePoolStatus=true")
    assert DynamicResources(None, FakeHandle()).name == "DynamicResources"


def store_with(*objects: dict[str, Any]) -> DRAStore:
    store = DRAStore()
    for obj in objects:
        store.upsert(obj["kind"], obj["metadata"]["name"], obj)
    return store


def _filter_with_list_attribute(selector: str) -> Status | None:
    """Filter of a pod whose claim's class has ``selector``, on a node with one GPU listing two models."""
    device = {"name": "gpu-0", "attributes": {"models": {"strings": ["a100", "h100"]}}}
    store = store_with(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": selector}}]},
        },
        slice_raw("worker-gpus", "worker", "worker", "gpu.example.com", device),
        claim_raw("claim", exact("req", "gpu"), uid="claim-uid"),
    )
    plugin = DynamicResources(None, FakeHandle(), store)
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "p-uid"},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "resourceClaims": [{"name": "r", "resourceClaimName": "claim"}],
            },
        }
    )
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    return plugin.filter(state, pod, NodeInfo(make_node("worker")))


def test_list_attributes_are_lists_in_cel_with_their_gate_on() -> None:
    """DRAListTypeAttributes on: the list is a CEL list, ``includes`` and macros range over it."""
    featuregates.DEFAULT.set("DRAListTypeAttributes=true")
    selector = 'device.attributes["gpu.example.com"].models.includes("h100")'
    assert _filter_with_list_attribute(selector) is None
    selector = 'device.attributes["gpu.example.com"].models.exists(m, m.startsWith("b"))'
    assert _filter_with_list_attribute(selector) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims"
    )


def test_list_attributes_are_unsupported_values_with_their_gate_off() -> None:
    """DRAListTypeAttributes off: a list-valued attribute fails the selector reading the device, as
    ``getAttributeValue`` does, and the Filter reports kube's error."""
    assert _filter_with_list_attribute('device.driver == "gpu.example.com"') == Status(
        Code.ERROR, "class gpu: selector #0: CEL runtime error: attribute models: unsupported attribute value"
    )


# --- the allocator's constraints with DRAListTypeAttributes (allocator_testing.go's list cases) ---

STRING_ATTR = f"{DRIVER}/stringAttribute"


def _allocate_with_lists(
    values: list[dict[str, Any]], constraint: dict[str, str], count: int, list_types: bool = True
) -> list[str] | None:
    """Allocate ``count`` devices of one request under ``constraint``; the devices picked, or None."""
    devices = [
        dev(f"device-{i + 1}", attributes={name: v for name, v in attr.items()})
        for i, attr in enumerate(values)
    ]
    allocator = Allocator(
        Features(list_type_attributes=list_types),
        AllocatedState(),
        {"class-a": device_class("class-a", DRIVER)}.get,
        [resource_slice("slice-1", "node-1", "pool-1", DRIVER, *devices)],
        CelCache(list_types),
    )
    solution = allocator.allocate(
        make_node("node-1"), [claim("claim-0", exact("req-0", "class-a", count), constraints=[constraint])]
    )
    if solution is None:
        return None
    return sorted(r["device"] for a in solution.allocations() for r in a["devices"]["results"])


def _strings(*values: str) -> dict[str, Any]:
    return {"stringAttribute": {"strings": list(values)}}


def _string(value: str) -> dict[str, Any]:
    return {"stringAttribute": {"string": value}}


MATCH = {"matchAttribute": STRING_ATTR}
DISTINCT = {"distinctAttribute": STRING_ATTR}

LIST_CONSTRAINT_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, str], int, list[str] | None]] = {
    "match-scalar-string-values": (
        [_string("value1"), _string("value1")],
        MATCH,
        2,
        ["device-1", "device-2"],
    ),
    "match-list-of-string-values-with-common-elements": (
        [_strings("value1", "value2"), _strings("value2", "value3")],
        MATCH,
        2,
        ["device-1", "device-2"],
    ),
    "match-list-of-string-values-with-partially-common-elements": (
        [_strings("value1", "value2"), _strings("value2", "value3"), _strings("value3", "value1")],
        MATCH,
        3,
        None,
    ),
    "match-list-of-string-values-without-common-elements": (
        [_strings("value1", "value2"), _strings("value3", "value4")],
        MATCH,
        2,
        None,
    ),
    "match-mixed-scalar-and-list-with-common-elements": (
        [_string("value1"), _strings("value1", "value2")],
        MATCH,
        2,
        ["device-1", "device-2"],
    ),
    "match-mixed-scalar-and-list-with-partially-common-elements": (
        [_string("value1"), _strings("value1", "value2"), _strings("value2", "value3")],
        MATCH,
        3,
        None,
    ),
    "match-mixed-scalar-and-list-without-common-elements": (
        [_string("value1"), _strings("value2", "value3")],
        MATCH,
        2,
        None,
    ),
    "match-list-of-int-values-with-common-elements": (
        [{"numa": {"ints": [0, 1, 2]}}, {"numa": {"ints": [1, 2, 3]}}],
        {"matchAttribute": f"{DRIVER}/numa"},
        2,
        ["device-1", "device-2"],
    ),
    "match-list-of-bool-values-with-common-elements": (
        [{"boolAttribute": {"bools": [True, False]}}, {"boolAttribute": {"bools": [True]}}],
        {"matchAttribute": f"{DRIVER}/boolAttribute"},
        2,
        ["device-1", "device-2"],
    ),
    "match-list-of-version-values-with-common-elements": (
        [
            {"driverVersion": {"versions": ["1.0.0", "1.1.0", "2.0.0"]}},
            {"driverVersion": {"versions": ["1.1.0", "2.0.0", "2.1.0"]}},
        ],
        {"matchAttribute": f"{DRIVER}/driverVersion"},
        2,
        ["device-1", "device-2"],
    ),
    "distinct-scalar-string-values-all-distinct": (
        [_string("value1"), _string("value2")],
        DISTINCT,
        2,
        ["device-1", "device-2"],
    ),
    "distinct-scalar-string-values-not-distinct": ([_string("value1"), _string("value1")], DISTINCT, 2, None),
    "distinct-list-of-string-values-all-distinct": (
        [_strings("value1", "value2"), _strings("value2", "value3"), _strings("value3", "value4")],
        DISTINCT,
        2,
        ["device-1", "device-3"],
    ),
    "distinct-list-of-string-values-with-common-elements": (
        [_strings("value1", "value2", "value3"), _strings("value2", "value4", "value5")],
        DISTINCT,
        2,
        None,
    ),
    "distinct-mixed-scalar-and-list-all-distinct": (
        [_string("value1"), _strings("value1", "value2"), _strings("value2", "value3")],
        DISTINCT,
        2,
        ["device-1", "device-3"],
    ),
    "distinct-mixed-scalar-and-list-with-common-elements": (
        [_string("value1"), _strings("value1", "value2")],
        DISTINCT,
        2,
        None,
    ),
    "distinct-list-of-int-values-all-distinct": (
        [{"numa": {"ints": [0, 1]}}, {"numa": {"ints": [1, 2]}}, {"numa": {"ints": [2, 3]}}],
        {"distinctAttribute": f"{DRIVER}/numa"},
        2,
        ["device-1", "device-3"],
    ),
}


@pytest.mark.parametrize("name", list(LIST_CONSTRAINT_CASES))
def test_constraints_over_list_attributes(name: str) -> None:
    values, constraint, count, expect = LIST_CONSTRAINT_CASES[name]
    assert _allocate_with_lists(values, constraint, count) == expect


@pytest.mark.parametrize(
    ("values", "list_types"),
    [
        # "list-attributes-match-constaint-with-empty-or-unknown-type": an empty list is no value
        ([_strings(), _strings()], True),
        # "list-attributes-disabled-match-constraint-with-lists": the class selector reads the lists
        ([_strings("value1", "value2", "value3"), _strings("value2", "value3", "value4")], False),
    ],
)
def test_a_list_the_selector_cannot_read_is_an_unsupported_attribute_value(
    values: list[dict[str, Any]], list_types: bool
) -> None:
    with pytest.raises(AllocationError, match="unsupported attribute value"):
        _allocate_with_lists(values, MATCH, 2, list_types)


def test_with_dynamic_resource_allocation_off_the_plugin_does_nothing() -> None:
    """kube's ``New`` with the gate off (its default at --emulated-version=1.33): a plugin whose
    ``enabled`` is false; every extension point returns at once, even for a pod with claims whose
    claim does not exist (kube neither gates nor rejects it), and no event is registered."""
    featuregates.DEFAULT.set_emulation(33)
    plugin = DynamicResources(None, FakeHandle())
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
            "spec": {
                "containers": [{"name": "c"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "missing"}],
            },
        }
    )
    state = CycleState()
    node = NodeInfo(make_node("n1"))
    assert plugin.pre_enqueue(pod) is None
    assert plugin.events_to_register() == []
    result, status = plugin.pre_filter(state, pod, [node])
    assert result is None and status is not None and status.code is Code.SKIP
    assert plugin.filter(state, pod, node) is None
    assert plugin.score_nodes(state, pod, [node]) == [0]
    assert plugin.reserve(state, pod, "n1") is None
    plugin.unreserve(state, pod, "n1")
    pre_flight = plugin.pre_bind_pre_flight(state, pod, "n1")
    assert pre_flight is not None and pre_flight.code is Code.SKIP
    assert plugin.pre_bind(state, pod, "n1") is None
    _, post = plugin.post_filter(state, pod, None)  # type: ignore[arg-type]
    assert post.code is Code.UNSCHEDULABLE and post.message() == "plugin disabled"


def test_dynamic_resources_is_a_default_plugin_only_with_the_gate_on() -> None:
    """``applyFeatureGates``: DynamicResources joins the default MultiPoint set with the gate."""
    from app.config.defaults import default_plugins
    from app.plugins.registry import in_tree_registry

    registry = in_tree_registry()
    assert "DynamicResources" in [p.name for p in default_plugins(registry).multi_point.enabled]
    featuregates.DEFAULT.set_emulation(33)
    assert "DynamicResources" not in [p.name for p in default_plugins(registry).multi_point.enabled]
