"""``app.kube.events`` against the real control plane: the Events a user sees with ``kubectl get events``."""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest

from app.api.objects import Pod
from app.kube.client import KubeClient
from app.kube.events import SERIES_FINISH_NANOS, EventBroadcaster, ObjectRef
from kube.apiwrites import list_events, make_pod, raw_client, wait_for  # noqa: F401  (the kc fixture)

pytestmark = pytest.mark.kube

INSTANCE = "berth-test-instance"
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def regarding_of(pod: Pod) -> dict[str, str]:
    meta = pod.raw["metadata"]
    return {
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "apiVersion": "v1",
        "resourceVersion": meta["resourceVersion"],
    }


def test_event_has_the_fields_client_go_writes(kc: KubeClient, namespace: str) -> None:
    pod = make_pod(kc, namespace, "p1")
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    b.recorder("default-scheduler").eventf(
        pod.raw, None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available"
    )
    b.start()  # recorded before the start: written once it runs
    b.shutdown()
    [event] = list_events(kc, namespace)
    name = event["metadata"]["name"]
    assert re.fullmatch(r"p1\.[0-9a-f]+", name)
    # The name's hex is the event time in nanoseconds (eventTime keeps microseconds of it).
    nanos = int(name.split(".")[1], 16)
    assert MICRO_TIME.fullmatch(event["eventTime"])
    assert event["eventTime"].endswith(f"{(nanos // 1000) % 1_000_000:06d}Z")
    assert event["metadata"]["namespace"] == namespace
    assert event["reportingController"] == "default-scheduler"
    assert event["reportingInstance"] == INSTANCE
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert event["note"] == "0/3 nodes are available"
    assert event["regarding"] == regarding_of(pod)
    assert "related" not in event
    assert "series" not in event


def test_related_object_and_default_instance(kc: KubeClient, namespace: str) -> None:
    victim, preemptor = make_pod(kc, namespace, "victim"), make_pod(kc, namespace, "preemptor")
    b = EventBroadcaster(kc)
    b.start()
    # Parsed pods work as well as raw objects: their kind comes from their type.
    b.recorder("my-scheduler").eventf(victim, preemptor, "Normal", "Preempted", "Preempting", "by preemptor")
    b.shutdown()
    [event] = list_events(kc, namespace)
    assert event["regarding"] == regarding_of(victim)
    assert event["related"] == regarding_of(preemptor)
    assert event["reportingInstance"] == f"my-scheduler-{socket.gethostname()}"


def test_repeats_become_one_event_with_a_series(kc: KubeClient, namespace: str) -> None:
    pod = make_pod(kc, namespace, "p")
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    rec = b.recorder("default-scheduler")
    b.start()
    rec.eventf(pod.raw, None, "Warning", "FailedScheduling", "Scheduling", "first")
    wait_for(lambda: len(list_events(kc, namespace)) == 1)
    # Isomorphic: only the note differs, which does not count (client-go's eventKey).
    for note in ("second", "third", "fourth", "fifth"):
        rec.eventf(pod.raw, None, "Warning", "FailedScheduling", "Scheduling", note)
    # The first repeat PATCHes the series at once; later ones only count until the series is written.
    wait_for(lambda: "series" in list_events(kc, namespace)[0])
    [event] = list_events(kc, namespace)
    assert event["series"]["count"] == 2
    assert event["note"] == "first"
    # A different reason is another event.
    rec.eventf(pod.raw, None, "Normal", "Scheduled", "Binding", "Successfully assigned")
    b.shutdown()  # writes the final count
    series_event, scheduled = list_events(kc, namespace)
    assert series_event["series"]["count"] == 5
    assert MICRO_TIME.fullmatch(series_event["series"]["lastObservedTime"])
    assert series_event["series"]["lastObservedTime"] >= series_event["eventTime"]
    assert scheduled["reason"] == "Scheduled"
    assert "series" not in scheduled


class FakeClock:
    def __init__(self) -> None:
        self.now = time.time_ns()
        self.lock = threading.Lock()

    def __call__(self) -> int:
        with self.lock:
            return self.now

    def advance(self, nanos: int) -> None:
        with self.lock:
            self.now += nanos


def test_a_series_idle_for_six_minutes_is_finished(kc: KubeClient, namespace: str) -> None:
    pod = make_pod(kc, namespace, "p")
    clock = FakeClock()
    b = EventBroadcaster(kc, reporting_instance=INSTANCE, clock=clock)
    rec = b.recorder("default-scheduler")
    b.start()
    for _ in range(3):
        rec.eventf(pod.raw, None, "Warning", "FailedScheduling", "Scheduling", "no fit")
    wait_for(lambda: [e.get("series", {}).get("count") for e in list_events(kc, namespace)] == [2])
    clock.advance(SERIES_FINISH_NANOS + 1)
    # The finished series is written with its final count and forgotten: a repeat starts a new Event.
    wait_for(lambda: [e.get("series", {}).get("count") for e in list_events(kc, namespace)] == [3])
    rec.eventf(pod.raw, None, "Warning", "FailedScheduling", "Scheduling", "no fit")
    wait_for(lambda: len(list_events(kc, namespace)) == 2)
    b.shutdown()
    assert "series" not in list_events(kc, namespace)[1]


def test_long_note_is_truncated_to_the_api_limit(kc: KubeClient, namespace: str) -> None:
    pod = make_pod(kc, namespace, "p")
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    b.start()
    b.recorder("default-scheduler").eventf(
        pod.raw, None, "Warning", "FailedScheduling", "Scheduling", "é" * 2000
    )
    b.shutdown()
    [event] = list_events(kc, namespace)
    note = event["note"]
    assert note.endswith(" ...")
    assert len(note.encode()) <= 1024
    assert note[:-4] == "é" * 510


def test_shutdown_flushes_every_queued_event(kc: KubeClient, namespace: str) -> None:
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    rec = b.recorder("default-scheduler")
    for i in range(50):
        ref = ObjectRef(kind="Pod", api_version="v1", name=f"pod-{i}", namespace=namespace, uid=f"uid-{i}")
        rec.eventf(ref, None, "Normal", "Scheduled", "Binding", f"Successfully assigned {namespace}/pod-{i}")
    b.start()
    b.shutdown(timeout=10)
    written = list_events(kc, namespace)
    assert sorted(e["regarding"]["name"] for e in written) == sorted(f"pod-{i}" for i in range(50))
    assert (b.dropped, b.failed) == (0, 0)


def test_a_burst_is_written_whole_and_a_lone_event_at_once(kc: KubeClient, namespace: str) -> None:
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    rec = b.recorder("default-scheduler")
    b.start()
    try:
        names = [f"pod-{i}" for i in range(30)]
        for i, name in enumerate(names):
            ref = ObjectRef(kind="Pod", api_version="v1", name=name, namespace=namespace, uid=f"uid-{i}")
            rec.eventf(
                ref, None, "Normal", "Scheduled", "Binding", f"Successfully assigned {namespace}/{name}"
            )
        # The sink takes the gathered burst in one batch; every Event of it is created.
        wait_for(lambda: len(list_events(kc, namespace)) == len(names))
        assert sorted(e["regarding"]["name"] for e in list_events(kc, namespace)) == sorted(names)
        # A lone event is not held back waiting for company.
        lone = ObjectRef(kind="Pod", api_version="v1", name="lone", namespace=namespace, uid="uid-lone")
        start = time.monotonic()
        rec.eventf(lone, None, "Normal", "Scheduled", "Binding", f"Successfully assigned {namespace}/lone")
        wait_for(lambda: len(list_events(kc, namespace)) == len(names) + 1, timeout=5)
        assert time.monotonic() - start < 2
    finally:
        b.shutdown()
    assert (b.dropped, b.failed) == (0, 0)


def test_a_rejected_event_is_dropped_and_the_sink_goes_on(kc: KubeClient, namespace: str) -> None:
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    rec = b.recorder("default-scheduler")
    b.start()
    missing = ObjectRef(kind="Pod", api_version="v1", name="p", namespace="no-such-namespace")
    rec.eventf(missing, None, "Normal", "Scheduled", "Binding", "lost")
    ok = ObjectRef(kind="Pod", api_version="v1", name="p", namespace=namespace)
    rec.eventf(ok, None, "Normal", "Scheduled", "Binding", "kept")
    b.shutdown()
    assert [e["note"] for e in list_events(kc, namespace)] == ["kept"]
    assert b.failed == 1


def test_bad_input_is_dropped_without_raising(kc: KubeClient, namespace: str) -> None:
    b = EventBroadcaster(kc, reporting_instance=INSTANCE)
    rec = b.recorder("default-scheduler")
    ok = ObjectRef(kind="Pod", api_version="v1", name="p", namespace=namespace)
    rec.eventf({"metadata": {"name": "no-kind"}}, None, "Normal", "Scheduled", "Binding", "x")
    rec.eventf(object(), None, "Normal", "Scheduled", "Binding", "x")
    rec.eventf(ok, None, "Informational", "Scheduled", "Binding", "x")
    rec.eventf(ok, object(), "Normal", "Scheduled", "Binding", "unrelated")  # the related part is dropped
    b.start()
    b.shutdown()
    [event] = list_events(kc, namespace)
    assert event["note"] == "unrelated"
    assert "related" not in event


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_full_queue_drops_instead_of_blocking() -> None:
    dead = KubeClient.from_config(master=f"http://127.0.0.1:{closed_port()}")
    b = EventBroadcaster(dead, reporting_instance=INSTANCE, queue_size=100, retry_interval=0.05)
    rec = b.recorder("default-scheduler")
    b.start()
    refs = [ObjectRef(kind="Pod", api_version="v1", name=f"p{i}", namespace="default") for i in range(2000)]
    start = time.monotonic()
    for ref in refs:
        rec.eventf(ref, None, "Normal", "Scheduled", "Binding", "Successfully assigned")
    # A functional bound, not a benchmark: recording must never wait for the API server.
    assert time.monotonic() - start < 0.5
    assert b.dropped >= 2000 - 100 - 200  # at most the queue plus what the sink took meanwhile
    start = time.monotonic()
    b.shutdown(timeout=1.0)
    assert time.monotonic() - start < 3.0
    assert b.dropped + b.failed == 2000  # every event accounted for: none written, none stuck
