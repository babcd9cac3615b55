"""The outputs of ``berth simulate``: ``-o table`` (readable, at most 120 columns), ``-o wide`` (every
detail in full) and ``-o json`` (for scripts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from app.framework.runtime import NodeScore
from app.simulate.explain_text import hint_lines, score_lines
from app.simulate.formats import OUTPUT_FORMATS
from app.simulate.hints import hint_dict
from app.simulate.runner import PodRecord, SimulationResult
from app.simulate.summary import Summary, summarize, winner_and_runner_up
from app.simulate.utilization import CPU, MEMORY, NodeUsage, ResourceUsage

__all__ = [
    "OUTPUT_FORMATS",
    "TABLE_WIDTH",
    "align_columns",
    "check_output_format",
    "cut_to_width",
    "format_json",
    "format_result",
    "format_table",
    "node_dict",
    "record_dict",
    "seed_line",
    "summary_dict",
    "to_json_dict",
]

#: The table output's widest line; longer reasons are cut (``-o wide`` and ``-o json`` keep them whole).
TABLE_WIDTH = 120
_TABLE_HEADERS = ("POD", "STATUS", "NODE", "REASON")
_WIDE_HEADERS = ("POD", "STATUS", "NODE", "SCORE", "RUNNER-UP", "REASON")
#: Spaces between table columns, as kubectl's tabwriter pads.
_COLUMN_GAP = 3
#: A cut reason keeps at least this many characters, however long the pod names.
_MIN_REASON_WIDTH = 20
#: Cells of the utilization bar.
_BAR_CELLS = 8


def _score_dict(score: NodeScore | None) -> dict[str, Any] | None:
    return None if score is None else {"node": score.name, "total": score.total}


def record_dict(record: PodRecord) -> dict[str, Any]:
    """One pod of the JSON output, keys in the documented order.

    ``filter`` maps each failing node to the rejecting plugin, the status code label and the reasons;
    ``scores`` maps each scored node to every score plugin's normalized score (0-100, before weight)
    and ``total``, the weighted sum. Nodes are listed by name so the output is stable.
    ``nominatedNode`` is the node preemption nominated for the pod (null when it preempted nothing)
    and ``victims`` the running pods it preempted (``namespace/name``, most important first).
    ``winner`` and ``runnerUp`` are the chosen node's and the best other node's totals (null when the
    pod was not scored).
    ``volumes`` says what binding the pod's claims took on its node: each PersistentVolume a claim binds,
    each claim provisioned there (WaitForFirstConsumer); empty when there was nothing to bind.
    Each ``filter`` entry's ``details`` are its reasons with nodes' amounts (app/simulate/explain.py);
    ``weights`` the profile's score plugin weights; ``hints`` the verified "fits if" changes
    (app/simulate/hints.py), best first.
    """
    winner, runner_up = winner_and_runner_up(record)
    return {
        "pod": record.pod.key,
        "node": record.node,
        "status": record.status,
        "message": record.message,
        "feasibleNodes": record.feasible_nodes,
        "evaluatedNodes": record.evaluated_nodes,
        "nominatedNode": record.nominated_node,
        "victims": [v.key for v in record.victims],
        "volumes": list(record.volumes),
        "filter": {
            name: {
                "plugin": status.plugin,
                "status": status.code.label,
                "reasons": list(status.reasons),
                "details": record.details.get(name, []),
            }
            for name, status in sorted(record.filter.items())
        },
        "scores": {
            s.name: {**s.plugin_scores, "total": s.total} for s in sorted(record.scores, key=lambda s: s.name)
        },
        "winner": _score_dict(winner),
        "runnerUp": _score_dict(runner_up),
        "weights": dict(record.weights),
        "hints": [hint_dict(h) for h in record.hints],
    }


def summary_dict(summary: Summary) -> dict[str, Any]:
    """The JSON ``summary`` object: a count per status (``scheduled``, ``unschedulable``, ...) and the
    unschedulable reasons with their pod counts, most frequent first."""
    counts: dict[str, Any] = {status[0].lower() + status[1:]: n for status, n in summary.counts.items()}
    return {**counts, "reasons": [{"reason": reason, "pods": n} for reason, n in summary.reasons]}


def _amount(resource: str, amount: int) -> int | float:
    """JSON amounts: cpu in cores (the cache counts millicores), everything else as counted."""
    return amount / 1000 if resource == CPU else amount


def node_dict(usage: NodeUsage) -> dict[str, Any]:
    """One entry of the JSON ``nodes`` array: requested and allocatable per resource (cpu in cores)."""
    return {
        "node": usage.name,
        "resources": {
            name: {"requested": _amount(name, r.requested), "allocatable": _amount(name, r.allocatable)}
            for name, r in usage.resources.items()
        },
    }


def to_json_dict(
    result: SimulationResult, seed: int | None = None, nodes: Sequence[NodeUsage] = ()
) -> dict[str, Any]:
    """The JSON output as a mapping: ``{"seed", "summary", "pods", "nodes"}``."""
    return {
        "seed": seed,
        "summary": summary_dict(summarize(result)),
        "pods": [record_dict(r) for r in result.records],
        "nodes": [node_dict(u) for u in nodes],
    }


def format_json(result: SimulationResult, seed: int | None = None, nodes: Sequence[NodeUsage] = ()) -> str:
    """``-o json``: the result as indented JSON with a trailing newline."""
    return orjson.dumps(to_json_dict(result, seed, nodes), option=orjson.OPT_INDENT_2).decode() + "\n"


def seed_line(seed: int) -> str:
    """The table's last line: the seed and how to repeat the run."""
    return f"Seed {seed} (repeat this run exactly with --seed {seed})\n"


def _reason(record: PodRecord, wide: bool) -> str:
    if record.status == "Scheduled":
        reason = f"feasible {record.feasible_nodes}/{record.evaluated_nodes}"
        score = record.score
        # One feasible node is not scored (kube-scheduler skips Score): there is no total to show. Wide
        # has a SCORE column of its own.
        reason = reason if score is None or wide else f"{reason}, score {score}"
    else:
        reason = record.message
    if record.volumes:
        reason = f"{reason}; {'; '.join(record.volumes)}"
    if record.victims:
        # Victims were running pods, so they have no row of their own: the preemptor names them.
        preempted = ", ".join(v.key for v in record.victims)
        reason = f"{reason}; preempted on {record.nominated_node}: {preempted}"
    return reason


def align_columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines, every column but the last padded to its widest cell plus a gap of three
    spaces, as kubectl's tabwriter pads (the last column is left as it is)."""
    widths = [max(len(row[i]) for row in rows) + _COLUMN_GAP for i in range(len(rows[0]) - 1)]
    return ["".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + row[-1] for row in rows]


def cut_to_width(text: str, width: int) -> str:
    """``text`` unchanged when it fits in ``width`` characters, else cut to ``width`` ending in "…"."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _pod_rows(result: SimulationResult, wide: bool) -> list[tuple[str, ...]]:
    if wide:
        rows: list[tuple[str, ...]] = [_WIDE_HEADERS]
        for r in result.records:
            winner, runner_up = winner_and_runner_up(r)
            score = str(winner.total) if winner is not None else "-"
            second = f"{runner_up.name} ({runner_up.total})" if runner_up is not None else "-"
            rows.append((r.pod.key, r.status, r.node or "<none>", score, second, _reason(r, wide)))
        return rows
    rows = [_TABLE_HEADERS]
    rows.extend((r.pod.key, r.status, r.node or "<none>", _reason(r, wide)) for r in result.records)
    # Cut the reasons so the lines fit TABLE_WIDTH: the other columns are short and say who and where.
    lead = sum(max(len(row[i]) for row in rows) + _COLUMN_GAP for i in range(len(_TABLE_HEADERS) - 1))
    room = max(TABLE_WIDTH - lead, _MIN_REASON_WIDTH)
    return [(*row[:-1], cut_to_width(row[-1], room)) for row in rows]


def _summary_lines(summary: Summary) -> list[str]:
    counts = ", ".join(
        f"{n} {status.lower()}" for status, n in summary.counts.items() if n or status != "Error"
    )
    lines = [f"Summary: {counts} ({summary.pending} pending pods, {summary.nodes} nodes)"]
    if summary.reasons:
        width = len(str(summary.reasons[0][1]))
        lines.append("Reasons (pods held back by each):")
        lines.extend(
            cut_to_width(f"  {str(n).rjust(width)}  {reason}", TABLE_WIDTH) for reason, n in summary.reasons
        )
    return lines


def _readable(resource: str, amount: int) -> str:
    """Table amounts: cpu in cores, memory in GiB, counts as they are."""
    if resource == CPU:
        return f"{amount / 1000:g}"
    if resource == MEMORY:
        return f"{amount / 2**30:.3g}Gi"
    return str(amount)


def _bar(usage: ResourceUsage, wide: bool, resource: str) -> str:
    """``█████░░░  62%``: the requested share; wide adds the amounts (cpu in cores)."""
    share = usage.fraction
    filled = min(_BAR_CELLS, round(share * _BAR_CELLS))
    cell = f"{'█' * filled}{'░' * (_BAR_CELLS - filled)} {round(share * 100):>3}%"
    if wide:
        cell += f" {_readable(resource, usage.requested)}/{_readable(resource, usage.allocatable)}"
    return cell


def _utilization_lines(nodes: Sequence[NodeUsage], wide: bool) -> list[str]:
    """One row per node, one bar per resource (extended resources only where some node has them)."""
    resources: list[str] = []
    for usage in nodes:
        resources.extend(name for name in usage.resources if name not in resources)
    rows = [("NODE", *(name.upper() if "/" not in name else name for name in resources))]
    for usage in nodes:
        cells = [_bar(usage.resources[n], wide, n) if n in usage.resources else "-" for n in resources]
        rows.append((usage.name, *cells))
    return align_columns(rows)


def format_table(
    result: SimulationResult, seed: int | None = None, nodes: Sequence[NodeUsage] = (), wide: bool = False
) -> str:
    """``-o table`` (``wide``: ``-o wide``): one aligned row per pending pod in scheduling order, the
    summary, each node's utilization after the run, and the seed when known."""
    blocks: list[list[str]] = []
    if result.records:
        blocks.append(align_columns(_pod_rows(result, wide)))
        blocks.append(_summary_lines(summarize(result)))
    else:
        blocks.append(["No pending pods."])
    if nodes:
        blocks.append(_utilization_lines(nodes, wide))
    # Explanations (app/simulate/explain_text.py): the best hints; wide adds details and weighted scores.
    blocks.extend(b for b in hint_lines(result.records, wide, TABLE_WIDTH) if b)
    if wide and (scores := score_lines(result.records)):
        blocks.append(scores)
    if seed is not None:
        blocks.append([seed_line(seed).rstrip("\n")])
    return "\n\n".join("\n".join(line.rstrip() for line in block) for block in blocks) + "\n"


def check_output_format(output: str) -> None:
    """Raise ValueError unless ``output`` is one of :data:`OUTPUT_FORMATS`."""
    if output not in OUTPUT_FORMATS:
        raise ValueError(
            f'unknown output format "{output}": supported formats are {", ".join(OUTPUT_FORMATS)}'
        )


def format_result(
    result: SimulationResult, output: str = "table", seed: int | None = None, nodes: Sequence[NodeUsage] = ()
) -> str:
    """The result in ``output`` format (one of :data:`OUTPUT_FORMATS`); ValueError otherwise."""
    check_output_format(output)
    if output == "json":
        return format_json(result, seed, nodes)
    return format_table(result, seed, nodes, wide=output == "wide")
