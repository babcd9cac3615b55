"""``berth run``'s binding cycle while kube-apiserver is frozen (SIGSTOP), thawed, and frozen then
restarted, on a control plane of the test's own.

A frozen API server keeps its connections open and answers nothing: every Binding berth sends
meanwhile waits in a socket. What must hold: berth's own endpoints keep answering (a wait on the
API server never blocks the process), every pod ends up bound once the API server is back, none is
bound twice, and what berth says (the ``Scheduled`` events, its "Successfully bound" log lines, a
``FailedScheduling`` event for a binding that really failed) matches where each pod is. Recovery
times are printed (``-s``), never asserted: the machine is shared.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.cluster import Cluster
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from e2e.test_standalone_ha import (
    _assert_each_pod_bound_once,
    _bound_log_lines,
    _disrupted_setup,
    _events_by_pod,
)

from kube.controlplane import LocalControlPlane
from kube.fixtures import _run_control_plane

pytestmark = pytest.mark.kube

_ASSIGNED_LINE = re.compile(r'"Pod has been assigned to node. Abort adding it back to queue." pod="([^"]+)"')
# berth's own Binding POST whose answer was lost to the API server's death (the connection reset or
# the pipe broken after the request went out; a refused connection sent nothing and does not count):
# the server may have applied it, so the pod can end up bound by it.
_LOST_BINDING_LINE = re.compile(
    r'"Error scheduling pod; retrying" pod="([^"]+)" err="running Bind plugin \\"DefaultBinder\\": '
    r"POST /api/v1/namespaces/[^/]+/pods/[^/]+/binding: \[Errno (?:104|32)\]"
)
PODS = 30


@pytest.fixture
def own_control_plane() -> Iterator[LocalControlPlane]:
    """A control plane of this test's own: freezing and restarting its API server disturbs no other test."""
    yield from _run_control_plane()


class LivenessWhileFrozen(threading.Thread):
    """``GET /livez`` on berth every 0.2 s while the API server is frozen: the answers and the slowest."""

    def __init__(self, berth: BerthScheduler) -> None:
        super().__init__(daemon=True)
        self.berth = berth
        self.done = threading.Event()
        self.statuses: list[int] = []
        self.slowest = 0.0

    def run(self) -> None:
        while not self.done.is_set():
            start = time.monotonic()
            self.statuses.append(self.berth.get("/livez")[0])
            self.slowest = max(self.slowest, time.monotonic() - start)
            time.sleep(0.2)

    def __enter__(self) -> LivenessWhileFrozen:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.join(10)


def create_pods(cluster: Cluster, prefix: str) -> list[str]:
    return [
        cluster.create_pod(f"{prefix}-{i:02d}", cpu="10m", scheduler_name=SCHEDULER_NAME) for i in range(PODS)
    ]


def test_binding_cycle_across_a_frozen_then_restarted_api_server(
    own_control_plane: LocalControlPlane, tmp_path: Path
) -> None:
    cp = own_control_plane
    namespace = "frozen"
    api, core, cluster, berth = _disrupted_setup(cp, tmp_path, namespace, lease=90, renew=75)
    try:
        berth.start()
        pid = berth.popen.pid if berth.popen else 0

        # 1. Frozen while pods are being bound, thawed within the client's request timeout (30 s):
        # the Bindings waiting in their sockets are applied once it thaws; nothing fails.
        thawed = create_pods(cluster, "thawed")
        with LivenessWhileFrozen(berth) as liveness, cp.frozen_apiserver():
            time.sleep(8)
        back_at = time.monotonic()
        nodes = _assert_each_pod_bound_once(cluster, thawed, [berth])
        print(f"\n[frozen 8 s] {PODS} pods bound {time.monotonic() - back_at:.1f}s after the thaw")
        assert liveness.statuses and set(liveness.statuses) == {200}, liveness.statuses
        print(f"[frozen 8 s] berth /livez: {len(liveness.statuses)} answers, slowest {liveness.slowest:.2f}s")

        # 2. Frozen, then killed and started again: the Bindings in flight get connection errors
        # (or were never read); berth retries, and every pod is bound once after the restart.
        restarted = create_pods(cluster, "restarted")
        with LivenessWhileFrozen(berth) as liveness:
            with cp.frozen_apiserver():
                time.sleep(3)
                cp.stop_apiserver()  # SIGKILL reaches a stopped process; SIGCONT then finds none
            cp.start_apiserver()
        back_at = time.monotonic()
        for name in restarted:
            nodes[name] = cluster.wait_bound(name, timeout=120)
        print(f"[frozen, restarted] {PODS} pods bound {time.monotonic() - back_at:.1f}s after the restart")
        assert set(liveness.statuses) == {200}, liveness.statuses

        assert berth.alive and berth.popen is not None and berth.popen.pid == pid
        events = _events_by_pod(core, namespace)
        for name in restarted:
            scheduled = [e.message for e in events.get(name, []) if e.reason == "Scheduled"]
            # One Scheduled event, naming the node the pod is on (an event berth could not write
            # while the API server was down may be missing; a second one, or a wrong node, never).
            assert len(scheduled) <= 1 and all(m.endswith(f" to {nodes[name]}") for m in scheduled), (
                name,
                scheduled,
            )
            for event in events.get(name, []):
                if event.reason == "FailedScheduling":
                    # A failure reported is a binding that failed, and says so.
                    assert "binding" in event.message.lower() or "bind" in event.message.lower(), (
                        event.message
                    )
        lines = _bound_log_lines([berth])
        keys = {f"{namespace}/{n}" for n in thawed + restarted}
        assert {k: c for k, c in lines.items() if k in keys and c > 1} == {}, "a pod was bound twice"
        log = berth.log.read_text(errors="replace")
        # A Binding the API server applied just before it was killed reaches berth as a connection
        # reset. When berth's informer already shows the pod assigned as the failure is handled, it
        # says so as kube-scheduler does ("Pod has been assigned to node. Abort adding it back to
        # queue."); when the server is still down then, the log has berth's own failed Binding POST
        # for that pod, and the pod leaves the queue once the restarted server's watch shows it bound.
        assigned = set(_ASSIGNED_LINE.findall(log))
        lost = set(_LOST_BINDING_LINE.findall(log))
        assert keys <= set(lines) | assigned | lost, "a pod was bound without berth saying so"
        assert "Traceback" not in log and "Unhandled error" not in log
    finally:
        berth.stop()
        api.close()
