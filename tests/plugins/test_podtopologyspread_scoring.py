"""PodTopologySpread PreScore/Score/NormalizeScore, ported from
plugins/podtopologyspread/scoring_test.go (v1.36.3).

The tables are the Go ones, translated literally (see ``plugins/podtopologyspread_helpers.py``). As
in Go, the plugin's feature flags start off and each case turns on what it names. Not ported:
BenchmarkTestPodTopologySpreadScore (a benchmark).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.framework.cycle_state import CycleState
from app.framework.types import NodeInfo
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs
from app.plugins.podtopologyspread.plugin import PodTopologySpread
from app.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY
from plugins.podtopologyspread_helpers import (
    appsv1_SchemeGroupVersion,
    barSelector,
    fooSelector,
    handle,
    honorPolicy,
    ignorePolicy,
    labels_Nothing,
    mustConvertLabelSelectorAsSelector,
    pre_score_state_view,
    ptr_To,
    raw_object,
    sets_New,
    st_MakeLabelSelector,
    st_MakeNode,
    st_MakePod,
    t,
    taints,
    topologyNormalizingWeight,
)

# TestPreScoreSkip (scoring_test.go)
PRE_SCORE_SKIP_CASES: list[dict[str, Any]] = [
    {
        "name": "the pod doesn't have soft topology spread Constraints",
        "pod": st_MakePod().Name("p").Namespace("default").Obj(),
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
    },
    {
        "name": "default constraints and a replicaset that doesn't match",
        "pod": st_MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs2", appsv1_SchemeGroupVersion.WithKind("ReplicaSet"))
        .Obj(),
        "config": {
            "__type__": "PodTopologySpreadArgs",
            "DefaultConstraints": [
                {"MaxSkew": 2, "TopologyKey": "planet", "WhenUnsatisfiable": "ScheduleAnyway"}
            ],
            "DefaultingType": "List",
        },
        "nodes": [st_MakeNode().Name("node-a").Label("planet", "mars").Obj()],
        "objs": [
            {
                "__type__": "ReplicaSet",
                "ObjectMeta": {"__type__": "ObjectMeta", "Namespace": "default", "Name": "rs1"},
                "Spec": {
                    "__type__": "ReplicaSetSpec",
                    "Selector": st_MakeLabelSelector().Exists("tar").Obj(),
                },
            }
        ],
    },
]

# TestPreScoreStateEmptyNodes (scoring_test.go)
PRE_SCORE_STATE_EMPTY_NODES_CASES: list[dict[str, Any]] = [
    {
        "name": "normal case",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
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
                    "TopologyKey": "kubernetes.io/hostname",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}, []],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2), topologyNormalizingWeight(3)],
        },
    },
    {
        "name": "null selector",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
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
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
    },
    {
        "name": "node-x doesn't have label zone",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
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
                    "TopologyKey": "kubernetes.io/hostname",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "IgnoredNodes": sets_New("node-x"),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0)}, []],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(1), topologyNormalizingWeight(2)],
        },
    },
    {
        "name": "system default constraints and a replicaset",
        "pod": st_MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", appsv1_SchemeGroupVersion.WithKind("ReplicaSet"))
        .Obj(),
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "System"},
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("kubernetes.io/hostname", "node-a")
            .Label("topology.kubernetes.io/zone", "mars")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("kubernetes.io/hostname", "node-b")
            .Label("topology.kubernetes.io/zone", "mars")
            .Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "objs": [
            {
                "__type__": "ReplicaSet",
                "ObjectMeta": {"__type__": "ObjectMeta", "Namespace": "default", "Name": "rs1"},
                "Spec": {"__type__": "ReplicaSetSpec", "Selector": fooSelector},
            }
        ],
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 3,
                    "TopologyKey": "kubernetes.io/hostname",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 5,
                    "TopologyKey": "topology.kubernetes.io/zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [[], {"mars": ptr_To(0), "": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(4), topologyNormalizingWeight(2)],
        },
    },
    {
        "name": "default constraints and a replicaset",
        "pod": st_MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", appsv1_SchemeGroupVersion.WithKind("ReplicaSet"))
        .Obj(),
        "config": {
            "__type__": "PodTopologySpreadArgs",
            "DefaultConstraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "kubernetes.io/hostname",
                    "WhenUnsatisfiable": "ScheduleAnyway",
                },
                {"MaxSkew": 2, "TopologyKey": "rack", "WhenUnsatisfiable": "DoNotSchedule"},
                {"MaxSkew": 2, "TopologyKey": "planet", "WhenUnsatisfiable": "ScheduleAnyway"},
            ],
            "DefaultingType": "List",
        },
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("rack", "rack1")
            .Label("kubernetes.io/hostname", "node-a")
            .Label("planet", "mars")
            .Obj()
        ],
        "objs": [
            {
                "__type__": "ReplicaSet",
                "ObjectMeta": {"__type__": "ObjectMeta", "Namespace": "default", "Name": "rs1"},
                "Spec": {"__type__": "ReplicaSetSpec", "Selector": fooSelector},
            }
        ],
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "kubernetes.io/hostname",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
                {
                    "MaxSkew": 2,
                    "TopologyKey": "planet",
                    "Selector": mustConvertLabelSelectorAsSelector(t, fooSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                },
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [[], {"mars": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(1), topologyNormalizingWeight(1)],
        },
    },
    {
        "name": "default constraints and a replicaset, but pod has constraints",
        "pod": st_MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs1", appsv1_SchemeGroupVersion.WithKind("ReplicaSet"))
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            st_MakeLabelSelector().Label("baz", "sup").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        "config": {
            "__type__": "PodTopologySpreadArgs",
            "DefaultConstraints": [
                {"MaxSkew": 2, "TopologyKey": "galaxy", "WhenUnsatisfiable": "ScheduleAnyway"}
            ],
            "DefaultingType": "List",
        },
        "nodes": [st_MakeNode().Name("node-a").Label("planet", "mars").Label("galaxy", "andromeda").Obj()],
        "objs": [
            {
                "__type__": "ReplicaSet",
                "ObjectMeta": {"__type__": "ObjectMeta", "Namespace": "default", "Name": "rs1"},
                "Spec": {"__type__": "ReplicaSetSpec", "Selector": fooSelector},
            }
        ],
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 2,
                    "TopologyKey": "planet",
                    "Selector": mustConvertLabelSelectorAsSelector(
                        t, st_MakeLabelSelector().Label("baz", "sup").Obj()
                    ),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"mars": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(1)],
        },
    },
    {
        "name": "NodeAffinityPolicy honored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy honored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Ignore",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Taints(taints)
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Honor",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Taints(taints)
            .Obj(),
        ],
        "config": {"__type__": "PodTopologySpreadArgs", "DefaultingType": "List"},
        "want": {
            "__type__": "preScoreState",
            "Constraints": [
                {
                    "MaxSkew": 1,
                    "TopologyKey": "zone",
                    "Selector": mustConvertLabelSelectorAsSelector(t, barSelector),
                    "MinDomains": 1,
                    "NodeAffinityPolicy": "Honor",
                    "NodeTaintsPolicy": "Ignore",
                }
            ],
            "IgnoredNodes": sets_New(),
            "TopologyValueToPodCounts": [{"zone1": ptr_To(0), "zone2": ptr_To(0)}],
            "TopologyNormalizingWeight": [topologyNormalizingWeight(2)],
        },
        "enableNodeInclusionPolicy": True,
    },
]

# TestPodTopologySpreadScore (scoring_test.go)
SCORE_CASES: list[dict[str, Any]] = [
    {
        "name": "one constraint on node, no existing pods",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 100}, {"Name": "node-b", "Score": 100}],
    },
    {
        "name": "one constraint on node, only one node is candidate",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        "nodes": [st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj()],
        "failedNodes": [st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj()],
        "want": [{"Name": "node-a", "Score": 100}],
    },
    {
        "name": "one constraint on node, all nodes have the same number of matching pods",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 100}, {"Name": "node-b", "Score": 100}],
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "failedNodes": [],
        "want": [
            {"Name": "node-a", "Score": 20},
            {"Name": "node-b", "Score": 60},
            {"Name": "node-c", "Score": 100},
            {"Name": "node-d", "Score": 0},
        ],
    },
    {
        "name": "one constraint on node, null selector",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 100},
            {"Name": "node-b", "Score": 100},
            {"Name": "node-c", "Score": 100},
            {"Name": "node-d", "Score": 100},
        ],
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            st_MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "failedNodes": [],
        "want": [
            {"Name": "node-a", "Score": 33},
            {"Name": "node-b", "Score": 66},
            {"Name": "node-c", "Score": 100},
            {"Name": "node-d", "Score": 16},
        ],
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "failedNodes": [],
        "want": [
            {"Name": "node-a", "Score": 44},
            {"Name": "node-b", "Score": 66},
            {"Name": "node-c", "Score": 77},
            {"Name": "node-d", "Score": 100},
        ],
    },
    {
        "name": "system defaulting, nodes don't have zone, pods match service",
        "pod": st_MakePod().Name("p").Label("foo", "").Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            st_MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        "failedNodes": [],
        "objs": [{"__type__": "Service", "Spec": {"__type__": "ServiceSpec", "Selector": {"foo": ""}}}],
        "want": [
            {"Name": "node-a", "Score": 44},
            {"Name": "node-b", "Score": 66},
            {"Name": "node-c", "Score": 77},
            {"Name": "node-d", "Score": 100},
        ],
    },
    {
        "name": "one constraint on node, 3 out of 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        "failedNodes": [st_MakeNode().Name("node-y").Label("kubernetes.io/hostname", "node-y").Obj()],
        "want": [
            {"Name": "node-a", "Score": 33},
            {"Name": "node-b", "Score": 83},
            {"Name": "node-x", "Score": 100},
        ],
    },
    {
        "name": "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("n", "node-b").Obj(),
            st_MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        "failedNodes": [st_MakeNode().Name("node-y").Label("kubernetes.io/hostname", "node-y").Obj()],
        "want": [
            {"Name": "node-a", "Score": 16},
            {"Name": "node-b", "Score": 0},
            {"Name": "node-x", "Score": 100},
        ],
    },
    {
        "name": "one constraint on zone, 3 out of 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "failedNodes": [
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-y")
            .Obj()
        ],
        "want": [
            {"Name": "node-a", "Score": 75},
            {"Name": "node-b", "Score": 75},
            {"Name": "node-x", "Score": 100},
        ],
    },
    {
        "name": "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "failedNodes": [
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-y")
            .Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 100}, {"Name": "node-x", "Score": 63}],
    },
    {
        "name": "two Constraints on zone, 2 out of 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
            st_MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
        ],
        "failedNodes": [
            st_MakeNode().Name("node-b").Label("zone", "zone1").Obj(),
            st_MakeNode().Name("node-y").Label("zone", "zone2").Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 85}, {"Name": "node-x", "Score": 100}],
    },
    {
        "name": "two Constraints on zone and node, with different labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-y")
            .Obj(),
        ],
        "failedNodes": [],
        "want": [
            {"Name": "node-a", "Score": 60},
            {"Name": "node-b", "Score": 20},
            {"Name": "node-x", "Score": 100},
            {"Name": "node-y", "Score": 60},
        ],
    },
    {
        "name": "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-b1").Node("node-b").Label("bar", "").Obj(),
            st_MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-y")
            .Obj(),
        ],
        "failedNodes": [],
        "want": [
            {"Name": "node-a", "Score": 100},
            {"Name": "node-b", "Score": 60},
            {"Name": "node-x", "Score": 40},
            {"Name": "node-y", "Score": 0},
        ],
    },
    {
        "name": "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Obj(),
        ],
        "failedNodes": [
            st_MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-y")
            .Obj()
        ],
        "want": [
            {"Name": "node-a", "Score": 50},
            {"Name": "node-b", "Score": 25},
            {"Name": "node-x", "Score": 100},
        ],
    },
    {
        "name": "existing pods in a different namespace do not count",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
        ],
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 100}, {"Name": "node-b", "Score": 33}],
    },
    {
        "name": "terminating Pods should be excluded",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            st_MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        "want": [{"Name": "node-a", "Score": 100}, {"Name": "node-b", "Score": 0}],
    },
    {
        "name": "minDomains has no effect when ScheduleAnyway",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "ScheduleAnyway", fooSelector, ptr_To(10), None, None, None)
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
        "want": [
            {"Name": "node-a", "Score": 75},
            {"Name": "node-b", "Score": 75},
            {"Name": "node-c", "Score": 100},
        ],
    },
    {
        "name": "NodeAffinityPolicy honoed with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 0},
            {"Name": "node-b", "Score": 33},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 66},
            {"Name": "node-b", "Score": 100},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy honoed with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 0},
            {"Name": "node-b", "Score": 33},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeAffinityPolicy ignored with nodeAffinity",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], "MatchExpressions")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 66},
            {"Name": "node-b", "Score": 100},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 0},
            {"Name": "node-b", "Score": 33},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        "nodes": [
            st_MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            st_MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            st_MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 66},
            {"Name": "node-b", "Score": 100},
            {"Name": "node-c", "Score": 100},
        ],
        "enableNodeInclusionPolicy": True,
    },
    {
        "name": "matchLabelKeys ignored when feature gate disabled",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .Label("baz", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, ["baz"])
        .SpreadConstraint(
            1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, ["baz"]
        )
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-c").Label("bar", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-c")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-c")
            .Obj(),
            st_MakeNode()
            .Name("node-d")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-d")
            .Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 60},
            {"Name": "node-b", "Score": 20},
            {"Name": "node-c", "Score": 60},
            {"Name": "node-d", "Score": 100},
        ],
        "enableMatchLabelKeys": False,
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(
            1, "zone", "ScheduleAnyway", st_MakeLabelSelector().Obj(), None, None, None, ["foo"]
        )
        .SpreadConstraint(
            1,
            "kubernetes.io/hostname",
            "ScheduleAnyway",
            st_MakeLabelSelector().Obj(),
            None,
            None,
            None,
            ["bar"],
        )
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            st_MakePod().Name("p-y1").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-y2").Node("node-c").Label("bar", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-c")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-c")
            .Obj(),
            st_MakeNode()
            .Name("node-d")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-d")
            .Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 60},
            {"Name": "node-b", "Score": 20},
            {"Name": "node-c", "Score": 60},
            {"Name": "node-d", "Score": 100},
        ],
        "enableMatchLabelKeys": True,
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        "pod": st_MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .Label("baz", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(
            1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, ["baz"]
        )
        .Obj(),
        "existingPods": [
            st_MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            st_MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Label("baz", "").Obj(),
            st_MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            st_MakePod().Name("p-c2").Node("node-c").Label("bar", "").Obj(),
            st_MakePod().Name("p-d3").Node("node-c").Label("bar", "").Label("baz", "").Obj(),
        ],
        "nodes": [
            st_MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            st_MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            st_MakeNode()
            .Name("node-c")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-c")
            .Obj(),
            st_MakeNode()
            .Name("node-d")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-d")
            .Obj(),
        ],
        "want": [
            {"Name": "node-a", "Score": 60},
            {"Name": "node-b", "Score": 20},
            {"Name": "node-c", "Score": 60},
            {"Name": "node-d", "Score": 100},
        ],
        "enableMatchLabelKeys": True,
    },
]


def _ids(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(c, id=c["name"]) for c in cases]


def _args(config: dict[str, Any]) -> PodTopologySpreadArgs:
    return PodTopologySpreadArgs(raw_object(config.get("DefaultConstraints") or []), config["DefaultingType"])


def _build_node_infos(nodes: list[Any]) -> list[NodeInfo]:
    """``tf.BuildNodeInfos``: NodeInfos without pods."""
    return [NodeInfo(n) for n in nodes]


@pytest.mark.parametrize("tt", _ids(PRE_SCORE_SKIP_CASES))
def test_pre_score_skip(tt: dict[str, Any]) -> None:
    h = handle(None, tt["nodes"], tt.get("objs"))
    p = PodTopologySpread(_args(tt["config"]), h)
    p.enable_node_inclusion_policy = p.enable_match_label_keys = False
    s = p.pre_score(CycleState(), tt["pod"], _build_node_infos(tt["nodes"]))
    assert s is not None and s.is_skip()


@pytest.mark.parametrize("tt", _ids(PRE_SCORE_STATE_EMPTY_NODES_CASES))
def test_pre_score_state_empty_nodes(tt: dict[str, Any]) -> None:
    h = handle(None, tt["nodes"], tt.get("objs"))
    p = PodTopologySpread(_args(tt["config"]), h)
    p.enable_node_inclusion_policy = tt.get("enableNodeInclusionPolicy", False)
    p.enable_match_label_keys = False
    cs = CycleState()
    assert p.pre_score(cs, tt["pod"], _build_node_infos(tt["nodes"])) is None
    assert pre_score_state_view(cs.read(PRE_SCORE_STATE_KEY)) == pre_score_state_view(tt["want"])


@pytest.mark.parametrize("tt", _ids(SCORE_CASES))
def test_pod_topology_spread_score(tt: dict[str, Any]) -> None:
    nodes = tt.get("nodes") or []
    h = handle(tt.get("existingPods"), nodes + (tt.get("failedNodes") or []), tt.get("objs"))
    p = PodTopologySpread(PodTopologySpreadArgs([], "System"), h)
    p.enable_node_inclusion_policy = tt.get("enableNodeInclusionPolicy", False)
    p.enable_match_label_keys = tt.get("enableMatchLabelKeys", False)
    cs = CycleState()
    assert p.pre_score(cs, tt["pod"], _build_node_infos(nodes)) is None
    infos = [h.snapshot.get(n.name) for n in nodes]
    assert all(i is not None for i in infos)
    scores = [p.score(cs, tt["pod"], i) for i in infos if i is not None]
    assert p.normalize_score(cs, tt["pod"], [i for i in infos if i is not None], scores) is None
    assert [{"Name": n.name, "Score": s} for n, s in zip(nodes, scores, strict=True)] == tt["want"]
