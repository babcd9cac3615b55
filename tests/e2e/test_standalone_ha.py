"""``berth run`` under disruption, on real control planes: repeated leader failovers across three
replicas, a stock kube-scheduler next to it, and an API server restarted in the middle of a run.

What "bound twice" looks like from outside: the API server refuses a second ``pods/binding`` for a
pod that already has a node (409 Conflict), so a scheduler that tried shows it as a failed binding
cycle: a ``FailedScheduling`` event and an "Error scheduling pod" log line, and a second
"Successfully bound" line or ``Scheduled`` event if it somehow got through. The tests assert none
of that happens and that every pod ends up bound. Takeover and recovery times are measured and
printed (``-s`` shows them), never asserted: the machine is shared.
"""

from __future__ import annotations

import re
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from e2e.cluster import Cluster, two_node_cluster
from e2e.stack import KubeScheduler, scheduler_config
from e2e.standalone import SCHEDULER_NAME, BerthScheduler
from kubernetes import client, config

from kube.controlplane import LocalControlPlane
from kube.fixtures import _run_control_plane

pytestmark = pytest.mark.kube

LEASE, RENEW, RETRY = 4.0, 3.0, 0.5
"""The failover test's leader election: short, so that three failovers fit in a test."""

T = TypeVar("T")
_BOUND_LINE = re.compile(r'"Successfully bound pod to node" pod="([^"]+)"')


def _eventually(probe: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """Poll ``probe`` until it returns something other than None/False; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got is not None and got is not False:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def _lease(api: client.ApiClient, namespace: str, name: str) -> Any:
    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(name, namespace).spec
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def _scheduler(
    cp: LocalControlPlane, workdir: Path, namespace: str, lease_name: str, name: str, **kwargs: Any
) -> BerthScheduler:
    return BerthScheduler.on(cp, workdir, namespace=namespace, lease_name=lease_name, name=name, **kwargs)


def _events_by_pod(core: client.CoreV1Api, namespace: str) -> dict[str, list[Any]]:
    """Every core/v1 Event in ``namespace`` about a pod, by pod name."""
    out: dict[str, list[Any]] = {}
    for event in core.list_namespaced_event(namespace).items:
        if event.involved_object.kind == "Pod":
            out.setdefault(event.involved_object.name, []).append(event)
    return out


def _bound_log_lines(procs: list[BerthScheduler]) -> Counter[str]:
    """How many "Successfully bound" lines each pod key has across the logs of ``procs``."""
    counts: Counter[str] = Counter()
    for proc in procs:
        counts.update(_BOUND_LINE.findall(proc.log.read_text(errors="replace")))
    return counts


def _assert_each_pod_bound_once(
    cluster: Cluster, names: list[str], procs: list[BerthScheduler]
) -> dict[str, str]:
    """Every pod in ``names`` is bound; none was bound (or tried to be) twice. Returns pod → node."""
    nodes = {n: cluster.wait_bound(n, timeout=60) for n in names}
    assert set(nodes.values()) <= set(cluster.nodes)
    events = _events_by_pod(cluster.core, cluster.namespace)
    scheduled = {n: [e for e in events.get(n, []) if e.reason == "Scheduled"] for n in names}
    twice = {n: [e.message for e in es] for n, es in scheduled.items() if len(es) > 1}
    assert not twice, f"pods with more than one Scheduled event: {twice}"
    failed = {n: [e.message for e in events.get(n, []) if e.reason == "FailedScheduling"] for n in names}
    assert not {n: m for n, m in failed.items() if m}, f"failed scheduling attempts: {failed}"
    for n, es in scheduled.items():
        # An event the dead leader had not sent yet is lost with it; one that exists names the node.
        assert all(e.message.endswith(f" to {nodes[n]}") for e in es), (n, [e.message for e in es])
    lines = _bound_log_lines(procs)
    keys = {f"{cluster.namespace}/{n}" for n in names}
    assert not {k: c for k, c in lines.items() if k in keys and c > 1}, "a pod was bound twice"
    errors = [
        line
        for proc in procs
        for line in proc.log.read_text(errors="replace").splitlines()
        if "Error scheduling pod" in line or "Unhandled error" in line
    ]
    assert not errors, errors[:5]
    return nodes


class PodStream:
    """Creates a pod for berth every ``interval`` seconds on its own thread until stopped."""

    def __init__(self, cluster: Cluster, prefix: str, interval: float = 0.2) -> None:
        self.cluster = cluster
        self.prefix = prefix
        self.interval = interval
        self.created: list[tuple[str, float]] = []  # (name, monotonic time of creation)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-stream", daemon=True)

    def __enter__(self) -> PodStream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            name = f"{self.prefix}-{i:03d}"
            try:
                self.cluster.create_pod(name, cpu="10m", scheduler_name=SCHEDULER_NAME)
                self.created.append((name, time.monotonic()))
            except client.ApiException as err:
                self.errors.append(f"{name}: {err.status} {err.reason}")
            i += 1
            self._stop.wait(self.interval)

    def names(self) -> list[str]:
        """The pods created so far."""
        return [n for n, _ in self.created]

    def created_after(self, t: float) -> list[str]:
        """The pods created at or after monotonic time ``t``."""
        return [n for n, at in self.created if at >= t]


@pytest.fixture
def cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    """Two roomy nodes for this test in the shared control plane."""
    with two_node_cluster(kube_client, namespace, cpu="8", memory="64Gi") as c:
        yield c


def _micro(value: Any) -> datetime:
    assert isinstance(value, datetime), value
    return value


@dataclass
class HA:
    """Three replicas on one lease, and what the failover test watches them through."""

    api: client.ApiClient
    namespace: str
    lease: str
    replicas: list[BerthScheduler]
    cluster: Cluster
    stream: PodStream

    def lease_spec(self) -> Any:
        """The Lease's spec (None before anyone created it)."""
        return _lease(self.api, self.namespace, self.lease)

    def leader(self) -> BerthScheduler | None:
        """The live replica the Lease names, if any."""
        spec = self.lease_spec()
        by_identity = {r.identity(): r for r in self.replicas if r.alive}
        return by_identity.get(spec.holder_identity or "") if spec is not None else None

    def wait_bound_after(self, t: float) -> None:
        """Wait for the first pod created after monotonic ``t`` to be bound."""
        name = _eventually(lambda: next(iter(self.stream.created_after(t)), None), "a new pod")
        self.cluster.wait_bound(name)

    def failover(self) -> tuple[float, float, float]:
        """SIGKILL the leader once it schedules. Returns seconds from the dead leader's last renewal
        to the new term (Lease timestamps), and from the kill until the lease is taken over and until
        a pod created after the kill is bound (test clock)."""
        for r in self.replicas:  # a replica that lost its lease (a starved renew) exited: bring it back
            if not r.alive:
                r.start()
        current = _eventually(self.leader, "a live replica holding the lease")
        # Only the leader schedules: it alone serves the leader-only endpoint.
        want = [200 if r is current else 503 for r in self.replicas]
        _eventually(
            lambda: [r.get("/metrics/resources")[0] for r in self.replicas] == want,
            "exactly the lease holder reporting itself leader",
        )
        self.wait_bound_after(time.monotonic())  # and it schedules

        old = current.identity()
        current.stop(signal.SIGKILL)
        killed_at = time.monotonic()
        # The dead leader renews no more; a follower must wait out the lease from what it last saw.
        last_renew = _micro(self.lease_spec().renew_time)

        def taken_over() -> Any:
            spec = self.lease_spec()
            return spec if spec is not None and spec.holder_identity not in ("", old) else None

        spec = _eventually(taken_over, "another replica taking the lease over")
        took = time.monotonic() - killed_at
        # Safety, in the Lease's own timestamps (one host, one clock): the two terms do not overlap.
        gap = _micro(spec.acquire_time) - last_renew
        assert gap >= timedelta(seconds=LEASE)
        self.wait_bound_after(killed_at)
        bound = time.monotonic() - killed_at
        current.start()  # back as a follower, with a new identity
        return gap.total_seconds(), took, bound


def test_three_replicas_survive_repeated_sigkill_failovers_without_binding_a_pod_twice(
    control_plane: LocalControlPlane,
    kube_client: client.ApiClient,
    tmp_path: Path,
    namespace: str,
    cluster: Cluster,
) -> None:
    """Three replicas, pods arriving five a second, the leader SIGKILLed three times (and restarted
    as a follower, so three replicas run again): one leader at a time, the new one takes over once
    the lease expires, and every pod is bound exactly once."""
    lease = f"berth-ha-{uuid.uuid4().hex[:6]}"
    replicas = [
        _scheduler(
            control_plane, tmp_path, namespace, lease, f"berth-{i}", lease=LEASE, renew=RENEW, retry=RETRY
        )
        for i in range(3)
    ]
    measured: list[tuple[float, float, float]] = []
    try:
        for r in replicas:
            r.start()
        with PodStream(cluster, "p") as stream:
            ha = HA(kube_client, namespace, lease, replicas, cluster, stream)
            measured = [ha.failover() for _ in range(3)]
        assert not stream.errors, stream.errors
        names = stream.names()
        nodes = _assert_each_pod_bound_once(cluster, names, replicas)
        assert len(nodes) == len(names) > 3 * 5
    finally:
        for r in replicas:
            r.stop()
    summary = ", ".join(f"{g:.2f}s {t:.2f}s {b:.2f}s" for g, t, b in measured)
    print(
        f"\n[failover] {len(measured)} SIGKILL failovers, each: last renewal to new term (Lease times), "
        f"kill to new holder, kill to first new pod bound: {summary} (leaseDuration {LEASE}s, "
        f"retryPeriod {RETRY}s, acquire retries jittered up to {RETRY * 2.2:.1f}s)"
    )


def test_berth_and_a_stock_kube_scheduler_side_by_side(
    control_plane: LocalControlPlane,
    kube_client: client.ApiClient,
    tmp_path: Path,
    namespace: str,
) -> None:
    """Each scheduler binds its own pods only, and counts the other's pods against node capacity."""
    stock_name = f"stock-{uuid.uuid4().hex[:6]}"
    stock = KubeScheduler(
        control_plane.bin_dir,
        control_plane.kubeconfig,
        tmp_path,
        scheduler_config(control_plane.kubeconfig, [], scheduler_name=stock_name),
        "kube-scheduler-side-by-side",
    )
    berth = _scheduler(control_plane, tmp_path, namespace, f"berth-{uuid.uuid4().hex[:6]}", "berth-side")
    cluster = Cluster(kube_client, namespace)
    try:
        stock.start()
        berth.start()
        node_a = cluster.create_node("a", cpu="3")
        # Both at once, several pods each, and one for a scheduler that does not exist.
        ours = [cluster.create_pod(f"berth-{i}", cpu="100m", scheduler_name=SCHEDULER_NAME) for i in range(4)]
        theirs = [cluster.create_pod(f"stock-{i}", cpu="100m", scheduler_name=stock_name) for i in range(4)]
        nobody = cluster.create_pod("nobody", cpu="100m", scheduler_name="no-such-scheduler")
        for name in ours + theirs:
            assert cluster.wait_bound(name) == node_a
        # Capacity: a (3 cpu) now has 800m requested. The stock scheduler takes 1.5 cpu more...
        big_stock = cluster.create_pod("stock-big", cpu="1500m", scheduler_name=stock_name)
        assert cluster.wait_bound(big_stock) == node_a
        # ... so berth must see only 700m left: 1 cpu does not fit, 500m does.
        big_berth = cluster.create_pod("berth-big", cpu="1", scheduler_name=SCHEDULER_NAME)
        message = cluster.wait_event(big_berth, "FailedScheduling", "Insufficient cpu")
        assert message.startswith("0/")
        small_berth = cluster.create_pod("berth-small", cpu="500m", scheduler_name=SCHEDULER_NAME)
        assert cluster.wait_bound(small_berth) == node_a
        # And the stock scheduler must see berth's 500m: 200m left, 300m does not fit.
        late_stock = cluster.create_pod("stock-late", cpu="300m", scheduler_name=stock_name)
        cluster.wait_event(late_stock, "FailedScheduling", "Insufficient cpu")
        # A second node: both unschedulable pods move (each scheduler hears the node add) and fit there.
        node_b = cluster.create_node("b", cpu="2")
        assert cluster.wait_bound(big_berth) == node_b
        assert cluster.wait_bound(late_stock) == node_b
        assert cluster.read_pod(nobody).spec.node_name is None

        # No interference: every event about a pod comes from the pod's own scheduler.
        events = _events_by_pod(cluster.core, namespace)
        owner = {n: SCHEDULER_NAME for n in [*ours, big_berth, small_berth]}
        owner |= {n: stock_name for n in [*theirs, big_stock, late_stock]}
        for name, scheduler_name in owner.items():
            got = events.get(name, [])
            reporters = {e.reporting_component or (e.source.component if e.source else "") for e in got}
            assert reporters == {scheduler_name}, (name, [(e.reason, e.reporting_component) for e in got])
            assert [e.reason for e in got].count("Scheduled") <= 1, (name, [e.message for e in got])
        assert events.get(nobody, []) == []
        for name in [*ours, small_berth, big_berth]:
            assert berth.get(f"/debug/pods/{namespace}/{name}")[0] == 200
        for name in [*theirs, big_stock, late_stock, nobody]:
            assert berth.get(f"/debug/pods/{namespace}/{name}")[0] == 404  # never attempted by berth
    finally:
        berth.stop()
        stock.stop()
        cluster.cleanup()


def _disrupted_setup(
    cp: LocalControlPlane, workdir: Path, namespace: str, lease: float, renew: float
) -> tuple[Any, client.CoreV1Api, Cluster, BerthScheduler]:
    """A namespace with two 8-CPU nodes and a ``berth-<namespace>`` scheduler (not started) on ``cp``,
    whose lease outlives the disruption to come (losing it ends the process by design, as
    kube-scheduler's does): the API client, its core API, the cluster and the scheduler."""
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    cluster = Cluster(api, namespace)
    cluster.create_node("a", cpu="8")
    cluster.create_node("b", cpu="8")
    name = f"berth-{namespace}"
    return (
        api,
        core,
        cluster,
        _scheduler(cp, workdir, namespace, name, name, lease=lease, renew=renew, retry=1),
    )


@pytest.fixture
def own_control_plane() -> Iterator[LocalControlPlane]:
    """A control plane of this test's own: restarting its API server disturbs no other test."""
    yield from _run_control_plane()


def test_api_server_restart_mid_run_loses_no_pod(
    own_control_plane: LocalControlPlane, tmp_path: Path
) -> None:
    """kube-apiserver stopped with pods pending and in flight, then started again on the same etcd:
    berth keeps running (same process, still leader), resumes its watches or relists, and binds
    every pod: those from before, those created just before the stop, those created after."""
    cp = own_control_plane
    namespace = "restart"
    api, core, cluster, berth = _disrupted_setup(cp, tmp_path, namespace, lease=60, renew=45)
    try:
        berth.start()
        pid = berth.popen.pid if berth.popen else 0
        before = [
            cluster.create_pod(f"before-{i}", cpu="10m", scheduler_name=SCHEDULER_NAME) for i in range(5)
        ]
        for name in before:
            cluster.wait_bound(name)
        # Pods still queued or binding when the API server goes away.
        during = [
            cluster.create_pod(f"during-{i:02d}", cpu="10m", scheduler_name=SCHEDULER_NAME) for i in range(20)
        ]
        stopped_at = time.monotonic()
        cp.restart_apiserver(downtime=2.0)
        back_at = time.monotonic()
        after = [cluster.create_pod(f"after-{i}", cpu="10m", scheduler_name=SCHEDULER_NAME) for i in range(5)]
        node_c = cluster.create_node("c", cpu="16")  # a node added after the restart reaches the cache too
        for name in during + after:
            cluster.wait_bound(name, timeout=90)
        recovered = time.monotonic() - back_at
        assert berth.alive and berth.popen is not None and berth.popen.pid == pid
        assert berth.get("/readyz")[0] == 200 and berth.get("/metrics/resources")[0] == 200
        names = before + during + after
        events = _events_by_pod(core, namespace)
        twice = {n: c for n in names if (c := [e.reason for e in events.get(n, [])].count("Scheduled")) > 1}
        assert not twice, twice
        lines = _bound_log_lines([berth])
        assert {k: c for k, c in lines.items() if c > 1} == {}
        assert {f"{namespace}/{n}" for n in names} <= set(lines), "a pod was bound by someone else"
        # The new node is in berth's cache: a pod that fits only there is bound to it.
        big = cluster.create_pod("only-on-c", cpu="12", scheduler_name=SCHEDULER_NAME)
        assert cluster.wait_bound(big) == node_c
        # The pod watch saw the API server go and came back (the pods created after it are bound):
        # by re-watching from its resourceVersion, or by relisting when the restarted API server's
        # watch cache starts after that version (410 Gone), which depends on what was written last.
        log = berth.log.read_text(errors="replace")
        rewatches = len(re.findall(r'"Watch failed; re-watching" resource="pods"', log))
        relists = len(re.findall(r'"Listed" resource="pods"', log))
        assert rewatches >= 1, "the pod watch never saw the API server go away"
        print(
            f"\n[apiserver restart] down {back_at - stopped_at:.1f}s (stop, 2s, start to /readyz); all "
            f"{len(during) + len(after)} pending pods bound {recovered:.1f}s after it was back; "
            f"pod watch retries: {rewatches}, pod lists: {relists}"
        )
    finally:
        berth.stop()
        api.close()
