"""``berth simulate``: what kube-scheduler would do with the pending pods of a cluster-state file.

Library API for the CLI: :func:`simulate` does it all; :func:`load_state`, :func:`new_engine`,
:func:`run_simulation` and :func:`format_result` are the steps.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from app.config.types import SchedulerConfiguration
    from app.framework.registry import Registry
    from app.scheduler.scheduler import Engine
    from app.simulate.compare import compare_configs
    from app.simulate.inputs import STDIN, adopt_unserved_pods, new_seed, read_state
    from app.simulate.report import (
        check_output_format,
        format_json,
        format_result,
        format_table,
        to_json_dict,
    )
    from app.simulate.runner import (
        GATED,
        SKIPPED,
        STATUSES,
        PodRecord,
        SimulationResult,
        queue_order,
        run_simulation,
    )
    from app.simulate.state import ClusterState, PendingPod, StateError, load_state, parse_state
    from app.simulate.stream import write_json
    from app.simulate.utilization import NodeUsage, node_utilization

from app.simulate.formats import DEFAULT_MAX_HINTED_PODS, OUTPUT_FORMATS

# The package's names, imported from their modules on first use: ``berth run`` imports
# app.simulate's submodules for /debug/pods' explanations (on the first request) and the CLI its
# flags' choices, neither of which needs the whole simulator (about 16 MiB) loaded.
_EXPORTS = {
    "app.simulate.compare": ("compare_configs",),
    "app.simulate.inputs": ("STDIN", "adopt_unserved_pods", "new_seed", "read_state"),
    "app.simulate.report": (
        "check_output_format",
        "format_json",
        "format_result",
        "format_table",
        "to_json_dict",
    ),
    "app.simulate.runner": (
        "GATED",
        "SKIPPED",
        "STATUSES",
        "PodRecord",
        "SimulationResult",
        "queue_order",
        "run_simulation",
    ),
    "app.simulate.state": ("ClusterState", "PendingPod", "StateError", "load_state", "parse_state"),
    "app.simulate.stream": ("write_json",),
    "app.simulate.utilization": ("NodeUsage", "node_utilization"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    """A name of ``__all__`` from its module, imported now (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once is enough
    return value


__all__ = [
    "GATED",
    "OUTPUT_FORMATS",
    "SKIPPED",
    "STATUSES",
    "STDIN",
    "ClusterState",
    "NodeUsage",
    "PendingPod",
    "PodRecord",
    "SimulationResult",
    "StateError",
    "adopt_unserved_pods",
    "check_output_format",
    "compare_configs",
    "format_json",
    "format_result",
    "format_table",
    "load_state",
    "new_engine",
    "new_seed",
    "node_utilization",
    "parse_state",
    "queue_order",
    "read_state",
    "run_simulation",
    "simulate",
    "to_json_dict",
    "write_json",
]


def new_engine(
    state: ClusterState,
    cfg: SchedulerConfiguration,
    registry: Registry,
    seed: int | None = None,
    memoize: bool = True,
) -> Engine:
    """A fresh Engine for ``state``: its plugins see the state's other objects; ``seed`` fixes tie-breaking.

    The configuration's extenders are called as ``berth run`` calls them (their /bind included:
    an extender that binds for real would bind; simulate only ever passes the state's pods).
    ``memoize``: keep node-local verdicts and scores between pods of one shape (the same
    placements, fewer plugin calls; see app/scheduler/node_memo.py).
    """
    from app.kube.extender import build_extenders
    from app.scheduler.scheduler import Engine

    engine = Engine(cfg, registry, objects=state.objects, seed=seed, extenders=build_extenders(cfg.extenders))
    engine.algorithm.memoize_node_local = memoize
    return engine


def simulate(
    path: str,
    cfg: SchedulerConfiguration,
    registry: Registry,
    seed: int | None = None,
    output: str = "table",
    schedule_all: bool = False,
    max_hints: int = DEFAULT_MAX_HINTED_PODS,
    config: str | None = None,
    compare: tuple[str, SchedulerConfiguration] | None = None,
    out: TextIO | None = None,
) -> tuple[str, list[str]]:
    """Load the state at ``path`` (``-``: stdin), schedule its pending pods and format the result.

    ``seed`` fixes every random choice (a random one is drawn when None; either way the output
    records it). ``schedule_all`` gives pods of unserved scheduler names to the first profile.
    ``max_hints`` bounds how many unschedulable pods get "fits if" hints searched (0: none).
    ``compare`` (the ``--compare-config`` file and its configuration) runs the state under it too,
    with the same seed, and adds the comparison (``config`` names ``cfg``'s file in it). With ``out``,
    ``-o json`` is written there pod by pod (the returned text is then empty): a fraction of the memory.
    Returns ``(text, warnings)``: the output in ``output`` format and the state's warnings (for
    stderr), then one per pod a plugin raised an exception for (that pod's record is an Error).
    Raises :class:`StateError` for a bad state file (the CLI exits 2), ValueError for an
    unknown output format, and FrameworkError when the configuration's profiles cannot be built.
    """
    from app.simulate.compare import compare_configs
    from app.simulate.hints import RecordExplainer
    from app.simulate.inputs import adopt_unserved_pods, new_seed, read_state
    from app.simulate.report import check_output_format, format_result
    from app.simulate.runner import run_simulation
    from app.simulate.stream import write_json
    from app.simulate.utilization import node_utilization

    check_output_format(output)  # first, so a typo in -o does not cost a whole simulation
    state = read_state(path)
    seed = new_seed() if seed is None else seed
    if compare is not None:
        return compare_configs(state, (config, cfg), compare, registry, seed, output, schedule_all, out)
    if schedule_all:
        state = adopt_unserved_pods(state, cfg)
    engine = new_engine(state, cfg, registry, seed)
    # Details, weights and verified hints are worked out as the run goes (app/simulate/hints.py).
    explainer = RecordExplainer(state, cfg, registry, seed, max_hints, with_details=output != "table")
    result = run_simulation(state, engine, explainer)
    nodes = node_utilization(engine, state.nodes)
    warnings = [*state.warnings, *result.warnings, *explainer.warnings()]
    if out is not None and output == "json":
        write_json(out, result, seed, nodes)
        return "", warnings
    return format_result(result, output, seed, nodes), warnings
