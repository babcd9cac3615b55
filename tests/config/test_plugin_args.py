"""Plugin args: defaults (defaults_test.go TestPluginArgsDefaults) and validation (validation_pluginargs_test.go)."""

from __future__ import annotations

import pytest

from app.api.errors import FieldError
from app.api.validation import ConfigErrors
from app.plugins.defaultpreemption.args import DefaultPreemptionArgs
from app.plugins.interpodaffinity.args import InterPodAffinityArgs
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from app.plugins.podtopologyspread.args import PodTopologySpreadArgs


def paths(errs: list[FieldError]) -> list[str]:
    return [e.path for e in errs]


def error_paths(exc: FieldError) -> list[str]:
    return [e.path for e in exc.errors] if isinstance(exc, ConfigErrors) else [exc.path]


# --- defaults ---------------------------------------------------------------------------------------------


def test_defaults_from_nothing() -> None:
    assert DefaultPreemptionArgs.decode(None, "") == DefaultPreemptionArgs(10, 100)
    assert InterPodAffinityArgs.decode({}, "") == InterPodAffinityArgs(1, False)
    assert PodTopologySpreadArgs.decode(None, "") == PodTopologySpreadArgs([], "System")
    assert NodeAffinityArgs.decode(None, "") == NodeAffinityArgs(None)
    fit = NodeResourcesFitArgs.decode(None, "")
    assert fit.scoring_strategy == ScoringStrategy(
        "LeastAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    )
    assert NodeResourcesBalancedAllocationArgs.decode(None, "").resources == [
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
    ]


def test_defaults_keep_explicit_values() -> None:
    assert InterPodAffinityArgs.decode({"hardPodAffinityWeight": 0}, "").hard_pod_affinity_weight == 0
    assert InterPodAffinityArgs.decode({"hardPodAffinityWeight": 5}, "").hard_pod_affinity_weight == 5
    assert DefaultPreemptionArgs.decode({"minCandidateNodesPercentage": 50}, "") == DefaultPreemptionArgs(
        50, 100
    )


def test_balanced_allocation_weight_zero_becomes_one() -> None:
    raw = {
        "resources": [
            {"name": "cpu"},
            {"name": "memory", "weight": 0},
            {"name": "scalar.io/scalar1", "weight": 1},
        ]
    }
    args = NodeResourcesBalancedAllocationArgs.decode(raw, "")
    assert args.resources == [
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
        ResourceSpec("scalar.io/scalar1", 1),
    ]


def test_fit_scoring_strategy_resources_defaulted() -> None:
    args = NodeResourcesFitArgs.decode({"scoringStrategy": {"type": "MostAllocated"}}, "")
    assert args.scoring_strategy.resources == [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    args = NodeResourcesFitArgs.decode(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}, ""
    )
    assert args.scoring_strategy.resources == [ResourceSpec("cpu", 1)]


def test_type_meta_accepted_and_checked() -> None:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": 50,
    }
    assert DefaultPreemptionArgs.decode(raw, "") == DefaultPreemptionArgs(50, 100)
    with pytest.raises(FieldError) as exc:
        DefaultPreemptionArgs.decode({"kind": "InterPodAffinityArgs"}, "a")
    assert exc.value.path == "a.kind"


def test_strict_decoding() -> None:
    with pytest.raises(FieldError) as exc:
        NodeResourcesFitArgs.decode(
            {"scoringStrategy": {"resources": [{"Name": "cpu", "Weight": 1}]}}, "args"
        )
    assert str(exc.value) == 'args.scoringStrategy.resources[0].Name: unknown field "Name"'
    with pytest.raises(FieldError) as exc:
        NodeResourcesFitArgs.decode(
            {"scoringStrategy": {"requestedToCapacityRatio": {"shape": [{"Score": 2, "Utilization": 1}]}}},
            "args",
        )
    assert exc.value.path == "args.scoringStrategy.requestedToCapacityRatio.shape[0].Score"
    with pytest.raises(FieldError) as exc:
        InterPodAffinityArgs.decode({"hardPodAffinityWeight": "5"}, "args")
    assert exc.value.path == "args.hardPodAffinityWeight"
    with pytest.raises(FieldError) as exc:
        NodeResourcesFitArgs.decode({"ignoredResources": "foo"}, "args")
    assert exc.value.path == "args.ignoredResources"


def test_to_dict_shapes() -> None:
    assert DefaultPreemptionArgs().to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesAbsolute": 100,
        "minCandidateNodesPercentage": 10,
    }
    assert InterPodAffinityArgs(5).to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "hardPodAffinityWeight": 5,
        "ignorePreferredTermsOfExistingPods": False,
        "kind": "InterPodAffinityArgs",
    }
    fit = NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            "RequestedToCapacityRatio",
            [ResourceSpec("cpu", 1)],
            RequestedToCapacityRatioParam([UtilizationShapePoint(1, 2)]),
        )
    )
    assert fit.to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "NodeResourcesFitArgs",
        "scoringStrategy": {
            "requestedToCapacityRatio": {"shape": [{"score": 2, "utilization": 1}]},
            "resources": [{"name": "cpu", "weight": 1}],
            "type": "RequestedToCapacityRatio",
        },
    }
    assert PodTopologySpreadArgs([], "").to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "PodTopologySpreadArgs",
    }
    for cls in (
        DefaultPreemptionArgs,
        InterPodAffinityArgs,
        NodeAffinityArgs,
        NodeResourcesFitArgs,
        NodeResourcesBalancedAllocationArgs,
        PodTopologySpreadArgs,
    ):
        args = cls.decode(None, "")
        assert cls.decode(args.to_dict(), "") == args


# --- DefaultPreemptionArgs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pct", "absolute", "want"),
    [
        (10, 100, []),
        (-1, 100, ["minCandidateNodesPercentage"]),
        (900, 100, ["minCandidateNodesPercentage"]),
        (20, -1, ["minCandidateNodesAbsolute"]),
        (0, 0, ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"]),
        (-1, -1, ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"]),
    ],
)
def test_validate_default_preemption(pct: int, absolute: int, want: list[str]) -> None:
    assert paths(DefaultPreemptionArgs(pct, absolute).validate("")) == want


def test_default_preemption_messages() -> None:
    with pytest.raises(FieldError) as exc:
        DefaultPreemptionArgs.decode({"minCandidateNodesPercentage": 200}, "profiles[0].pluginConfig[0].args")
    assert str(exc.value) == (
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 200: not in valid range [0, 100]"
    )
    with pytest.raises(ConfigErrors) as many:
        DefaultPreemptionArgs.decode({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "")
    assert error_paths(many.value) == ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"]


# --- InterPodAffinityArgs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "want"), [(10, []), (-1, ["hardPodAffinityWeight"]), (101, ["hardPodAffinityWeight"])]
)
def test_validate_inter_pod_affinity(weight: int, want: list[str]) -> None:
    assert paths(InterPodAffinityArgs(weight).validate("")) == want


# --- PodTopologySpreadArgs --------------------------------------------------------------------------------


def c(
    max_skew: int = 1, key: str = "node", when: str = "DoNotSchedule", **extra: object
) -> dict[str, object]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}


@pytest.mark.parametrize(
    ("constraints", "defaulting", "want"),
    [
        ([c(), c(2, "zone", "ScheduleAnyway")], "List", []),
        ([c(-1)], "List", ["defaultConstraints[0].maxSkew"]),
        ([c(key="")], "List", ["defaultConstraints[0].topologyKey"]),
        ([c(when="")], "List", ["defaultConstraints[0].whenUnsatisfiable"]),
        ([c(when="unknown action")], "List", ["defaultConstraints[0].whenUnsatisfiable"]),
        ([c(), c(2)], "List", ["defaultConstraints[1]"]),
        (
            [c(key="key", labelSelector={"matchLabels": {"a": "b"}})],
            "List",
            ["defaultConstraints[0].labelSelector"],
        ),
        ([], "List", []),
        ([], "System", []),
        ([], "unknown", ["defaultingType"]),
        ([c(key="key")], "System", ["defaultingType"]),
    ],
)
def test_validate_pod_topology_spread(
    constraints: list[dict[str, object]], defaulting: str, want: list[str]
) -> None:
    assert paths(PodTopologySpreadArgs(constraints, defaulting).validate("")) == want


def test_pod_topology_spread_messages() -> None:
    with pytest.raises(FieldError) as exc:
        PodTopologySpreadArgs.decode(
            {"defaultConstraints": [c(when="Foo")], "defaultingType": "List"}, "args"
        )
    assert str(exc.value) == (
        'args.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Foo": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"'
    )
    with pytest.raises(FieldError) as exc:
        PodTopologySpreadArgs.decode({"defaultConstraints": [c(), c(2)], "defaultingType": "List"}, "")
    assert str(exc.value) == 'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'
    with pytest.raises(FieldError) as exc:
        PodTopologySpreadArgs.decode({"defaultConstraints": [c(bogus=1)], "defaultingType": "List"}, "")
    assert str(exc.value) == 'defaultConstraints[0].bogus: unknown field "bogus"'


def test_pod_topology_spread_system_with_constraints_rejected_on_decode() -> None:
    # Kube defaults defaultingType to System, and System forbids explicit constraints.
    with pytest.raises(FieldError) as exc:
        PodTopologySpreadArgs.decode({"defaultConstraints": [c(1, "zone", "ScheduleAnyway")]}, "")
    assert str(exc.value) == 'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'


# --- NodeResourcesBalancedAllocationArgs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ([ResourceSpec("cpu", 1), ResourceSpec("memory", 1)], []),
        ([ResourceSpec("cpu", 2), ResourceSpec("memory", 1)], ["resources[0].weight"]),
        ([ResourceSpec("cpu", 1), ResourceSpec("cpu", 1)], ["resources[1].name"]),
    ],
)
def test_validate_balanced_allocation(resources: list[ResourceSpec], want: list[str]) -> None:
    assert paths(NodeResourcesBalancedAllocationArgs(resources).validate("")) == want


# --- NodeAffinityArgs -------------------------------------------------------------------------------------


def test_validate_node_affinity() -> None:
    assert NodeAffinityArgs(None).validate("") == []
    valid = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "label-1", "operator": "In", "values": ["label-1-val"]}]}
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "preference": {
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
                },
            }
        ],
    }
    assert NodeAffinityArgs.decode({"addedAffinity": valid}, "").added_affinity == valid
    bad = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "invalid/label/key", "operator": "In", "values": ["label-1-val"]}
                    ]
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "preference": {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}
                    ]
                },
            }
        ],
    }
    assert paths(NodeAffinityArgs(bad).validate("")) == [
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key",
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values",
    ]


@pytest.mark.parametrize(
    ("expr", "want_path", "want_msg"),
    [
        ({"key": "k", "operator": "In"}, "values", "for 'in', 'notin' operators, values set can't be empty"),
        ({"key": "k", "operator": "Exists", "values": ["a"]}, "values", "values set must be empty"),
        ({"key": "k", "operator": "Gt", "values": ["1", "2"]}, "values", "exactly one value is required"),
        ({"key": "k", "operator": "Lt", "values": ["x"]}, "values[0]", "the value must be an integer"),
        ({"key": "k", "operator": "Foo", "values": ["x"]}, "operator", 'Unsupported value: "Foo"'),
    ],
)
def test_node_affinity_requirement_rules(expr: dict[str, object], want_path: str, want_msg: str) -> None:
    raw = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }
    with pytest.raises(FieldError) as exc:
        NodeAffinityArgs.decode(raw, "args")
    prefix = "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
    assert exc.value.path == prefix + want_path
    assert want_msg in exc.value.message


def test_node_affinity_strict() -> None:
    raw = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"foo": 1}]}
        }
    }
    with pytest.raises(FieldError) as exc:
        NodeAffinityArgs.decode(raw, "")
    assert (
        exc.value.path
        == "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].foo"
    )


# --- NodeResourcesFitArgs ---------------------------------------------------------------------------------

DEFAULT_STRATEGY = ScoringStrategy()


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (NodeResourcesFitArgs(["longvalue" + "a" * 64]), "name part must be no more than 63 bytes"),
        (NodeResourcesFitArgs(["example.com/"]), "name part must be non-empty"),
        (NodeResourcesFitArgs(["example.com/aaa/bbb"]), "a valid label key must consist of"),
        (NodeResourcesFitArgs(["example.com"]), ""),
        (NodeResourcesFitArgs([], ["example.com"]), ""),
        (NodeResourcesFitArgs([], ["example.com/"]), "name part must be non-empty"),
        (NodeResourcesFitArgs([], ["a" * 64]), "name part must be no more than 63 bytes"),
        (NodeResourcesFitArgs([], ["example.com/aa"]), "resource group name can't contain '/'"),
        (NodeResourcesFitArgs(scoring_strategy=ScoringStrategy("Invalid")), 'Unsupported value: "Invalid"'),
        (
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy("RequestedToCapacityRatio")),
            "must be specified when type is RequestedToCapacityRatio",
        ),
    ],
)
def test_validate_fit_args(args: NodeResourcesFitArgs, expect: str) -> None:
    errs = args.validate("")
    if not expect:
        assert errs == []
    else:
        assert any(expect in str(e) for e in errs), errs


@pytest.mark.parametrize("stype", ["LeastAllocated", "MostAllocated"])
@pytest.mark.parametrize(
    ("resources", "want"),
    [
        (None, []),
        ([ResourceSpec("cpu", 1), ResourceSpec("memory", 10)], []),
        ([ResourceSpec("cpu", 0)], ["scoringStrategy.resources[0].weight"]),
        ([ResourceSpec("cpu", 101)], ["scoringStrategy.resources[0].weight"]),
        (
            [ResourceSpec("cpu", 0), ResourceSpec("memory", 101)],
            ["scoringStrategy.resources[0].weight", "scoringStrategy.resources[1].weight"],
        ),
    ],
)
def test_validate_allocated_strategies(
    stype: str, resources: list[ResourceSpec] | None, want: list[str]
) -> None:
    strategy = ScoringStrategy(stype) if resources is None else ScoringStrategy(stype, resources)
    assert paths(NodeResourcesFitArgs(scoring_strategy=strategy).validate("")) == want


SHAPE = [UtilizationShapePoint(30, 3)]
P = UtilizationShapePoint


@pytest.mark.parametrize(
    ("resources", "shape", "want"),
    [
        (None, None, ["scoringStrategy.requestedToCapacityRatio.shape"]),
        ([ResourceSpec("cpu", 101)], SHAPE, ["scoringStrategy.resources[0].weight"]),
        ([ResourceSpec("cpu", 0)], SHAPE, ["scoringStrategy.resources[0].weight"]),
        (None, SHAPE, []),
        (None, [P(-1, 3)], ["scoringStrategy.requestedToCapacityRatio.shape[0].utilization"]),
        (None, [P(101, 3)], ["scoringStrategy.requestedToCapacityRatio.shape[0].utilization"]),
        (None, [P(10, 3), P(10, 3)], ["scoringStrategy.requestedToCapacityRatio.shape[1].utilization"]),
        (None, [P(10, 3), P(20, 3), P(30, 3)], []),
        (
            None,
            [P(10, 3), P(20, 3), P(15, 3)],
            ["scoringStrategy.requestedToCapacityRatio.shape[2].utilization"],
        ),
        (None, [P(10, -1)], ["scoringStrategy.requestedToCapacityRatio.shape[0].score"]),
        (None, [P(10, 11)], ["scoringStrategy.requestedToCapacityRatio.shape[0].score"]),
    ],
)
def test_validate_requested_to_capacity_ratio(
    resources: list[ResourceSpec] | None, shape: list[UtilizationShapePoint] | None, want: list[str]
) -> None:
    strategy = ScoringStrategy(
        "RequestedToCapacityRatio",
        resources if resources is not None else [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)],
        RequestedToCapacityRatioParam(shape or []),
    )
    assert paths(NodeResourcesFitArgs(scoring_strategy=strategy).validate("")) == want


def test_fit_forbids_shape_for_other_types() -> None:
    strategy = ScoringStrategy(
        "LeastAllocated", requested_to_capacity_ratio=RequestedToCapacityRatioParam(SHAPE)
    )
    errs = NodeResourcesFitArgs(scoring_strategy=strategy).validate("")
    assert [str(e) for e in errs] == [
        "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"
    ]


def test_fit_unsupported_type_message() -> None:
    with pytest.raises(FieldError) as exc:
        NodeResourcesFitArgs.decode({"scoringStrategy": {"type": "Foo"}}, "args")
    assert str(exc.value) == (
        'args.scoringStrategy.type: Unsupported value: "Foo": '
        'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    )
