"""Loading the cluster-state file: formats, kinds, priorities and error messages."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from simulate.simhelpers import node_yaml, pod_yaml, run_text, state_of

from app.simulate import StateError, load_state, parse_state

PRIORITY_CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: default-a}
value: 50
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: default-b}
value: 20
globalDefault: true
---
"""


def _error(text: str, path: str = "state.yaml") -> str:
    with pytest.raises(StateError) as info:
        parse_state(textwrap.dedent(text), path)
    return str(info.value)


# --- formats -------------------------------------------------------------------------------------------


def test_multi_document_yaml_splits_running_and_pending() -> None:
    state = state_of(
        node_yaml("n1") + node_yaml("n2") + pod_yaml("a", spec="  nodeName: n1\n") + pod_yaml("b")
    )
    assert [n.name for n in state.nodes] == ["n1", "n2"]
    assert [p.key for p in state.running] == ["default/a"]
    assert [(p.pod.key, p.index, p.where) for p in state.pending] == [
        ("default/b", 0, "document 4 (Pod default/b)")
    ]
    assert state.warnings == []


def test_v1_list_and_typed_list_items_without_kind() -> None:
    text = """\
    apiVersion: v1
    kind: List
    items:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "1"}}}
    - apiVersion: v1
      kind: PodList
      items:
      - metadata: {name: p1}
        spec: {containers: [{name: c, image: x}]}
    """
    state = state_of(text)
    assert [n.name for n in state.nodes] == ["n1"]
    assert [p.pod.key for p in state.pending] == ["default/p1"]
    assert state.pending[0].where == "document 1, item 2, item 1 (Pod default/p1)"


def test_json_object_and_json_array() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "2"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]},
    }
    as_list = parse_state(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, pod]}), "s.json")
    as_array = parse_state(json.dumps([node, pod], indent=2), "s.json")
    for state in (as_list, as_array):
        assert [n.name for n in state.nodes] == ["n1"]
        assert [p.pod.key for p in state.pending] == ["default/p"]


def test_running_pods_keep_the_slim_document_pending_pods_the_whole_one() -> None:
    """A state file's running pods are cached as the informers cache them (issue 25: no
    managedFields, env or statuses), while a pending pod keeps its whole manifest, which hints edit
    and parse again."""
    container = {
        "name": "c",
        "image": "x",
        "env": [{"name": "A", "value": "1"}],
        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
    }

    def pod(name: str, node: str) -> dict[str, object]:
        spec: dict[str, object] = {"containers": [container]}
        if node:
            spec["nodeName"] = node
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "a"}, "managedFields": [{"manager": "kubectl"}]},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending", "podIP": "10.0.0.1"},
        }

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4"}},
    }
    state = parse_state(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, pod("r", "n1"), pod("p", "")]})
    )
    [running] = state.running
    assert "managedFields" not in running.raw["metadata"] and running.raw["metadata"]["labels"] == {
        "app": "a"
    }
    assert running.raw["spec"]["containers"] == [{"resources": {"limits": {"cpu": "2"}}}]
    assert running.raw["spec"]["nodeName"] == "n1" and "podIP" not in running.raw.get("status", {})
    assert running.containers[0].requests == {"cpu": 1}  # what the engine counts is parsed whole
    [pending] = state.pending
    assert pending.pod.raw["spec"]["containers"] == [container]
    assert pending.pod.raw["metadata"]["managedFields"] == [{"manager": "kubectl"}]


def test_empty_documents_are_ignored_but_counted() -> None:
    state = state_of("---\n---\n" + pod_yaml("p"))
    # The leading "---" opens document 1 (empty), the second opens document 2 holding the pod.
    assert state.pending[0].where == "document 2 (Pod default/p)"


def test_unquoted_timestamps_stay_strings() -> None:
    text = pod_yaml("p").replace(
        "namespace: default}", "namespace: default, creationTimestamp: 2024-05-01T10:00:00Z}"
    )
    assert state_of(text).pending[0].pod.creation_timestamp == "2024-05-01T10:00:00Z"


def test_load_state_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(node_yaml("n1") + pod_yaml("p"))
    state = load_state(str(path))
    assert state.path == str(path)
    assert len(state.nodes) == 1 and len(state.pending) == 1


def test_missing_file() -> None:
    with pytest.raises(StateError, match=r"^/nonexistent/state.yaml: no such file$"):
        load_state("/nonexistent/state.yaml")


# --- other kinds ---------------------------------------------------------------------------------------


def test_other_kinds_are_kept_and_warned_once_per_kind() -> None:
    text = """\
    apiVersion: v1
    kind: Service
    metadata: {name: s1, namespace: web}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: s2}
    ---
    apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {name: rs}
    """
    state = state_of(text)
    assert state.warnings == [
        "state.yaml: 2 Service object(s) not simulated (kept for plugins that read them)",
        "state.yaml: 1 ReplicaSet object(s) not simulated (kept for plugins that read them)",
    ]
    assert [o["metadata"]["name"] for o in state.objects.list("Service", "web")] == ["s1"]
    assert [o["metadata"]["name"] for o in state.objects.list("ReplicaSet", "default")] == ["rs"]
    assert [o["metadata"]["name"] for o in state.other_objects] == ["s1", "s2", "rs"]


def test_terminated_pods_and_pods_on_unknown_nodes_warn() -> None:
    text = (
        node_yaml("n1")
        + pod_yaml("done", spec="  nodeName: n1\n").replace("spec:\n", "status: {phase: Succeeded}\nspec:\n")
        + pod_yaml("lost", spec="  nodeName: gone\n")
    )
    state = state_of(text)
    assert [p.key for p in state.running] == ["default/lost"]
    assert state.warnings == [
        "state.yaml: 1 terminated pod(s) (phase Succeeded or Failed) ignored, as kube-scheduler ignores them",
        "state.yaml: running pod(s) bound to node(s) not in the state (gone) use no node's resources",
    ]


# --- priorities ----------------------------------------------------------------------------------------


def test_priority_resolution_order() -> None:
    text = (
        PRIORITY_CLASSES
        + pod_yaml("explicit", spec="  priority: 7\n  priorityClassName: high\n")
        + pod_yaml("by-class", spec="  priorityClassName: high\n")
        + pod_yaml("by-default")
        + pod_yaml("builtin", spec="  priorityClassName: system-node-critical\n")
    )
    priorities = {p.pod.name: p.pod.priority for p in state_of(text).pending}
    # Two global defaults: the lowest value wins, as in the Priority admission plugin.
    assert priorities == {"explicit": 7, "by-class": 1000, "by-default": 20, "builtin": 2000001000}


def test_priority_without_any_class_is_zero_and_class_may_follow_pod() -> None:
    text = (
        pod_yaml("none")
        + pod_yaml("early", spec="  priorityClassName: late\n")
        + ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: late}\nvalue: 5\n")
    )
    assert {p.pod.name: p.pod.priority for p in state_of(text).pending} == {"none": 0, "early": 5}


def test_running_pods_get_their_priority_too() -> None:
    text = (
        PRIORITY_CLASSES + node_yaml("n1") + pod_yaml("r", spec="  nodeName: n1\n  priorityClassName: high\n")
    )
    assert state_of(text).running[0].priority == 1000


def test_preemption_policy_comes_from_the_priority_class() -> None:
    # The Priority admission plugin copies the class's preemptionPolicy onto the pod, like its value
    # (issue 17, divergence 4); the global default's too. A pod read back with spec.priority keeps its own.
    never = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: polite}\nvalue: 50\npreemptionPolicy: Never\n---\n"
    default_never = never.replace("polite", "quiet").replace("value: 50", "value: 3\nglobalDefault: true")
    text = (
        never
        + default_never
        + pod_yaml("by-class", spec="  priorityClassName: polite\n")
        + pod_yaml("by-default")
        + pod_yaml("admitted", spec="  priority: 50\n  priorityClassName: polite\n")
        + pod_yaml("builtin", spec="  priorityClassName: system-cluster-critical\n")
    )
    policies = {p.pod.name: (p.pod.priority, p.pod.preemption_policy) for p in state_of(text).pending}
    assert policies == {
        "by-class": (50, "Never"),
        "by-default": (3, "Never"),
        "admitted": (50, "PreemptLowerPriority"),
        "builtin": (2000000000, "PreemptLowerPriority"),
    }


def test_a_never_class_keeps_its_pods_from_preempting() -> None:
    never = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: polite}\nvalue: 50\npreemptionPolicy: Never\n---\n"
    text = (
        never
        + node_yaml("n1", cpu="1")
        + pod_yaml("low", spec="  nodeName: n1\n")
        + pod_yaml("high", spec="  priorityClassName: polite\n")
    )
    [record] = run_text(text).records
    assert (record.status, record.victims) == ("Unschedulable", [])
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_unknown_priority_class_is_rejected() -> None:
    message = _error(pod_yaml("a") + pod_yaml("web", spec="  priorityClassName: gold\n", namespace="shop"))
    assert message == (
        "state.yaml: document 2 (Pod shop/web): spec.priorityClassName: "
        "Not found: no PriorityClass with name gold was found"
    )


# --- errors --------------------------------------------------------------------------------------------


def test_bad_quantity_names_file_document_and_field() -> None:
    text = node_yaml("n1") + node_yaml("n2") + pod_yaml("web-1", cpu="lots")
    message = _error(text)
    assert message.startswith(
        "state.yaml: document 3 (Pod default/web-1): spec.containers[0].resources.requests.cpu: "
        "quantities must match the regular expression"
    ), message


def test_bad_node_quantity_inside_a_list() -> None:
    text = """\
    apiVersion: v1
    kind: List
    items:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}}
    - {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {memory: 1Qi}}}
    """
    assert _error(text).startswith("state.yaml: document 1, item 2 (Node n2): status.allocatable.memory: ")


def test_document_not_a_mapping() -> None:
    assert _error(node_yaml("n1") + "- a\n- b\n") == "state.yaml: document 2: expected an object, got array"
    assert _error("just text\n") == "state.yaml: document 1: expected an object, got string"


def test_missing_kind_and_api_version() -> None:
    assert (
        _error("metadata: {name: x}\n")
        == "state.yaml: document 1: kind: Required value: every object needs a kind"
    )
    assert _error("kind: Pod\nmetadata: {name: x}\n") == (
        "state.yaml: document 1 (Pod default/x): apiVersion: Required value: every object needs an apiVersion"
    )


def test_wrong_api_version_for_a_simulated_kind() -> None:
    assert _error("apiVersion: v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: 1\n") == (
        'state.yaml: document 1 (PriorityClass x): apiVersion: Unsupported value: "v1": '
        'supported values: "scheduling.k8s.io/v1"'
    )


def test_missing_name() -> None:
    assert _error("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c}]}\n") == (
        "state.yaml: document 1 (Pod): metadata.name: Required value: name is required"
    )


def test_duplicates() -> None:
    assert _error(pod_yaml("p") + pod_yaml("q") + pod_yaml("p")) == (
        'state.yaml: document 3 (Pod default/p): metadata.name: Duplicate value: "p" (first defined in document 1)'
    )
    # The same name in another namespace is another pod.
    assert len(state_of(pod_yaml("p") + pod_yaml("p", namespace="other")).pending) == 2
    assert _error(node_yaml("n") + node_yaml("n")) == (
        'state.yaml: document 2 (Node n): metadata.name: Duplicate value: "n" (first defined in document 1)'
    )


def test_bad_yaml_has_line_information() -> None:
    message = _error(node_yaml("n1") + "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    assert message.startswith("state.yaml: line "), message
    assert "invalid YAML (document 2)" in message
    assert _error("a: b: c\n") == (
        "state.yaml: line 1, column 5: invalid YAML (document 1): mapping values are not allowed here"
    )


def test_bad_json_has_line_information() -> None:
    assert _error('[\n  {"kind": "Node",,}\n]', "s.json") == (
        "s.json: line 2, column 19: invalid JSON: Expecting property name enclosed in double quotes"
    )
