"""``app.kube.leaderelection`` against the real API server: acquiring, renewing, handing over and losing a
Lease, with real time for the election loop and a fake clock for the expiry and watchdog arithmetic."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s_client

from app.kube.client import KubeClient
from app.kube.leaderelection import LeaderElectionConfig, LeaderElector, default_identity
from app.kube.times import format_micro_time
from kube.controlplane import LocalControlPlane
from kube.election import (
    FAST,
    LOCK,
    MICRO_TIME,
    Callbacks,
    FakeClock,
    Running,
    admin_client,
    eventually,
    get_lease,
    lease_path,
    lease_spec,
    make_elector,
    offline_client,
)

pytestmark = pytest.mark.kube


@pytest.fixture
def kc(control_plane: LocalControlPlane) -> Iterator[KubeClient]:
    yield from admin_client(control_plane)


def put_lease(kc: KubeClient, namespace: str, lease: dict[str, Any]) -> None:
    status, data = kc.request("PUT", lease_path(namespace), body=lease)
    assert status == 200, data


# --- the election loop, in real time ------------------------------------------------------------------


def test_a_single_elector_creates_the_lease_leads_renews_and_releases(kc: KubeClient, namespace: str) -> None:
    cb = Callbacks()
    elector = make_elector(kc, namespace, "berth-a", cb)
    with Running(elector) as running:
        assert cb.started.wait(10), "never started leading"
        assert elector.is_leader()
        assert elector.get_leader() == "berth-a"
        assert cb.leaders == ["berth-a"]
        spec = lease_spec(kc, namespace)
        assert spec["holderIdentity"] == "berth-a"
        assert spec["leaseDurationSeconds"] == 2
        assert spec["leaseTransitions"] == 0
        assert MICRO_TIME.fullmatch(spec["acquireTime"]), spec
        assert MICRO_TIME.fullmatch(spec["renewTime"]), spec
        first_renew = spec["renewTime"]
        eventually(lambda: lease_spec(kc, namespace)["renewTime"] != first_renew, 5, "a renewal")
        assert lease_spec(kc, namespace)["acquireTime"] == spec["acquireTime"]
        assert elector.check() is None
        running.stop()
    assert cb.stopped.is_set()
    assert not elector.is_leader()
    released = lease_spec(kc, namespace)
    assert released["holderIdentity"] == ""
    assert released["leaseDurationSeconds"] == 1
    assert released["leaseTransitions"] == 0


def test_of_two_electors_one_leads_and_a_release_hands_over_without_waiting_for_expiry(
    kc: KubeClient, namespace: str
) -> None:
    # A long lease: only the release can explain a handover within seconds.
    timing = {"lease_duration": 30.0, "renew_deadline": 1.5, "retry_period": 0.3}
    cb_a, cb_b = Callbacks(), Callbacks()
    a = make_elector(kc, namespace, "berth-a", cb_a, **timing)
    b = make_elector(kc, namespace, "berth-b", cb_b, **timing)
    with Running(a) as run_a, Running(b) as run_b:
        eventually(lambda: cb_a.started.is_set() or cb_b.started.is_set(), 10, "a leader")
        time.sleep(1.0)  # several retry periods: the other must still be waiting
        assert cb_a.started.is_set() != cb_b.started.is_set()
        (leader, run_leader, follower, cb_follower) = (
            (a, run_a, b, cb_b) if cb_a.started.is_set() else (b, run_b, a, cb_a)
        )
        assert follower.get_leader() == leader.config.identity
        assert not follower.is_leader()
        run_leader.stop()
        assert cb_follower.started.wait(10), "the follower never took over"
        assert follower.is_leader()
        spec = lease_spec(kc, namespace)
        assert spec["holderIdentity"] == follower.config.identity
        assert spec["leaseTransitions"] == 1
        assert cb_follower.leaders[0] == leader.config.identity
        assert cb_follower.leaders[-1] == follower.config.identity


def test_a_crashed_leader_is_replaced_once_the_lease_expires(kc: KubeClient, namespace: str) -> None:
    cb_a, cb_b = Callbacks(), Callbacks()
    a = make_elector(kc, namespace, "berth-a", cb_a)
    with Running(a) as run_a:
        assert cb_a.started.wait(10)
        b = make_elector(kc, namespace, "berth-b", cb_b)
        with Running(b):
            eventually(lambda: b.get_leader() == "berth-a", 5, "the follower to see the leader")
            acquired = lease_spec(kc, namespace)["acquireTime"]
            run_a.stop(release=False)
            crashed = time.monotonic()
            assert lease_spec(kc, namespace)["holderIdentity"] == "berth-a"  # nothing was released
            assert cb_b.started.wait(FAST["lease_duration"] + 5), "the follower never took over"
            waited = time.monotonic() - crashed
            # Not before the lease, as last renewed (at most a retry period before the crash), expired.
            assert waited >= FAST["lease_duration"] - 2 * FAST["retry_period"], waited
            spec = lease_spec(kc, namespace)
            assert spec["holderIdentity"] == "berth-b"
            assert spec["leaseTransitions"] == 1
            assert spec["acquireTime"] != acquired
            assert b.transitions == 1


def test_a_leader_that_cannot_renew_stops_leading_after_the_renew_deadline(
    kc: KubeClient, kube_client: k8s_client.ApiClient, control_plane: LocalControlPlane, namespace: str
) -> None:
    sa_client = service_account_client(kc, control_plane, namespace)
    cb = Callbacks()
    elector = make_elector(sa_client, namespace, "berth-a", cb)
    with Running(elector) as running:
        assert cb.started.wait(10), "never started leading"
        status, data = kc.request(
            "DELETE", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/elector"
        )
        assert status == 200, data
        revoked = time.monotonic()
        assert cb.stopped.wait(10), "still leading without the right to renew"
        assert cb.stopped_at - revoked >= FAST["renew_deadline"] - 0.1
        assert not running.stop_event.is_set()  # lost, not asked to stop
        running.thread.join(5)
        assert not running.thread.is_alive()
    # The release was forbidden too: the Lease still names the lost leader until it expires.
    assert lease_spec(kc, namespace)["holderIdentity"] == "berth-a"
    sa_client.close()


def test_a_failing_on_started_leading_gives_the_lease_back(kc: KubeClient, namespace: str) -> None:
    cb = Callbacks()

    def broken() -> None:
        raise RuntimeError("scheduler failed to start")

    elector = make_elector(kc, namespace, "berth-a", cb)
    elector.config.on_started_leading = broken
    elector.run(threading.Event())  # returns: never renews a lease it cannot use
    assert cb.stopped.is_set()
    assert lease_spec(kc, namespace)["holderIdentity"] == ""


def service_account_client(kc: KubeClient, cp: LocalControlPlane, namespace: str) -> KubeClient:
    """A client authenticated as a new ServiceAccount allowed to get, create and update Leases in
    ``namespace`` through the RoleBinding ``elector``."""
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    for path, body in (
        (f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "elector"}}),
        (
            f"{rbac}/roles",
            {
                "metadata": {"name": "elector"},
                "rules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"],
                        "verbs": ["get", "create", "update"],
                    }
                ],
            },
        ),
        (
            f"{rbac}/rolebindings",
            {
                "metadata": {"name": "elector"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "elector"},
                "subjects": [{"kind": "ServiceAccount", "name": "elector", "namespace": namespace}],
            },
        ),
    ):
        status, data = kc.request("POST", path, body=body)
        assert status == 201, data
    status, data = kc.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/elector/token", body={"spec": {}}
    )
    assert status == 201, data
    config = k8s_client.Configuration()
    config.host = cp.server
    config.ssl_ca_cert = str(cp.ca_file)
    config.api_key = {"authorization": "Bearer " + orjson.loads(data)["status"]["token"]}
    return KubeClient(k8s_client.ApiClient(config))


# --- single steps: conflicts and our-clock expiry -----------------------------------------------------


def test_a_conflicting_write_is_reread_and_the_leader_keeps_its_lease(kc: KubeClient, namespace: str) -> None:
    elector = make_elector(kc, namespace, "berth-a")
    assert elector.try_acquire_or_renew()
    lease = get_lease(kc, namespace)
    lease["metadata"]["labels"] = {"touched": "by-someone-else"}
    put_lease(kc, namespace, lease)  # the elector's resourceVersion is now stale: its next update gets 409
    assert elector.try_acquire_or_renew()
    after = get_lease(kc, namespace)
    assert after["spec"]["holderIdentity"] == "berth-a"
    assert after["spec"]["renewTime"] != lease["spec"]["renewTime"]
    assert after["metadata"]["labels"] == {"touched": "by-someone-else"}
    assert elector.is_leader()


def test_a_conflicting_takeover_is_reread_and_respected(kc: KubeClient, namespace: str) -> None:
    elector = make_elector(kc, namespace, "berth-a")
    assert elector.try_acquire_or_renew()
    lease = get_lease(kc, namespace)
    lease["spec"].update(holderIdentity="intruder", renewTime=format_micro_time(time.time_ns()))
    put_lease(kc, namespace, lease)
    assert not elector.try_acquire_or_renew()
    assert not elector.is_leader()
    assert elector.get_leader() == "intruder"
    assert lease_spec(kc, namespace)["holderIdentity"] == "intruder"


def test_someone_elses_lease_expires_on_our_clock_never_by_its_timestamps(
    kc: KubeClient, namespace: str
) -> None:
    status, data = kc.request(
        "POST",
        f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
        body={
            "metadata": {"name": LOCK},
            # Written by a host whose clock is decades behind: by its timestamps the lease is long expired.
            "spec": {
                "holderIdentity": "other",
                "leaseDurationSeconds": 2,
                "renewTime": "2000-01-01T00:00:00.000000Z",
                "leaseTransitions": 4,
            },
        },
    )
    assert status == 201, data
    clock = FakeClock()
    elector = make_elector(kc, namespace, "berth-b", clock=clock)
    assert not elector.try_acquire_or_renew()
    assert elector.get_leader() == "other"
    clock.advance(1.9)
    assert not elector.try_acquire_or_renew()
    # The holder renews (its clock is still wrong): a changed record restarts the countdown.
    lease = get_lease(kc, namespace)
    lease["spec"]["renewTime"] = "2000-01-01T00:00:01.000000Z"
    put_lease(kc, namespace, lease)
    clock.advance(1.0)
    assert not elector.try_acquire_or_renew()
    clock.advance(1.9)
    assert not elector.try_acquire_or_renew()
    clock.advance(0.2)  # two seconds without a change, on our clock
    assert elector.try_acquire_or_renew()
    spec = lease_spec(kc, namespace)
    assert spec["holderIdentity"] == "berth-b"
    assert spec["leaseTransitions"] == 5


def test_the_watchdog_fails_only_a_leader_that_stopped_renewing(kc: KubeClient, namespace: str) -> None:
    clock = FakeClock()
    leader = make_elector(kc, namespace, "berth-a", clock=clock)
    follower = make_elector(kc, namespace, "berth-b", clock=clock)
    assert leader.try_acquire_or_renew()
    assert not follower.try_acquire_or_renew()
    assert leader.check() is None
    clock.advance(FAST["lease_duration"] + 20 - 0.1)  # the watchdog's 20s of grace after the lease
    assert leader.check() is None
    clock.advance(0.2)
    assert leader.check() == f"failed election to renew leadership on lease {namespace}/{LOCK}"
    assert follower.check() is None
    assert leader.try_acquire_or_renew()  # a leader that renews again is healthy again
    assert leader.check() is None


# --- configuration ----------------------------------------------------------------------------------


def _config(**overrides: Any) -> LeaderElectionConfig:
    fields: dict[str, Any] = {
        "lock_namespace": "kube-system",
        "lock_name": "berth",
        "identity": "me",
        **FAST,
        **overrides,
    }
    return LeaderElectionConfig(on_started_leading=lambda: None, on_stopped_leading=lambda: None, **fields)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"lease_duration": 1.5}, "leaseDuration must be greater than renewDeadline"),
        ({"retry_period": 1.25}, r"renewDeadline must be greater than retryPeriod\*JitterFactor"),
        ({"retry_period": 0.0}, "retryPeriod must be greater than zero"),
        (
            {"lease_duration": 0.9, "renew_deadline": 0.5, "retry_period": 0.1},
            "leaseDuration must be at least 1s",
        ),
        ({"identity": ""}, "Lock identity is empty"),
        ({"lock_name": ""}, "Lock namespace and name must not be empty"),
    ],
)
def test_invalid_timings_and_names_are_rejected_with_a_clear_message(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElector(offline_client(), _config(**overrides))


def test_the_default_identity_is_the_hostname_and_a_uuid() -> None:
    first, second = default_identity(), default_identity()
    assert first.startswith(socket.gethostname() + "_")
    assert first != second
