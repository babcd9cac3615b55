"""``berth simulate``: what kube-scheduler would do with the pending pods of a cluster-state file.

Library API for the CLI: :func:`simulate` does it all; :func:`load_state`, :func:`new_engine`,
:func:`run_simulation` and :func:`format_result` are the steps.
"""

from __future__ import annotations

from app.config.types import SchedulerConfiguration
from app.framework.registry import Registry
from app.scheduler.scheduler import Engine
from app.simulate.report import (
    OUTPUT_FORMATS,
    check_output_format,
    format_json,
    format_result,
    format_table,
    to_json_dict,
)
from app.simulate.runner import GATED, STATUSES, PodRecord, SimulationResult, queue_order, run_simulation
from app.simulate.state import ClusterState, PendingPod, StateError, load_state, parse_state

__all__ = [
    "GATED",
    "OUTPUT_FORMATS",
    "STATUSES",
    "ClusterState",
    "PendingPod",
    "PodRecord",
    "SimulationResult",
    "StateError",
    "check_output_format",
    "format_json",
    "format_result",
    "format_table",
    "load_state",
    "new_engine",
    "parse_state",
    "queue_order",
    "run_simulation",
    "simulate",
    "to_json_dict",
]


def new_engine(
    state: ClusterState, cfg: SchedulerConfiguration, registry: Registry, seed: int | None = None
) -> Engine:
    """A fresh Engine for ``state``: its plugins see the state's other objects; ``seed`` fixes tie-breaking."""
    return Engine(cfg, registry, objects=state.objects, seed=seed)


def simulate(
    path: str,
    cfg: SchedulerConfiguration,
    registry: Registry,
    seed: int | None = None,
    output: str = "table",
) -> tuple[str, list[str]]:
    """Load the state at ``path``, schedule its pending pods and format the result.

    Returns ``(text, warnings)``: the output in ``output`` format and the state's warnings (for
    stderr), then one per pod a plugin raised an exception for (that pod's record is an Error). Raises :class:`StateError` for a bad state file (the CLI exits 2), ValueError for an
    unknown output format, and FrameworkError when the configuration's profiles cannot be built.
    """
    check_output_format(output)  # first, so a typo in -o does not cost a whole simulation
    state = load_state(path)
    result = run_simulation(state, new_engine(state, cfg, registry, seed))
    return format_result(result, output), [*state.warnings, *result.warnings]
