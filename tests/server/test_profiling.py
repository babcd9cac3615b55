"""``/debug/pprof`` and ``/debug/flags/v``: what ``--profiling`` turns on."""

from __future__ import annotations

import threading
import warnings

from fastapi import FastAPI

from app import logs
from app.server.profiling import install_profiling, sample

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


def _client(contention: bool) -> TestClient:
    app = FastAPI()
    install_profiling(app, contention=contention)
    return TestClient(app)


def test_index_lists_the_profiles_and_block_only_with_contention() -> None:
    assert "/debug/pprof/block" in _client(True).get("/debug/pprof/").text
    plain = _client(False)
    assert "/debug/pprof/block" not in plain.get("/debug/pprof/").text
    assert plain.get("/debug/pprof/block").status_code == 404


def test_goroutine_shows_every_threads_stack() -> None:
    started, stop = threading.Event(), threading.Event()

    def parked_worker() -> None:
        started.set()
        stop.wait()

    t = threading.Thread(target=parked_worker, name="parked-worker")
    t.start()
    started.wait()
    try:
        body = _client(False).get("/debug/pprof/goroutine").text
    finally:
        stop.set()
        t.join()
    assert "[parked-worker]" in body and "parked_worker" in body


def test_sampled_profiles_fold_stacks_and_block_keeps_waiting_threads() -> None:
    stop = threading.Event()

    def waiter() -> None:
        stop.wait()

    def spinner() -> None:
        while not stop.is_set():
            sum(range(1000))

    threads = [threading.Thread(target=waiter), threading.Thread(target=spinner)]
    for t in threads:
        t.start()
    try:
        cpu = sample(0.3, waiting_only=False)
        blocked = sample(0.3, waiting_only=True)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert "test_profiling.py:spinner" in cpu and "test_profiling.py:waiter" in cpu
    assert "test_profiling.py:waiter;threading.py:wait" in blocked
    assert "spinner" not in blocked


def test_put_flags_v_sets_the_verbosity() -> None:
    before = logs.verbosity()
    try:
        client = _client(False)
        assert client.put("/debug/flags/v", content=b"5").status_code == 200
        assert logs.verbosity() == 5
        assert client.put("/debug/flags/v", content=b"loud").status_code == 400
    finally:
        logs.set_verbosity(before)
