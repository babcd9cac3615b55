"""The explanations in the table: the best hints per unschedulable pod (``-o table`` and ``-o wide``),
and in ``-o wide`` the failing nodes' details with amounts and each score's weighted contributions."""

from __future__ import annotations

from collections.abc import Sequence

from app.framework.runtime import NodeScore
from app.simulate.runner import PodRecord
from app.simulate.summary import winner_and_runner_up

__all__ = ["TABLE_HINTS", "detail_lines", "hint_lines", "score_lines"]

#: Hints per pod the table shows (``-o wide`` shows all, ``-o json`` lists all).
TABLE_HINTS = 2
_INDENT = "  "
_GAP = 3


def _fit(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def _block(title: str, entries: Sequence[tuple[str, Sequence[str]]], width: int | None) -> list[str]:
    """``title`` then each pod's lines, the pod named on its first line only, aligned."""
    if not entries:
        return []
    pad = max(len(pod) for pod, _ in entries) + _GAP
    lines = [title]
    for pod, texts in entries:
        for i, text in enumerate(texts):
            lines.append(_fit(f"{_INDENT}{(pod if i == 0 else '').ljust(pad)}{text}", width))
    return lines


def hint_lines(records: Sequence[PodRecord], wide: bool, width: int) -> list[list[str]]:
    """The blocks the table adds: with ``wide`` the details ("Why not"), then the hints ("Fits if…").

    The table shows each pod's best :data:`TABLE_HINTS` hints cut to ``width``; wide shows them all whole.
    """
    blocks = [detail_lines(records)] if wide else []
    entries = [
        (r.pod.key, [h.summary for h in (r.hints if wide else r.hints[:TABLE_HINTS])])
        for r in records
        if r.hints
    ]
    title = "Fits if… (each change verified by running the pod's filters again with it applied):"
    blocks.append(_block(title, entries, None if wide else width))
    return blocks


def detail_lines(records: Sequence[PodRecord]) -> list[str]:
    """Per unschedulable pod, each failing node's reasons with amounts."""
    entries = []
    for r in records:
        if r.status != "Unschedulable" or not r.details:
            continue
        entries.append((r.pod.key, [f"{node}: {d}" for node, ds in sorted(r.details.items()) for d in ds]))
    return _block("Why not (per failing node, with amounts):", entries, None)


def _contributions(score: NodeScore, weights: dict[str, int]) -> str:
    parts = []
    for plugin, value in score.plugin_scores.items():
        weight = weights.get(plugin, 1)
        if value:
            parts.append(f"{plugin} {value}*{weight}")
    return f"{score.name} {score.total} = {' + '.join(parts) or '0'}"


def score_lines(records: Sequence[PodRecord]) -> list[str]:
    """Per scored pod, the winner's and the runner-up's totals as ``Plugin score*weight`` sums
    (plugins that gave 0 left out)."""
    entries = []
    for r in records:
        winner, runner_up = winner_and_runner_up(r)
        if winner is None:
            continue
        texts = [_contributions(winner, r.weights)]
        if runner_up is not None:
            texts.append(f"runner-up {_contributions(runner_up, r.weights)}")
        entries.append((r.pod.key, texts))
    return _block("Scores (normalized score*weight per plugin; the total is their sum):", entries, None)
