"""DefaultBinder (``plugins/defaultbinder/default_binder.go``)."""

from __future__ import annotations

from typing import ClassVar

from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import BindPlugin
from app.framework.status import Status


class DefaultBinder(BindPlugin):
    """Binds the pod through the handle's binder (a Binding to the API server, or the cache)."""

    name: ClassVar[str] = "DefaultBinder"

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Create the binding of ``pod`` to ``node_name``; the binder's status is returned as is."""
        return self.handle.binder.bind(pod, node_name)
