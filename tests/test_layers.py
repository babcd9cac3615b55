"""The package layout is the architecture: lower layers never import higher ones."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"

# Each package may import only packages of its own layer or below.
LAYERS: list[set[str]] = [
    {"app", "app.logs", "app.metrics"},
    {"app.api"},
    {"app.framework"},
    {"app.plugins", "app.backend"},
    {"app.config", "app.kube"},
    {"app.scheduler"},
    {"app.extender", "app.simulate"},
    {"app.ui"},
    {"app.server"},
    {"app.standalone"},
    {"app.cli"},
]


def layer_of(module: str) -> int:
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        prefix = ".".join(parts[:depth])
        for i, layer in enumerate(LAYERS):
            if prefix in layer:
                return i
    raise AssertionError(f"{module} is in no layer")


def module_name(path: Path) -> str:
    rel = path.relative_to(APP.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_import_goes_up_a_layer() -> None:
    violations = []
    for path in APP.rglob("*.py"):
        module = module_name(path)
        own = layer_of(module)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("app.") and layer_of(name) > own:
                    violations.append(f"{module} imports {name}")
    assert violations == []
