"""An out-of-tree berth plugin: prefer nodes that carry a label, reject nodes that forbid the pod.

Register it with ``--plugin-module prefer_label`` (with this folder on PYTHONPATH) or through
the ``berth.plugins`` entry-point group, enable it in a profile and configure it::

    profiles:
    - schedulerName: default-scheduler
      plugins:
        multiPoint:
          enabled:
          - name: PreferLabel
            weight: 5
      pluginConfig:
      - name: PreferLabel
        args:
          label: example.com/fast-disk
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.api.errors import FieldError
from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import MAX_NODE_SCORE, FilterPlugin, ScorePlugin
from app.framework.status import Status, unresolvable
from app.framework.types import NodeInfo

OPT_OUT_ANNOTATION = "example.com/avoid-label"


@dataclass(slots=True)
class PreferLabelArgs:
    """``pluginConfig`` args: the label to prefer (required)."""

    label: str

    @classmethod
    def decode(cls, raw: Mapping[str, Any] | None, path: str) -> PreferLabelArgs:
        """Strictly decode the args, naming the field path on errors."""
        raw = dict(raw or {})
        raw.pop("apiVersion", None)
        raw.pop("kind", None)
        label = raw.pop("label", None)
        for unknown in raw:
            raise FieldError(f"{path}.{unknown}", f'unknown field "{unknown}"')
        if not isinstance(label, str) or not label:
            raise FieldError(f"{path}.label", "Required value: a label key is required")
        return cls(label)

    def to_dict(self) -> dict[str, object]:
        """The args as ``--write-config-to`` prints them."""
        return {"label": self.label}


class PreferLabel(FilterPlugin, ScorePlugin):
    """Scores 100 on nodes with the label, 0 elsewhere; pods annotated to avoid it never land there."""

    name = "PreferLabel"
    args_type = PreferLabelArgs
    args: PreferLabelArgs

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Reject labelled nodes for pods annotated with ``example.com/avoid-label: "true"``."""
        node = node_info.node
        if (
            pod.annotations.get(OPT_OUT_ANNOTATION) == "true"
            and node is not None
            and self.args.label in node.labels
        ):
            return unresolvable(f"node(s) had label {self.args.label} that the pod avoids")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """100 if the node carries the label."""
        node = node_info.node
        return MAX_NODE_SCORE if node is not None and self.args.label in node.labels else 0

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> None:
        """Scores are already in [0, 100]."""
        return None


PLUGINS = [PreferLabel]
