"""What calling an extender costs ``berth run`` / ``berth simulate`` per scheduling cycle.

The engine schedules scheduler_perf's default pods (100m / 500Mi) on N default nodes (4 cpu / 32Gi)
four ways: without extenders; with one local extender answering /filter and /prioritize by
``NodeNames`` (``nodeCacheCapable: true``), by full ``Nodes`` (``nodeCacheCapable: false``), and by
``NodeNames`` with the extender taking ``--delay`` ms per answer (a remote extender's latency).
The extender is the tests' scripted stub (a ``ThreadingHTTPServer`` in this process, which passes
every node and scores them all 5), so its own CPU is counted too: the rows are an upper bound of
the client's cost. Prints pods/s, the mean cycle and the cycle time added by the extender.

Usage: ``python bench/extender_client.py [--nodes 100,1000] [--pods 300] [--delay 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from engine import make_node, make_pod  # noqa: E402  (bench/engine.py: scheduler_perf's objects)
from extenderstub import StubExtender  # noqa: E402

from app.config import load_config  # noqa: E402
from app.config.types import Extender  # noqa: E402
from app.kube.extender import build_extenders  # noqa: E402
from app.plugins.registry import in_tree_registry  # noqa: E402
from app.scheduler.scheduler import Engine  # noqa: E402


def _names(body: dict[str, Any]) -> list[str]:
    if body["NodeNames"] is not None:
        return list(body["NodeNames"])
    return [n["metadata"]["name"] for n in body["Nodes"]["items"]]


def _filter(body: dict[str, Any]) -> tuple[int, Any]:
    if body["NodeNames"] is not None:
        return 200, {"NodeNames": body["NodeNames"]}
    return 200, {"Nodes": body["Nodes"]}


def _prioritize(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, [{"Host": n, "Score": 5} for n in _names(body)]


def run(nodes: int, pods: int, extender: Extender | None) -> float:
    """Seconds to schedule ``pods`` pods on ``nodes`` nodes."""
    registry = in_tree_registry()
    engine = Engine(
        load_config(None, registry),
        registry,
        seed=1,
        extenders=build_extenders([extender] if extender else []),
    )
    for i in range(nodes):
        engine.cache.add_node(make_node(i))
    start = time.perf_counter()
    for i in range(pods):
        attempt = engine.schedule_one(make_pod(i))
        assert attempt.status == "Scheduled", attempt.message
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="100,1000", help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--delay", type=float, default=2.0, help="the slow extender's ms per answer")
    args = parser.parse_args()
    fast = StubExtender({"filter": _filter, "prioritize": _prioritize}).start()
    slow = StubExtender({"filter": _filter, "prioritize": _prioritize}, delay=args.delay / 1000).start()
    verbs = {"filter_verb": "filter", "prioritize_verb": "prioritize", "weight": 1}
    setups: list[tuple[str, Extender | None]] = [
        ("no extender", None),
        ("NodeNames", Extender(url_prefix=fast.url, node_cache_capable=True, **verbs)),  # type: ignore[arg-type]
        ("Nodes", Extender(url_prefix=fast.url, **verbs)),  # type: ignore[arg-type]
        (f"NodeNames, {args.delay:g}ms", Extender(url_prefix=slow.url, node_cache_capable=True, **verbs)),  # type: ignore[arg-type]
    ]
    try:
        print(f"{'nodes':>6} {'setup':<18} {'pods/s':>8} {'ms/pod':>8} {'+ms/pod':>8}")
        for n in (int(x) for x in args.nodes.split(",")):
            base = 0.0
            for label, extender in setups:
                seconds = run(n, args.pods, extender)
                per_pod = 1000 * seconds / args.pods
                base = base or per_pod
                print(
                    f"{n:>6} {label:<18} {args.pods / seconds:>8.0f} {per_pod:>8.2f} {per_pod - base:>8.2f}"
                )
    finally:
        fast.stop()
        slow.stop()


if __name__ == "__main__":
    main()
