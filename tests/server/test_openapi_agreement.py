"""The published OpenAPI document and the verbs' decoders agree on which bodies are acceptable.

A small validator for the parts of JSON Schema the document uses for these checks (``required``,
``anyOf`` of ``required``, ``properties``, ``$ref``, ``type: object``) runs the request schemas of
/openapi.json; the decoders (app.extender.wire, app.extender.bind) run the same bodies.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from server.conftest import TestClient

from app.extender.bind import decode_binding_args
from app.extender.wire import WireError, decode_args, decode_preemption_args


def valid(schema: dict[str, Any], value: Any, components: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return valid(components[schema["$ref"].rsplit("/", 1)[1]], value, components)
    if "anyOf" in schema and not any(valid(alt, value, components) for alt in schema["anyOf"]):
        return False
    if schema.get("type") == "object" or "required" in schema or "properties" in schema:
        if not isinstance(value, dict):
            return schema.get("type") != "object" and "required" not in schema
        if any(key not in value for key in schema.get("required", ())):
            return False
        for key, sub in schema.get("properties", {}).items():
            if key in value and value[key] is not None and not valid(sub, value[key], components):
                return False
    return True


def request_schema(doc: dict[str, Any], path: str) -> dict[str, Any]:
    schema: dict[str, Any] = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    return schema


POD = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c"}]}}
CASES: list[tuple[str, Any]] = [
    ("/filter", {"Pod": {}}),
    ("/filter", {"Pod": {}, "NodeNames": ["n1"]}),
    ("/filter", {"Pod": POD}),
    ("/filter", {"Pod": POD, "NodeNames": ["n1"]}),
    ("/filter", {"Pod": POD, "Nodes": {"items": None}}),
    ("/prioritize", {"Pod": {"metadata": {}}, "NodeNames": []}),
    ("/preempt", {"Pod": POD}),
    ("/preempt", {"Pod": POD, "NodeNameToMetaVictims": {}}),
    ("/preempt", {"Pod": {}, "NodeNameToVictims": {}}),
    ("/bind", {"PodName": "a", "PodNamespace": "ns", "Node": "n1"}),
    ("/bind", {"PodName": "a", "PodNamespace": "ns", "PodUID": "u", "Node": "n1"}),
    ("/bind", {"PodNamespace": "ns", "Node": "n1"}),
]
DECODERS = {
    "/filter": decode_args,
    "/prioritize": decode_args,
    "/preempt": decode_preemption_args,
    "/bind": decode_binding_args,
}


@pytest.mark.parametrize(("path", "body"), CASES)
def test_the_schema_accepts_what_the_decoder_accepts(client: TestClient, path: str, body: Any) -> None:
    doc = client.get("/openapi.json").json()
    components = doc["components"]["schemas"]
    try:
        DECODERS[path](orjson.dumps(body))  # type: ignore[operator]
        accepted = True
    except WireError:
        accepted = False
    assert valid(request_schema(doc, path), body, components) == accepted
