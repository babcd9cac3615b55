"""PodTopologySpread PreFilter/Filter/AddPod/RemovePod, ported from
plugins/podtopologyspread/filtering_test.go (v1.36.3).

The tables are the Go ones, translated literally (see ``plugins/podtopologyspread_helpers.py``). As
in Go, the plugin's feature flags start off (``feature.Features{}``) and each case turns on what it
names. Not ported: BenchmarkFilter (a benchmark) and TestPodTopoSignatures (berth has no pod
signatures / opportunistic batching).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.framework.cycle_state import CycleState
from app.framework.status import Code as StatusCode
from app.framework.types import NodeInfo, PodInfo
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs
from app.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from fakes import FakeHandle
from plugins.podtopologyspread_helpers import (
    Code,
    barSelector,
    fooSelector,
    fwk_NewStatus,
    handle,
    honorPolicy,
    ignorePolicy,
    labels_Nothing,
    mustConvertLabelSelectorAsSelector,
    newCriticalPaths,
    pre_filter_state_view,
    ptr_To,
    raw_object,
    st_MakeLabelSelector,
    st_MakeNode,
    st_MakePod,
    t,
    taints,
)

# TestPreFilterState (filtering_test.go)
PRE_FILTER_STATE_CASES: list[dict[str, Any]] = [
    {
        "name": "clean cluster with one spreadConstraint",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            5,
            "zone",
            "DoNotSchedule",
            st_MakeLabelSelector().Label("foo", "bar").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 5,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone1", 0], ["zone2", 0]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 0}],
        },
    },
    {
        "name": "normal case with one spreadConstraint",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 2], ["zone1", 3]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 2}],
        },
    },
    {
        "name": "normal case with null label selector",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": labels_Nothing(),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 0], ["zone1", 0]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 0}],
        },
    },
    {
        "name": "normal case with one spreadConstraint, on a 3-zone cluster",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
            st_MakeNode().Name("node-o").Label("zone", "zone3").Label("node", "node-o").Obj(),
            st_MakeNode().Name("node-p").Label("zone", "zone3").Label("node", "node-p").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone3", 0], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 2, "zone3": 0}],
        },
    },
    {
        "name": "namespace mismatch doesn't count",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Namespace("ns2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 1], ["zone1", 2]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 1}],
        },
    },
    {
        "name": "normal case with two spreadConstraints",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 3], ["zone2", 4]], [["node-x", 0], ["node-b", 1]]],
            "TpValueToMatchNum": [
                {"zone1": 3, "zone2": 4},
                {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4},
            ],
        },
    },
    {
        "name": "soft spreadConstraints should be bypassed",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 3], ["zone2", 4]], [["node-b", 1], ["node-a", 2]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        },
    },
    {
        "name": "different labelSelectors - simple version",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone2", 0], ["zone1", 1]], [["node-a", 0], ["node-y", 0]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
        },
    },
    {
        "name": "different labelSelectors - complex pods",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 3], ["zone2", 4]], [["node-b", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        },
    },
    {
        "name": "two spreadConstraints, and with podAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("node", ["node-x"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 3], ["zone2", 4]], [["node-b", 1], ["node-a", 2]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        },
    },
    {
        "name": "default constraints and a service",
        "pod": st_MakePod().Name("p").Label("foo", "bar").Label("baz", "kar").Obj(),
        "defaultConstraints": [
            {"MaxSkew": 3, "TopologyKey": "node", "WhenUnsatisfiable": "DoNotSchedule"},
            {"MaxSkew": 2, "TopologyKey": "node", "WhenUnsatisfiable": "ScheduleAnyway"},
            {"MaxSkew": 5, "TopologyKey": "rack", "WhenUnsatisfiable": "DoNotSchedule"},
        ],
        "objs": [{"__type__": "Service", "Spec": {"__type__": "ServiceSpec", "Selector": {"foo": "bar"}}}],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 3,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 5,
                    "TopologyKey": "rack",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [newCriticalPaths(), newCriticalPaths()],
            "TpValueToMatchNum": [[], []],
        },
    },
    {
        "name": "default constraints and a service that doesn't match",
        "pod": st_MakePod().Name("p").Label("foo", "bar").Obj(),
        "defaultConstraints": [{"MaxSkew": 3, "TopologyKey": "node", "WhenUnsatisfiable": "DoNotSchedule"}],
        "objs": [{"__type__": "Service", "Spec": {"__type__": "ServiceSpec", "Selector": {"baz": "kep"}}}],
        "wantPrefilterStatus": fwk_NewStatus(Code.SKIP),
    },
    {
        "name": "default constraints and a service, but pod has constraints",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "bar")
        .Label("baz", "tar")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            st_MakeLabelSelector().Label("baz", "tar").Obj(),
            None,
            None,
            None,
            None,
        )
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            st_MakeLabelSelector().Label("fot", "rok").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        "defaultConstraints": [{"MaxSkew": 2, "TopologyKey": "node", "WhenUnsatisfiable": "DoNotSchedule"}],
        "objs": [{"__type__": "Service", "Spec": {"__type__": "ServiceSpec", "Selector": {"foo": "bar"}}}],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("baz", "tar").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [newCriticalPaths()],
            "TpValueToMatchNum": [[]],
        },
    },
    {
        "name": "default soft constraints and a service",
        "pod": st_MakePod().Name("p").Label("foo", "bar").Obj(),
        "defaultConstraints": [{"MaxSkew": 2, "TopologyKey": "node", "WhenUnsatisfiable": "ScheduleAnyway"}],
        "objs": [{"__type__": "Service", "Spec": {"__type__": "ServiceSpec", "Selector": {"foo": "bar"}}}],
        "wantPrefilterStatus": fwk_NewStatus(Code.SKIP),
    },
    {
        "name": "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 3], ["zone2", 4]], [["node-x", 0], ["node-b", 1]]],
            "TpValueToMatchNum": [
                {"zone1": 3, "zone2": 4},
                {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4},
            ],
        },
    },
    {
        "name": "feature gate disabled with NodeAffinityPolicy",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-a", 1], ["node-b", 2]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "NodeAffinityPolicy honored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-a", 1], ["node-b", 2]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-c", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2, "node-c": 0}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy honored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-e").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-a", 1], ["node-b", 2]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-c", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2, "node-c": 0}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "feature gate disabled with NodeTaintsPolicy",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-c", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2, "node-c": 0}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["node-c", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2, "node-c": 0}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Honor",
                }
            ],
            "CriticalPaths": [[["node-a", 1], ["node-b", 2]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy honored with tolerated taints",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Honor",
                }
            ],
            "CriticalPaths": [[["node-c", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 2, "node-c": 0}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 0], ["zone2", 1]], [["node-a", 0], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Taints(taints).Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Honor",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 0], ["zone2", 1]], [["node-a", 0], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 0], ["zone2", 1]], [["node-b", 0], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 1}, {"node-b": 0, "node-x": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Honor",
                },
            ],
            "CriticalPaths": [[["zone1", 2], ["zone2", 3]], [["node-y", 1], ["node-x", 2]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "matchLabelKeys ignored when feature gate disabled",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 2], ["zone1", 3]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 2}],
        },
        "enableMatchLabelKeys": False,
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "a")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "a").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "a").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Exists("foo").Label("bar", "a").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 1], ["zone1", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 1}],
        },
        "enableMatchLabelKeys": True,
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "a")
        .SpreadConstraint(1, "zone", "DoNotSchedule", st_MakeLabelSelector().Obj(), None, None, None, ["foo"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("foo", "a").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 2], ["zone1", 3]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 2}],
        },
        "enableMatchLabelKeys": True,
    },
    {
        "name": "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, ["bar"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, None),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 0], ["zone1", 0]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 0}],
        },
        "enableMatchLabelKeys": True,
    },
    {
        "name": "no pod is matched when LabelSelector is nil when feature gate disabled",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, ["bar"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, None),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 0], ["zone1", 0]]],
            "TpValueToMatchNum": [{"zone1": 0, "zone2": 0}],
        },
    },
    {
        "name": "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "CriticalPaths": [[["zone2", 2], ["zone1", 3]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 2}],
        },
        "enableMatchLabelKeys": True,
    },
    {
        "name": "two spreadConstraints with the same topologyKey",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone2", 1], ["zone1", 2]], [["zone1", 1], ["zone2", 3]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
        },
    },
    {
        "name": "skip if not specified",
        "pod": st_MakePod().Name("p").Label("foo", "").Obj(),
        "nodes": [st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj()],
        "wantPrefilterStatus": fwk_NewStatus(Code.SKIP),
    },
]

# The constraints TestPreFilterStateAddPod / TestPreFilterStateRemovePod build before their tables.
nodeConstraint: dict[str, Any] = {
    "MaxSkew": 1,
    "TopologyKey": "node",
    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
    "MinDomains": 1,
    "NodeAffinityPolicy": "Honor",
    "NodeTaintsPolicy": "Ignore",
}
zoneConstraint: dict[str, Any] = {**nodeConstraint, "TopologyKey": "zone"}

# TestPreFilterStateAddPod (filtering_test.go)
ADD_POD_CASES: list[dict[str, Any]] = [
    {
        "name": "node a and b both impact current min match",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": None,
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [nodeConstraint],
            "CriticalPaths": [[["node-b", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 0}],
        },
    },
    {
        "name": "only node a impacts current min match",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": [st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj()],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [nodeConstraint],
            "CriticalPaths": [[["node-a", 1], ["node-b", 1]]],
            "TpValueToMatchNum": [{"node-a": 1, "node-b": 1}],
        },
    },
    {
        "name": "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": [st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj()],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [nodeConstraint],
            "CriticalPaths": [[["node-a", 0], ["node-b", 1]]],
            "TpValueToMatchNum": [{"node-a": 0, "node-b": 1}],
        },
    },
    {
        "name": "add pod on non-critical node won't trigger re-calculation",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
        "existingPods": [st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj()],
        "nodeIdx": 1,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [nodeConstraint],
            "CriticalPaths": [[["node-a", 0], ["node-b", 2]]],
            "TpValueToMatchNum": [{"node-a": 0, "node-b": 2}],
        },
    },
    {
        "name": "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": None,
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint, nodeConstraint],
            "CriticalPaths": [[["zone2", 0], ["zone1", 1]], [["node-x", 0], ["node-a", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
        },
    },
    {
        "name": "only node a impacts topologyKeyToMinPodsMap on zone and node",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": [st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj()],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint, nodeConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 1]], [["node-a", 1], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
        },
    },
    {
        "name": "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint, nodeConstraint],
            "CriticalPaths": [[["zone2", 1], ["zone1", 3]], [["node-a", 1], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
        },
    },
    {
        "name": "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-x2").Node("node-x").Label("bar", "").Obj(),
        ],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                zoneConstraint,
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone2", 1], ["zone1", 2]], [["node-a", 0], ["node-b", 1]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
        },
    },
    {
        "name": "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone and node",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-x2").Node("node-x").Label("bar", "").Obj(),
        ],
        "nodeIdx": 0,
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [
                zoneConstraint,
                {
                    "MaxSkew": 1,
                    "TopologyKey": "node",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "CriticalPaths": [[["zone1", 1], ["zone2", 1]], [["node-a", 1], ["node-b", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
        },
    },
    {
        "name": "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy disabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("foo", ["bar"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 0,
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 1], {"MatchNum": 2147483647}]],
            "TpValueToMatchNum": [{"zone2": 1}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("foo", ["bar"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 0,
        "addedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 1], {"MatchNum": 2147483647}]],
            "TpValueToMatchNum": [{"zone2": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "addedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 2}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "addedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 2}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "addedPod": st_MakePod().Name("p-b1").Node("node-b").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "addedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Taints(taints).Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone2": 2, "zone1": 1}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "addedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Taints(taints).Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone2": 2, "zone1": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
]

# TestPreFilterStateRemovePod (filtering_test.go)
REMOVE_POD_CASES: list[dict[str, Any]] = [
    {
        "name": "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        "deletedPodIdx": 0,
        "nodeIdx": 0,
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 1]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 1}],
        },
    },
    {
        "name": "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "deletedPodIdx": 0,
        "nodeIdx": 0,
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 1], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 1, "zone2": 2}],
        },
    },
    {
        "name": "delete an irrelevant pod won't help",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a0").Node("node-a").Label("bar", "").Obj(),
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "deletedPodIdx": 0,
        "nodeIdx": 0,
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 2], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 2}],
        },
    },
    {
        "name": "delete a non-existing pod won't help",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "deletedPodIdx": -1,
        "deletedPod": st_MakePod().Name("p-a0").Node("node-a").Label("bar", "").Obj(),
        "nodeIdx": 0,
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone1", 2], ["zone2", 2]]],
            "TpValueToMatchNum": [{"zone1": 2, "zone2": 2}],
        },
    },
    {
        "name": "two spreadConstraints",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
        ],
        "deletedPodIdx": 3,
        "nodeIdx": 2,
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint, nodeConstraint],
            "CriticalPaths": [[["zone2", 1], ["zone1", 3]], [["node-b", 1], ["node-x", 1]]],
            "TpValueToMatchNum": [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
        },
    },
    {
        "name": "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy disabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("foo", ["bar"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 0,
        "deletedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 1], {"MatchNum": 2147483647}]],
            "TpValueToMatchNum": [{"zone2": 1}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("foo", ["bar"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 0,
        "deletedPod": st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 1], {"MatchNum": 2147483647}]],
            "TpValueToMatchNum": [{"zone2": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "deletedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 0], ["zone1", 1]]],
            "TpValueToMatchNum": [{"zone2": 0, "zone1": 1}],
        },
        "enableNodeInclusionPolicy": False,
    },
    {
        "name": "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        "preemptor": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodeIdx": 1,
        "deletedPod": st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone2")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
        ],
        "want": {
            "__type__": "preFilterState",
            "Constraints": [zoneConstraint],
            "CriticalPaths": [[["zone2", 0], ["zone1", 1]]],
            "TpValueToMatchNum": [{"zone2": 0, "zone1": 1}],
        },
        "enableNodeInclusionPolicy": True,
    },
]

# TestSingleConstraint (filtering_test.go)
SINGLE_CONSTRAINT_CASES: list[dict[str, Any]] = [
    {
        "name": "no existing pods",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "no existing pods, incoming pod doesn't match itself",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "existing pods in a different namespace do not count",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Namespace("ns2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "existing pods do not match null selector",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "pods spread across zones as 3/3, all nodes fit",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zon", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "pod cannot be scheduled as all nodes don't have label 'rack'",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "rack", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-x": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        },
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, only node-x fits",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        "pod": st_MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("node", ["node-a", "node-y"], "MatchExpressions")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "terminating Pods should be excluded",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {"node-a": Code.SUCCESS, "node-b": Code.UNSCHEDULABLE},
    },
    {
        "name": "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("node", ["node-b"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, ptr_To(4), None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-c": Code.SUCCESS,
        },
    },
    {
        "name": "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, ptr_To(2), None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {"node-a": Code.SUCCESS, "node-b": Code.SUCCESS, "node-c": Code.SUCCESS},
    },
    {
        "name": "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "zone", "DoNotSchedule", fooSelector, ptr_To(3), None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "zone", "DoNotSchedule", fooSelector, ptr_To(1), None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "NodeAffinityPolicy honored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy honored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            st_MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
]

# TestMultipleConstraints (filtering_test.go)
MULTIPLE_CONSTRAINTS_CASES: list[dict[str, Any]] = [
    {
        "name": "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        "pod": st_MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Taints(taints).Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "")
            .Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("node", "node-x")
            .Label("foo", "")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "two Constraints on zone, spreads = [3/3, 2/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    },
    {
        "name": "two Constraints on zone, spreads = [3/4, 2/1]",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "wantStatusCode": {
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    },
]


def _plugin(
    h: FakeHandle,
    default_constraints: Any = None,
    node_inclusion: bool = False,
    match_label_keys: bool = False,
) -> PodTopologySpread:
    args = PodTopologySpreadArgs(raw_object(default_constraints or []), "List")
    p = PodTopologySpread(args, h)
    p.enable_node_inclusion_policy = node_inclusion
    p.enable_match_label_keys = match_label_keys
    return p


def _ids(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(c, id=c["name"]) for c in cases]


@pytest.mark.parametrize("tt", _ids(PRE_FILTER_STATE_CASES))
def test_pre_filter_state(tt: dict[str, Any]) -> None:
    h = handle(tt.get("existingPods"), tt.get("nodes"), tt.get("objs"))
    p = _plugin(
        h,
        tt.get("defaultConstraints"),
        tt.get("enableNodeInclusionPolicy", False),
        tt.get("enableMatchLabelKeys", False),
    )
    cs = CycleState()
    _, s = p.pre_filter(cs, tt["pod"], h.snapshot.list())
    assert s == tt.get("wantPrefilterStatus")
    if s is not None:
        return
    assert pre_filter_state_view(cs.read(PRE_FILTER_STATE_KEY)) == pre_filter_state_view(tt["want"])


@pytest.mark.parametrize("tt", _ids(ADD_POD_CASES))
def test_pre_filter_state_add_pod(tt: dict[str, Any]) -> None:
    h = handle(tt.get("existingPods"), tt["nodes"])
    p = _plugin(h, node_inclusion=tt.get("enableNodeInclusionPolicy", False))
    cs = CycleState()
    _, s = p.pre_filter(cs, tt["preemptor"], h.snapshot.list())
    assert s is None
    node_info = h.snapshot.get(tt["nodes"][tt.get("nodeIdx", 0)].name)
    assert node_info is not None
    assert p.add_pod(cs, tt["preemptor"], PodInfo(tt["addedPod"]), node_info) is None
    assert pre_filter_state_view(cs.read(PRE_FILTER_STATE_KEY)) == pre_filter_state_view(tt["want"])


@pytest.mark.parametrize("tt", _ids(REMOVE_POD_CASES))
def test_pre_filter_state_remove_pod(tt: dict[str, Any]) -> None:
    existing = tt.get("existingPods") or []
    h = handle(existing, tt["nodes"])
    p = _plugin(h, node_inclusion=tt.get("enableNodeInclusionPolicy", False))
    cs = CycleState()
    _, s = p.pre_filter(cs, tt["preemptor"], h.snapshot.list())
    assert s is None
    idx = tt.get("deletedPodIdx", 0)
    deleted = existing[idx] if 0 <= idx < len(existing) else tt["deletedPod"]
    node_info = h.snapshot.get(tt["nodes"][tt.get("nodeIdx", 0)].name)
    assert node_info is not None
    assert p.remove_pod(cs, tt["preemptor"], PodInfo(deleted), node_info) is None
    assert pre_filter_state_view(cs.read(PRE_FILTER_STATE_KEY)) == pre_filter_state_view(tt["want"])


def _run_filter(tt: dict[str, Any]) -> None:
    h = handle(tt.get("existingPods"), tt["nodes"])
    p = _plugin(h, node_inclusion=tt.get("enableNodeInclusionPolicy", False))
    cs = CycleState()
    _, s = p.pre_filter(cs, tt["pod"], h.snapshot.list())
    assert s is None
    want = tt.get("wantStatusCode") or {}
    got = {}
    for node in tt["nodes"]:
        node_info = h.snapshot.get(node.name)
        assert node_info is not None
        status = p.filter(cs, tt["pod"], node_info)
        got[node.name] = StatusCode.SUCCESS if status is None else status.code
    if want:
        assert got == want


@pytest.mark.parametrize("tt", _ids(SINGLE_CONSTRAINT_CASES))
def test_single_constraint(tt: dict[str, Any]) -> None:
    _run_filter(tt)


@pytest.mark.parametrize("tt", _ids(MULTIPLE_CONSTRAINTS_CASES))
def test_multiple_constraints(tt: dict[str, Any]) -> None:
    _run_filter(tt)


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter state is an Error (``fwk.AsStatus(fwk.ErrNotFound)``)."""
    p = _plugin(FakeHandle())
    status = p.filter(CycleState(), st_MakePod().Name("p").Obj(), NodeInfo(st_MakeNode().Name("n").Obj()))
    assert status is not None and status.code is StatusCode.ERROR
    assert status.message() == f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'


def test_filter_after_add_pod_and_remove_pod_uses_the_new_counts() -> None:
    # Preemption's dry runs filter a node, add or remove pods, then filter it again on the same state:
    # each Filter must see the counts and the global minimum as they are now (berth works its limits
    # out once per change).
    nodes = [
        st_MakeNode().Name(n).Label("zone", z).Obj() for n, z in (("node-a", "zone1"), ("node-b", "zone2"))
    ]
    pod = (
        st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    on_a = st_MakePod().Name("p-a").Node("node-a").Label("foo", "").Obj()
    on_b = st_MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj()
    h = handle([on_a, on_b], nodes)
    p = _plugin(h)
    cs = CycleState()
    p.pre_filter(cs, pod, h.snapshot.list())
    node_a, node_b = h.snapshot.list()
    assert p.filter(cs, pod, node_a) is None  # 1 + 1 - 1 <= 1
    assert p.remove_pod(cs, pod, PodInfo(on_b), node_b) is None
    assert p.filter(cs, pod, node_a).code == StatusCode.UNSCHEDULABLE  # type: ignore[union-attr]
    assert p.filter(cs, pod, node_b) is None
    assert p.add_pod(cs, pod, PodInfo(on_b), node_b) is None
    assert p.filter(cs, pod, node_a) is None
