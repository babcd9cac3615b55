"""Registering out-of-tree plugins: from a module, from the ``berth.plugins`` entry points, and the errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.framework.interfaces import FilterPlugin, Plugin
from app.framework.registry import Registry, RegistryError
from app.plugins.registry import in_tree_registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"


@pytest.fixture
def example_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield
    sys.modules.pop("prefer_label", None)


def test_in_tree_names_and_extension_points() -> None:
    registry = in_tree_registry()
    assert registry.has("NodeResourcesFit") and not registry.has("Nope")
    assert registry.extension_points("NodeResourcesFit") == {"preFilter", "filter", "preScore", "score"}
    assert registry.extension_points("DefaultBinder") == {"bind"}


def test_load_module_registers_its_plugins(example_on_path: None) -> None:
    registry = Registry()
    registry.load_module("prefer_label")
    assert registry.names() == ["PreferLabel"]
    assert registry.extension_points("PreferLabel") == {"filter", "score"}


def test_load_entry_points(example_on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "berth_example-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: berth-example\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[berth.plugins]\nPreferLabel = prefer_label:PreferLabel\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    registry.load_entry_points()
    assert "PreferLabel" in registry.names()


def test_broken_entry_point_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "berth_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: berth-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[berth.plugins]\nGone = no_such_module_abc:Gone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError, match='cannot load entry point "Gone"'):
        Registry().load_entry_points()


def test_registration_errors() -> None:
    class Unnamed(FilterPlugin):
        pass

    class NoPoints(Plugin):
        name = "NoPoints"

    class Clash(FilterPlugin):
        name = "NodeName"

    registry = in_tree_registry()
    with pytest.raises(RegistryError, match="has no name"):
        registry.register(Unnamed)
    with pytest.raises(RegistryError, match="implements no extension point"):
        registry.register(NoPoints)
    with pytest.raises(RegistryError, match='a plugin named "NodeName" already exists'):
        registry.register(Clash)
    with pytest.raises(RegistryError, match="is not a subclass"):
        registry.register(object)  # type: ignore[arg-type]


def test_unimportable_module() -> None:
    with pytest.raises(RegistryError, match='cannot import plugin module "no_such_module_xyz"'):
        Registry().load_module("no_such_module_xyz")
