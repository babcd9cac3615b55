"""Memory stays bounded: the same requests sent again and again do not make berth's heap grow, and
what a large body takes is given back once it is answered.

The server runs in this process (a thread), so its memory is the test's: Python allocations are
traced with tracemalloc for the repeated requests, and the process's RSS is read for the large
bodies (whose memory is handed back to the operating system, glibc's ``malloc_trim``).
"""

from __future__ import annotations

import gc
import logging
import tracemalloc
from collections.abc import Iterator

import orjson
import pytest
from fuzz.bookkeeping import COUNTS
from fuzz.conftest import SIZE
from fuzz.strategies import verb_bodies
from fuzz.test_fuzz_verbs import call
from hypothesis import given, settings
from hypothesis import strategies as st
from server.conftest import build_app
from server.test_direct import serving

from app.server import verbs
from app.server.chain import HandlerChain
from builders import pod_dict

WARM_ROUNDS = 3
"""Rounds before the first measure: the node cache, the pod memo and the encoders' caches fill up."""
ROUNDS = {"slice": 10, "long": 60}[SIZE]
GROWTH_LIMIT = 512 << 10
"""What the heap may grow by over all measured rounds (bounded caches settling); a leak of one object
per request shows as rounds x bodies objects and grows with ``ROUNDS``."""


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with serving(HandlerChain(build_app(max_request_bytes=64 << 20))) as port:
        yield port


def traced_heap() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@settings(max_examples={"slice": 3, "long": 20}[SIZE])
@given(st.lists(verb_bodies(), min_size=8, max_size=8))
def test_repeated_requests_do_not_grow_the_heap(port: int, bodies: list[tuple[str, bytes]]) -> None:
    logging.disable(logging.WARNING)  # pytest keeps every log record it captures: a growth of its own
    tracemalloc.start()
    try:
        for _ in range(WARM_ROUNDS):
            for path, body in bodies:
                call(port, path, body)
        before = traced_heap()
        for _ in range(ROUNDS):
            for path, body in bodies:
                call(port, path, body)
        growth = traced_heap() - before
    finally:
        tracemalloc.stop()
        logging.disable(logging.NOTSET)
    COUNTS["memory rounds"] += ROUNDS
    assert growth < GROWTH_LIMIT, (
        f"the heap grew by {growth} bytes over {ROUNDS} rounds of {len(bodies)} requests"
    )


def memory_status(field: str) -> int:
    """A ``/proc/self/status`` size in bytes: ``VmRSS`` (now) or ``VmHWM`` (the highest so far)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) << 10
    raise AssertionError(f"no {field}")


def test_a_large_body_gives_its_memory_back(port: int) -> None:
    labels = {f"example.com/label-{i}": "x" * 50 for i in range(40)}
    nodes = [
        {
            "metadata": {"name": f"big-{i}", "uid": f"uid-{i}", "resourceVersion": "1", "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }
        for i in range(2500)
    ]
    body = orjson.dumps({"Pod": pod_dict("web"), "Nodes": {"items": nodes}})
    del nodes
    assert len(body) > verbs.OFF_LOOP_BYTES
    gc.collect()
    start = memory_status("VmRSS")
    after: list[int] = []
    for _ in range(ROUNDS // 2):
        status, answer = call(port, "/filter", body)
        assert status == b"HTTP/1.1 200 OK" and len(answer["Nodes"]["items"]) == 2500
        del answer
        gc.collect()
        after.append(memory_status("VmRSS"))
    peak = memory_status("VmHWM")  # decoding, evaluating and answering take several times the body
    mib = [f"{m >> 20}" for m in (start, *after)]
    assert max(after) - start < (peak - start) / 2, f"RSS (MiB) {mib}, peak {peak >> 20}: not given back"
    # Not growing from one request to the next: a body's worth per request would show over the rounds.
    assert after[-1] - after[0] < 2 * len(body), f"RSS (MiB) {mib} for a {len(body) >> 20} MiB body"
