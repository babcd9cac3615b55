"""NodeDeclaredFeatures, ported from plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go (v1.36.3)
and the feature tests of k8s.io/component-helpers/nodedeclaredfeatures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app import featuregates
from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.events import NODE, POD, ActionType, QueueingHint
from app.framework.status import Code, skip
from app.framework.types import NodeInfo
from app.plugins.nodedeclaredfeatures.features import Feature, FeatureRegistry
from app.plugins.nodedeclaredfeatures.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
    NodeDeclaredFeatures,
)
from builders import make_node, make_pod
from fakes import FakeHandle


@pytest.fixture(autouse=True)
def _reset_gates() -> Iterator[None]:
    yield
    featuregates.DEFAULT.reset()


def plugin(*features: Feature) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures(None, FakeHandle(), FeatureRegistry(features) if features else None)


def always(pod: Pod) -> bool:
    return True


def never(pod: Pod) -> bool:
    return False


def restart_all_container(**extra: Any) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "i",
        "restartPolicy": "Never",
        "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
        ],
        **extra,
    }


PREFILTER_CASES = [
    ("Pod with feature requirements", [Feature("F1", always), Feature("F2", never)], {"F1"}),
    (
        "Pod with multiple feature requirements",
        [Feature("F1", always, (1, 38, 0)), Feature("F2", always)],
        {"F1", "F2"},
    ),
    ("Pod with no requirements", [Feature("F1", never), Feature("F2", never)], None),
    (
        "Feature not required, version > MaxVersion",
        [Feature("F1", always, (1, 33, 0)), Feature("F2", never)],
        None,
    ),
]


@pytest.mark.parametrize(("name", "features", "want"), PREFILTER_CASES, ids=[c[0] for c in PREFILTER_CASES])
def test_pre_filter(name: str, features: list[Feature], want: set[str] | None) -> None:
    state = CycleState()
    result, status = plugin(*features).pre_filter(state, make_pod("p"), [])
    assert result is None
    if want is None:
        assert status == skip()
        assert state.get(PRE_FILTER_STATE_KEY) is None
    else:
        assert status is None
        assert state.read(PRE_FILTER_STATE_KEY).required == want


def test_plugin_disabled_skips_and_registers_nothing() -> None:
    # The gates that depend on it go off with it, or kube's dependency check refuses the flag.
    dependents = (
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
    )
    featuregates.DEFAULT.set(",".join(f"{gate}=false" for gate in ("NodeDeclaredFeatures", *dependents)))
    pl = plugin(Feature("F1", always))
    assert pl.pre_filter(CycleState(), make_pod("p"), [])[1] == skip()
    assert pl.filter(CycleState(), make_pod("p"), NodeInfo(make_node("n"))) is None
    assert pl.events_to_register() == []


FILTER_CASES = [
    ("Node matches requirements", ["FeatureA", "FeatureB"], {"FeatureA"}, None),
    ("Node does not match requirements", ["FeatureB"], {"FeatureA"}, ERR_REASON_UNSATISFIED_REQUIREMENTS),
    (
        "Node with multiple features, pod requires subset",
        ["FeatureA", "FeatureB", "FeatureC"],
        {"FeatureA", "FeatureC"},
        None,
    ),
    ("Node has no declared features", None, {"FeatureA"}, ERR_REASON_UNSATISFIED_REQUIREMENTS),
    (
        "Node with some but not all required features",
        ["FeatureA"],
        {"FeatureA", "FeatureB"},
        ERR_REASON_UNSATISFIED_REQUIREMENTS,
    ),
]


@pytest.mark.parametrize(
    ("name", "declared", "required", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_filter(name: str, declared: list[str] | None, required: set[str], want: str | None) -> None:
    pl = plugin(*(Feature(f, always) for f in required))
    pod = make_pod("p")
    state = CycleState()
    pl.pre_filter(state, pod, [])
    status = {"declaredFeatures": declared} if declared is not None else {}
    got = pl.filter(state, pod, NodeInfo(make_node("node-1", status=status)))
    if want is None:
        assert got is None
    else:
        assert got is not None and got.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.message() == want


def test_filter_without_pre_filter_state_is_an_error() -> None:
    got = plugin().filter(CycleState(), make_pod("p"), NodeInfo(make_node("node-1")))
    assert got is not None and got.code is Code.ERROR
    assert got.message() == 'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found'


# --- the v1.36.3 features a pod can need --------------------------------------------------------

INFER_CASES = [
    ("no rules", {"containers": [{"name": "c", "image": "i"}]}, set()),
    (
        "regular container with rules",
        {"containers": [restart_all_container()]},
        {"RestartAllContainersOnContainerExits"},
    ),
    (
        "init container with rules",
        {"initContainers": [restart_all_container()], "containers": [{"name": "c2", "image": "i"}]},
        {"RestartAllContainersOnContainerExits"},
    ),
    (
        "host network with user namespace",
        {"hostNetwork": True, "hostUsers": False},
        {"UserNamespacesHostNetworkSupport"},
    ),
    ("host network with host users", {"hostNetwork": True, "hostUsers": True}, set()),
    ("host network, hostUsers unset", {"hostNetwork": True}, set()),
    ("user namespace without host network", {"hostUsers": False}, set()),
]


@pytest.mark.parametrize(("name", "spec", "want"), INFER_CASES, ids=[c[0] for c in INFER_CASES])
def test_infer_for_pod_scheduling(name: str, spec: dict[str, Any], want: set[str]) -> None:
    containers = spec.pop("containers", [{"name": "c", "image": "i"}])
    from app.api.objects import parse_pod

    pod = parse_pod({"metadata": {"name": "p"}, "spec": {"containers": containers, **spec}})
    assert FeatureRegistry().infer_for_pod_scheduling(pod) == want


def test_default_registry_end_to_end() -> None:
    """The real registry: a host-network pod in a user namespace only fits nodes declaring the support."""
    pl = plugin()
    pod = make_pod("p", hostNetwork=True, hostUsers=False)
    state = CycleState()
    assert pl.pre_filter(state, pod, []) == (None, None)
    plain = NodeInfo(make_node("plain"))
    able = NodeInfo(make_node("able", status={"declaredFeatures": ["UserNamespacesHostNetworkSupport"]}))
    assert pl.filter(state, pod, plain) is not None
    assert pl.filter(state, pod, able) is None


# --- queueing hints -------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = plugin().events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in events] == [
        (NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (POD, ActionType.UPDATE),
    ]


NODE_HINT_CASES = [
    ("Node Add with feature", None, ["FeatureA"], QueueingHint.QUEUE),
    ("Node Update (Features Added)", [], ["FeatureA"], QueueingHint.QUEUE),
    ("Node Update (Features Unchanged)", ["FeatureA"], ["FeatureA"], QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), NODE_HINT_CASES, ids=[c[0] for c in NODE_HINT_CASES])
def test_node_hint(name: str, old: list[str] | None, new: list[str], want: QueueingHint) -> None:
    old_node = None if old is None else make_node("node-1", status={"declaredFeatures": old})
    new_node = make_node("node-1", status={"declaredFeatures": new})
    assert plugin().is_schedulable_after_node_change(make_pod("test-pod"), old_node, new_node) == want


def test_pod_hint() -> None:
    pl = plugin()
    target = make_pod("test-pod", uid="123")
    plain = make_pod("test-pod", uid="123", labels={"foo": "bar"})
    needing = make_pod("test-pod", uid="123", hostNetwork=True, hostUsers=False)
    assert pl.is_schedulable_after_pod_update(target, target, plain) == QueueingHint.QUEUE_SKIP
    assert pl.is_schedulable_after_pod_update(target, plain, needing) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_update(target, needing, plain) == QueueingHint.QUEUE
    other = make_pod("another-test-pod", uid="456")
    assert (
        pl.is_schedulable_after_pod_update(
            target, other, make_pod("another-test-pod", uid="456", hostNetwork=True, hostUsers=False)
        )
        == QueueingHint.QUEUE_SKIP
    )
