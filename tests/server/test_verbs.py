"""POST /filter and /prioritize over HTTP: both node forms, wire shapes, and every error answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from app.framework.status import Code, Status
from app.scheduler.algorithm import SchedulingError
from app.scheduler.scheduler import Engine
from app.simulate import load_state
from builders import node_dict, pod_dict

if TYPE_CHECKING:
    from starlette.testclient import TestClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALLOCATABLE = {"cpu": "2", "memory": "4Gi", "pods": "110"}
FILTER_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]


def web_pod() -> dict[str, Any]:
    return pod_dict("web", requests=[{"cpu": "1", "memory": "1Gi"}])


# --- filter -------------------------------------------------------------------------------


def test_filter_node_names(client: TestClient) -> None:
    r = client.post(
        "/filter", json={"Pod": web_pod(), "Nodes": None, "NodeNames": ["n1", "n2", "gone", "n3"]}
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    out = r.json()
    assert list(out) == FILTER_KEYS
    assert out == {
        "Nodes": None,
        "NodeNames": ["n2", "n3"],
        "FailedNodes": {"n1": "Insufficient cpu", "gone": 'node "gone" not found in berth\'s cache'},
        "FailedAndUnresolvableNodes": None,
        "Error": "",
    }


def test_filter_nodes_echoes_the_input_objects(client: TestClient) -> None:
    n2 = node_dict("n2", ALLOCATABLE)
    n2["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    n2["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    n2["unknownTopLevelField"] = {"kept": True}
    fresh = node_dict("fresh", ALLOCATABLE)
    request = {
        "Pod": web_pod(),
        "Nodes": {"metadata": {}, "items": [node_dict("n1", ALLOCATABLE), n2, fresh]},
    }
    out = client.post("/filter", json=request).json()
    assert list(out) == FILTER_KEYS
    assert out["Nodes"] == {"metadata": {}, "items": [n2, fresh]}
    assert out["NodeNames"] is None
    # n1 arrives looking idle; the cache knows the 1500m pod on it.
    assert out["FailedNodes"] == {"n1": "Insufficient cpu"}
    assert out["FailedAndUnresolvableNodes"] is None
    assert out["Error"] == ""


def test_filter_unresolvable(engine: Engine, make_client: Callable[..., TestClient]) -> None:
    from builders import make_node

    engine.cache.add_node(make_node("cordoned", ALLOCATABLE, unschedulable=True))
    out = make_client(engine).post("/filter", json={"Pod": web_pod(), "NodeNames": ["cordoned", "n2"]}).json()
    assert out["NodeNames"] == ["n2"]
    assert out["FailedNodes"] is None
    assert out["FailedAndUnresolvableNodes"] == {"cordoned": "node(s) were unschedulable"}


def test_filter_nothing_passes(client: TestClient) -> None:
    out = client.post(
        "/filter", json={"Pod": pod_dict(requests=[{"cpu": "64"}]), "NodeNames": ["n1", "n2"]}
    ).json()
    assert out["NodeNames"] == []
    # More than a node's whole allocatable: preemption cannot help, so it is unresolvable.
    assert out["FailedNodes"] is None
    assert out["FailedAndUnresolvableNodes"] == {"n1": "Insufficient cpu", "n2": "Insufficient cpu"}


@pytest.mark.parametrize(
    "request_body",
    [
        {"pod": "POD", "nodenames": "NODENAMES"},
        {"POD": "POD", "NODENAMES": "NODENAMES"},
        {"pOD": "POD", "nodeNames": "NODENAMES"},
    ],
)
def test_request_keys_match_case_insensitively(client: TestClient, request_body: dict[str, str]) -> None:
    body = {k: web_pod() if v == "POD" else ["n1", "n2"] for k, v in request_body.items()}
    out = client.post("/filter", json=body).json()
    assert out["NodeNames"] == ["n2"]
    scores = client.post("/prioritize", json=body).json()
    assert [s["Host"] for s in scores] == ["n1", "n2"]


def test_lowercase_nodes_and_items(client: TestClient) -> None:
    out = client.post(
        "/filter", json={"pod": web_pod(), "nodes": {"Items": [node_dict("n2", ALLOCATABLE)]}}
    ).json()
    assert [n["metadata"]["name"] for n in out["Nodes"]["items"]] == ["n2"]


# --- prioritize ---------------------------------------------------------------------------


def test_prioritize_is_a_bare_array_of_integer_scores(client: TestClient) -> None:
    r = client.post("/prioritize", json={"Pod": web_pod(), "NodeNames": ["n1", "unknown", "n2", "n3"]})
    assert r.status_code == 200
    out = r.json()
    assert isinstance(out, list)
    assert [e["Host"] for e in out] == ["n1", "n2", "n3"]
    for entry in out:
        assert list(entry) == ["Host", "Score"]
        assert isinstance(entry["Score"], int) and 0 <= entry["Score"] <= 10
    assert out[1]["Score"] == out[2]["Score"] >= out[0]["Score"]


def test_prioritize_nodes_mode(client: TestClient) -> None:
    nodes = {"items": [node_dict("n1", ALLOCATABLE), node_dict("other", ALLOCATABLE)]}
    out = client.post("/prioritize", json={"Pod": web_pod(), "Nodes": nodes}).json()
    assert [e["Host"] for e in out] == ["n1", "other"]


def test_prioritize_empty_node_names(client: TestClient) -> None:
    assert client.post("/prioritize", json={"Pod": web_pod(), "NodeNames": []}).json() == []


# --- engine-side failures: HTTP 200 ----------------------------------------------------------


def test_missing_profile_is_an_error_in_the_body(make_client: Callable[..., TestClient]) -> None:
    client = make_client(profile="nope")
    r = client.post("/filter", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert r.status_code == 200
    assert r.json() == {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": None,
        "FailedAndUnresolvableNodes": None,
        "Error": 'no profile named "nope"',
    }
    r = client.post("/prioritize", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert (r.status_code, r.json()) == (200, [])


def test_plugin_error_is_an_error_in_the_body(
    engine: Engine, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object) -> None:
        raise SchedulingError(Status(Code.ERROR, "exploded", plugin="NodeAffinity"))

    monkeypatch.setattr(engine, "filter_nodes", fail)
    r = make_client(engine).post("/filter", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert (r.status_code, r.json()["Error"]) == (200, 'running plugin "NodeAffinity": exploded')


def test_unexpected_exception_is_200_with_error_and_no_traceback(
    engine: Engine, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(engine, "filter_nodes", crash)
    monkeypatch.setattr(engine, "score_nodes", crash)
    client = make_client(engine)
    r = client.post("/filter", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert r.status_code == 200
    assert list(r.json()) == FILTER_KEYS
    assert r.json()["Error"] == "internal error: KeyError: 'oops'"
    assert "Traceback" not in r.text
    r = client.post("/prioritize", json={"Pod": web_pod(), "NodeNames": ["n1"]})
    assert (r.status_code, r.json()) == (200, [])


# --- bad requests ---------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["/filter", "/prioritize"])
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b"", "request body is not valid JSON"),
        (b'"a string"', "request body: expected a JSON object (ExtenderArgs), got string"),
        (orjson.dumps({"NodeNames": ["n1"]}), "Pod: Required value"),
        (orjson.dumps({"Pod": [], "NodeNames": ["n1"]}), "Pod: expected an object (v1.Pod), got array"),
        (orjson.dumps({"Pod": web_pod(), "NodeNames": {"n1": 1}}), "NodeNames: expected an array of strings"),
        (orjson.dumps({"Pod": web_pod(), "NodeNames": [None]}), "NodeNames[0]: expected a string, got null"),
        (orjson.dumps({"Pod": web_pod(), "Nodes": {"kind": "NodeList"}}), "Nodes.items: Required value"),
        (orjson.dumps({"Pod": web_pod()}), "Nodes, NodeNames: Required value"),
        (
            orjson.dumps({"Pod": pod_dict(requests=[{"cpu": "1x"}]), "NodeNames": ["n1"]}),
            "Pod.spec.containers[0].resources.requests.cpu: ",
        ),
        (
            orjson.dumps(
                {
                    "Pod": web_pod(),
                    "Nodes": {"items": [node_dict("a"), node_dict("b"), node_dict("c"), {"spec": {}}]},
                }
            ),
            "Nodes.items[3].metadata.name: Required value",
        ),
    ],
)
def test_bad_requests_are_400_with_an_error(client: TestClient, verb: str, body: bytes, message: str) -> None:
    r = client.post(verb, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    assert list(r.json()) == ["Error"]
    assert r.json()["Error"].startswith(message), r.json()["Error"]


def test_bad_quantity_names_the_field_and_the_rule(client: TestClient) -> None:
    r = client.post("/filter", json={"Pod": pod_dict(requests=[{"cpu": "lots"}]), "NodeNames": ["n1"]})
    assert r.status_code == 400
    error = r.json()["Error"]
    assert error.startswith("Pod.spec.containers[0].resources.requests.cpu: ")
    assert len(error) > len("Pod.spec.containers[0].resources.requests.cpu: ")


def test_too_large_body_with_content_length(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_request_bytes=1024)
    body = orjson.dumps({"Pod": web_pod(), "NodeNames": [f"node-{i}" for i in range(200)]})
    r = client.post("/filter", content=body)
    assert r.status_code == 413
    assert r.json() == {"Error": "request body larger than the limit of 1024 bytes"}
    small = client.post("/filter", json={"Pod": web_pod(), "NodeNames": ["n2"]})
    assert small.status_code == 200


def test_too_large_streamed_body_without_content_length(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_request_bytes=1024)

    def chunks() -> Iterator[bytes]:
        yield b'{"Pod": {"metadata": {"name": "x"}}, "NodeNames": ['
        for _ in range(100):
            yield b'"aaaaaaaaaaaaaaaaaaaaaaaaa",'
        yield b'"a"]}'

    r = client.post("/prioritize", content=chunks())
    assert "content-length" not in r.request.headers
    assert r.status_code == 413
    assert "Error" in r.json()


def test_streamed_body_under_the_limit_is_read(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"Pod": ' + orjson.dumps(web_pod())
        yield b', "NodeNames": ["n2"]}'

    r = client.post("/filter", content=chunks())
    assert (r.status_code, r.json()["NodeNames"]) == (200, ["n2"])


def test_bad_content_length_is_400(client: TestClient) -> None:
    r = client.post("/filter", content=b"{}", headers={"content-length": "two"})
    assert r.status_code == 400
    assert "Content-Length" in r.json()["Error"]


def test_wrong_method_is_405_json(client: TestClient) -> None:
    r = client.get("/filter")
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"
    assert r.json() == {"Error": "Method Not Allowed"}
    assert client.put("/prioritize").status_code == 405


def test_unknown_path_is_404_json(client: TestClient) -> None:
    r = client.post("/no-such-verb", json={})
    assert r.status_code == 404
    assert r.json() == {"Error": "Not Found"}


# --- the example bodies ----------------------------------------------------------------------


@pytest.fixture
def example_client(make_client: Callable[..., TestClient]) -> TestClient:
    from app.config import load_config
    from app.plugins.registry import in_tree_registry

    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    state = load_state(str(EXAMPLES / "state.yaml"))
    for node in state.nodes:
        engine.cache.add_node(node)
    for pod in state.running:
        engine.cache.add_pod(pod)
    return make_client(engine)


def post_example(client: TestClient, verb: str, name: str) -> Any:
    r = client.post(
        verb, content=(EXAMPLES / name).read_bytes(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_example_filter_node_names(example_client: TestClient) -> None:
    out = post_example(example_client, "/filter", "filter-nodenames.json")
    assert out == {
        "Nodes": None,
        "NodeNames": ["node-1", "node-3"],
        "FailedNodes": {"node-2": "Insufficient cpu"},
        "FailedAndUnresolvableNodes": {"node-4": "node(s) had untolerated taint(s)"},
        "Error": "",
    }


def test_example_filter_nodes(example_client: TestClient) -> None:
    request = orjson.loads((EXAMPLES / "filter-nodes.json").read_bytes())
    out = post_example(example_client, "/filter", "filter-nodes.json")
    items = request["Nodes"]["items"]
    assert out["Nodes"] == {"metadata": {}, "items": [items[0], items[2]]}
    assert out["FailedNodes"] == {"node-2": "Insufficient cpu"}
    assert out["FailedAndUnresolvableNodes"] == {"node-4": "node(s) had untolerated taint(s)"}


def test_example_prioritize(example_client: TestClient) -> None:
    out = post_example(example_client, "/prioritize", "prioritize.json")
    # As examples/state.yaml's comment says: node-3 (total 463) scores highest, node-1 (435) next.
    assert out == [{"Host": "node-1", "Score": 9}, {"Host": "node-3", "Score": 10}]
