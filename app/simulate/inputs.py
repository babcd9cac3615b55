"""What ``berth simulate`` reads before it runs: the state (a file or stdin), the seed, and which
profile schedules pods of scheduler names no profile serves (``--schedule-all``)."""

from __future__ import annotations

import dataclasses
import secrets
import sys

from app.config.types import SchedulerConfiguration
from app.simulate.state import ClusterState, StateError, load_state, parse_state

__all__ = ["STDIN", "STDIN_NAME", "adopt_unserved_pods", "new_seed", "read_state"]

#: The STATE argument that means "read standard input", as kubectl's ``-f -``.
STDIN = "-"
#: How errors and warnings name standard input.
STDIN_NAME = "<stdin>"
#: Seeds are drawn below this bound so they stay short enough to retype.
_SEED_BOUND = 2**31


def read_state(path: str) -> ClusterState:
    """The state at ``path``, or standard input when ``path`` is ``-``."""
    if path != STDIN:
        return load_state(path)
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as err:
        raise StateError(STDIN_NAME, f"cannot read: {err}") from None
    return parse_state(text, STDIN_NAME)


def new_seed() -> int:
    """A random seed for a run the user did not seed; it is printed so the run can be repeated."""
    return secrets.randbelow(_SEED_BOUND)


def adopt_unserved_pods(state: ClusterState, cfg: SchedulerConfiguration) -> ClusterState:
    """``--schedule-all``: pending pods whose schedulerName no profile serves become the first profile's.

    Without it such pods are ``Skipped``, as kube-scheduler leaves them to the scheduler they name.
    """
    if not cfg.profiles:
        return state
    served = {p.scheduler_name for p in cfg.profiles}
    first = cfg.profiles[0].scheduler_name
    pending = [
        p
        if p.pod.scheduler_name in served
        else dataclasses.replace(p, pod=dataclasses.replace(p.pod, scheduler_name=first))
        for p in state.pending
    ]
    return dataclasses.replace(state, pending=pending)
