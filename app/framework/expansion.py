"""Per-extension-point plugin lists from a profile's plugin sets (``expandMultiPointPlugins``,
``updatePluginList`` and ``getValidScoreWeights`` of ``framework/runtime/framework.go``).

The one implementation of these rules: the configuration loader reports its errors with field
paths at load time, and the runtime builds its plugin lists from the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from app.framework.interfaces import MAX_NODE_SCORE, MAX_TOTAL_SCORE

GO_TYPE = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
}
"""Config field of each extension point → kube-scheduler's interface name, used in messages."""

FRAMEWORK_ORDER = (
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "preScore",
    "score",
    "preBind",
    "bind",
    "postBind",
    "permit",
    "preEnqueue",
    "queueSort",
)
"""``frameworkImpl.getExtensionPoints`` order: the order kube-scheduler checks, hence reports, them."""


class PluginEntry(Protocol):
    """An enabled plugin as configured: a name and a weight (0 = unset)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...


PluginSets = Mapping[str, tuple[Sequence[PluginEntry], Sequence[str]]]
"""Extension point (and ``multiPoint``) → (enabled entries, disabled names)."""

ExtensionPoints = Callable[[str], frozenset[str] | None]
"""A plugin name → the extension points it implements, or None if no such plugin exists."""


@dataclass(slots=True, frozen=True)
class ExpansionError:
    """A framework-construction error: where (relative to ``plugins``), the offending value, and why."""

    location: str
    value: object
    message: str


@dataclass(slots=True)
class Expansion:
    """Plugin names per extension point in run order, the effective Score weights, and any errors."""

    points: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    errors: list[ExpansionError] = field(default_factory=list)


def expand(sets: PluginSets, extension_points: ExtensionPoints) -> Expansion:
    """Resolve explicit sets and MultiPoint into per-point lists, collecting every error."""
    out = Expansion()
    multi = list(sets.get("multiPoint", ((), ()))[0])
    for j, entry in enumerate(multi):
        if extension_points(entry.name) is None:
            out.errors.append(
                ExpansionError(
                    f"multiPoint.enabled[{j}].name", entry.name, f'plugin "{entry.name}" does not exist'
                )
            )
    reported_double: set[int] = set()
    for point in FRAMEWORK_ORDER:
        go_type = GO_TYPE[point]
        enabled, disabled_names = sets.get(point, ((), ()))
        explicit: list[str] = []
        for j, entry in enumerate(enabled):
            where = f"{point}.enabled[{j}].name"
            points = extension_points(entry.name)
            if points is None:
                out.errors.append(
                    ExpansionError(where, entry.name, f'{go_type} "{entry.name}" does not exist')
                )
            elif point not in points:
                out.errors.append(
                    ExpansionError(
                        where, entry.name, f'plugin "{entry.name}" does not extend {go_type} plugin'
                    )
                )
            elif entry.name in explicit:
                out.errors.append(
                    ExpansionError(
                        where, entry.name, f'plugin "{entry.name}" already registered as "{go_type}"'
                    )
                )
            else:
                explicit.append(entry.name)
        disabled = set(disabled_names)
        if not multi or "*" in disabled:
            out.points[point] = explicit
            continue
        overrides: set[str] = set()
        from_multi: list[str] = []
        for j, entry in enumerate(multi):
            points = extension_points(entry.name)
            if points is None or point not in points or entry.name in disabled:
                continue
            if entry.name in explicit:
                overrides.add(entry.name)
                continue
            if entry.name in from_multi:
                if j not in reported_double:
                    reported_double.add(j)
                    out.errors.append(
                        ExpansionError(
                            f"multiPoint.enabled[{j}].name",
                            entry.name,
                            f'plugin "{entry.name}" already registered as "{go_type}"',
                        )
                    )
                continue
            from_multi.append(entry.name)
        out.points[point] = (
            [n for n in explicit if n in overrides] + from_multi + [n for n in explicit if n not in overrides]
        )
    out.weights = _score_weights(sets, extension_points, out.errors)
    return out


def _score_weights(
    sets: PluginSets, extension_points: ExtensionPoints, errors: list[ExpansionError]
) -> dict[str, int]:
    """``getValidScoreWeights``: the Score point's weight wins over MultiPoint's; 0 means 1."""
    weights: dict[str, int] = {}
    total = 0
    for point in ("score", "multiPoint"):
        for i, entry in enumerate(sets.get(point, ((), ()))[0]):
            points = extension_points(entry.name)
            if points is None or "score" not in points or entry.name in weights:
                continue
            if entry.weight < 0:
                # kube-scheduler would add a negative contribution; berth treats it as a configuration error.
                errors.append(
                    ExpansionError(f"{point}.enabled[{i}].weight", entry.weight, "must not be negative")
                )
            weight = entry.weight or 1
            if weight * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                errors.append(
                    ExpansionError("score", entry.name, "total score of Score plugins could overflow")
                )
            weights[entry.name] = weight
            total += weight * MAX_NODE_SCORE
    return weights
