"""Extender latency: POST /filter then /prioritize per pod, in-process through the ASGI app.

Cluster: N nodes (4-16 cpu, 16-64Gi, labels, conditions, images: a trimmed real Node object),
two running pods per node in berth's cache. Pods: cpu/memory requests only. For every pod the
bench posts /filter with all N nodes, then /prioritize with the nodes /filter passed, as
kube-scheduler does. Modes: ``NodeNames`` (nodeCacheCapable: true) and ``Nodes`` (full objects
in the body). Requests go through httpx.AsyncClient + ASGITransport into the app's verb fast path
(app.server.fastpath), so the numbers include the metrics, body reading, decoding and encoding, but
not a socket or uvicorn's HTTP parsing.

``engine`` is the share of the latency spent in Engine.filter_nodes / score_nodes; the rest is
HTTP plumbing, decoding and encoding. Fixed seed: repeated runs send the same requests.

The garbage collector matters: a large body allocates tens of thousands of objects, and each
collection of the oldest generation walks berth's whole cache. ``--gc freeze`` shows the effect of
``gc.freeze()`` after the cache is loaded.

Usage: ``.venv/bin/python bench/extender.py [--nodes 500,5000] [--requests 200] [--gc on|freeze|off] [--profile]``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from app.api.objects import parse_node, parse_pod
from app.config import dump_config, load_config
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.server import create_app

SEED = 42
ZONES = ("zone-a", "zone-b", "zone-c")


def node_raw(i: int, rng: random.Random) -> dict[str, Any]:
    """A node object of realistic shape (what kube-scheduler sends with nodeCacheCapable: false)."""
    name = f"node-{i:05d}"
    cpu = rng.choice((4, 8, 16))
    mem = rng.choice((16, 32, 64))
    resources = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": f"m5.{cpu}xlarge",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "providerID": f"aws:///{name}"},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {"type": t, "status": "False", "reason": f"Kubelet{t}"}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256 % 256}.{i % 256}"}],
            "nodeInfo": {"kubeletVersion": "v1.36.3", "containerRuntimeVersion": "containerd://2.1.0"},
            "images": [
                {"names": [f"registry.example.com/app-{k}:1.{k}"], "sizeBytes": 50_000_000 + k * 1_000_000}
                for k in rng.sample(range(20), 5)
            ],
        },
    }


def pod_raw(name: str, rng: random.Random, node: str = "") -> dict[str, Any]:
    """A pod with cpu/memory requests only."""
    requests = {
        "cpu": f"{rng.choice((100, 250, 500, 1000))}m",
        "memory": f"{rng.choice((128, 256, 512, 1024))}Mi",
    }
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "app:1", "resources": {"requests": requests}}]
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


class EngineTimer:
    """Wraps Engine.filter_nodes / score_nodes to accumulate the time spent inside them."""

    def __init__(self, engine: Engine) -> None:
        self.seconds = 0.0
        for method in ("filter_nodes", "score_nodes"):
            setattr(engine, method, self._timed(getattr(engine, method)))

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.seconds += time.perf_counter() - start

        return timed

    def take(self) -> float:
        """Seconds since the last take."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def build(num_nodes: int) -> tuple[Engine, list[dict[str, Any]], EngineTimer]:
    rng = random.Random(SEED)
    registry = in_tree_registry()
    engine = Engine(load_config(None, registry), registry, seed=SEED)
    raws = [node_raw(i, rng) for i in range(num_nodes)]
    for raw in raws:
        engine.cache.add_node(parse_node(raw))
        for k in range(2):
            engine.cache.add_pod(
                parse_pod(pod_raw(f"run-{raw['metadata']['name']}-{k}", rng, raw["metadata"]["name"]))
            )
    return engine, raws, EngineTimer(engine)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run_case(
    num_nodes: int, mode: str, requests: int, profile: bool, gc_mode: str
) -> list[dict[str, Any]]:
    engine, raws, timer = build(num_nodes)
    app = create_app(engine, profile=None, config_dump=dump_config(engine.cfg), version="0.1.0")
    rng = random.Random(SEED + 1)
    pods = [pod_raw(f"bench-{i}", rng) for i in range(requests)]
    names = [r["metadata"]["name"] for r in raws]
    by_name = dict(zip(names, raws, strict=True))
    latency: dict[str, list[float]] = {"filter": [], "prioritize": []}
    engine_s: dict[str, list[float]] = {"filter": [], "prioritize": []}
    sizes: dict[str, int] = {}
    profiler = cProfile.Profile() if profile else None

    def args(pod: dict[str, Any], node_names: list[str]) -> bytes:
        if mode == "NodeNames":
            return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": node_names})
        return orjson.dumps(
            {
                "Pod": pod,
                "Nodes": {"metadata": {}, "items": [by_name[n] for n in node_names]},
                "NodeNames": None,
            }
        )

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://berth") as client:
        headers = {"content-type": "application/json"}
        await client.post("/filter", content=args(pods[0], names), headers=headers)  # warm up
        timer.take()
        gc.collect()
        if gc_mode == "freeze":
            gc.freeze()  # the cache's objects move to the permanent generation: never scanned again
        elif gc_mode == "off":
            gc.disable()
        try:
            for pod in pods:
                body = args(pod, names)
                sizes["filter"] = len(body)
                if profiler:
                    profiler.enable()
                start = time.perf_counter()
                r = await client.post("/filter", content=body, headers=headers)
                latency["filter"].append(time.perf_counter() - start)
                engine_s["filter"].append(timer.take())
                out = orjson.loads(r.content)
                assert r.status_code == 200 and not out["Error"], r.text[:300]
                passing = (
                    out["NodeNames"]
                    if mode == "NodeNames"
                    else [n["metadata"]["name"] for n in out["Nodes"]["items"]]
                )
                body = args(pod, passing)
                sizes["prioritize"] = len(body)
                start = time.perf_counter()
                r = await client.post("/prioritize", content=body, headers=headers)
                latency["prioritize"].append(time.perf_counter() - start)
                engine_s["prioritize"].append(timer.take())
                if profiler:
                    profiler.disable()
                assert r.status_code == 200 and len(r.json()) == len(passing)
        finally:
            gc.enable()
            gc.unfreeze()
    if profiler:
        out_stream = io.StringIO()
        pstats.Stats(profiler, stream=out_stream).sort_stats("tottime").print_stats(25)
        print(f"\n--- profile: {num_nodes} nodes, {mode} ---")
        print(out_stream.getvalue())
    rows = []
    for verb in ("filter", "prioritize"):
        lat = latency[verb]
        rows.append(
            {
                "case": f"{num_nodes} {mode}",
                "verb": verb,
                "n": len(lat),
                "body_kib": sizes[verb] / 1024,
                "p50": percentile(lat, 0.5) * 1e3,
                "p99": percentile(lat, 0.99) * 1e3,
                "engine": 100 * sum(engine_s[verb]) / sum(lat),
            }
        )
    both = [f + p for f, p in zip(latency["filter"], latency["prioritize"], strict=True)]
    rows.append(
        {
            "case": f"{num_nodes} {mode}",
            "verb": "both",
            "n": len(both),
            "body_kib": float("nan"),
            "p50": percentile(both, 0.5) * 1e3,
            "p99": percentile(both, 0.99) * 1e3,
            "engine": 100 * (sum(engine_s["filter"]) + sum(engine_s["prioritize"])) / sum(both),
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--nodes", default="500,5000", help="Comma-separated node counts (default 500,5000).")
    parser.add_argument(
        "--requests", type=int, default=200, help="Pods per case (default 200; 5000 Nodes: 1/5)."
    )
    parser.add_argument("--modes", default="NodeNames,Nodes", help="Comma-separated modes.")
    parser.add_argument("--profile", action="store_true", help="Print a cProfile summary per case.")
    parser.add_argument(
        "--gc",
        choices=("on", "freeze", "off"),
        default="on",
        help="Garbage collector during the timed requests: on (as the server runs today), freeze "
        "(gc.freeze() after loading the cache) or off (default on).",
    )
    opts = parser.parse_args()
    rows = []
    for num_nodes in (int(n) for n in opts.nodes.split(",")):
        for mode in opts.modes.split(","):
            requests = (
                opts.requests if not (mode == "Nodes" and num_nodes >= 5000) else max(10, opts.requests // 5)
            )
            rows.extend(asyncio.run(run_case(num_nodes, mode, requests, opts.profile, opts.gc)))
    print(f"gc: {opts.gc}")
    print(f"{'case':<16} {'verb':<11} {'n':>4} {'body KiB':>9} {'p50 ms':>8} {'p99 ms':>8} {'engine %':>9}")
    for r in rows:
        body = "" if r["body_kib"] != r["body_kib"] else f"{r['body_kib']:.0f}"
        print(
            f"{r['case']:<16} {r['verb']:<11} {r['n']:>4} {body:>9} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['engine']:>8.0f}%"
        )


if __name__ == "__main__":
    main()
