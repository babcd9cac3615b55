"""``-o json`` written pod by pod (app/simulate/stream.py): the same text as the whole-document
format_json, for every example state, with and without the comparison."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from simulate.simhelpers import default_setup

from app.simulate import (
    format_json,
    load_state,
    new_engine,
    node_utilization,
    run_simulation,
    simulate,
    write_json,
)
from app.simulate.runner import SimulationResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STATES = sorted((EXAMPLES / "simulate").glob("*.yaml"))


@pytest.mark.parametrize("path", STATES, ids=lambda p: p.name)
def test_streamed_json_is_the_same_text(path: Path) -> None:
    cfg, registry = default_setup()
    state = load_state(str(path))
    engine = new_engine(state, cfg, registry, seed=3)
    result = run_simulation(state, engine)
    nodes = node_utilization(engine, state.nodes)
    out = io.StringIO()
    write_json(out, result, 3, nodes)
    assert out.getvalue() == format_json(result, 3, nodes)


def test_empty_arrays_and_extra_keys() -> None:
    out = io.StringIO()
    write_json(
        out, SimulationResult([], 0), None, (), {"comparison": {"moved": [], "a": {"x": "multi\nline"}}}
    )
    doc = json.loads(out.getvalue())
    assert doc["pods"] == [] and doc["nodes"] == []
    assert doc["comparison"] == {"moved": [], "a": {"x": "multi\nline"}}
    assert out.getvalue().endswith("\n}\n")


def test_simulate_streams_to_out_and_returns_no_text() -> None:
    cfg, registry = default_setup()
    state = str(EXAMPLES / "simulate" / "basic.yaml")
    whole, _ = simulate(state, cfg, registry, seed=1, output="json")
    out = io.StringIO()
    text, _ = simulate(state, cfg, registry, seed=1, output="json", out=out)
    assert text == ""
    assert out.getvalue() == whole
    # Tables are not streamed: the text comes back as before.
    table, _ = simulate(state, cfg, registry, seed=1, output="table", out=out)
    assert table.startswith("POD ")
