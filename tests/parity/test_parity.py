"""berth decides like kube-scheduler v1.36.3: random clusters through both, compared exactly.

A bounded slice of the deep pass (``make parity``): ``PARITY_N`` scenarios (200 by default) from a fresh
random seed each run, printed for replay; ``PARITY_SEED`` fixes it. A mismatch fails with, per aspect that
disagreed, a minimized state file (and configuration) and the two commands that replay it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from parity.generator import generate
from parity.harness import Oracle, build_oracle, default_registry, disabled_plugins
from parity.run import run

from app.config.defaults import KUBE_SCHEDULER_DEFAULT_PLUGINS
from app.framework.interfaces import FilterPlugin
from app.framework.registry import Registry

DEFAULT_N = 200


@pytest.fixture(scope="module")
def oracle_binary() -> Path:
    """The oracle, built from the pinned k8s.io/kubernetes module (a no-op once built)."""
    try:
        return build_oracle()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def oracle(oracle_binary: Path) -> Iterator[Oracle]:
    """One oracle process for the module, with berth's missing plugins disabled."""
    o = Oracle(oracle_binary, disabled_plugins(default_registry()))
    try:
        yield o
    finally:
        o.close()


def test_berth_decides_like_kube_scheduler(
    oracle_binary: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = int(os.environ.get("PARITY_N", DEFAULT_N))
    seed_env = os.environ.get("PARITY_SEED")
    seed = int(seed_env) if seed_env else random.SystemRandom().randrange(1, 10**9)
    with capsys.disabled():
        print(f"\nparity: {n} scenarios from seed {seed} (replay: PARITY_SEED={seed} PARITY_N={n})")
    tally, report = run(n, seed, tmp_path)
    with capsys.disabled():
        print(tally.table())
    assert tally.scenarios == n
    assert not tally.failures, f"berth and kube-scheduler disagree (seed {seed}):\n{report}"


class VolumeBinding(FilterPlugin):
    """Stands for the storage plugin another change brings."""

    name: ClassVar[str] = "VolumeBinding"


def test_the_disabled_plugins_are_the_default_plugins_berth_lacks() -> None:
    registry = default_registry()
    disabled = disabled_plugins(registry)
    assert all(not registry.has(name) for name in disabled)
    assert all(registry.has(p.name) or p.name in disabled for p in KUBE_SCHEDULER_DEFAULT_PLUGINS)
    # A plugin that lands leaves the list by itself.
    if "VolumeBinding" in disabled:
        landed = disabled_plugins(registry.merge(Registry([VolumeBinding])))
        assert landed == [name for name in disabled if name != "VolumeBinding"]


def test_scenarios_are_reproducible_from_their_seed() -> None:
    assert generate(42).objects == generate(42).objects
    assert generate(42).config == generate(42).config
    assert generate(42).objects != generate(43).objects


def test_the_oracle_applies_defaulting_and_admission(oracle: Oracle, tmp_path: Path) -> None:
    """Limits-only containers get requests from API defaulting; a Never class stops preemption."""
    state = tmp_path / "state.yaml"
    state.write_text(
        """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: polite}
value: 1000
preemptionPolicy: Never
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: default, uid: low}
spec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: "1500m"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default, uid: p}
spec:
  priorityClassName: polite
  containers: [{name: c, image: x, resources: {limits: {cpu: "1"}}}]
"""
    )
    [pod] = oracle.ask(state, None)["pods"]
    assert pod["status"] == "Unschedulable"
    assert pod["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert pod["victims"] == [] and pod["nominatedNode"] is None
