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
from app.framework.dra import DRAStore
from app.framework.status import Code, Status
from app.framework.types import NodeInfo
from app.plugins.dynamicresources.plugin import DynamicResources
from builders import make_node
from fakes import FakeHandle
from plugins.dra_helpers import claim_raw, exact, slice_raw


@pytest.fixture(autouse=True)
def _reset_gates() -> Iterator[None]:
    yield
    featuregates.DEFAULT.reset()


@pytest.mark.parametrize(
    "gates",
    [
        "DRADeviceTaintRules=true",
        "DRAListTypeAttributes=true",
        "DRANodeAllocatableResources=true",
        "GenericWorkload=true,DRAWorkloadResourceClaims=true",
    ],
)
def test_an_unimplemented_dra_gate_turned_on_is_refused_at_start(gates: str) -> None:
    featuregates.DEFAULT.set(gates)
    gate = gates.rsplit(",", 1)[-1].split("=")[0]
    with pytest.raises(ValueError, match=f"feature gate {gate} is enabled, but berth implements"):
        DynamicResources(None, FakeHandle())


def test_the_resource_pool_status_gate_does_not_touch_the_scheduler() -> None:
    featuregates.DEFAULT.set("DRAResourcePoolStatus=true")
    assert DynamicResources(None, FakeHandle()).name == "DynamicResources"


def store_with(*objects: dict[str, Any]) -> DRAStore:
    store = DRAStore()
    for obj in objects:
        store.upsert(obj["kind"], obj["metadata"]["name"], obj)
    return store


def test_list_attributes_are_unsupported_values_with_their_gate_off() -> None:
    """DRAListTypeAttributes off: a list-valued attribute fails the selector reading the device, as
    ``getAttributeValue`` does, and the Filter reports kube's error."""
    device = {"name": "gpu-0", "attributes": {"models": {"strings": ["a100", "h100"]}}}
    store = store_with(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
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
    assert plugin.filter(state, pod, NodeInfo(make_node("worker"))) == Status(
        Code.ERROR, "class gpu: selector #0: CEL runtime error: attribute models: unsupported attribute value"
    )
