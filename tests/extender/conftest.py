"""The extender tests' Engine: the in-tree plugins over three nodes (:func:`builders.cluster_engine`)."""

from __future__ import annotations

import pytest

from app.scheduler.scheduler import Engine
from builders import ALLOCATABLE, cluster_engine

__all__ = ["ALLOCATABLE", "cluster_engine"]


@pytest.fixture
def engine() -> Engine:
    return cluster_engine()
