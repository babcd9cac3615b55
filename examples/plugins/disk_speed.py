"""DiskSpeed: the out-of-tree plugin that docs/plugins.md builds, step by step.

Nodes advertise their disk throughput in a label (``example.com/disk-mbps: "800"``). DiskSpeed filters out
nodes slower than ``minimumMBps`` and prefers the fastest of the rest. A label that is not a whole number
is a broken node, not a reason to reject it quietly: the plugin raises PluginError, and the pod's attempt
fails with an Error naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.api.errors import FieldError
from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE, FilterPlugin, PluginError, ScorePlugin
from app.framework.status import Status, unschedulable
from app.framework.types import NodeInfo
from app.plugins.helper.normalize_score import default_normalize_score

DEFAULT_LABEL = "example.com/disk-mbps"


@dataclass(slots=True)
class DiskSpeedArgs:
    """``pluginConfig`` args: which label holds the speed, and the slowest disk a pod may land on."""

    label: str = DEFAULT_LABEL
    minimum_mbps: int = 0

    @classmethod
    def decode(cls, raw: Mapping[str, Any] | None, path: str) -> DiskSpeedArgs:
        """Strictly decode the args (as kube-scheduler decodes its own), naming the field path on errors."""
        raw = dict(raw or {})
        raw.pop("apiVersion", None)
        raw.pop("kind", None)
        label = raw.pop("label", DEFAULT_LABEL)
        minimum = raw.pop("minimumMBps", 0)
        for unknown in raw:
            raise FieldError(f"{path}.{unknown}", f'unknown field "{unknown}"')
        if not isinstance(label, str) or not label:
            raise FieldError(f"{path}.label", "Required value: a label key is required")
        if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
            raise FieldError(
                f"{path}.minimumMBps", f"Invalid value: {minimum!r}: must be a whole number >= 0"
            )
        return cls(label, minimum)

    def to_dict(self) -> dict[str, object]:
        """The args as ``--write-config-to`` prints them (defaults filled in)."""
        return {"label": self.label, "minimumMBps": self.minimum_mbps}


class DiskSpeed(FilterPlugin, ScorePlugin):
    """Filter: the node's disk is at least ``minimumMBps``. Score: the faster, the better (0..100)."""

    name = "DiskSpeed"
    args_type = DiskSpeedArgs
    args: DiskSpeedArgs
    normalizes = True  # normalize_score below scales the raw MB/s into [0, 100]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Reject nodes slower than the minimum (a node without the label counts as 0 MB/s)."""
        speed = self._speed(node_info)
        if speed < self.args.minimum_mbps:
            return unschedulable(f"node(s) had a disk slower than {self.args.minimum_mbps} MB/s")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The node's disk speed in MB/s; :meth:`normalize_score` scales it."""
        return self._speed(node_info)

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        """The fastest node scores 100, the others in proportion (kube-scheduler's DefaultNormalizeScore)."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def _speed(self, node_info: NodeInfo) -> int:
        """The label's value; raises PluginError when it is not a whole number (a misconfigured node)."""
        node = node_info.node
        value = node.labels.get(self.args.label) if node is not None else None
        if value is None:
            return 0
        if not value.isdigit():
            raise PluginError(
                f'node {node_info.name}: label {self.args.label}="{value}" is not a whole number'
            )
        return int(value)


PLUGINS = [DiskSpeed]
