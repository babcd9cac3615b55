"""``berth simulate STATE --config A --compare-config B``: the same state and seed under two
configurations, and what differs: the pods placed differently (with the plugin scores that made the
difference), the unschedulable delta, each node's utilization under both, and the nodes each left
empty (what a bin-packing strategy such as MostAllocated wins).

Both runs start from the same parsed state and the same seed, so every difference comes from the
configurations. Pods are matched by ``namespace/name``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from app.config.types import SchedulerConfiguration
from app.framework.registry import Registry
from app.framework.runtime import FrameworkError
from app.kube.extender import build_extenders
from app.scheduler.scheduler import ClusterObjects, Engine
from app.simulate.inputs import adopt_unserved_pods
from app.simulate.report import (  # the comparison reuses the report's pieces
    TABLE_WIDTH,
    align_columns,
    check_output_format,
    cut_to_width,
    format_table,
    node_dict,
    seed_line,
    summary_dict,
)
from app.simulate.runner import PodRecord, SimulationResult, run_simulation
from app.simulate.state import ClusterState
from app.simulate.stream import write_json
from app.simulate.summary import summarize
from app.simulate.utilization import CPU, MEMORY, PODS, NodeUsage, node_utilization

__all__ = [
    "CompareConfigError",
    "Comparison",
    "ConfigRun",
    "MovedPod",
    "PluginDifference",
    "compare_configs",
    "compare_runs",
    "comparison_dict",
    "format_comparison",
    "run_config",
]


class CompareConfigError(ValueError):
    """The ``--compare-config`` configuration's profiles cannot be built; the message names its file."""

    def __init__(self, path: str | None, err: Exception) -> None:
        super().__init__(f"{path or 'compare configuration'}: {err}")


#: How many plugins the table names per moved pod (JSON lists every plugin that differs).
_TABLE_PLUGINS = 3


@dataclass(slots=True)
class ConfigRun:
    """One configuration's run: its file (None: the defaults), records, utilization and score weights."""

    config: str | None
    result: SimulationResult
    nodes: list[NodeUsage]
    weights: dict[str, dict[str, int]]  # scheduler name -> plugin -> weight

    def weighted_scores(self, record: PodRecord) -> dict[str, int] | None:
        """Each score plugin's weighted score (normalized score * weight) of the node the pod got;
        None when the pod was not scored there (not scheduled, or the only feasible node)."""
        chosen = next((s for s in record.scores if s.name == record.node), None)
        if chosen is None:
            return None
        weights = self.weights.get(record.pod.scheduler_name, {})
        # An extender's column is already weighted; it has no entry among the plugins' weights.
        return {plugin: score * weights.get(plugin, 1) for plugin, score in chosen.plugin_scores.items()}


@dataclass(slots=True, frozen=True)
class PluginDifference:
    """One score plugin's weighted score of the chosen node under A and under B (None: not scored)."""

    plugin: str
    a: int | None
    b: int | None

    @property
    def delta(self) -> int:
        """How much more B's choice got from the plugin than A's (0 when either side has no score)."""
        return (self.b or 0) - (self.a or 0)


@dataclass(slots=True)
class MovedPod:
    """A pod whose node differs between the runs (a None node: not scheduled in that run)."""

    pod: str
    a: str | None
    b: str | None
    plugins: list[PluginDifference] = field(default_factory=list)  # largest difference first


@dataclass(slots=True)
class Comparison:
    """What differs between configuration A's run and B's on the same state and seed."""

    a: ConfigRun
    b: ConfigRun
    moved: list[MovedPod]

    @property
    def unschedulable(self) -> tuple[int, int]:
        """Unschedulable pods under A and under B."""
        return self.a.result.count("Unschedulable"), self.b.result.count("Unschedulable")

    @property
    def empty_nodes(self) -> tuple[list[str], list[str]]:
        """Nodes without a pod (running or placed) after A's run and after B's, in state order."""
        return _empty(self.a.nodes), _empty(self.b.nodes)


def _empty(nodes: Sequence[NodeUsage]) -> list[str]:
    return [u.name for u in nodes if u.resources[PODS].requested == 0]


def run_config(
    state: ClusterState, cfg: SchedulerConfiguration, registry: Registry, seed: int, config: str | None
) -> ConfigRun:
    """Simulate ``state`` under ``cfg`` (``config`` names its file in the report)."""
    # Fresh objects for every run: binding volumes and allocating devices change them, and the other
    # configuration's run must start from the state as the file has it.
    objects = ClusterObjects()
    engine = Engine(cfg, registry, objects=objects, seed=seed, extenders=build_extenders(cfg.extenders))
    result = run_simulation(state, engine)
    weights = {name: dict(fwk.score_weights) for name, fwk in engine.profiles.items()}
    return ConfigRun(config, result, node_utilization(engine, state.nodes), weights)


def _differences(a: ConfigRun, b: ConfigRun, rec_a: PodRecord, rec_b: PodRecord) -> list[PluginDifference]:
    """The plugins whose weighted score of the chosen node differs between the runs, largest first."""
    scores_a = a.weighted_scores(rec_a) if rec_a.node else None
    scores_b = b.weighted_scores(rec_b) if rec_b.node else None
    if scores_a is None and scores_b is None:
        return []
    plugins = list(scores_a or {})
    plugins.extend(p for p in scores_b or {} if p not in plugins)
    diffs = [
        PluginDifference(
            p,
            None if scores_a is None else scores_a.get(p),
            None if scores_b is None else scores_b.get(p),
        )
        for p in plugins
    ]
    changed = [d for d in diffs if d.a != d.b]
    return sorted(changed, key=lambda d: (-abs(d.delta), d.plugin))


def compare_runs(a: ConfigRun, b: ConfigRun) -> Comparison:
    """Match the runs' pods by key and collect those placed differently, in A's scheduling order."""
    records_b = {r.pod.key: r for r in b.result.records}
    moved = []
    for rec_a in a.result.records:
        rec_b = records_b.get(rec_a.pod.key)
        if rec_b is None or rec_a.node == rec_b.node:
            continue
        moved.append(MovedPod(rec_a.pod.key, rec_a.node, rec_b.node, _differences(a, b, rec_a, rec_b)))
    return Comparison(a, b, moved)


def _run_dict(run: ConfigRun) -> dict[str, Any]:
    return {"config": run.config, "summary": summary_dict(summarize(run.result))}


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    """The JSON ``comparison`` object (docs/compare.md documents every key)."""
    a, b = comparison.a, comparison.b
    unschedulable_a, unschedulable_b = comparison.unschedulable
    empty_a, empty_b = comparison.empty_nodes
    usage_b = {u.name: u for u in b.nodes}
    return {
        "a": _run_dict(a),
        "b": _run_dict(b),
        "moved": [
            {"pod": m.pod, "a": m.a, "b": m.b, "plugins": {d.plugin: {"a": d.a, "b": d.b} for d in m.plugins}}
            for m in comparison.moved
        ],
        "unschedulable": {
            "a": unschedulable_a,
            "b": unschedulable_b,
            "delta": unschedulable_b - unschedulable_a,
        },
        "nodes": [
            {"node": u.name, "a": node_dict(u)["resources"], "b": node_dict(usage_b[u.name])["resources"]}
            for u in a.nodes
            if u.name in usage_b
        ],
        "emptyNodes": {"a": empty_a, "b": empty_b},
    }


# --- the table -------------------------------------------------------------------------------------------


def _signed(value: int) -> str:
    return f"+{value}" if value > 0 else str(value)


def _plugin_cell(diffs: Sequence[PluginDifference]) -> str:
    """``NodeResourcesFit 85→40, ...``: the plugins that differ most, A's weighted score then B's."""
    if not diffs:
        return "-"

    def side(value: int | None) -> str:
        return "-" if value is None else str(value)

    return ", ".join(f"{d.plugin} {side(d.a)}→{side(d.b)}" for d in diffs[:_TABLE_PLUGINS])


def _delta_cell(a: NodeUsage, b: NodeUsage, resource: str) -> str:
    """``40% → 75% (+35)``: the requested share under A, under B, and the change in points (pods: counts)."""
    if resource not in a.resources or resource not in b.resources:
        return "-"
    if resource == PODS:  # a share of 110 slots says little: the pod counts
        count_a, count_b = a.resources[PODS].requested, b.resources[PODS].requested
        return f"{count_a} → {count_b} ({_signed(count_b - count_a)})"
    share_a = round(a.resources[resource].fraction * 100)
    share_b = round(b.resources[resource].fraction * 100)
    return f"{share_a}% → {share_b}% ({_signed(share_b - share_a)})"


def _config_name(run: ConfigRun) -> str:
    return run.config or "the default configuration"


def format_comparison(comparison: Comparison) -> str:
    """The comparison as text for the terminal, every line within :data:`~app.simulate.report.TABLE_WIDTH`:
    the configurations, the pods placed differently, the unschedulable delta, the nodes whose
    utilization changed and the nodes each run left empty."""
    a, b = comparison.a, comparison.b
    lines = [
        "Comparison (same state, same seed):",
        cut_to_width(f"  A = {_config_name(a)}", TABLE_WIDTH),
        cut_to_width(f"  B = {_config_name(b)}", TABLE_WIDTH),
    ]
    pending = len(a.result.records)
    scheduled_a, scheduled_b = a.result.count("Scheduled"), b.result.count("Scheduled")
    unschedulable_a, unschedulable_b = comparison.unschedulable
    lines.append(
        f"Scheduled: A {scheduled_a}, B {scheduled_b}; unschedulable: A {unschedulable_a}, "
        f"B {unschedulable_b} ({_signed(unschedulable_b - unschedulable_a)}); "
        f"{len(comparison.moved)} of {pending} pending pods placed differently"
    )
    blocks = [lines]
    if comparison.moved:
        rows: list[tuple[str, ...]] = [("POD", "A", "B", "PLUGINS (weighted score A→B)")]
        rows.extend(
            (m.pod, m.a or "<none>", m.b or "<none>", _plugin_cell(m.plugins)) for m in comparison.moved
        )
        blocks.append([cut_to_width(line, TABLE_WIDTH) for line in align_columns(rows)])
    usage_b = {u.name: u for u in b.nodes}
    changed = [
        (u, usage_b[u.name])
        for u in a.nodes
        if u.name in usage_b and u.resources != usage_b[u.name].resources
    ]
    if changed:
        node_rows: list[tuple[str, ...]] = [("NODE", "CPU A → B", "MEMORY A → B", "PODS A → B")]
        node_rows.extend(
            (ua.name, _delta_cell(ua, ub, CPU), _delta_cell(ua, ub, MEMORY), _delta_cell(ua, ub, PODS))
            for ua, ub in changed
        )
        blocks.append([cut_to_width(line, TABLE_WIDTH) for line in align_columns(node_rows)])
    else:
        blocks.append(["Every node's utilization is the same under A and B."])
    empty_a, empty_b = comparison.empty_nodes
    blocks.append(
        [
            cut_to_width(f"Empty nodes: A {len(empty_a)} ({', '.join(empty_a) or 'none'})", TABLE_WIDTH),
            cut_to_width(f"             B {len(empty_b)} ({', '.join(empty_b) or 'none'})", TABLE_WIDTH),
        ]
    )
    return "\n\n".join("\n".join(line.rstrip() for line in block) for block in blocks) + "\n"


def compare_configs(
    state: ClusterState,
    a: tuple[str | None, SchedulerConfiguration],
    b: tuple[str | None, SchedulerConfiguration],
    registry: Registry,
    seed: int,
    output: str = "table",
    schedule_all: bool = False,
    out: TextIO | None = None,
) -> tuple[str, list[str]]:
    """Run ``state`` under configurations ``a`` and ``b`` (each ``(file, configuration)``) with ``seed``
    and report A's run as ``berth simulate`` does plus the comparison: the table's comparison block
    before the seed line, or the JSON's top-level ``comparison``. Returns ``(text, warnings)``; with
    ``out``, JSON is written there pod by pod instead and the text is empty."""
    check_output_format(output)
    runs: list[ConfigRun] = []
    warnings = list(state.warnings)
    for config, cfg in (a, b):
        run_state = adopt_unserved_pods(state, cfg) if schedule_all else state
        try:
            run = run_config(run_state, cfg, registry, seed, config)
        except FrameworkError as err:
            if not runs:
                raise  # configuration A's: reported as without --compare-config
            raise CompareConfigError(config, err) from err
        warnings.extend(f"{_config_name(run)}: {w}" for w in run.result.warnings)
        runs.append(run)
    comparison = compare_runs(runs[0], runs[1])
    first = comparison.a
    if output == "json":
        buffer = io.StringIO()  # stays empty when the JSON goes to ``out``
        write_json(
            out or buffer, first.result, seed, first.nodes, {"comparison": comparison_dict(comparison)}
        )
        return buffer.getvalue(), warnings
    table = format_table(first.result, None, first.nodes, wide=output == "wide")
    return f"{table}\n{format_comparison(comparison)}\n{seed_line(seed)}", warnings
