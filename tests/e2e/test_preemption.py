"""Preemption on the real control plane (issue 6), as a user sees it.

- ``berth run`` (schedulerName ``berth-scheduler``): a high-priority pod evicts the least important
  pods of a full node (DisruptionTarget condition, deletion, ``Preempted`` events), is nominated
  there (``status.nominatedNodeName``), then bound; its FailedScheduling event and PodScheduled
  condition read as kube-scheduler's; ``/metrics`` counts the attempt and the victims.
- ``berth run`` leaves a PodDisruptionBudget-protected pod alone while another candidate exists.
- The FitError messages with a preemption part are exactly kube-scheduler's: the same pods are
  given to ``berth run`` and to a stock kube-scheduler v1.36.3 and their messages compared.
- A stock kube-scheduler with berth registered as extender with ``preemptVerb: preempt`` (both node
  modes) never nominates the node berth's filter rejects, although its own dry run prefers it.

PriorityClasses, pods and PodDisruptionBudgets are created through the API. No kubelet runs, so a
bound victim DELETEd with a grace period would only get a ``deletionTimestamp`` and hold its node
forever: :class:`FakeKubelet` confirms the deletion as a kubelet does once the containers stopped
(grace period 0), and records every version of the test's pods it watched, which is how the tests
see the transient states (DisruptionTarget, nominatedNodeName) a poll could miss.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import re
import ssl
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e.cluster import PREFERRED_LABEL, TEST_LABEL, WAIT, Cluster
from e2e.stack import BerthServer, ExtenderEntry, KubeScheduler, scheduler_config
from e2e.standalone import SCHEDULER_NAME, BerthScheduler, insecure_context
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

AVOID_ANNOTATION = "example.com/avoid-label"  # PreferLabel's Filter: reject nodes with the label
KUBE_NAMES = "kube-preempt-names"  # the stock kube-scheduler, nodeCacheCapable: true
KUBE_NODES = "kube-preempt-nodes"  # the stock kube-scheduler, nodeCacheCapable: false
DISRUPTION_MESSAGE = "{}: preempting to accommodate a higher priority pod"  # executor.go PreemptPod


# --- helpers ---------------------------------------------------------------------------------------


def wait_until(check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """Poll ``check`` until it returns something truthy (returned); fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout:.0f}s")
        time.sleep(0.1)


@dataclass
class FakeKubelet:
    """The kubelets of the test's nodes, for deletions only, plus a record of every pod version seen.

    A watch on the test's namespace: each pod version is appended to :attr:`history`, and a bound
    pod with a ``deletionTimestamp`` is deleted with grace period 0 (and its UID as precondition),
    as its kubelet does once the containers stopped. Runs on its own client and thread.
    """

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.namespace = namespace
        self.history: dict[str, list[client.V1Pod]] = defaultdict(list)
        self.deleted: set[str] = set()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watching = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)

    def start(self) -> FakeKubelet:
        """Start watching; returns once the watch's starting point is listed."""
        self._thread.start()
        if not self._watching.wait(WAIT):
            pytest.fail("the fake kubelet could not list the namespace's pods")
        return self

    def stop(self) -> None:
        """Stop the watch (it ends within its one-second server timeout) and close the client."""
        self._stopping.set()
        self._thread.join(WAIT)
        self.api.close()

    def _relist(self) -> str:
        listed = self.core.list_namespaced_pod(self.namespace)
        for pod in listed.items:
            self._observe("ADDED", pod)
        return str(listed.metadata.resource_version)

    def _run(self) -> None:
        rv = ""
        while not self._stopping.is_set():
            try:
                if not rv:
                    rv = self._relist()
                    self._watching.set()
                stream = watch.Watch().stream(
                    self.core.list_namespaced_pod, self.namespace, resource_version=rv, timeout_seconds=1
                )
                for ev in stream:
                    pod = ev["object"]
                    rv = pod.metadata.resource_version
                    self._observe(ev["type"], pod)
            except Exception as err:  # a 410 Gone, a dropped connection: start again from a list
                self.errors.append(repr(err))
                rv = ""
                self._stopping.wait(0.1)

    def _observe(self, kind: str, pod: client.V1Pod) -> None:
        name = pod.metadata.name
        with self._lock:
            self.history[name].append(pod)
            if kind == "DELETED":
                self.deleted.add(name)
        if kind != "DELETED" and pod.metadata.deletion_timestamp and pod.spec.node_name:
            try:
                self.core.delete_namespaced_pod(
                    name,
                    self.namespace,
                    body=client.V1DeleteOptions(
                        grace_period_seconds=0, preconditions=client.V1Preconditions(uid=pod.metadata.uid)
                    ),
                )
            except ApiException as err:
                if err.status not in (404, 409):  # gone already, or a namesake
                    self.errors.append(f"deleting {name}: {err.status} {err.reason}")

    def versions(self, name: str) -> list[client.V1Pod]:
        """Every version of pod ``name`` watched so far, oldest first."""
        with self._lock:
            return list(self.history.get(name, []))

    def until_bound(self, name: str) -> list[client.V1Pod]:
        """The versions of pod ``name`` before the first bound one (waiting for the watch to see it)."""

        def before_bound() -> list[client.V1Pod] | None:
            versions = self.versions(name)
            bound = [i for i, p in enumerate(versions) if p.spec.node_name]
            return versions[: bound[0]] if bound else None

        found: list[client.V1Pod] = wait_until(before_bound, f"pod {name} bound in the watch")
        return found

    def is_deleted(self, name: str) -> bool:
        """Whether pod ``name``'s deletion was watched."""
        with self._lock:
            return name in self.deleted

    def wait_deleted(self, name: str) -> None:
        """Wait for the watch to see pod ``name`` deleted."""
        wait_until(functools.partial(self.is_deleted, name), f"deletion of pod {name} in the watch")

    def nominations(self, name: str) -> list[str]:
        """The distinct ``status.nominatedNodeName`` values pod ``name`` had, in order, as far as the
        watch has seen (:meth:`until_bound` first, for every version before the binding)."""
        seen: list[str] = []
        for pod in self.versions(name):
            nominated = pod.status.nominated_node_name if pod.status else None
            if nominated and nominated not in seen:
                seen.append(nominated)
        return seen

    def disruption(self, name: str) -> client.V1PodCondition | None:
        """The DisruptionTarget condition of the first terminating version of pod ``name``, if any."""
        for pod in self.versions(name):
            if pod.metadata.deletion_timestamp:
                return condition(pod, "DisruptionTarget")
        return None


def condition(pod: client.V1Pod, kind: str) -> client.V1PodCondition | None:
    """The pod's condition of type ``kind``."""
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == kind:
            return c
    return None


def events(cluster: Cluster, pod: str, reason: str) -> list[client.CoreV1Event]:
    """The core/v1 view of the Events about ``pod`` with ``reason``."""
    listed = cluster.core.list_namespaced_event(
        cluster.namespace, field_selector=f"involvedObject.name={pod}"
    )
    return [e for e in listed.items if e.reason == reason]


def wait_events(cluster: Cluster, pod: str, reason: str) -> list[client.CoreV1Event]:
    """The ``reason`` Events about ``pod``, once there is one."""
    found: list[client.CoreV1Event] = wait_until(
        lambda: events(cluster, pod, reason), f"a {reason} event about pod {pod}"
    )
    return found


def create_pod(
    cluster: Cluster,
    name: str,
    *,
    cpu: str,
    priority_class: str,
    scheduler: str = SCHEDULER_NAME,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> client.V1Pod:
    """A pod of ``priority_class`` selecting the test's nodes (bound at once when ``node`` is given);
    the Priority admission plugin fills in ``spec.priority`` and ``spec.preemptionPolicy``."""
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels, annotations=annotations),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="c",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
                )
            ],
            node_selector={TEST_LABEL: cluster.label},
            node_name=node,
            scheduler_name=scheduler,
            priority_class_name=priority_class,
        ),
    )
    created: client.V1Pod = cluster.core.create_namespaced_pod(cluster.namespace, pod)
    cluster.pods.append(name)
    return created


def metric_samples(text: str) -> dict[str, float]:
    """Prometheus text as ``{"name{labels}": value}``, comments skipped; a bucket's ``le`` is
    normalised to Go's spelling (``le="2"``, where Python's client writes ``le="2.0"``)."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            key = re.sub(r'le="([0-9.e+]+)"', lambda m: f'le="{float(m[1]):g}"', key)
            samples[key] = float(value)
    return samples


def scheduler_metrics(berth: BerthScheduler) -> dict[str, float]:
    """``berth run``'s /metrics, read with the admin client certificate."""
    status, body = berth.get("/metrics")
    assert status == 200, (status, body[:300])
    return metric_samples(body)


def wait_berth_knows_nodes(berth: BerthServer, nodes: list[str]) -> None:
    """Wait until ``berth serve``'s cache has ``nodes`` (its /filter passes them all a pod without requests).

    A node berth has not seen yet is dropped by its /preempt ("not found in berth's cache").
    """
    probe = {
        "metadata": {"name": "probe", "namespace": "default", "uid": "probe"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},  # no requests: fits on full nodes
    }
    wait_until(
        lambda: not berth.post("filter", {"Pod": probe, "NodeNames": nodes})["FailedNodes"],
        f"berth's cache to hold nodes {nodes}",
    )


# --- fixtures --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Priorities:
    """The module's PriorityClass names."""

    low: str  # 10
    mid: str  # 20
    high: str  # 1000
    never: str  # 1000, preemptionPolicy: Never


@pytest.fixture(scope="module")
def priorities(kube_client: client.ApiClient) -> Iterator[Priorities]:
    """PriorityClasses created through the API (cluster-scoped, so named uniquely), deleted after."""
    api = client.SchedulingV1Api(kube_client)
    tag = uuid.uuid4().hex[:6]
    classes = Priorities(f"low-{tag}", f"mid-{tag}", f"high-{tag}", f"never-{tag}")
    values = {classes.low: 10, classes.mid: 20, classes.high: 1000, classes.never: 1000}
    for name, value in values.items():
        api.create_priority_class(
            client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name=name),
                value=value,
                preemption_policy="Never" if name == classes.never else "PreemptLowerPriority",
            )
        )
    try:
        yield classes
    finally:
        for name in values:
            api.delete_priority_class(name)


@contextlib.contextmanager
def ready_berth_run(
    control_plane: LocalControlPlane, e2e_dir: Path, name: str, **options: Any
) -> Iterator[BerthScheduler]:
    """A ``berth run`` without leader election, ready (informers synced), stopped on exit."""
    proc = BerthScheduler.on(
        control_plane,
        e2e_dir,
        namespace="default",
        lease_name="unused",
        name=name,
        leader_elect=False,
        **options,
    )
    try:
        proc.start()
        proc.wait_ready(f"{proc.base}/readyz", insecure_context())
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def berth_run(control_plane: LocalControlPlane, e2e_dir: Path) -> Iterator[BerthScheduler]:
    """One ``berth run`` for the module."""
    with ready_berth_run(control_plane, e2e_dir, "berth-run-preemption") as proc:
        yield proc


@pytest.fixture(scope="module")
def stock_schedulers(
    control_plane: LocalControlPlane, berth: BerthServer, e2e_dir: Path
) -> Iterator[dict[str, KubeScheduler]]:
    """Two stock kube-schedulers with berth as extender (filter, prioritize, preempt, bind), one per
    node mode, each with its own schedulerName so that both can run at once; started in parallel."""
    started: dict[str, KubeScheduler] = {}
    for name, cache_capable in ((KUBE_NAMES, True), (KUBE_NODES, False)):
        entry = ExtenderEntry(berth.url, node_cache_capable=cache_capable, preempt_verb="preempt")
        cfg = scheduler_config(control_plane.kubeconfig, [entry], scheduler_name=name)
        started[name] = KubeScheduler(control_plane.bin_dir, control_plane.kubeconfig, e2e_dir, cfg, name)
    try:
        with ThreadPoolExecutor(len(started)) as pool:
            for future in [pool.submit(s.start) for s in started.values()]:
                future.result()
        yield started
    finally:
        for sched in started.values():
            sched.stop()


@pytest.fixture
def kubelet(control_plane: LocalControlPlane, cluster: Cluster) -> Iterator[FakeKubelet]:
    """The fake kubelet of the test's namespace."""
    k = FakeKubelet(control_plane.kubeconfig, cluster.namespace).start()
    try:
        yield k
    finally:
        k.stop()


# --- berth run -------------------------------------------------------------------------------------


FIT_MESSAGE = re.compile(
    r"0/(\d+) nodes are available: 1 Insufficient cpu"
    r"(?:, (\d+) node\(s\) didn't match Pod's node affinity/selector)?\."
)
"""The FitError of a preemptor whose preemption succeeded: no "preemption:" part, as in
kube-scheduler, where the PostFilter's Success status has no message."""
RETRY_MESSAGE = re.compile(
    FIT_MESSAGE.pattern
    + r" no new claims to deallocate, preemption: not eligible due to a terminating pod on the nominated node\."
)
"""The FitError of a retry while a victim on the nominated node is still terminating (DynamicResources'
PostFilter reason first, as kube-scheduler writes it)."""


def test_high_priority_pod_preempts_the_least_important_pods(
    berth_run: BerthScheduler, cluster: Cluster, kubelet: FakeKubelet, priorities: Priorities
) -> None:
    """A 4-cpu node full with two low (10) and two mid (20) 1-cpu pods; a 2-cpu pod of priority 1000
    evicts exactly the two low ones (SelectVictimsOnNode reprieves the most important first)."""
    node = cluster.create_node("n", cpu="4")
    for name, pc in (("low-0", priorities.low), ("low-1", priorities.low)):
        create_pod(cluster, name, cpu="1", priority_class=pc)
    for name, pc in (("mid-0", priorities.mid), ("mid-1", priorities.mid)):
        create_pod(cluster, name, cpu="1", priority_class=pc)
    for name in ("low-0", "low-1", "mid-0", "mid-1"):
        assert cluster.wait_bound(name) == node
    before = scheduler_metrics(berth_run)

    uid = create_pod(cluster, "high", cpu="2", priority_class=priorities.high).metadata.uid

    assert cluster.wait_bound("high") == node
    # Nominated to the node before it was bound there.
    pending = kubelet.until_bound("high")
    # A watch error makes the fake kubelet relist, which skips versions: say so if it happened.
    assert node in {p.status.nominated_node_name for p in pending}, f"watch errors: {kubelet.errors}"
    assert kubelet.nominations("high") == [node]

    for victim in ("low-0", "low-1"):
        kubelet.wait_deleted(victim)
        disruption = kubelet.disruption(victim)
        assert disruption is not None, kubelet.versions(victim)
        assert (disruption.status, disruption.reason, disruption.message) == (
            "True",
            "PreemptionByScheduler",
            DISRUPTION_MESSAGE.format(SCHEDULER_NAME),
        )
        # One event per preemption of the victim (a retry that saw it before its deletionTimestamp
        # reached the cache preempts it again, as kube-scheduler would).
        for preempted in wait_events(cluster, victim, "Preempted"):
            assert (preempted.type, preempted.action) == ("Normal", "Preempting")
            assert preempted.message == f"Preempted by pod {uid} on node {node}"
            assert preempted.reporting_component == SCHEDULER_NAME
            assert preempted.related is not None and preempted.related.uid == uid
    for survivor in ("mid-0", "mid-1"):
        pod = cluster.read_pod(survivor)
        assert pod.metadata.deletion_timestamp is None and condition(pod, "DisruptionTarget") is None

    # The first attempt's FailedScheduling event, and the PodScheduled condition written with the
    # nomination. A retry may follow before the victims are gone (an event of its own: the pod's
    # resourceVersion changed), failing with either message, as in kube-scheduler.
    failures = sorted(wait_events(cluster, "high", "FailedScheduling"), key=lambda e: e.event_time)
    for failed in failures:
        assert failed.type == "Warning" and failed.reporting_component == SCHEDULER_NAME
        assert FIT_MESSAGE.fullmatch(failed.message) or RETRY_MESSAGE.fullmatch(failed.message), (
            failed.message
        )
    failed = failures[0]
    match = FIT_MESSAGE.fullmatch(failed.message)
    assert match is not None, failed.message
    assert int(match[1]) == 1 + int(match[2] or 0)
    unschedulable = [
        (c.status, c.reason, c.message, p.status.nominated_node_name)
        for p in pending
        if (c := condition(p, "PodScheduled")) is not None
    ]
    assert ("False", "Unschedulable", failed.message, node) in unschedulable, unschedulable
    scheduled = condition(cluster.read_pod("high"), "PodScheduled")
    assert scheduled is not None and scheduled.status == "True"

    after = scheduler_metrics(berth_run)
    attempts = "scheduler_preemption_attempts_total"
    assert after[attempts] >= before.get(attempts, 0) + 1
    # One preemption of two victims (a retry racing the informer could count a second one).
    count, total = "scheduler_preemption_victims_count", "scheduler_preemption_victims_sum"
    assert after[count] >= before.get(count, 0) + 1
    assert after[total] >= before.get(total, 0) + 2
    assert (
        after['scheduler_preemption_victims_bucket{le="2"}']
        >= before.get('scheduler_preemption_victims_bucket{le="2"}', 0) + 1
    )


def test_pdb_protected_pod_is_not_chosen_while_another_candidate_exists(
    berth_run: BerthScheduler,
    kube_client: client.ApiClient,
    cluster: Cluster,
    kubelet: FakeKubelet,
    priorities: Priorities,
) -> None:
    """Two 2-cpu nodes, each full with one 2-cpu pod. The one on the first node has the lower
    priority (10 < 20), so pickOneNodeForPreemption would evict it, but a PodDisruptionBudget with
    ``disruptionsAllowed: 0`` covers it: fewest PDB violations comes first, so the other goes."""
    app = f"protected-{cluster.label}"
    policy = client.PolicyV1Api(kube_client)
    pdb = policy.create_namespaced_pod_disruption_budget(
        cluster.namespace,
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="protect"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels={"app": app})
            ),
        ),
    )
    # No disruption controller runs: write the status it would (what kube-scheduler reads).
    policy.patch_namespaced_pod_disruption_budget_status(
        "protect",
        cluster.namespace,
        {
            "status": {
                "disruptionsAllowed": 0,
                "currentHealthy": 1,
                "desiredHealthy": 1,
                "expectedPods": 1,
                "observedGeneration": pdb.metadata.generation,
            }
        },
    )
    # The PDB exists before the pods: berth's PDB informer has it long before the preemptor comes.
    a, b = cluster.create_node("a", cpu="2"), cluster.create_node("b", cpu="2")
    create_pod(cluster, "protected", cpu="2", priority_class=priorities.low, node=a, labels={"app": app})
    create_pod(cluster, "unprotected", cpu="2", priority_class=priorities.mid, node=b)

    create_pod(cluster, "high", cpu="1", priority_class=priorities.high)

    assert cluster.wait_bound("high") == b
    kubelet.until_bound("high")
    assert kubelet.nominations("high") == [b]
    kubelet.wait_deleted("unprotected")
    assert kubelet.disruption("unprotected") is not None
    protected = cluster.read_pod("protected")
    assert protected.metadata.deletion_timestamp is None
    assert condition(protected, "DisruptionTarget") is None
    assert events(cluster, "protected", "Preempted") == []


def settled_failure(cluster: Cluster, pod: str, num_nodes: int) -> tuple[str, str, str]:
    """``(event message, condition reason, condition message)`` of ``pod``'s failure on all
    ``num_nodes`` nodes: a FailedScheduling event counting them and the PodScheduled=False condition
    written with it. (A scheduler whose pod informer ran ahead of its node informer may first fail
    the pod on fewer nodes; the node's arrival retries it.)"""
    prefix = f"0/{num_nodes} nodes are available:"

    def settled() -> tuple[str, str, str] | None:
        cond = condition(cluster.read_pod(pod), "PodScheduled")
        if cond is None or cond.status != "False" or not str(cond.message).startswith(prefix):
            return None
        for event in events(cluster, pod, "FailedScheduling"):
            if event.message == cond.message and event.type == "Warning" and event.action == "Scheduling":
                return str(event.message), str(cond.reason), str(cond.message)
        return None

    found: tuple[str, str, str] = wait_until(settled, f"pod {pod}'s failure on {num_nodes} nodes")
    return found


def test_fit_error_messages_match_kube_scheduler(
    berth_run: BerthScheduler,
    stock_schedulers: dict[str, KubeScheduler],
    cluster: Cluster,
    priorities: Priorities,
) -> None:
    """The same two pods given to ``berth run`` and to a stock kube-scheduler get the same
    FailedScheduling event and PodScheduled condition, preemption part included: next to a node
    full with an equal-priority pod ("No preemption victims found for incoming pod"), a node the pods'
    node selector rejects ("Preemption is not helpful for scheduling"); and a pod whose PriorityClass has
    preemptionPolicy Never ("not eligible due to preemptionPolicy=Never."). In-tree filters reject
    every node, so kube-scheduler never asks its extender about these pods. Both start the
    PostFilter part with DynamicResources' "no new claims to deallocate" (it runs before
    DefaultPreemption and the pods have no claims).
    """
    full = cluster.create_node("full", cpu="2")
    cluster.create_node("elsewhere", cpu="2", labels={TEST_LABEL: "another-test"})  # fails the selector
    create_pod(cluster, "occupant", cpu="2", priority_class=priorities.mid, node=full)
    cases = {"equal": priorities.mid, "never": priorities.never}
    for case, pc in cases.items():
        create_pod(cluster, f"{case}-berth", cpu="1", priority_class=pc)
        create_pod(cluster, f"{case}-kube", cpu="1", priority_class=pc, scheduler=KUBE_NAMES)

    num_nodes = len(cluster.core.list_node().items)  # every scheduler counts all nodes
    berth_says = {case: settled_failure(cluster, f"{case}-berth", num_nodes) for case in cases}
    kube_says = {case: settled_failure(cluster, f"{case}-kube", num_nodes) for case in cases}
    for said in (*berth_says.values(), *kube_says.values()):
        assert said[1:] == ("Unschedulable", said[0])

    assert berth_says == kube_says
    equal, never = berth_says["equal"][0], berth_says["never"][0]
    assert " preemption: 0/" in equal and "1 No preemption victims found for incoming pod" in equal, equal
    assert equal.endswith(" Preemption is not helpful for scheduling."), equal
    assert never.endswith(
        " no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    ), never


# --- a stock kube-scheduler with berth's preemptVerb ------------------------------------------------


def preempt_successes(berth: BerthServer) -> float:
    return berth.metric("berth_extender_requests_total", {"verb": "preempt", "result": "success"})


@pytest.mark.parametrize("scheduler_name", [KUBE_NAMES, KUBE_NODES], ids=["NodeNames", "Nodes"])
def test_stock_scheduler_does_not_nominate_a_node_berth_rejects(
    scheduler_name: str,
    stock_schedulers: dict[str, KubeScheduler],
    berth: BerthServer,
    cluster: Cluster,
    kubelet: FakeKubelet,
    priorities: Priorities,
) -> None:
    """Two full 2-cpu nodes; ``fast`` carries example.com/fast-disk, which berth's PreferLabel Filter
    rejects for a pod annotated to avoid it. kube-scheduler's in-tree filters fail both nodes for
    cpu (so its extender filter is never asked) and its dry run finds victims on both; on its own
    it would pick ``fast``, whose victim has the lower priority (10 < 20). berth's /preempt drops
    ``fast`` (the label stays whatever is evicted), so the ``plain`` node's pod is evicted instead."""
    fast = cluster.create_node("fast", cpu="2", labels={PREFERRED_LABEL: "true"})
    plain = cluster.create_node("plain", cpu="2")
    create_pod(cluster, "fast-low", cpu="2", priority_class=priorities.low, node=fast)
    create_pod(cluster, "plain-mid", cpu="2", priority_class=priorities.mid, node=plain)
    wait_berth_knows_nodes(berth, [fast, plain])
    asked = preempt_successes(berth)

    uid = create_pod(
        cluster,
        "shy",
        cpu="1",
        priority_class=priorities.high,
        scheduler=scheduler_name,
        annotations={AVOID_ANNOTATION: "true"},
    ).metadata.uid

    assert cluster.wait_bound("shy") == plain
    kubelet.until_bound("shy")
    assert kubelet.nominations("shy") == [plain]
    assert preempt_successes(berth) >= asked + 1
    kubelet.wait_deleted("plain-mid")
    disruption = kubelet.disruption("plain-mid")
    assert disruption is not None and disruption.message == DISRUPTION_MESSAGE.format(scheduler_name)
    for preempted in wait_events(cluster, "plain-mid", "Preempted"):
        assert preempted.message == f"Preempted by pod {uid} on node {plain}"
        assert preempted.reporting_component == scheduler_name
    untouched = cluster.read_pod("fast-low")
    assert untouched.metadata.deletion_timestamp is None
    assert condition(untouched, "DisruptionTarget") is None
    assert events(cluster, "fast-low", "Preempted") == []


# --- berth run with SchedulerAsyncPreemption=false -------------------------------------------------

SYNC_SCHEDULER = "berth-sync-preemption"


@pytest.fixture(scope="module")
def berth_run_sync(control_plane: LocalControlPlane, e2e_dir: Path) -> Iterator[BerthScheduler]:
    """A ``berth run`` with ``--feature-gates=SchedulerAsyncPreemption=false`` and its own
    schedulerName, so that it runs beside the module's other ``berth run``."""
    with ready_berth_run(
        control_plane,
        e2e_dir,
        "berth-run-sync-preemption",
        scheduler_name=SYNC_SCHEDULER,
        extra_args=("--feature-gates=SchedulerAsyncPreemption=false",),
    ) as proc:
        yield proc


def test_synchronous_preemption_evicts_then_binds_the_preemptor(
    berth_run_sync: BerthScheduler, cluster: Cluster, kubelet: FakeKubelet, priorities: Priorities
) -> None:
    """With SchedulerAsyncPreemption off, as kube-scheduler with it off: the victim is evicted
    from PostFilter (DisruptionTarget, deletion, Preempted event), the preemptor nominated and then
    bound; /metrics counts the attempt and the victim, and has no preemption-goroutine series
    (kube-scheduler registers them only with the gate on)."""
    node = cluster.create_node("n", cpu="2")
    create_pod(cluster, "low", cpu="2", priority_class=priorities.low, scheduler=SYNC_SCHEDULER)
    assert cluster.wait_bound("low") == node
    before = scheduler_metrics(berth_run_sync)

    uid = create_pod(
        cluster, "high", cpu="2", priority_class=priorities.high, scheduler=SYNC_SCHEDULER
    ).metadata.uid

    assert cluster.wait_bound("high") == node
    assert kubelet.nominations("high") == [node]
    kubelet.wait_deleted("low")
    disruption = kubelet.disruption("low")
    assert disruption is not None and (disruption.reason, disruption.message) == (
        "PreemptionByScheduler",
        DISRUPTION_MESSAGE.format(SYNC_SCHEDULER),
    )
    for preempted in wait_events(cluster, "low", "Preempted"):
        assert preempted.message == f"Preempted by pod {uid} on node {node}"
        assert preempted.reporting_component == SYNC_SCHEDULER
    after = scheduler_metrics(berth_run_sync)
    assert (
        after["scheduler_preemption_attempts_total"]
        >= before.get("scheduler_preemption_attempts_total", 0) + 1
    )
    assert after["scheduler_preemption_victims_sum"] >= before.get("scheduler_preemption_victims_sum", 0) + 1
    assert not [k for k in after if k.startswith("scheduler_preemption_goroutines")]


# --- berth run: the victims' API calls in the background ---------------------------------------------


class DeletionGate:
    """A validating admission webhook on pod DELETE that holds the deletion of the pods named in
    :attr:`held` until :meth:`release` (an API server slow to delete a victim), allowing all else.

    An HTTPS server on a free 127.0.0.1 port with a self-signed certificate (the ``caBundle``), and
    a ValidatingWebhookConfiguration matching only pods carrying ``label`` (its value unique to the
    test), so that no other test's pod is ever sent to it.
    """

    def __init__(self, workdir: Path, label: tuple[str, str], held: set[str]) -> None:
        self.label = label
        self.held = held
        self.seen: list[str] = []
        self.released = threading.Event()
        self._cond = threading.Condition()
        workdir.mkdir(parents=True, exist_ok=True)
        cert, key = workdir / "webhook.crt", workdir / "webhook.key"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
                *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
                *("-addext", "subjectAltName=IP:127.0.0.1"),
            ],
            check=True,
            capture_output=True,
        )
        self.ca_bundle = base64.b64encode(cert.read_bytes()).decode()
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                name = request.get("name", "")
                with gate._cond:
                    gate.seen.append(name)
                    gate._cond.notify_all()
                if name in gate.held:
                    gate.released.wait(WAIT)
                body = json.dumps(
                    {
                        "apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": {"uid": request["uid"], "allowed": True},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(cert), str(key))
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, name="deletion-gate", daemon=True)
        self._thread.start()

    def configuration(self, name: str) -> client.V1ValidatingWebhookConfiguration:
        """The webhook configuration pointing at this server."""
        return client.V1ValidatingWebhookConfiguration(
            metadata=client.V1ObjectMeta(name=name),
            webhooks=[
                client.V1ValidatingWebhook(
                    name="deletion-gate.berth.example.com",
                    client_config=client.AdmissionregistrationV1WebhookClientConfig(
                        url=f"https://127.0.0.1:{self.server.server_address[1]}/",
                        ca_bundle=self.ca_bundle,
                    ),
                    rules=[
                        client.V1RuleWithOperations(
                            api_groups=[""], api_versions=["v1"], operations=["DELETE"], resources=["pods"]
                        )
                    ],
                    object_selector=client.V1LabelSelector(match_labels=dict([self.label])),
                    failure_policy="Ignore",
                    side_effects="None",
                    admission_review_versions=["v1"],
                    timeout_seconds=30,
                )
            ],
        )

    def wait_seen(self, name: str) -> None:
        """Until the API server has sent the deletion of pod ``name`` to the webhook."""
        with self._cond:
            assert self._cond.wait_for(lambda: name in self.seen, WAIT), (name, self.seen)

    def release(self) -> None:
        """Let the held deletions through (and every later one)."""
        self.released.set()

    def stop(self) -> None:
        """Release and shut the server down."""
        self.release()
        self.server.shutdown()
        self.server.server_close()


def test_other_pods_bind_while_a_victim_deletion_is_still_in_flight(
    berth_run: BerthScheduler,
    cluster: Cluster,
    kubelet: FakeKubelet,
    priorities: Priorities,
    kube_client: client.ApiClient,
    e2e_dir: Path,
) -> None:
    """SchedulerAsyncPreemption, as kube-scheduler: the victims are deleted in the background, so a
    slow DELETE (held by an admission webhook) does not stop the scheduling loop: a pod created
    after the preemption started is bound while the victim's deletion is still pending, and the
    preemptor is bound once the deletion goes through."""
    label = ("berth-deletion-gate", cluster.label)
    gate = DeletionGate(e2e_dir / f"gate-{cluster.label}", label, held={"low"})
    webhooks = client.AdmissionregistrationV1Api(kube_client)
    config_name = f"deletion-gate-{cluster.label}"
    webhooks.create_validating_webhook_configuration(gate.configuration(config_name))
    try:
        full = cluster.create_node("full", cpu="2")
        spare = cluster.create_node("spare", cpu="1")
        # The webhook is in force once a probe's deletion reaches it.
        cluster.core.create_namespaced_pod(
            cluster.namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="probe", labels=dict([label])),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="c", image="registry.k8s.io/pause:3.10")],
                    scheduler_name="nobody",
                ),
            ),
        )

        def probe_deleted() -> bool:
            with contextlib.suppress(ApiException):
                cluster.core.delete_namespaced_pod("probe", cluster.namespace)
            return "probe" in gate.seen

        wait_until(probe_deleted, "the deletion gate webhook in force")
        create_pod(cluster, "low", cpu="2", priority_class=priorities.low, labels=dict([label]))
        assert cluster.wait_bound("low") == full

        create_pod(cluster, "high", cpu="2", priority_class=priorities.high)
        gate.wait_seen("low")  # berth's DELETE of the victim, held
        create_pod(cluster, "bystander", cpu="1", priority_class=priorities.low)
        assert cluster.wait_bound("bystander") == spare
        assert "low" not in kubelet.deleted and cluster.read_pod("low").metadata.deletion_timestamp is None
        assert not cluster.read_pod("high").spec.node_name

        gate.release()
        assert cluster.wait_bound("high") == full
        kubelet.wait_deleted("low")
    finally:
        gate.stop()
        webhooks.delete_validating_webhook_configuration(config_name)
