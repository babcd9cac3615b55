"""Deeply nested values anywhere in a verb's body: a clean 400 or a real answer, the same every time.

Over real sockets (the direct path, whose stack is what a deployed berth has), at depths around
orjson's encoding limit (254) and up to its decoding limit (1,024).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from server.conftest import build_app
from server.test_direct import exchange, post, serving

from app.server.chain import HandlerChain
from builders import pod_dict

POD = pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}])
HOLE = "__DEEP__"


def deep(depth: int, kind: str) -> bytes:
    """A value nested ``depth`` levels: objects with an unknown key, or arrays."""
    if kind == "object":
        return b'{"a":' * depth + b'"x"' + b"}" * depth
    return b"[" * depth + b'"x"' + b"]" * depth


def with_hole(pod: dict[str, Any], path: str) -> dict[str, Any]:
    """``pod`` with HOLE at ``path`` (dots and [i] indices; missing parents are created)."""
    pod = copy.deepcopy(pod)
    parts = path.replace("[", ".[").split(".")
    target: Any = pod
    for part, following in itertools.pairwise(parts):
        key: Any = int(part[1:-1]) if part.startswith("[") else part
        fresh: Any = [{}] if following.startswith("[") else {}
        if isinstance(target, list):
            target = target[key]
        else:
            target = target.setdefault(key, fresh)
    last = parts[-1]
    if last.startswith("["):
        target.append(HOLE)
    else:
        target[last] = HOLE
    return pod


NSTERM = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
PODTERM = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
POD_FIELDS = [
    f"{NSTERM}.matchExpressions[0].operator",
    f"{NSTERM}.matchExpressions[0].values[0]",
    f"{PODTERM}.namespaces[0]",
    f"{PODTERM}.matchLabelKeys[0]",
    f"{PODTERM}.labelSelector.matchLabels.app",
    "spec.topologySpreadConstraints[0].matchLabelKeys[0]",
    "spec.tolerations[0].key",
    "spec.containers[0].resources.requests.cpu",
    "spec.containers[0].ports[0].hostPort",
    "metadata.labels.app",
    "metadata.unknownKey",
    "spec.nodeSelector.zone",
    "spec.priority",
]
DEPTHS = [200, 260, 600, 1000]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serving(HandlerChain(build_app())) as port:
        yield port


def call(port: int, path: str, body: bytes) -> tuple[bytes, Any]:
    ((status, _, answer),) = exchange(port, post(path, body), 1)
    return status, orjson.loads(answer)


def assert_clean(status: bytes, answer: Any) -> None:
    assert status in (b"HTTP/1.1 200 OK", b"HTTP/1.1 400 Bad Request"), (status, answer)
    error = answer.get("Error") if isinstance(answer, dict) else None
    assert not error or "internal" not in error, error


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("field", POD_FIELDS)
@pytest.mark.parametrize("kind", ["object", "array"])
@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
def test_deep_pod_fields_answer_cleanly_and_the_same_twice(
    port: int, verb: str, kind: str, field: str, depth: int
) -> None:
    pod = with_hole(POD, field)
    if verb == "preempt":
        args: dict[str, Any] = {"Pod": pod, "NodeNameToMetaVictims": {"n1": {"Pods": []}}}
    else:
        args = {"Pod": pod, "NodeNames": ["n1", "n2", "n3"]}
    body = orjson.dumps(args).replace(orjson.dumps(HOLE), deep(depth, kind))
    first = call(port, f"/{verb}", body)
    assert_clean(*first)
    assert call(port, f"/{verb}", body) == first  # no memo of an earlier request changes the answer
    if depth > 254:
        assert first[0] == b"HTTP/1.1 400 Bad Request"
        assert "nested more than 254 levels deep" in first[1]["Error"]


@pytest.mark.parametrize("depth", [250, 300, 1000])
def test_a_node_with_a_deep_unknown_key_is_400_naming_it(port: int, depth: int) -> None:
    node = {
        "metadata": {"name": "n2", "uid": "u2", "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
        "extra": HOLE,
    }
    body = orjson.dumps({"Pod": POD, "Nodes": {"items": [node]}}).replace(
        orjson.dumps(HOLE), deep(depth, "object")
    )
    status, answer = call(port, "/filter", body)
    assert_clean(status, answer)
    if depth > 254:
        assert status == b"HTTP/1.1 400 Bad Request"
        assert answer["Error"].startswith("Nodes.items[0].extra.a.a.")
    else:
        assert status == b"HTTP/1.1 200 OK" and answer["Error"] == ""
    assert call(port, "/filter", body) == (status, answer)
