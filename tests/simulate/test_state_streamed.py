"""A JSON state file read from disk is decoded one item at a time: the state and the error messages are
the ones the whole-text decoder gives, in every shape berth accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.simulate import StateError, load_state, parse_state
from app.simulate.state import ClusterState, _streamed_objects


def _node(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        **extra,
    }


def _pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "managedFields": [{"manager": "m"}],
        },
        "spec": spec,
    }


def _seen(state: ClusterState) -> list[Any]:
    """What the state holds, compared by value (the parsed objects compare by identity)."""
    return [
        [(repr(n), n.raw) for n in state.nodes],
        [(repr(p), p.raw) for p in state.running],
        [(repr(p.pod), p.pod.raw, p.where, p.index) for p in state.pending],
        state.other_objects,
        state.warnings,
    ]


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "state.json"
    path.write_text(text, encoding="utf-8")
    return str(path)


KUBECTL_LIST = {  # kubectl prints the members sorted: kind and metadata after items
    "apiVersion": "v1",
    "items": [
        _node("n1"),
        _pod("a", "n1"),
        _pod("b"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x]"}},
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""},
}
POD_LIST = {  # the API server's list: kind first, items without kind or apiVersion
    "kind": "PodList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "7"},
    "items": [
        {k: v for k, v in _pod(n, "n1").items() if k not in ("kind", "apiVersion")} for n in ("a", "b")
    ],
}
ARRAY = [_node("n1"), None, _pod("a", "n1"), {"apiVersion": "v1", "kind": "List", "items": [_pod("b")]}]


@pytest.mark.parametrize("doc", [KUBECTL_LIST, POD_LIST, ARRAY], ids=["kubectl-list", "pod-list", "array"])
def test_streamed_file_gives_the_whole_text_state(tmp_path: Path, doc: Any) -> None:
    text = json.dumps(doc, indent=1)
    path = _write(tmp_path, text)
    assert sum(1 for _ in _streamed_objects(path)) > 1  # this shape is streamed, not decoded whole
    assert _seen(load_state(path)) == _seen(parse_state(text, path))


def test_running_pods_keep_the_slim_document(tmp_path: Path) -> None:
    state = load_state(_write(tmp_path, json.dumps(KUBECTL_LIST)))
    assert "managedFields" not in state.running[0].raw.get("metadata", {})
    assert "managedFields" in state.pending[0].pod.raw["metadata"]  # a pending pod keeps its manifest


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [_node("n1"), _node("n1")]}),
        json.dumps(
            {
                "apiVersion": "v1",
                "items": [_node("n1"), {"kind": "Pod", "metadata": {"name": "p"}}],
                "kind": "List",
            }
        ),
        json.dumps([_node("n1"), _node("n2", spec={"taints": "no"})]),
        json.dumps({"apiVersion": "v1", "items": [_node("n1")], "kind": "List"})[:-3],  # cut short
        json.dumps(
            {"apiVersion": "v1", "items": [_node("n1")], "kind": "List", "metadata": {"a": '],"b": 1'}}
        ),
        json.dumps({"apiVersion": "v1", "items": [_node("n1")], "kind": "Pod"}),
        json.dumps({"apiVersion": "v1", "kind": "List", "items": "none"}),
    ],
    ids=[
        "duplicate",
        "no-apiversion",
        "bad-field",
        "truncated",
        "bracket-in-string",
        "not-a-list",
        "items-not-array",
    ],
)
def test_streamed_file_reports_what_the_whole_text_reports(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    try:
        expected: Any = _seen(parse_state(text, path))
    except StateError as err:
        expected = str(err)
    try:
        got: Any = _seen(load_state(path))
    except StateError as err:
        got = str(err)
    assert got == expected


YAML_STREAM = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", pods: "110"}}
---
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: a, uid: ua, creationTimestamp: 2024-05-01T10:00:00Z},
   spec: {nodeName: n1, containers: [{name: c, image: i}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: b, uid: ub}, spec: {containers: [{name: c, image: i}]}}
"""


def test_streamed_yaml_gives_the_whole_text_state(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(YAML_STREAM, encoding="utf-8")
    assert sum(1 for _ in _streamed_objects(str(path))) == 3
    assert _seen(load_state(str(path))) == _seen(parse_state(YAML_STREAM, str(path)))


@pytest.mark.parametrize(
    "text",
    [
        YAML_STREAM
        + "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",  # duplicate in a later document
        "apiVersion: v1\nkind: Pod\nmetadata: {}\n---\n"
        + YAML_STREAM
        + "---\nkey: [unclosed\n",  # bad object, then bad YAML
        YAML_STREAM + "---\n- just a list\n",
    ],
    ids=["duplicate", "syntax-error-after-bad-object", "not-an-object"],
)
def test_streamed_yaml_reports_what_the_whole_text_reports(tmp_path: Path, text: str) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(StateError) as whole:
        parse_state(text, str(path))
    with pytest.raises(StateError) as streamed:
        load_state(str(path))
    assert str(streamed.value) == str(whole.value)
