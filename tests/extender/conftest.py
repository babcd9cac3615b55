"""An Engine over the in-tree plugins and a three-node cluster, for the extender tests."""

from __future__ import annotations

import pytest

from app.config import load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from builders import make_node, make_pod

ALLOCATABLE = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def cluster_engine() -> Engine:
    """n1 is busy (1500m of 2 CPUs used by ``busy``), n2 and n3 are idle."""
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=1)
    for name in ("n1", "n2", "n3"):
        engine.cache.add_node(make_node(name, ALLOCATABLE))
    engine.cache.add_pod(make_pod("busy", [{"cpu": "1500m", "memory": "1Gi"}], nodeName="n1"))
    return engine


@pytest.fixture
def engine() -> Engine:
    return cluster_engine()
