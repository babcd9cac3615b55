"""Shared helpers of the simulate tests: the real in-tree plugins and default configuration."""

from __future__ import annotations

import textwrap

from app.config import SchedulerConfiguration, load_config
from app.framework.registry import Registry
from app.plugins.registry import in_tree_registry
from app.simulate import ClusterState, SimulationResult, new_engine, parse_state, run_simulation
from app.simulate.hints import RecordExplainer


def default_setup() -> tuple[SchedulerConfiguration, Registry]:
    """kube-scheduler's default configuration over the in-tree plugins."""
    registry = in_tree_registry()
    return load_config(None, registry), registry


def state_of(text: str, path: str = "state.yaml") -> ClusterState:
    """Parse a dedented state text."""
    return parse_state(textwrap.dedent(text), path)


def run_text(text: str, seed: int | None = 1) -> SimulationResult:
    """Parse ``text`` and simulate it with the default configuration."""
    cfg, registry = default_setup()
    state = state_of(text)
    return run_simulation(state, new_engine(state, cfg, registry, seed))


def run_explained(text: str, seed: int | None = 1) -> SimulationResult:
    """:func:`run_text` with the explainer berth simulate runs: details, weights and verified hints."""
    cfg, registry = default_setup()
    state = state_of(text)
    return run_simulation(
        state, new_engine(state, cfg, registry, seed), RecordExplainer(state, cfg, registry, seed)
    )


def node_yaml(name: str, cpu: str = "4", extra: str = "") -> str:
    """A Node document (``extra`` is appended to the document, e.g. a spec)."""
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
        f'status: {{allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}}}\n{extra}---\n'
    )


def pod_yaml(name: str, cpu: str = "1", spec: str = "", namespace: str = "default") -> str:
    """A Pod document with one container requesting ``cpu``; ``spec`` adds ``spec`` lines (2-space indent)."""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n{spec}"
        f'  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]\n---\n'
    )
