"""The app under test: create_app over an in-tree-plugin Engine, driven by FastAPI's TestClient."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI

from app.config import dump_config
from app.scheduler.scheduler import Engine
from app.server import create_app
from builders import ALLOCATABLE, cluster_engine

with warnings.catch_warnings():
    # Starlette warns at import that its httpx-based TestClient is deprecated; it still works.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

__all__ = ["ALLOCATABLE", "TestClient", "build_app", "cluster_engine"]


def build_app(engine: Engine | None = None, **kwargs: Any) -> FastAPI:
    engine = engine or cluster_engine()
    kwargs.setdefault("profile", None)
    kwargs.setdefault("config_dump", dump_config(engine.cfg))
    kwargs.setdefault("version", "0.1.0")
    return create_app(engine, **kwargs)


@pytest.fixture
def engine() -> Engine:
    return cluster_engine()


@pytest.fixture
def client(engine: Engine) -> TestClient:
    return TestClient(build_app(engine))


@pytest.fixture
def make_client() -> Callable[..., TestClient]:
    def make(engine: Engine | None = None, **kwargs: Any) -> TestClient:
        return TestClient(build_app(engine, **kwargs))

    return make
