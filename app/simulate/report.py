"""The outputs of ``berth simulate``: ``-o table`` (readable) and ``-o json`` (for scripts)."""

from __future__ import annotations

from typing import Any

import orjson

from app.simulate.runner import PodRecord, SimulationResult

__all__ = [
    "OUTPUT_FORMATS",
    "check_output_format",
    "format_json",
    "format_result",
    "format_table",
    "record_dict",
    "to_json_dict",
]

OUTPUT_FORMATS = ("table", "json")
_TABLE_HEADERS = ("POD", "STATUS", "NODE", "REASON")
#: Spaces between table columns, as kubectl's tabwriter pads.
_COLUMN_GAP = 3


def record_dict(record: PodRecord) -> dict[str, Any]:
    """One pod of the JSON output, keys in the documented order.

    ``filter`` maps each failing node to the rejecting plugin, the status code label and the reasons;
    ``scores`` maps each scored node to every score plugin's normalized score (0-100, before weight)
    and ``total``, the weighted sum. Nodes are listed by name so the output is stable.
    ``nominatedNode`` is the node preemption nominated for the pod (null when it preempted nothing)
    and ``victims`` the running pods it preempted (``namespace/name``, most important first).
    ``volumes`` says what binding the pod's claims took on its node: each PersistentVolume a claim binds,
    each claim provisioned there (WaitForFirstConsumer); empty when there was nothing to bind.
    """
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
            name: {"plugin": status.plugin, "status": status.code.label, "reasons": list(status.reasons)}
            for name, status in sorted(record.filter.items())
        },
        "scores": {
            s.name: {**s.plugin_scores, "total": s.total} for s in sorted(record.scores, key=lambda s: s.name)
        },
    }


def to_json_dict(result: SimulationResult) -> dict[str, Any]:
    """The JSON output as a mapping: ``{"pods": [...]}``."""
    return {"pods": [record_dict(r) for r in result.records]}


def format_json(result: SimulationResult) -> str:
    """``-o json``: the result as indented JSON with a trailing newline."""
    return orjson.dumps(to_json_dict(result), option=orjson.OPT_INDENT_2).decode() + "\n"


def _reason(record: PodRecord) -> str:
    if record.status == "Scheduled":
        reason = f"feasible {record.feasible_nodes}/{record.evaluated_nodes}"
        score = record.score
        # One feasible node is not scored (kube-scheduler skips Score): there is no total to show.
        reason = reason if score is None else f"{reason}, score {score}"
    else:
        reason = record.message
    if record.volumes:
        reason = f"{reason}; {'; '.join(record.volumes)}"
    if record.victims:
        # Victims were running pods, so they have no row of their own: the preemptor names them.
        preempted = ", ".join(v.key for v in record.victims)
        reason = f"{reason}; preempted on {record.nominated_node}: {preempted}"
    return reason


def format_table(result: SimulationResult) -> str:
    """``-o table``: one aligned row per pending pod (POD, STATUS, NODE, REASON), in scheduling order."""
    if not result.records:
        return "No pending pods.\n"
    rows = [_TABLE_HEADERS]
    rows.extend((r.pod.key, r.status, r.node or "<none>", _reason(r)) for r in result.records)
    widths = [max(len(row[i]) for row in rows) + _COLUMN_GAP for i in range(len(_TABLE_HEADERS) - 1)]
    lines = ["".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + row[-1] for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def check_output_format(output: str) -> None:
    """Raise ValueError unless ``output`` is one of :data:`OUTPUT_FORMATS`."""
    if output not in OUTPUT_FORMATS:
        raise ValueError(
            f'unknown output format "{output}": supported formats are {", ".join(OUTPUT_FORMATS)}'
        )


def format_result(result: SimulationResult, output: str = "table") -> str:
    """The result in ``output`` format (one of :data:`OUTPUT_FORMATS`); ValueError otherwise."""
    check_output_format(output)
    return format_json(result) if output == "json" else format_table(result)
