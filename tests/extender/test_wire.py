"""Decoding ExtenderArgs and encoding the results exactly as kube-scheduler marshals them."""

from __future__ import annotations

import orjson
import pytest

from app.extender import wire
from app.extender.wire import (
    FilterResult,
    HostPriority,
    NodeCache,
    PodMemo,
    WireError,
    decode_args,
    encode_error,
    encode_filter_result,
    encode_host_priorities,
    encode_scores,
)
from builders import make_node, node_dict, pod_dict


def body(obj: object) -> bytes:
    return orjson.dumps(obj)


def test_decode_node_names() -> None:
    args = decode_args(body({"Pod": pod_dict("web"), "Nodes": None, "NodeNames": ["a", "b"]}))
    assert args.pod.name == "web"
    assert args.node_names == ["a", "b"]
    assert args.nodes is None


def test_decode_nodes_keeps_the_input_objects() -> None:
    raw = node_dict("a")
    raw["metadata"]["annotations"] = {"x": "y"}
    raw["somethingBerthIgnores"] = [1, 2]
    args = decode_args(
        body({"Pod": pod_dict(), "Nodes": {"metadata": {}, "items": [raw]}, "NodeNames": None})
    )
    assert args.node_names is None
    assert args.nodes is not None
    assert [n.name for n in args.nodes] == ["a"]
    assert args.nodes[0].raw == raw


@pytest.mark.parametrize(
    "keys",
    [("pod", "nodenames"), ("POD", "NODENAMES"), ("pOd", "nodeNames")],
)
def test_keys_match_case_insensitively(keys: tuple[str, str]) -> None:
    args = decode_args(body({keys[0]: pod_dict("web"), keys[1]: ["a"]}))
    assert args.pod.name == "web"
    assert args.node_names == ["a"]


def test_node_list_items_key_matches_case_insensitively() -> None:
    args = decode_args(body({"Pod": pod_dict(), "nodes": {"Items": [node_dict("a")]}}))
    assert args.nodes is not None and [n.name for n in args.nodes] == ["a"]


def test_the_last_of_duplicate_keys_wins_as_in_go() -> None:
    raw = (
        b'{"Pod": {"metadata": {"name": "first"}}, "pod": {"metadata": {"name": "second"}}, "NodeNames": []}'
    )
    assert decode_args(raw).pod.name == "second"


def test_nodes_wins_over_node_names() -> None:
    args = decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [node_dict("a")]}, "NodeNames": ["b"]}))
    assert args.nodes is not None and args.node_names is None


def test_null_items_is_an_empty_node_list() -> None:
    # Go marshals an empty v1.NodeList's nil Items as null.
    assert decode_args(body({"Pod": pod_dict(), "Nodes": {"metadata": {}, "items": None}})).nodes == []


def test_unknown_keys_are_ignored() -> None:
    assert decode_args(body({"Pod": pod_dict(), "NodeNames": [], "Extra": 1})).node_names == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "request body is not valid JSON"),
        (b"", "request body is not valid JSON"),
        (b"[]", "request body: expected a JSON object (ExtenderArgs), got array"),
        (body({"NodeNames": ["a"]}), "Pod: Required value"),
        (body({"Pod": None, "NodeNames": ["a"]}), "Pod: Required value"),
        (body({"Pod": "web", "NodeNames": ["a"]}), "Pod: expected an object (v1.Pod), got string"),
        (body({"Pod": pod_dict()}), "Nodes, NodeNames: Required value"),
        (body({"Pod": pod_dict(), "NodeNames": "a"}), "NodeNames: expected an array of strings, got string"),
        (body({"Pod": pod_dict(), "NodeNames": ["a", 3]}), "NodeNames[1]: expected a string, got number"),
        (body({"Pod": pod_dict(), "Nodes": []}), "Nodes: expected an object (v1.NodeList), got array"),
        (body({"Pod": pod_dict(), "Nodes": {"metadata": {}}}), "Nodes.items: Required value"),
        (body({"Pod": pod_dict(), "Nodes": {"items": {}}}), "Nodes.items: expected an array, got object"),
        (
            body({"Pod": pod_dict(), "Nodes": {"items": [node_dict("a"), 7]}}),
            "Nodes.items[1]: expected a Node",
        ),
        (
            body({"Pod": pod_dict(), "Nodes": {"items": [node_dict("a"), node_dict("b"), {"metadata": {}}]}}),
            "Nodes.items[2].metadata.name: Required value",
        ),
        (
            body({"Pod": pod_dict(requests=[{"cpu": "lots"}]), "NodeNames": []}),
            "Pod.spec.containers[0].resources.requests.cpu: ",
        ),
        (body({"Pod": {"metadata": {}}, "NodeNames": []}), "Pod.metadata.name: Required value"),
    ],
)
def test_bad_bodies_name_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(WireError) as err:
        decode_args(raw)
    assert str(err.value).startswith(message), str(err.value)


def test_filter_result_has_every_key_in_go_order_with_nulls() -> None:
    out = orjson.loads(encode_filter_result(FilterResult(node_names=["a"])))
    assert list(out) == ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
    assert out == {
        "Nodes": None,
        "NodeNames": ["a"],
        "FailedNodes": None,
        "FailedAndUnresolvableNodes": None,
        "Error": "",
    }


def test_filter_result_echoes_node_objects_in_a_node_list() -> None:
    node = make_node("a")
    out = orjson.loads(encode_filter_result(FilterResult(nodes=[node], failed={"b": "why"})))
    assert out["Nodes"] == {"metadata": {}, "items": [node.raw]}
    assert out["FailedNodes"] == {"b": "why"}
    assert out["NodeNames"] is None


def test_host_priorities_are_a_bare_array() -> None:
    assert encode_host_priorities([HostPriority("a", 7)]) == b'[{"Host":"a","Score":7}]'
    assert encode_host_priorities([]) == b"[]"


@pytest.mark.parametrize("host", ["node-1", 'quote"d', "back\\slash", "ünïcode-節點", "tab\there"])
@pytest.mark.parametrize("score", [0, 7, 10, 11, -1])
def test_scores_encode_as_a_json_encoder_would(host: str, score: int) -> None:
    expected = orjson.dumps([{"Host": host, "Score": score}, {"Host": "z", "Score": 3}])
    assert encode_scores([host, "z"], [score, 3]) == expected
    assert encode_scores([host, "z"], [score, 3]) == expected  # from the kept prefix


def test_kept_host_prefixes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "_HOST_PREFIXES_MAX", 3)
    monkeypatch.setattr(wire, "_HOST_PREFIXES", {})
    hosts = [f"n{i}" for i in range(10)]
    for host in hosts:
        assert orjson.loads(encode_scores([host], [1])) == [{"Host": host, "Score": 1}]
    assert len(wire._HOST_PREFIXES) <= 4


def test_error_body() -> None:
    assert orjson.loads(encode_error("bad")) == {"Error": "bad"}


def versioned(name: str, rv: str, cpu: str = "4") -> dict[str, object]:
    raw = node_dict(name, {"cpu": cpu})
    raw["metadata"]["resourceVersion"] = rv  # type: ignore[index]
    return raw


def test_node_cache_reuses_a_parse_but_echoes_this_requests_object() -> None:
    cache = NodeCache()
    first = versioned("a", "7")
    again = versioned("a", "7")
    again["status"]["extra"] = "only in the second"  # type: ignore[index]
    n1 = decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [first]}}), cache).nodes
    n2 = decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [again]}}), cache).nodes
    assert n1 is not None and n2 is not None
    assert len(cache) == 1
    assert n2[0].raw == again and n1[0].raw == first
    assert n2[0].allocatable is n1[0].allocatable  # parsed once
    out = orjson.loads(encode_filter_result(FilterResult(nodes=n2)))
    assert out["Nodes"]["items"] == [again]


def test_node_cache_parses_a_new_resource_version() -> None:
    cache = NodeCache()
    decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [versioned("a", "7", "4")]}}), cache)
    nodes = decode_args(
        body({"Pod": pod_dict(), "Nodes": {"items": [versioned("a", "8", "8")]}}), cache
    ).nodes
    assert nodes is not None and str(nodes[0].allocatable["cpu"]) == "8"
    assert len(cache) == 2


def test_node_cache_skips_objects_without_a_version_and_stays_bounded() -> None:
    cache = NodeCache(capacity=2)
    decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [node_dict("plain")]}}), cache)
    assert len(cache) == 0
    items = [versioned(f"n{i}", "1") for i in range(5)]
    decode_args(body({"Pod": pod_dict(), "Nodes": {"items": items}}), cache)
    assert len(cache) == 2


def test_node_cache_still_reports_bad_objects() -> None:
    bad = versioned("a", "1")
    bad["status"]["allocatable"] = {"cpu": "x"}  # type: ignore[index]
    with pytest.raises(WireError, match=r"^Nodes.items\[0\].status.allocatable.cpu: "):
        decode_args(body({"Pod": pod_dict(), "Nodes": {"items": [bad]}}), NodeCache())


def test_pod_memo_returns_the_pod_parsed_for_an_equal_object() -> None:
    memo = PodMemo()
    first = decode_args(body({"Pod": pod_dict("web"), "NodeNames": ["a"]}), pod_memo=memo).pod
    again = decode_args(body({"Pod": pod_dict("web"), "NodeNames": ["b"]}), pod_memo=memo).pod
    assert again is first
    edited = pod_dict("web")
    edited["metadata"]["labels"] = {"tier": "db"}
    other = decode_args(body({"Pod": edited, "NodeNames": ["a"]}), pod_memo=memo).pod
    assert other is not first and other.labels == {"tier": "db"} and other.uid == first.uid


def test_pod_memo_still_reports_bad_pods() -> None:
    memo = PodMemo()
    decode_args(body({"Pod": pod_dict("web"), "NodeNames": ["a"]}), pod_memo=memo)
    bad = pod_dict("web")
    bad["spec"]["containers"] = "nope"
    with pytest.raises(WireError, match=r"^Pod.spec.containers: "):
        decode_args(body({"Pod": bad, "NodeNames": ["a"]}), pod_memo=memo)
