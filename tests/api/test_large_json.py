"""Large JSON documents: decoded a chunk at a time, measured with an early exit, freed a slice at a time."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.decoding import JSON_CHUNK_BYTES, JsonSyntaxError, dismantle, loads_as_go, loads_in_chunks
from app.api.depth import json_larger_than

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)  # fmt: skip


def test_a_document_larger_than_a_chunk_decodes_as_orjson_decodes_it() -> None:
    doc = {
        "Pod": {"metadata": {"name": "web"}},
        "Nodes": {"items": [{"n": i, "x": "é" * 50} for i in range(4000)]},
    }
    body = orjson.dumps(doc)
    assert len(body) > 4 * JSON_CHUNK_BYTES
    assert loads_in_chunks(body) == orjson.loads(body) == doc


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a": 1} {"b": 2}', "trailing garbage"),
        (b'{"a": [1, 2', "premature EOF"),
        (b"", "premature EOF"),
        (b'{"a": NaN}', "invalid char"),
        (b'"\xff"', "invalid bytes in UTF8 string"),
    ],
)
def test_what_does_not_parse_is_an_error_with_the_parsers_words(body: bytes, message: str) -> None:
    with pytest.raises(JsonSyntaxError, match=message):
        loads_in_chunks(body)


@given(json_values)
def test_the_size_bound_agrees_with_orjson(doc: Any) -> None:
    size = len(orjson.dumps(doc))
    assert json_larger_than(doc, size - 1)
    assert not json_larger_than(doc, size)


def test_the_size_bound_stops_early_on_a_huge_value() -> None:
    terms = [{"matchExpressions": [{"key": f"k{i}", "values": ["v"]}]} for i in range(200_000)]
    assert json_larger_than({"spec": {"terms": terms}}, 1 << 20)


def test_dismantling_empties_every_container() -> None:
    inner = [{"k": [1, 2, {"deep": ["x"] * 10}]} for _ in range(1000)]
    doc = {"a": {"b": inner}, "c": [[], {}]}
    nested = doc["a"]["b"][0]["k"][2]
    dismantle(doc)
    assert doc == {} and inner == [] and nested == {"deep": ["x"] * 10}  # a long list's items go in slices
    small = {"a": {"b": [1]}}
    middle = small["a"]
    dismantle(small)
    assert small == {} and middle == {}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"name": "a\\ud800"}', {"name": "a\ufffd"}),  # Go's decoder accepts it, as U+FFFD
        (b'["\\udc00x", {"\\ud800": 1}]', ["\ufffdx", {"\ufffd": 1}]),
    ],
)
def test_what_go_accepts_and_orjson_refuses_is_decoded(body: bytes, expected: Any) -> None:
    assert loads_as_go(body) == expected


@pytest.mark.parametrize("body", [b'{"x": NaN}', b'{"x": 1e400}', b'{"x": 1', b"[" * 3000 + b"]" * 3000])
def test_what_go_refuses_is_refused(body: bytes) -> None:
    with pytest.raises(JsonSyntaxError):
        loads_as_go(body)
