"""POST /preempt over HTTP: both victim forms, the wire shape, errors as 200 + Error, 400 and 413."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from prometheus_client import REGISTRY

from app.config import load_config
from app.framework.status import Code, Status
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.simulate import load_state
from builders import pod_dict

if TYPE_CHECKING:
    from starlette.testclient import TestClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUSY = "uid-default-busy"  # the 1500m pod on n1 (conftest), priority 0


def preemptor(cpu: str = "1") -> dict[str, Any]:
    return pod_dict("hi", requests=[{"cpu": cpu}], priority=100)


def meta(**victims: list[str]) -> dict[str, Any]:
    return {n: {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": 0} for n, uids in victims.items()}


def post(client: TestClient, body: Any) -> Any:
    r = client.post("/preempt", content=body if isinstance(body, bytes) else orjson.dumps(body))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    return r.json()


def requests_total(result: str) -> float:
    value = REGISTRY.get_sample_value("berth_extender_requests_total", {"verb": "preempt", "result": result})
    return value or 0.0


# --- both forms --------------------------------------------------------------------------------


def test_meta_victims(client: TestClient) -> None:
    before = requests_total("success")
    out = post(
        client,
        {
            "Pod": preemptor(),
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": meta(n1=[BUSY], ghost=["x"]),
        },
    )
    # n1 keeps its victim; berth has no node "ghost", so its /filter would reject the pod there.
    assert out == {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 0}}}
    assert requests_total("success") == before + 1


def test_full_victims_answer_uids(client: TestClient) -> None:
    busy = pod_dict("busy", requests=[{"cpu": "1500m", "memory": "1Gi"}], nodeName="n1")
    out = post(
        client,
        {"Pod": preemptor(), "NodeNameToVictims": {"n1": {"Pods": [busy], "NumPDBViolations": 0}}},
    )
    assert out == {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 0}}}


def test_keys_match_case_insensitively(client: TestClient) -> None:
    busy = pod_dict("busy", requests=[{"cpu": "1500m"}], nodeName="n1")
    out = post(
        client, {"pod": preemptor(), "nodenametovictims": {"n1": {"pods": [busy], "numpdbviolations": 0}}}
    )
    assert out["NodeNameToMetaVictims"] == {"n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 0}}
    out = post(client, {"POD": preemptor(), "NodeNameToMetaVictims": {"n1": {"PODS": [{"uid": BUSY}]}}})
    assert out["NodeNameToMetaVictims"] == {"n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 0}}


def test_every_node_vetoed_is_an_empty_map(client: TestClient) -> None:
    # 3 CPUs cannot fit on a 2-CPU node, whatever is evicted.
    out = post(client, {"Pod": preemptor("3"), "NodeNameToMetaVictims": meta(n1=[BUSY])})
    assert out == {"NodeNameToMetaVictims": {}}


# --- errors answered with 200 -----------------------------------------------------------------


def test_engine_error_echoes_the_request_with_error(
    engine: Engine, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    fwk = next(iter(engine.profiles.values()))

    def broken(*_: object) -> tuple[None, Status, set[str]]:
        return None, Status(Code.ERROR, "exploded", plugin="NodeAffinity"), set()

    monkeypatch.setattr(fwk, "run_pre_filter_plugins", broken)
    before = requests_total("error")
    victims = {
        "n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 2},
        "ghost": {"Pods": [], "NumPDBViolations": 0},
    }
    out = post(make_client(engine), {"Pod": preemptor(), "NodeNameToMetaVictims": victims})
    assert out == {"NodeNameToMetaVictims": victims, "Error": 'running plugin "NodeAffinity": exploded'}
    assert requests_total("error") == before + 1


def test_unexpected_exception_echoes_the_request(
    engine: Engine, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(engine, "new_cycle_state", crash)
    r = make_client(engine).post(
        "/preempt", json={"Pod": preemptor(), "NodeNameToMetaVictims": meta(n1=[BUSY])}
    )
    assert r.status_code == 200
    assert r.json() == {
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": BUSY}], "NumPDBViolations": 0}},
        "Error": "internal error: KeyError: 'oops'",
    }
    assert "Traceback" not in r.text


# --- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b"", "request body is not valid JSON"),
        (b"[]", "request body: expected a JSON object (ExtenderPreemptionArgs), got array"),
        (orjson.dumps({"NodeNameToMetaVictims": {}}), "Pod: Required value"),
        (
            orjson.dumps({"Pod": "hi", "NodeNameToMetaVictims": {}}),
            "Pod: expected an object (v1.Pod), got string",
        ),
        (orjson.dumps({"Pod": preemptor()}), "NodeNameToVictims, NodeNameToMetaVictims: Required value"),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToMetaVictims": [{"UID": BUSY}]}),
            "NodeNameToMetaVictims: expected an object (node name to MetaVictims), got array",
        ),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToVictims": "n1"}),
            "NodeNameToVictims: expected an object (node name to Victims), got string",
        ),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToVictims": {"n1": [BUSY]}}),
            "NodeNameToVictims[n1]: expected an object (Victims), got array",
        ),
        (
            orjson.dumps({"Pod": pod_dict(requests=[{"cpu": "1x"}]), "NodeNameToMetaVictims": {}}),
            "Pod.spec.containers[0].resources.requests.cpu: ",
        ),
    ],
)
def test_bad_requests_are_400_with_an_error(client: TestClient, body: bytes, message: str) -> None:
    before = requests_total("bad_request")
    r = client.post("/preempt", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    assert list(r.json()) == ["Error"]
    assert r.json()["Error"].startswith(message), r.json()["Error"]
    assert requests_total("bad_request") == before + 1


def test_too_large_body_is_413(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_request_bytes=1024)
    body = orjson.dumps(
        {"Pod": preemptor(), "NodeNameToMetaVictims": meta(n1=[f"uid-{i}" for i in range(100)])}
    )
    r = client.post("/preempt", content=body)
    assert r.status_code == 413
    assert r.json() == {"Error": "request body larger than the limit of 1024 bytes"}

    def chunks() -> Iterator[bytes]:
        yield b'{"Pod": ' + orjson.dumps(preemptor()) + b', "NodeNameToMetaVictims": {"n1": {"Pods": ['
        for _ in range(100):
            yield b'{"UID": "aaaaaaaaaaaaaaaaaaaa"},'
        yield b'{"UID": "a"}]}}}'

    r = client.post("/preempt", content=chunks())
    assert "content-length" not in r.request.headers
    assert r.status_code == 413


def test_get_is_405(client: TestClient) -> None:
    r = client.get("/preempt")
    assert (r.status_code, r.headers["allow"]) == (405, "POST")


# --- documentation and the example ---------------------------------------------------------------


def test_openapi_documents_the_preempt_types(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    op = doc["paths"]["/preempt"]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ExtenderPreemptionArgs"}
    schemas = doc["components"]["schemas"]
    args = schemas["ExtenderPreemptionArgs"]
    assert set(args["properties"]) == {"Pod", "NodeNameToVictims", "NodeNameToMetaVictims"}
    assert "Victims" in schemas
    assert any(name.startswith("MetaVictims") for name in schemas)
    assert "ExtenderPreemptionResult" in schemas


@pytest.fixture
def example_client(make_client: Callable[..., TestClient]) -> TestClient:
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    state = load_state(str(EXAMPLES / "state.yaml"))
    for node in state.nodes:
        engine.cache.add_node(node)
    for pod in state.running:
        engine.cache.add_pod(pod)
    return make_client(engine)


def test_example_preempt(example_client: TestClient) -> None:
    out = post(example_client, (EXAMPLES / "preempt.json").read_bytes())
    # node-1 and node-2 each need their one victim for 3500m; node-4's taint is not tolerated, so
    # evicting there (a pod berth does not even know) would not help: vetoed.
    assert out == {
        "NodeNameToMetaVictims": {
            "node-1": {"Pods": [{"UID": "0b7c1f3e-0000-4000-8000-000000000001"}], "NumPDBViolations": 0},
            "node-2": {"Pods": [{"UID": "0b7c1f3e-0000-4000-8000-000000000002"}], "NumPDBViolations": 0},
        }
    }
