"""Fixtures for tests against a real etcd + kube-apiserver (see ``tests/kube/controlplane.py``).

Loaded once for the whole suite by the root ``tests/conftest.py`` (``pytest_plugins``), so that every
directory shares them: a conftest that imported them would get session fixtures of its own, and
with them a control plane of its own.

The ``control_plane`` fixture is session-scoped: one control plane serves every test in the session and
is torn down (and its data deleted) at the end. If the binaries have not been built the fixture FAILS
(it does not skip): run ``hack/control-plane.sh build`` first (``make test`` does).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from kube.controlplane import (
    BUILD_HINT,
    ControlPlaneError,
    LocalControlPlane,
    default_bin_dir,
    missing_binaries,
)

#: What a v1.36.3 API server needs for coordinated leader election: the (beta, off by default) gate runs
#: its leader-election controller, and the LeaseCandidate API is coordination.k8s.io/v1beta1, a beta API
#: that is disabled by default.
COORDINATED_LEADER_ELECTION_ARGS = (
    "--feature-gates=CoordinatedLeaderElection=true",
    "--runtime-config=coordination.k8s.io/v1beta1=true",
)


def _run_control_plane(extra_apiserver_args: tuple[str, ...] = ()) -> Iterator[LocalControlPlane]:
    """Start a control plane (failing the test if it cannot), yield it, and stop it."""
    bin_dir = default_bin_dir()
    missing = missing_binaries(bin_dir)
    if missing:
        pytest.fail(
            f"Kubernetes control-plane binaries missing in {bin_dir}: {', '.join(missing)}.\n{BUILD_HINT}",
            pytrace=False,
        )
    cp = LocalControlPlane(bin_dir, ready_timeout=120.0, extra_apiserver_args=extra_apiserver_args)
    try:
        cp.start()
    except ControlPlaneError as err:
        pytest.fail(f"could not start the control plane: {err}", pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def control_plane() -> Iterator[LocalControlPlane]:
    """A running etcd + kube-apiserver on loopback for the whole session (RBAC on, admin kubeconfig)."""
    yield from _run_control_plane()


@pytest.fixture(scope="session")
def coordinated_control_plane() -> Iterator[LocalControlPlane]:
    """A second control plane, like ``control_plane`` but with coordinated leader election on: the API
    server serves LeaseCandidates and its leader-election controller elects Lease holders among them."""
    yield from _run_control_plane(COORDINATED_LEADER_ELECTION_ARGS)


@pytest.fixture(scope="session")
def kube_client(control_plane: LocalControlPlane) -> Iterator[client.ApiClient]:
    """An official-client ``ApiClient`` authenticated as the admin (``O=system:masters``)."""
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def namespace(kube_client: client.ApiClient) -> str:
    """A fresh namespace for one test.

    It is not deleted: without a namespace controller it would stay ``Terminating`` forever, and the whole
    etcd data directory is deleted at the end of the session anyway.
    """
    name = f"t-{uuid.uuid4().hex[:10]}"
    client.CoreV1Api(kube_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name))
    )
    return name
