"""Fixtures for the end-to-end tests: the real control plane, berth and stock kube-schedulers.

The control plane is the suite's one session fixture (``tests/kube/fixtures.py``, loaded by the root
conftest, which also attaches the tails of every live process's log to a failed test's report). One
``berth serve`` process serves the whole session (restarted by the test that checks the relist);
kube-schedulers are started per node mode (module scope) and for the extender-down cases. The modules
that test ``berth run`` itself (storage, DRA) share one per module (``berth_run``).

Tests isolate themselves without deleting namespaces (no namespace controller runs): each gets a
fresh namespace and a unique ``berth-e2e/test`` node label that its pods select, and the nodes and
pods it created are deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.cluster import PREFERRED_LABEL, Cluster
from e2e.stack import PLUGINS_DIR, BerthServer, ExtenderEntry, KubeScheduler, scheduler_config
from e2e.standalone import BerthScheduler
from kubernetes import client

from kube.controlplane import LocalControlPlane

BERTH_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: PreferLabel
        weight: 5
  pluginConfig:
  - name: PreferLabel
    args:
      label: {PREFERRED_LABEL}
"""
"""berth's configuration: the default profile plus the example out-of-tree PreferLabel plugin."""


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Configs and logs of the e2e processes."""
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def berth(control_plane: LocalControlPlane, e2e_dir: Path) -> Iterator[BerthServer]:
    """``berth serve --kubeconfig`` with PreferLabel from ``examples/plugins`` enabled, at -v 3 (so that a
    failure shows why berth dropped a node)."""
    config = e2e_dir / "berth-config.yaml"
    config.write_text(BERTH_CONFIG)
    server = BerthServer(
        control_plane.kubeconfig,
        e2e_dir,
        ["--config", str(config), "--plugin-module", "prefer_label", "-v", "3"],
        env={"PYTHONPATH": str(PLUGINS_DIR)},
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def berth_run(
    request: pytest.FixtureRequest, control_plane: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BerthScheduler]:
    """One ``berth run`` (schedulerName ``berth-scheduler``) for the requesting test module, leader-elected
    on a Lease of its own, named after the module (``test_storage.py``: ``berth-storage``).

    A module configures it with a ``BERTH_PROFILE`` string: more of the profile (``pluginConfig: ...``),
    indented by two. Tests isolate themselves with the ``cluster`` fixture's label, so one process
    serves them all (a start costs seconds on a loaded machine).
    """
    name = "berth-" + request.module.__name__.rpartition(".")[2].removeprefix("test_")
    proc = BerthScheduler.on(
        control_plane,
        tmp_path_factory.mktemp(name),
        namespace="default",
        lease_name=f"{name}-{uuid.uuid4().hex[:6]}",
        name=name,
        profile_extra=getattr(request.module, "BERTH_PROFILE", ""),
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module", params=[True, False], ids=["NodeNames", "Nodes"])
def scheduler(
    request: pytest.FixtureRequest,
    control_plane: LocalControlPlane,
    berth: BerthServer,
    e2e_dir: Path,
) -> Iterator[KubeScheduler]:
    """The stock kube-scheduler with berth as its (non-ignorable) extender, in both node modes."""
    cache_capable = bool(request.param)
    entry = ExtenderEntry(berth.url, node_cache_capable=cache_capable)
    name = f"kube-scheduler-{'names' if cache_capable else 'nodes'}"
    sched = KubeScheduler(
        control_plane.bin_dir,
        control_plane.kubeconfig,
        e2e_dir,
        scheduler_config(control_plane.kubeconfig, [entry]),
        name,
    )
    sched.start()
    try:
        yield sched
    finally:
        sched.stop()


@pytest.fixture
def cluster(kube_client: client.ApiClient, namespace: str) -> Iterator[Cluster]:
    """A fresh namespace and label for one test, and cleanup of its nodes and pods."""
    made = Cluster(kube_client, namespace)
    try:
        yield made
    finally:
        made.cleanup()
