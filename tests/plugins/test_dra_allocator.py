"""The structured allocator, ported from k8s.io/dynamic-resource-allocation v0.36.3
(structured/internal/allocatortesting/allocator_testing.go, the cases run against the
incubating allocator kube-scheduler v1.36 uses). Case names are Go's."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.api.objects import Node
from app.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from app.framework.dra import AllocatedState
from app.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    FailedOnNode,
    Features,
    _Run,
)
from app.plugins.dynamicresources.cel import CelCache
from builders import make_node
from plugins.dra_helpers import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    NODE_1,
    NODE_2,
    POOL_1,
    POOL_2,
    POOL_3,
    POOL_4,
    REGION_1,
    REGION_2,
    all_devices,
    claim,
    dev,
    device_class,
    exact,
    first_available,
    local_node_selector,
    node_label_selector,
    resource_slice,
    result,
    sub,
)

NO_FEATURES = Features(False, False, False, False, False, False)
ALL_FEATURES = Features()


def node(name: str, region: str) -> Node:
    """``node(name, region)``: labelled with its region and planet earth."""
    return make_node(name, labels={"region": region, "planet": "earth"})


def mem_at_least(q: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0'


Expected = list[tuple[dict[str, Any] | None, list[dict[str, Any]]]] | None


@dataclass
class Case:
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    node: Node
    expect: Expected = None
    error: str = ""
    features: Features = ALL_FEATURES
    allocated: list[tuple[str, str, str]] = field(default_factory=list)


def int_attr(v: int) -> dict[str, Any]:
    return {"int": v}


CASES: dict[str, Case] = {
    "simple": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "other-node": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_B, dev("device-1")),
            resource_slice("slice-2", NODE_2, POOL_2, DRIVER_A, dev("device-1")),
        ],
        node(NODE_2, REGION_2),
        [(local_node_selector(NODE_2), [result("req-0", DRIVER_A, POOL_2, "device-1")])],
    ),
    "small-and-large": Case(
        [
            claim(
                "claim-0",
                exact("req-0", CLASS_A, 1, mem_at_least("1Gi")),
                exact("req-1", CLASS_A, 1, mem_at_least("2Gi")),
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev("device-1", {"memory": "1Gi"}),
                dev("device-2", {"memory": "2Gi"}),
            )
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1"),
                    result("req-1", DRIVER_A, POOL_1, "device-2"),
                ],
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        [
            claim(
                "claim-0",
                exact("req-0", CLASS_A, 1, mem_at_least("1Gi")),
                exact("req-1", CLASS_A, 1, mem_at_least("2Gi")),
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1"),
                    result("req-1", DRIVER_A, POOL_1, "device-2"),
                ],
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        [
            claim("claim-0", exact("req-0", CLASS_A, 1, mem_at_least("1Gi"))),
            claim("claim-1", exact("req-1", CLASS_A, 1, mem_at_least("2Gi"))),
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev("device-2", {"memory": "2Gi"}),
                dev("device-1", {"memory": "1Gi"}),
            )
        ],
        node(NODE_1, REGION_1),
        [
            (local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")]),
            (local_node_selector(NODE_1), [result("req-1", DRIVER_A, POOL_1, "device-2")]),
        ],
    ),
    "devices-split-across-different-slices": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 2))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1")),
            resource_slice("slice-2", NODE_1, POOL_2, DRIVER_A, dev("device-1")),
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1"),
                    result("req-0", DRIVER_A, POOL_2, "device-1"),
                ],
            )
        ],
    ),
    "obsolete-slice": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1-obsolete", NODE_1, POOL_1, DRIVER_A, dev("device-1"), count=2),
            resource_slice(
                "slice-1-obsolete", NODE_1, POOL_1, DRIVER_A, dev("device-2"), count=2, generation=2
            ),
        ],
        node(NODE_1, REGION_1),
        None,
    ),
    "duplicate-slice": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), count=2),
            resource_slice("slice-1-2", NODE_1, POOL_1, DRIVER_A, dev("device-1"), count=2),
        ],
        node(NODE_1, REGION_1),
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [],
        node(NODE_1, REGION_1),
    ),
    "not-enough-suitable-devices": Case(
        [claim("claim-0", exact("req-0", CLASS_A)), claim("claim-0", exact("req-1", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
    ),
    "no-classes": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="could not retrieve device class class-a",
    ),
    "empty-class": Case(
        [claim("claim-0", exact("req-0", ""))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "all-devices-single": Case(
        [claim("claim-0", all_devices("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim("claim-0", all_devices("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), count=2)],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
    ),
    "all-devices-some-allocated": Case(
        [claim("claim-0", all_devices("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), dev("device-2"))],
        node(NODE_1, REGION_1),
        allocated=[(DRIVER_A, POOL_1, "device-1")],
    ),
    "all-devices-some-allocated-admin-access": Case(
        [claim("claim-0", all_devices("req-0", CLASS_A, adminAccess=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), dev("device-2"))],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1", admin=True),
                    result("req-0", DRIVER_A, POOL_1, "device-2", admin=True),
                ],
            )
        ],
        allocated=[(DRIVER_A, POOL_1, "device-1")],
    ),
    "separate-claims-share-device-admin-access": Case(
        [
            claim("claim-0", exact("req-0", CLASS_A, adminAccess=True)),
            claim("claim-1", exact("req-0", CLASS_A, adminAccess=True)),
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), dev("device-2"))],
        node(NODE_1, REGION_1),
        [
            (local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1", admin=True)]),
            (local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1", admin=True)]),
        ],
    ),
    "network-attached-device": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", node_label_selector("region", REGION_1), POOL_1, DRIVER_A, dev("device-1")
            )
        ],
        node(NODE_1, REGION_1),
        [(node_label_selector("region", REGION_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", node_label_selector("region", REGION_1), POOL_1, DRIVER_A, dev("device-1")
            )
        ],
        node(NODE_2, REGION_2),
    ),
    "many-network-attached-devices": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 4))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", node_label_selector("region", REGION_1), POOL_1, DRIVER_A, dev("device-1")
            ),
            resource_slice("slice-1", "all", POOL_2, DRIVER_A, dev("device-1")),
            resource_slice(
                "slice-1", node_label_selector("planet", "earth"), POOL_3, DRIVER_A, dev("device-1")
            ),
            resource_slice(
                "slice-1",
                {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE_1]}]}
                    ]
                },
                POOL_4,
                DRIVER_A,
                dev("device-1"),
            ),
        ],
        node(NODE_1, REGION_1),
        [
            (
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": [REGION_1]},
                                {"key": "planet", "operator": "In", "values": ["earth"]},
                            ],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE_1]}],
                        }
                    ]
                },
                [result("req-0", DRIVER_A, p, "device-1") for p in (POOL_1, POOL_2, POOL_3, POOL_4)],
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 2))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1", node_label_selector("region", REGION_1), POOL_1, DRIVER_A, dev("device-1")
            ),
            resource_slice("slice-1", NODE_1, POOL_2, DRIVER_A, dev("device-1")),
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1"),
                    result("req-0", DRIVER_A, POOL_2, "device-1"),
                ],
            )
        ],
    ),
    "several-different-drivers": Case(
        [claim("claim-0", exact("req-0", CLASS_A)), claim("claim-0", exact("req-0", CLASS_B))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), dev("device-2")),
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_B, dev("device-1")),
        ],
        node(NODE_1, REGION_1),
        [
            (local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")]),
            (local_node_selector(NODE_1), [result("req-0", DRIVER_B, POOL_1, "device-1")]),
        ],
    ),
    "already-allocated-devices": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        allocated=[(DRIVER_A, POOL_1, "device-1"), (DRIVER_A, POOL_1, "device-2")],
    ),
    "admin-access-disabled": Case(
        [claim("claim-0", exact("req-0", CLASS_A, adminAccess=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: admin access is requested, but the feature is disabled",
        features=NO_FEATURES,
    ),
    "admin-access-enabled": Case(
        [claim("claim-0", exact("req-0", CLASS_A, adminAccess=True))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1", admin=True)])],
        allocated=[(DRIVER_A, POOL_1, "device-1"), (DRIVER_A, POOL_1, "device-2")],
    ),
    "with-constraint": Case(
        [
            claim(
                "claim-0",
                exact("req-0", CLASS_A),
                exact("req-1", CLASS_A),
                constraints=[
                    {"matchAttribute": f"{DRIVER_A}/numa"},
                    {"matchAttribute": f"{DRIVER_A}/driverVersion"},
                    {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                    {"matchAttribute": f"{DRIVER_A}/boolAttribute"},
                ],
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                *(
                    dev(
                        name,
                        attributes={
                            "driverVersion": {"version": "1.0.0"},
                            "numa": {"int": 1},
                            "stringAttribute": {"string": "stringAttributeValue"},
                            "boolAttribute": {"bool": True},
                        },
                    )
                    for name in ("device-1", "device-2")
                ),
            )
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-1"),
                    result("req-1", DRIVER_A, POOL_1, "device-2"),
                ],
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        [claim("claim-0", exact("req-0", CLASS_A), constraints=[{"matchAttribute": "NonExistentAttribute"}])],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
    ),
    "with-constraint-not-matching-int-attribute": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 2), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev("device-1", attributes={"numa": int_attr(1)}),
                dev("device-2", attributes={"numa": int_attr(2)}),
            )
        ],
        node(NODE_1, REGION_1),
    ),
    "with-constraint-for-request-retry": Case(
        [
            claim(
                "claim-0",
                exact("req-0", CLASS_A),
                exact("req-1", CLASS_A),
                constraints=[
                    {"requests": ["req-0"], "matchAttribute": f"{DRIVER_A}/driverVersion"},
                    {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                ],
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    attributes={"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}},
                ),
                dev(
                    "device-2",
                    attributes={"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}},
                ),
                dev(
                    "device-3",
                    attributes={"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}},
                ),
            )
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0", DRIVER_A, POOL_1, "device-2"),
                    result("req-1", DRIVER_A, POOL_1, "device-3"),
                ],
            )
        ],
    ),
    "with-class-device-config": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [
            device_class(
                CLASS_A, DRIVER_A, config=[{"opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}}}]
            )
        ],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "unknown-allocation-mode": Case(
        [claim("claim-0", exact("req-0", CLASS_A, allocationMode="future-mode"))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: unsupported count mode future-mode",
    ),
    "invalid-CEL-one-device": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 1, "noSuchVar"))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error=(
            "claim default/claim-0: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:1: "
            "undeclared reference to 'noSuchVar' (in container '')\n | noSuchVar\n | ^"
        ),
    ),
    "too-many-devices-single-request": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 500))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0: number of requested devices 500 exceeds the claim limit of 32",
    ),
    "prioritized-list-first-unavailable": Case(
        [claim("claim-0", first_available("req-0", sub("subReq-0", CLASS_B), sub("subReq-1", CLASS_A)))],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0/subReq-1", DRIVER_A, POOL_1, "device-1")])],
    ),
    "prioritized-list-non-available": Case(
        [
            claim(
                "claim-0", first_available("req-0", sub("subReq-0", CLASS_B, 2), sub("subReq-1", CLASS_A, 2))
            )
        ],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1")),
            resource_slice("slice-2", NODE_1, POOL_2, DRIVER_B, dev("device-1")),
        ],
        node(NODE_1, REGION_1),
    ),
    "prioritized-list-with-backtracking": Case(
        [
            claim(
                "claim-0",
                first_available(
                    "req-0",
                    sub("subReq-0", CLASS_A, 1, mem_at_least("8Gi")),
                    sub("subReq-1", CLASS_A, 1, mem_at_least("4Gi")),
                ),
                exact("req-1", CLASS_A, 1, mem_at_least("8Gi")),
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1", {"memory": "8Gi"})),
            resource_slice("slice-2", NODE_1, POOL_2, DRIVER_A, dev("device-2", {"memory": "4Gi"})),
        ],
        node(NODE_1, REGION_1),
        [
            (
                local_node_selector(NODE_1),
                [
                    result("req-0/subReq-1", DRIVER_A, POOL_2, "device-2"),
                    result("req-1", DRIVER_A, POOL_1, "device-1"),
                ],
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        [
            claim(
                "claim-0",
                first_available("req-0", sub("subReq-0", CLASS_B, 500), sub("subReq-1", CLASS_A, 1)),
            )
        ],
        [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0/subReq-1", DRIVER_A, POOL_1, "device-1")])],
    ),
    "prioritized-list-disabled": Case(
        [claim("claim-0", first_available("req-0", sub("subReq-0", CLASS_A)))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
        features=NO_FEATURES,
    ),
    "partitionable-devices-single-device": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    consumesCounters=[
                        {"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}
                    ],
                ),
                count=2,
            ),
            resource_slice(
                "slice-2", NODE_1, POOL_1, DRIVER_A, count=2, counters={"counter-set-1": {"memory": "8Gi"}}
            ),
        ],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "partitionable-devices-no-capacity-available": Case(
        [claim("claim-0", exact("req-0", CLASS_A, 2))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                *(
                    dev(
                        n,
                        consumesCounters=[
                            {"counterSet": "counter-set-1", "counters": {"memory": {"value": "6Gi"}}}
                        ],
                    )
                    for n in ("device-1", "device-2")
                ),
                count=2,
            ),
            resource_slice(
                "slice-2", NODE_1, POOL_1, DRIVER_A, count=2, counters={"counter-set-1": {"memory": "8Gi"}}
            ),
        ],
        node(NODE_1, REGION_1),
    ),
    "partitionable-devices-taint-releases-counter": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    taints=[{"key": "example.com/taint", "value": "taint-value", "effect": "NoSchedule"}],
                    consumesCounters=[{"counterSet": "counter-set-1", "counters": {"c": {"value": "1"}}}],
                ),
                dev(
                    "device-2",
                    consumesCounters=[{"counterSet": "counter-set-1", "counters": {"c": {"value": "1"}}}],
                ),
                count=2,
            ),
            resource_slice(
                "slice-2", NODE_1, POOL_1, DRIVER_A, count=2, counters={"counter-set-1": {"c": "1"}}
            ),
        ],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-2")])],
    ),
    "tainted-two-devices": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    taints=[{"key": "example.com/taint", "value": "taint-value", "effect": "NoSchedule"}],
                ),
                dev(
                    "device-2",
                    taints=[{"key": "example.com/taint", "value": "taint-value-2", "effect": "NoExecute"}],
                ),
            )
        ],
        node(NODE_1, REGION_1),
    ),
    "tainted-two-devices-tolerated": Case(
        [
            claim(
                "claim-0",
                exact(
                    "req-0",
                    CLASS_A,
                    tolerations=[
                        {
                            "key": "example.com/taint",
                            "operator": "Equal",
                            "value": "taint-value-2",
                            "effect": "NoExecute",
                        }
                    ],
                ),
            )
        ],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    taints=[{"key": "example.com/taint", "value": "taint-value", "effect": "NoSchedule"}],
                ),
                dev(
                    "device-2",
                    taints=[{"key": "example.com/taint", "value": "taint-value-2", "effect": "NoExecute"}],
                ),
            )
        ],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-2")])],
    ),
    "tainted-disabled": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev(
                    "device-1",
                    taints=[{"key": "example.com/taint", "value": "taint-value", "effect": "NoSchedule"}],
                ),
            )
        ],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
        features=NO_FEATURES,
    ),
    "binding-conditions-with-and-without": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                dev("device-1", bindingConditions=["ready"], bindsToNode=True),
            ),
            resource_slice("slice-2", NODE_1, POOL_2, DRIVER_A, dev("device-2")),
        ],
        node(NODE_1, REGION_1),
        # The pool whose devices need no binding conditions is tried first.
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_2, "device-2")])],
    ),
    "binding-conditions-without-feature-gate": Case(
        [claim("claim-0", exact("req-0", CLASS_A))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1", bindingConditions=["ready"]))],
        node(NODE_1, REGION_1),
        features=NO_FEATURES,
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        [claim("claim-0", exact("req-0", CLASS_A, capacity={"requests": {"memory": "3Gi"}}))],
        [device_class(CLASS_A, DRIVER_A)],
        [
            resource_slice(
                "slice-1",
                NODE_1,
                POOL_1,
                DRIVER_A,
                {
                    "name": "device-1",
                    "allowMultipleAllocations": True,
                    "capacity": {
                        "memory": {"value": "8Gi", "requestPolicy": {"validValues": ["2Gi", "4Gi", "8Gi"]}}
                    },
                },
            )
        ],
        node(NODE_1, REGION_1),
        [(local_node_selector(NODE_1), [result("req-0", DRIVER_A, POOL_1, "device-1")])],
    ),
    "consumable-capacity-disabled-feature": Case(
        [claim("claim-0", exact("req-0", CLASS_A, capacity={"requests": {"memory": "1Gi"}}))],
        [device_class(CLASS_A, DRIVER_A)],
        [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1", {"memory": "8Gi"}))],
        node(NODE_1, REGION_1),
        error="claim default/claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled",
        features=NO_FEATURES,
    ),
}


def _key(r: dict[str, Any]) -> tuple[str, ...]:
    return (r["request"], r["driver"], r["pool"], r["device"])


@pytest.mark.parametrize("name", list(CASES))
def test_allocate(name: str) -> None:
    case = CASES[name]
    classes = {c.name: c for c in case.classes}
    allocator = Allocator(
        case.features,
        AllocatedState(allocated_devices=set(case.allocated)),
        classes.get,
        case.slices,
        CelCache(),
        share_id=lambda: "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    )
    if case.error:
        with pytest.raises(AllocationError) as err:
            allocator.allocate(case.node, case.claims)
        assert case.error in str(err.value)
        return
    solution = allocator.allocate(case.node, case.claims)
    if case.expect is None:
        assert solution is None
        return
    assert solution is not None
    got = solution.allocations()
    assert len(got) == len(case.expect)
    for allocation, (selector, results) in zip(got, case.expect, strict=True):
        assert allocation.get("nodeSelector") == selector
        got_results = [
            {k: v for k, v in r.items() if k in ("request", "driver", "pool", "device", "adminAccess")}
            for r in allocation["devices"]["results"]
        ]
        assert sorted(got_results, key=_key) == sorted(results, key=_key)


def test_class_config_is_copied_into_the_allocation() -> None:
    case = CASES["with-class-device-config"]
    allocator = Allocator(
        ALL_FEATURES, AllocatedState(), {c.name: c for c in case.classes}.get, case.slices, CelCache()
    )
    solution = allocator.allocate(case.node, case.claims)
    assert solution is not None
    [allocation] = solution.allocations()
    assert allocation["devices"]["config"] == [
        {
            "source": "FromClass",
            "requests": ["req-0"],
            "opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}},
        }
    ]


def test_shared_device_records_share_id_and_consumed_capacity() -> None:
    case = CASES["consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up"]
    allocator = Allocator(
        ALL_FEATURES,
        AllocatedState(),
        {c.name: c for c in case.classes}.get,
        case.slices,
        CelCache(),
        share_id=lambda: "s-1",
    )
    solution = allocator.allocate(case.node, case.claims)
    assert solution is not None
    [allocation] = solution.allocations()
    [entry] = allocation["devices"]["results"]
    assert entry["shareID"] == "s-1"
    assert entry["consumedCapacity"] == {"memory": str(4 * 2**30)}  # 3Gi rounded up to the valid 4Gi


def test_failed_on_node_is_node_local() -> None:
    with pytest.raises(FailedOnNode):
        case = CASES["duplicate-slice"]
        Allocator(
            ALL_FEATURES, AllocatedState(), {c.name: c for c in case.classes}.get, case.slices, CelCache()
        ).allocate(case.node, case.claims)


def _with_device_1_taken(classes: dict[str, DeviceClass], slices: list[ResourceSlice]) -> Allocator:
    """An allocator over ``slices`` with pool-1's device-1 already allocated."""
    return Allocator(
        ALL_FEATURES,
        AllocatedState(allocated_devices={(DRIVER_A, POOL_1, "device-1")}),
        classes.get,
        slices,
        CelCache(),
    )


def test_claim_needing_no_device_is_allocated_even_when_every_device_is_taken() -> None:
    """A request for zero devices succeeds without any device: the full-node shortcut must not apply."""
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A)}
    slices = [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))]
    allocator = _with_device_1_taken(classes, slices)
    zero = claim("claim-0", exact("req-0", CLASS_A, 0))
    one = claim("claim-1", exact("req-0", CLASS_A, 1))
    solution = allocator.allocate(node(NODE_1, REGION_1), [zero])
    assert solution is not None and solution.allocations()[0]["devices"]["results"] == []
    assert allocator.allocate(node(NODE_1, REGION_1), [one]) is None


def _allocator(case: Case) -> Allocator:
    """A fresh allocator over the case's classes, slices and allocated devices."""
    return Allocator(
        case.features,
        AllocatedState(allocated_devices=set(case.allocated)),
        {c.name: c for c in case.classes}.get,
        case.slices,
        CelCache(),
        share_id=lambda: "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    )


def _outcome(case: Case, allocator: Allocator | None = None) -> Any:
    """What allocating the case gives (with a fresh allocator unless given one): the
    allocations, None, or the error text."""
    allocator = allocator or _allocator(case)
    try:
        solution = allocator.allocate(case.node, case.claims)
    except AllocationError as err:
        return f"{type(err).__name__}: {err}"
    return None if solution is None else solution.allocations()


@pytest.mark.parametrize("name", list(CASES))
def test_single_device_search_gives_the_general_searchs_result(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcut for one claim asking for one device changes no outcome of kube's cases: the
    same allocations (every field), no solution, or the same error as the general search."""
    case = CASES[name]
    with_shortcut = _outcome(case)
    monkeypatch.setattr(_Run, "_single_device", lambda self: None)
    assert _outcome(case) == with_shortcut


def test_single_device_search_skips_taken_and_unselectable_devices() -> None:
    """The first device in search order that is free and matches the selectors is the one allocated."""
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A)}
    ok, not_ok = {"ok": {"bool": True}}, {"ok": {"bool": False}}
    slices = [
        resource_slice(
            "slice-1",
            NODE_1,
            POOL_1,
            DRIVER_A,
            dev("device-1", attributes=ok),
            dev("device-2", attributes=not_ok),
            dev("device-3", attributes=ok),
        )
    ]
    allocator = _with_device_1_taken(classes, slices)
    on_node = node(NODE_1, REGION_1)

    def chosen(request: dict[str, Any]) -> list[str]:
        solution = allocator.allocate(on_node, [claim("claim-0", request)])
        assert solution is not None
        return [r["device"] for r in solution.allocations()[0]["devices"]["results"]]

    assert chosen(exact("req-0", CLASS_A)) == ["device-2"]
    assert chosen(exact("req-0", CLASS_A, 1, f'device.attributes["{DRIVER_A}"].ok')) == ["device-3"]


@pytest.mark.parametrize("name", list(CASES))
def test_an_allocator_asked_about_another_node_first_gives_the_same_outcome(name: str) -> None:
    """A pod's allocator keeps each claim's node-independent setup from its first node: asked about
    another node first (whatever that gives), kube's case on its own node comes out as with a fresh
    allocator (the same allocations, no solution, or the same error)."""
    case = CASES[name]
    fresh = _outcome(case)
    allocator = _allocator(case)
    with contextlib.suppress(AllocationError):
        allocator.allocate(node("some-other-node", REGION_2), case.claims)
    assert _outcome(case, allocator) == fresh


def test_a_claims_class_is_looked_up_once_per_pod_and_a_missing_one_fails_every_node() -> None:
    """The class of an exact-count request is looked up on the pod's first node only; a request
    whose class is missing is not remembered, so every node reports kube's error."""
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A)}
    lookups: list[str] = []

    def lookup(name: str) -> DeviceClass | None:
        lookups.append(name)
        return classes.get(name)

    slices = [
        resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1")),
        resource_slice("slice-2", NODE_2, POOL_2, DRIVER_A, dev("device-1")),
    ]
    allocator = Allocator(ALL_FEATURES, AllocatedState(), lookup, slices, CelCache())
    pending = [claim("claim-0", exact("req-0", CLASS_A))]
    for on in (node(NODE_1, REGION_1), node(NODE_2, REGION_2), node(NODE_1, REGION_1)):
        solution = allocator.allocate(on, pending)
        assert solution is not None
        assert solution.allocations()[0]["devices"]["results"][0]["pool"] == (
            POOL_1 if on.name == NODE_1 else POOL_2
        )
    assert lookups == [CLASS_A]
    missing = [claim("claim-1", exact("req-0", CLASS_B))]
    for on in (node(NODE_1, REGION_1), node(NODE_2, REGION_2)):
        with pytest.raises(AllocationError, match=f"could not retrieve device class {CLASS_B}"):
            allocator.allocate(on, missing)
    assert lookups == [CLASS_A, CLASS_B, CLASS_B]


def test_a_passed_deadline_fails_a_node_with_a_free_device_and_not_a_full_one() -> None:
    """The filter timeout is checked once some device is free to look at, as the general search
    checks it when it starts: a full node still answers "does not fit" after the deadline, a node
    with a free device times out; before the deadline the free device is allocated."""
    classes = {CLASS_A: device_class(CLASS_A, DRIVER_A)}
    full = [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"))]
    free = [resource_slice("slice-1", NODE_1, POOL_1, DRIVER_A, dev("device-1"), dev("device-2"))]
    one = [claim("claim-0", exact("req-0", CLASS_A))]
    on_node = node(NODE_1, REGION_1)
    passed = time.monotonic() - 1
    assert _with_device_1_taken(classes, full).allocate(on_node, one, passed) is None
    with pytest.raises(AllocationTimeout):
        _with_device_1_taken(classes, free).allocate(on_node, one, passed)
    solution = _with_device_1_taken(classes, free).allocate(on_node, one, time.monotonic() + 60)
    assert solution is not None
    assert [r["device"] for r in solution.allocations()[0]["devices"]["results"]] == ["device-2"]
