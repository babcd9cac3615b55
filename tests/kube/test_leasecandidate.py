"""Coordinated leader election against an API server with CoordinatedLeaderElection on: berth's
LeaseCandidate is published and answers pings, the API server's controller elects it, and the elector
only ever follows that election."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from app.kube.client import KubeClient
from app.kube.leasecandidate import LeaseCandidate, finalize_version
from app.kube.leaselock import parse_micro_time
from app.kube.times import format_micro_time
from kube.controlplane import LocalControlPlane
from kube.election import (
    LOCK,
    MICRO_TIME,
    Callbacks,
    Running,
    admin_client,
    eventually,
    get_lease,
    lease_path,
    make_elector,
    new_namespace,
    offline_client,
)

pytestmark = pytest.mark.kube

# The controller elects as soon as it sees a fresh candidate; it re-checks each Lease every 5 seconds.
ELECTION_TIMEOUT = 15.0


@pytest.fixture
def cc(coordinated_control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    yield from admin_client(coordinated_control_plane)


@pytest.fixture
def cns(cc: KubeClient) -> str:
    return new_namespace(cc)


def candidate_path(namespace: str, name: str) -> str:
    return f"/apis/coordination.k8s.io/v1beta1/namespaces/{namespace}/leasecandidates/{name}"


def lease_exists(kc: KubeClient, namespace: str) -> bool:
    status, _ = kc.request("GET", lease_path(namespace))
    return status == 200


class Candidate:
    """A LeaseCandidate running in a thread until the ``with`` block ends."""

    def __init__(self, kc: KubeClient, namespace: str, name: str, emulation: str = "1.36") -> None:
        self.candidate = LeaseCandidate(kc, namespace, name, LOCK, "1.36.3", emulation)
        self.stop = threading.Event()

    def __enter__(self) -> LeaseCandidate:
        self.thread = self.candidate.start(self.stop)
        return self.candidate

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def test_the_candidate_is_published_with_its_versions_and_answers_pings(cc: KubeClient, cns: str) -> None:
    with Candidate(cc, cns, "berth-a") as candidate:
        assert candidate.check() == f"lease candidate {cns}/berth-a is not synced yet"
        eventually(lambda: candidate.check() is None, 10, "the candidate to sync")
        published = cc.get_json(candidate_path(cns, "berth-a"))
        spec = published["spec"]
        assert spec["leaseName"] == LOCK
        assert spec["binaryVersion"] == "1.36.3"
        assert spec["emulationVersion"] == "1.36.0"
        assert spec["strategy"] == "OldestEmulationVersion"
        assert MICRO_TIME.fullmatch(spec["renewTime"])
        # Ping as the API server's controller does, and wait for the answer.
        ping = format_micro_time(time.time_ns() + 1_000_000_000)
        spec["pingTime"] = ping
        status, data = cc.request("PUT", candidate_path(cns, "berth-a"), body=published)
        assert status == 200, data

        def answered() -> bool:
            renewed = cc.get_json(candidate_path(cns, "berth-a"))["spec"]["renewTime"]
            return parse_micro_time(renewed) >= parse_micro_time(ping)

        eventually(answered, 10, "the candidate to renew after the ping")
    # Like client-go, a stopped candidate is left for the API server's garbage collector.
    assert cc.request("GET", candidate_path(cns, "berth-a"))[0] == 200


def test_a_coordinated_elector_never_takes_the_lease_and_leads_once_elected(cc: KubeClient, cns: str) -> None:
    cb = Callbacks()
    elector = make_elector(cc, cns, "berth-a", cb, coordinated=True)
    with Running(elector):
        time.sleep(1.0)  # several retry periods without a candidate
        assert not lease_exists(cc, cns)
        assert not cb.started.is_set()
        with Candidate(cc, cns, "berth-a"):
            assert cb.started.wait(ELECTION_TIMEOUT), "never elected"
            assert elector.is_leader()
            lease = get_lease(cc, cns)
            assert lease["spec"]["holderIdentity"] == "berth-a"
            assert lease["spec"]["strategy"] == "OldestEmulationVersion"
            managers = {entry["manager"] for entry in lease["metadata"]["managedFields"]}
            assert "kube-apiserver" in managers  # the server's controller created it
            eventually(lambda: get_lease(cc, cns)["spec"]["leaseDurationSeconds"] == 2, 5, "our own renewal")
            assert elector.check() is None


def test_an_elected_leader_steps_down_for_a_candidate_with_an_older_emulation_version(
    cc: KubeClient, cns: str
) -> None:
    cb_new, cb_old = Callbacks(), Callbacks()
    newer = make_elector(cc, cns, "berth-new", cb_new, coordinated=True)
    older = make_elector(cc, cns, "berth-old", cb_old, coordinated=True)
    with Running(newer) as run_newer, Candidate(cc, cns, "berth-new", emulation="1.36"):
        assert cb_new.started.wait(ELECTION_TIMEOUT), "never elected"
        with Running(older), Candidate(cc, cns, "berth-old", emulation="1.35"):
            # The controller marks the term as ending; the leader stops renewing and hands over.
            assert cb_new.stopped.wait(ELECTION_TIMEOUT), "the newer leader never stepped down"
            assert not run_newer.stop_event.is_set()
            assert cb_old.started.wait(ELECTION_TIMEOUT), "the older candidate was never elected"
            lease: dict[str, Any] = get_lease(cc, cns)
            assert lease["spec"]["holderIdentity"] == "berth-old"
            assert older.is_leader()
            assert not newer.is_leader()


@pytest.mark.parametrize(
    ("given", "expected"),
    [("1.36.3", "1.36.3"), ("v1.36", "1.36.0"), ("1", "1.0.0"), ("1.36.3-rc.1+abc", "1.36.3")],
)
def test_versions_are_finalized_as_kube_scheduler_passes_them(given: str, expected: str) -> None:
    assert finalize_version(given) == expected


@pytest.mark.parametrize(
    ("binary", "emulation", "message"),
    [
        ("one.two", "1.36", "invalid version 'one.two'"),
        ("1.35.0", "1.36", "binaryVersion 1.35.0 must be greater than or equal to emulationVersion 1.36.0"),
    ],
)
def test_bad_versions_are_rejected_with_a_clear_message(binary: str, emulation: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaseCandidate(offline_client(), "ns", "me", LOCK, binary, emulation)
