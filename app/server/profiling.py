"""``/debug/pprof/`` for a Python process: what kube's ``--profiling`` routes give a Go one.

==============================  ===================================================================
GET /debug/pprof/               an index of the profiles below
GET /debug/pprof/goroutine      every thread's current Python stack (Go: every goroutine's)
GET /debug/pprof/profile        a CPU profile sampled every 10 ms for ``seconds`` (default 30, at most
                                120): each thread's stack per sample, in the folded format of
                                flame-graph tools (``frame;frame;frame count``)
GET /debug/pprof/block          with contention profiling: the same sampling, restricted to threads
                                waiting in a lock, condition, queue or selector (Go's block profile)
PUT /debug/flags/v              set the log verbosity (kube's ``routes.DebugFlags``)
==============================  ===================================================================
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
import traceback

from fastapi import FastAPI, Request, Response

from app import logs

__all__ = ["install_profiling"]

_TEXT = "text/plain; charset=utf-8"
#: Where a thread's innermost Python frame stands while it waits in C: the lock under a Condition or
#: Event wait, a join, a selector. A file alone is not enough: a thread spinning on Event.is_set is
#: in threading.py too, and busy.
_WAITING_FRAMES = frozenset(
    {
        ("threading.py", "wait"),
        ("threading.py", "_wait_for_tstate_lock"),
        ("selectors.py", "select"),
    }
)
_MAX_SECONDS = 120.0


def _stacks() -> str:
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for ident, frame in sys._current_frames().items():
        out.append(f"thread {ident} [{names.get(ident, '?')}]:\n")
        out.extend(traceback.format_stack(frame))
        out.append("\n")
    return "".join(out)


def _folded(frame: object) -> str:
    parts = []
    for f, _line in traceback.walk_stack(frame):  # type: ignore[arg-type]
        parts.append(f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_code.co_name}")
    return ";".join(reversed(parts))


def sample(seconds: float, *, waiting_only: bool, interval: float = 0.01) -> str:
    """Sample every other thread's stack for ``seconds``; folded stacks with their counts."""
    counts: collections.Counter[str] = collections.Counter()
    me = threading.get_ident()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            code = frame.f_code
            if waiting_only and (code.co_filename.rsplit("/", 1)[-1], code.co_name) not in _WAITING_FRAMES:
                continue
            counts[_folded(frame)] += 1
        time.sleep(interval)
    return "".join(f"{stack} {n}\n" for stack, n in counts.most_common())


def _seconds(request: Request) -> float:
    try:
        return min(max(float(request.query_params.get("seconds", "30")), 0.0), _MAX_SECONDS)
    except ValueError:
        return 30.0


def install_profiling(app: FastAPI, *, contention: bool) -> None:
    """Add the routes of the module docstring to ``app``."""
    profiles = ["goroutine", "profile"] + (["block"] if contention else [])

    @app.get("/debug/pprof/", tags=["debug"], summary="Profiles of the process")
    async def index() -> Response:
        body = "".join(f"/debug/pprof/{p}\n" for p in profiles)
        return Response(body, media_type=_TEXT)

    @app.get("/debug/pprof/goroutine", tags=["debug"], summary="Every thread's stack")
    async def goroutine() -> Response:
        return Response(_stacks(), media_type=_TEXT)

    @app.get("/debug/pprof/profile", tags=["debug"], summary="A sampled CPU profile (folded stacks)")
    async def profile(request: Request) -> Response:
        body = await asyncio.to_thread(sample, _seconds(request), waiting_only=False)
        return Response(body, media_type=_TEXT)

    if contention:

        @app.get("/debug/pprof/block", tags=["debug"], summary="Where threads wait (folded stacks)")
        async def block(request: Request) -> Response:
            body = await asyncio.to_thread(sample, _seconds(request), waiting_only=True)
            return Response(body, media_type=_TEXT)

    @app.put("/debug/flags/v", tags=["debug"], summary="Set the log verbosity")
    async def set_verbosity(request: Request) -> Response:
        text = (await request.body()).decode(errors="replace").strip()
        try:
            level = int(text)
        except ValueError:
            return Response(f"invalid verbosity {text!r}\n", 400, media_type=_TEXT)
        logs.set_verbosity(level)
        return Response(f"successfully set klog.logging.verbosity to {level}\n", media_type=_TEXT)
