"""An out-of-tree test plugin whose Filter raises for pods annotated ``example.com/explode: "true"``.

Loaded with ``--plugin-module exploding_filter`` (this folder on PYTHONPATH) to show that a plugin
crashing during /filter costs that one answer (HTTP 200 with Error), not the server.
"""

from __future__ import annotations

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import FilterPlugin
from app.framework.status import Status
from app.framework.types import NodeInfo

EXPLODE_ANNOTATION = "example.com/explode"


class ExplodingFilter(FilterPlugin):
    """Raises inside Filter for the annotated pods; passes every node for the others."""

    name = "ExplodingFilter"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Blow up on request."""
        if pod.annotations.get(EXPLODE_ANNOTATION) == "true":
            raise RuntimeError(f"plugin exploded on node {node_info.node.name if node_info.node else '?'}")
        return None
