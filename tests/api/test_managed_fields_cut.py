"""Watch events decoded without their managedFields: cut from the text only where that is certain.

Whatever the event, decoding the cut text gives what decoding the whole text and dropping the
object's ``metadata.managedFields`` gives, or the text is left whole.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from app.api.decoding import cut_managed_fields, loads_without_managed_fields


def managed_entry(manager: str, field_key: str = "f:app") -> dict[str, Any]:
    """One managedFields entry as the API server writes it."""
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-12-04T17:53:38Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, field_key: {}}}, "f:spec": {"f:nodeName": {}}},
    }


def pod_event(managed: list[dict[str, Any]] | None, **extra_meta: Any) -> dict[str, Any]:
    """A watch event of a pod in the API server's field order (managedFields last in metadata)."""
    meta: dict[str, Any] = {
        "name": "web-0",
        "namespace": "apps",
        "uid": "1af2c799",
        "resourceVersion": "5230",
        "labels": {"app": "web"},
        "annotations": {"note": 'say "hi" [1] {2}'},
        **extra_meta,
    }
    if managed is not None:
        meta["managedFields"] = managed
    return {
        "type": "ADDED",
        "object": {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": meta,
            "spec": {
                "nodeName": "node-1",
                "containers": [{"name": "c", "image": "nginx", "args": ["a", "[b]"]}],
            },
            "status": {"phase": "Running"},
        },
    }


def dropped(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` as every pod and node decoder keeps it: without the object's managedFields."""
    event = orjson.loads(orjson.dumps(event))
    event["object"]["metadata"].pop("managedFields", None)
    return event


def assert_decodes_as_whole_less_managed_fields(data: bytes) -> None:
    cut = cut_managed_fields(data)
    assert cut == data or orjson.loads(cut) == dropped(orjson.loads(data))
    assert loads_without_managed_fields(data) in (orjson.loads(data), dropped(orjson.loads(data)))


def test_the_api_servers_shape_is_cut_to_the_document_without_managed_fields() -> None:
    event = pod_event([managed_entry("kubectl"), managed_entry("kube-controller-manager", "f:tier")])
    data = orjson.dumps(event)
    cut = cut_managed_fields(data)
    assert len(cut) < len(data)
    assert b"managedFields" not in cut
    assert orjson.loads(cut) == dropped(event)


def test_managers_and_keys_with_quotes_and_escapes_are_cut_exactly() -> None:
    tricky = ['a},"spec":{', 'q"uo\\"te', "back\\slash\\", "tab\tnew\nline", "é ☃ \u2028", "<&>"]
    event = pod_event([managed_entry(m, f"k:{{{json.dumps(m)}}}") for m in tricky])
    data = orjson.dumps(event)
    assert orjson.loads(cut_managed_fields(data)) == dropped(event)
    # Go escapes <, > and & inside strings: the same cut.
    go_escaped = data.replace(b"<", b"\\u003c").replace(b"&", b"\\u0026")
    assert orjson.loads(cut_managed_fields(go_escaped)) == dropped(event)


def test_a_bracket_inside_a_manager_leaves_the_document_whole() -> None:
    for manager in ['a]},"spec":{', "[", "]"]:
        data = orjson.dumps(pod_event([managed_entry(manager)]))
        assert cut_managed_fields(data) == data


def test_documents_the_cut_is_not_certain_of_are_left_whole() -> None:
    whole = [pod_event(None), pod_event([])]  # none; an empty list ("[]" then "}") is cut as any other
    reordered = pod_event([managed_entry("m")])
    meta = reordered["object"]["metadata"]
    reordered["object"]["metadata"] = {"managedFields": meta.pop("managedFields"), **meta}  # not last
    nested_array = pod_event([{**managed_entry("m"), "extra": [1, 2]}])
    ephemeral = pod_event([managed_entry("m")])
    ephemeral["object"]["spec"]["volumes"] = [
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"metadata": {"managedFields": []}}}}
    ]
    for event in [*whole, reordered, nested_array, ephemeral]:
        data = orjson.dumps(event)
        assert_decodes_as_whole_less_managed_fields(data)
    # Pretty-printed, or no metadata-level managedFields but a string that looks like one: whole.
    pretty = json.dumps(pod_event([managed_entry("m")]), indent=1).encode()
    assert cut_managed_fields(pretty) == pretty
    lookalike = orjson.dumps(pod_event(None, annotations={"x": ',"managedFields":[1]},"spec":{'}))
    assert cut_managed_fields(lookalike) == lookalike
    assert cut_managed_fields(orjson.dumps(nested_array)) == orjson.dumps(nested_array)
    assert cut_managed_fields(orjson.dumps(ephemeral)) == orjson.dumps(ephemeral)
    assert cut_managed_fields(orjson.dumps(reordered)) == orjson.dumps(reordered)


def test_a_node_and_a_bookmark_decode_as_whole_less_managed_fields() -> None:
    node = {
        "type": "MODIFIED",
        "object": {
            "kind": "Node",
            "apiVersion": "v1",
            "metadata": {"name": "n1", "managedFields": [managed_entry("kubelet")]},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    }
    assert len(cut_managed_fields(orjson.dumps(node))) < len(orjson.dumps(node))
    assert loads_without_managed_fields(orjson.dumps(node)) == dropped(node)
    bookmark = {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "12"}}}
    assert loads_without_managed_fields(orjson.dumps(bookmark)) == bookmark


strings = st.text(alphabet=st.sampled_from('ab[]{}",:\\/\n\té☃'), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=12,
)


@given(
    managers=st.lists(strings, max_size=3),
    extra=st.dictionaries(strings, json_values, max_size=3),
    entry_extra=json_values,
    labels=st.dictionaries(strings, strings, max_size=3),
    after=st.sampled_from(["spec", "status", None]),
)
def test_any_document_decodes_as_whole_less_managed_fields(
    managers: list[str], extra: dict[str, Any], entry_extra: Any, labels: dict[str, str], after: str | None
) -> None:
    event = pod_event([{**managed_entry(m), "x": entry_extra} for m in managers], labels=labels)
    event["object"].update(extra)
    if after is None:
        del event["object"]["spec"], event["object"]["status"]
    elif after == "status":
        del event["object"]["spec"]
    assert_decodes_as_whole_less_managed_fields(orjson.dumps(event))
