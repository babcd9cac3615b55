"""State files load through libyaml's C parser when PyYAML has it, with the pure-Python loader as the
judge of anything libyaml refuses: the same objects either way, the same errors naming line and column."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.simulate import StateError, parse_state
from app.simulate import state as state_module

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "simulate").glob("*.yaml"))


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_libyaml_is_used_when_present() -> None:
    assert state_module._FastStateLoader is not None
    assert issubclass(state_module._FastStateLoader, yaml.CSafeLoader)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_same_documents_as_the_pure_python_loader(path: Path) -> None:
    text = path.read_text()
    assert state_module._yaml_documents(text, str(path)) == state_module._python_yaml_documents(
        text, str(path)
    )


def test_timestamps_stay_strings_and_huge_integers_are_named() -> None:
    node = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  creationTimestamp: 2024-05-01T10:00:00Z\n"
        'status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}\n'
    )
    assert [n.name for n in parse_state(node).nodes] == ["n1"]
    with pytest.raises(StateError, match=r"spec.priority"):
        parse_state(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priority: " + "9" * 5000 + "\n"
            "  containers: [{name: c, image: x}]\n"
        )


def test_errors_name_line_and_column_as_before() -> None:
    with pytest.raises(StateError) as err:
        parse_state("apiVersion: v1\nkind: Node\nmetadata: {name: [unclosed\n", "bad.yaml")
    assert str(err.value).startswith("bad.yaml: line 4, column 1: invalid YAML (document 1)")


def test_nesting_libyaml_refuses_still_loads() -> None:
    # libyaml stops flow collections at 1,000 levels; PyYAML composes them, and the state's own depth
    # check (not the parser) then names the field, as it does without libyaml.
    deep = "[" * 1100 + "]" * 1100
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\ndata: {deep}\n"
    with pytest.raises(StateError) as err:
        parse_state(text, "deep.yaml")
    assert "nested more than" in str(err.value)
    assert str(err.value).startswith("deep.yaml: ")
