"""/metrics, /configz, /version and the OpenAPI documents."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.scheduler.scheduler import Engine
from builders import pod_dict

if TYPE_CHECKING:
    from starlette.testclient import TestClient


def test_metrics_expose_scheduler_extender_and_http_metrics(client: TestClient) -> None:
    pod = pod_dict("web", requests=[{"cpu": "1"}])
    assert client.post("/filter", json={"Pod": pod, "NodeNames": ["n1", "n2"]}).status_code == 200
    assert client.post("/prioritize", json={"Pod": pod, "NodeNames": ["n1", "n2"]}).status_code == 200
    assert client.post("/filter", content=b"{").status_code == 400
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'scheduler_framework_extension_point_duration_seconds_count{extension_point="PreFilter"' in text
    assert 'extension_point="Score",profile="default-scheduler",status="Success"' in text
    assert 'berth_extender_requests_total{result="success",verb="filter"}' in text
    assert 'berth_extender_requests_total{result="success",verb="prioritize"}' in text
    assert 'berth_extender_requests_total{result="bad_request",verb="filter"}' in text
    assert 'http_requests_total{handler="/filter",method="POST",status="2xx"}' in text
    assert 'http_request_duration_seconds_bucket{handler="/prioritize"' in text


def test_probes_are_not_counted_as_http_requests(client: TestClient) -> None:
    client.get("/readyz")
    client.get("/livez/ping")
    text = client.get("/metrics").text
    assert 'handler="/readyz"' not in text
    assert 'handler="/livez' not in text


def test_http_metrics_count_in_a_second_app(make_client: Callable[..., TestClient]) -> None:
    def filter_count(text: str) -> float:
        prefix = 'http_requests_total{handler="/filter",method="POST",status="2xx"} '
        return next(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))

    first, second = make_client(), make_client()
    body = {"Pod": pod_dict(), "NodeNames": ["n2"]}
    first.post("/filter", json=body)
    before = filter_count(first.get("/metrics").text)
    second.post("/filter", json=body)
    assert filter_count(second.get("/metrics").text) == before + 1


def test_configz(engine: Engine, make_client: Callable[..., TestClient]) -> None:
    dump: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    r = make_client(engine, config_dump=dump).get("/configz")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"componentconfig": dump}


def test_configz_of_the_real_configuration(client: TestClient) -> None:
    cfg = client.get("/configz").json()["componentconfig"]
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert cfg["profiles"][0]["schedulerName"] == "default-scheduler"


def test_version(make_client: Callable[..., TestClient]) -> None:
    info = make_client(version="0.1.0").get("/version").json()
    assert info["gitVersion"] == "v0.1.0"
    assert (info["major"], info["minor"]) == ("0", "1")
    for key in ("gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"):
        assert isinstance(info[key], str)
    assert make_client(version="v1.2.3-dev").get("/version").json()["gitVersion"] == "v1.2.3-dev"


def test_openapi_documents_the_verbs_and_wire_types(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    assert {
        "/filter",
        "/prioritize",
        "/healthz",
        "/readyz",
        "/livez",
        "/metrics",
        "/configz",
        "/version",
    } <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    assert set(schemas["ExtenderArgs"]["properties"]) == {"Pod", "Nodes", "NodeNames"}
    assert set(schemas["ExtenderFilterResult"]["properties"]) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }
    assert set(schemas["HostPriority"]["properties"]) == {"Host", "Score"}
    filter_op = doc["paths"]["/filter"]["post"]
    assert filter_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ExtenderArgs"
    }
    assert {"200", "400", "413"} <= set(filter_op["responses"])
    prioritize_200 = doc["paths"]["/prioritize"]["post"]["responses"]["200"]["content"]["application/json"]
    assert prioritize_200["schema"]["type"] == "array"
    # Every $ref resolves.
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref


def test_docs_page(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    assert "swagger" in r.text.lower()
