"""kube-scheduler and ``berth run`` on a large cluster: start-up, memory and throughput side by side.

One local control plane (etcd + kube-apiserver) holding N nodes and M *bound* pods of a realistic
template (labels, annotations, an owner, two containers with env, ports, probes, volume mounts,
requests and limits, tolerations, volumes; the API server adds managedFields on create), then, for
each scheduler in turn (kube-scheduler v1.36.3 first, then ``berth run``, both as
``default-scheduler``, leader election off, qps/burst 5000, ``-v 1``):

1. **start-up**: spawn it and poll ``/readyz`` every 50 ms; *ready* is the first 200 (both gate it on
   ``sched-handler-sync``: every informer listed and every handler fed), and the CPU seconds it used
   until then (which a loaded machine stretches less than the wall time); the RSS 20 s after ready
   (*RSS after sync*) and the peak RSS (VmHWM) then; stop it.
2. **throughput**: P new pending pods (the same template, no node) are created in a fresh namespace
   while no scheduler runs; the scheduler starts again and binds them. Pods/s from the API server's
   timestamps (the ``PodScheduled`` condition the binding sets, whole seconds), CPU ms per pod from
   its user+system time between the first and the last bind seen by a watch; the pods are then
   deleted, so both schedulers see the same cluster.

``berth run`` runs from bytecode compiled beforehand (under ``--cache-dir``, through
``PYTHONPYCACHEPREFIX``), as the container image compiles it at install time: this environment sets
``PYTHONDONTWRITEBYTECODE``, and compiling berth, its dependencies and the standard library modules
it imports at every start would otherwise be counted in its time to ready.

Populating is the slow part, so the populated etcd data directory is kept under ``--cache-dir``
(``etcd-<N>n-<M>p``) and copied for each run; objects are created from 16 threads.

``--pending 0`` measures start-up and memory only. ``--baseline DIR`` adds a turn of ``berth run``
from another checkout's ``app/`` (a ``git worktree`` of main, say; the same interpreter and
dependencies) before this one's, for a before/after in one run. The table's title gives the load
averages before and after the run: the machine's load stretches wall times, so read the ratios.

Usage: ``.venv/bin/python bench/scale.py [--nodes 5000] [--pods 30000] [--pending 2000]
[--only kube-scheduler|berth] [--baseline DIR] [--cache-dir DIR] [--keep-logs DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import ssl
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e.stack import KubeScheduler, Process, scheduler_config  # noqa: E402
from e2e.standalone import BerthScheduler  # noqa: E402
from e2e_throughput import QPS, BindWatch, server_bind_times, server_rate  # noqa: E402
from standalone import CpuMeter, cpu_seconds  # noqa: E402

from app.kube.client import KubeClient, KubeError  # noqa: E402
from kube.controlplane import LocalControlPlane, default_bin_dir  # noqa: E402

KUBE, BERTH, BASELINE = "kube-scheduler", "berth run", "berth run (baseline)"
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = 400  # distinct Deployments the bound pods belong to (label values, images and env repeat per app)
SETTLE = 20.0  # seconds after ready before reading "RSS after sync"
POPULATE_THREADS = 16


# --- the cluster ---------------------------------------------------------------------------------------


def node_body(i: int) -> dict[str, Any]:
    """A Node as a kubelet reports it: labels, addresses, conditions, node info and 20 images."""
    name = f"node-{i:05d}"
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", "ephemeral-storage": "200Gi"}
    allocatable = {"cpu": "63500m", "memory": "250Gi", "pods": "110", "ephemeral-storage": "180Gi"}
    zone = ZONES[i % len(ZONES)]
    images = [
        {
            "names": [
                f"registry.example.com/team-{k % 20}/app-{k}@sha256:{k:064x}",
                f"registry.example.com/team-{k % 20}/app-{k}:v1.{k % 7}.0",
            ],
            "sizeBytes": 50_000_000 + k * 1_000_003,
        }
        for k in range((i * 7) % APPS, (i * 7) % APPS + 20)
    ]
    now = "2026-01-01T00:00:00Z"
    conditions = [
        {
            "type": t,
            "status": "False",
            "reason": f"Kubelet{t}",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ] + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "region-1",
                "node.kubernetes.io/instance-type": "m5.16xlarge",
                "node-pool": f"pool-{i % 8}",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": f"10.{(i >> 8) & 255}.{i & 255}.0/24", "providerID": f"fake://{name}"},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": f"10.200.{(i >> 8) & 255}.{i & 255}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{i:032x}",
                "systemUUID": f"{i:032x}",
                "bootID": f"{i:032x}",
                "kernelVersion": "6.1.0",
                "osImage": "Debian GNU/Linux 12",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }


def pod_body(i: int, node: str | None) -> dict[str, Any]:
    """A Deployment's pod: what a ReplicaSet controller creates after admission defaults it."""
    app = f"app-{i % APPS}"
    team = f"team-{i % APPS % 20}"
    image = f"registry.example.com/{team}/{app}:v1.{i % APPS % 7}.0"
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": image,
                "command": ["/bin/server"],
                "args": ["--port=8080", f"--name={app}", "--log-level=info"],
                "ports": [
                    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
                ],
                "env": [{"name": f"ENV_{k}", "value": f"{app}-value-{k}"} for k in range(8)]
                + [
                    {
                        "name": "POD_IP",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
                    }
                ],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "64Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                },
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
                "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "periodSeconds": 10},
                "volumeMounts": [
                    {"name": "config", "mountPath": "/etc/app"},
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                    },
                ],
                "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
            },
            {
                "name": "proxy",
                "image": "registry.example.com/mesh/proxy:v1.20.0",
                "args": ["proxy", "sidecar"],
                "ports": [{"name": "proxy", "containerPort": 15001, "protocol": "TCP"}],
                "env": [{"name": "SERVICE_NAME", "value": app}],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
            },
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config"}},
            {
                "name": "kube-api-access",
                "projected": {
                    "sources": [
                        {"secret": {"name": f"{app}-token", "items": [{"key": "token", "path": "token"}]}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                    ]
                },
            },
        ],
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "terminationGracePeriodSeconds": 30,
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{i:07d}",
            "labels": {
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": team,
                "app.kubernetes.io/version": f"v1.{i % APPS % 7}.0",
                "pod-template-hash": f"{(i % APPS) * 7919:010x}",
                "tier": ("frontend", "backend", "batch")[i % 3],
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
                "checksum/config": f"{(i % APPS) * 104729:064x}",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{(i % APPS) * 7919:010x}",
                    "uid": f"00000000-0000-0000-0000-{i % APPS:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def create_all(client: KubeClient, items: list[tuple[str, dict[str, Any]]]) -> None:
    """POST each (path, body) from :data:`POPULATE_THREADS` threads; an existing object is fine."""

    def post(item: tuple[str, dict[str, Any]]) -> None:
        path, body = item
        for attempt in range(5):
            status, data = client.request("POST", path, body=body)
            if status in (201, 409):
                return
            if status < 500 and status != 429:
                raise RuntimeError(f"POST {path}: {status} {data[:300]!r}")
            time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"POST {path}: {status} {data[:300]!r}")

    with ThreadPoolExecutor(POPULATE_THREADS) as pool:
        list(pool.map(post, items))


def namespace_of(i: int) -> str:
    """The bound pods are spread over 20 namespaces."""
    return f"apps-{i % 20}"


def smaller_seed(cache_dir: Path, nodes: int, pods: int) -> tuple[Path, int] | None:
    """The largest populated cluster with ``nodes`` nodes and fewer than ``pods`` pods, to grow from."""
    found = []
    for path in cache_dir.glob(f"etcd-{nodes}n-*p"):
        count = int(path.name.rsplit("-", 1)[1][:-1])
        if count < pods:
            found.append((count, path))
    if not found:
        return None
    count, path = max(found)
    return path, count


def populate(seed: Path, nodes: int, pods: int) -> None:
    """Create a cluster of ``nodes`` nodes and ``pods`` bound pods and keep its etcd data as ``seed``
    (grown from a smaller populated cluster of as many nodes when there is one)."""
    workdir = Path(tempfile.mkdtemp(prefix="berth-scale-populate-"))
    base = smaller_seed(seed.parent, nodes, pods)
    cp = LocalControlPlane(
        default_bin_dir(), workdir=workdir, ready_timeout=300.0, etcd_seed=base[0] if base else None
    )
    cp.start()
    started = time.monotonic()
    first_pod = base[1] if base else 0
    try:
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        if base is None:
            create_all(client, [("/api/v1/nodes", node_body(i)) for i in range(nodes)])
            print(f"populate: {nodes} nodes in {time.monotonic() - started:.0f}s", file=sys.stderr)
            namespaces = [("/api/v1/namespaces", {"metadata": {"name": namespace_of(i)}}) for i in range(20)]
            create_all(client, namespaces)
        batch = 10_000
        for start in range(first_pod, pods, batch):
            create_all(
                client,
                [
                    (f"/api/v1/namespaces/{namespace_of(i)}/pods", pod_body(i, f"node-{i % nodes:05d}"))
                    for i in range(start, min(pods, start + batch))
                ],
            )
            print(
                f"populate: {min(pods, start + batch)} pods, {time.monotonic() - started:.0f}s",
                file=sys.stderr,
            )
    finally:
        cp._stop_processes()
    seed.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(workdir / "etcd-data"), str(seed))
    shutil.rmtree(workdir, ignore_errors=True)


# --- measuring -------------------------------------------------------------------------------------


@dataclass
class Result:
    """One scheduler's numbers."""

    name: str
    ready_seconds: float = 0.0
    ready_cpu_seconds: float = 0.0
    rss_after_sync_mib: float = 0.0
    peak_rss_mib: float = 0.0
    bound: int = 0
    pods_per_second: float = 0.0
    cpu_ms_per_pod: float = 0.0
    restart_ready_seconds: float = 0.0


def proc_status(proc: Process, field: str) -> float:
    """``field`` (VmRSS, VmHWM) of a running process's /proc status, in MiB."""
    assert proc.popen is not None
    for line in Path(f"/proc/{proc.popen.pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def compile_bytecode(pycache: Path, baseline: Path | None) -> None:
    """Compile berth (and the baseline's), its dependencies and the standard library to bytecode
    under ``pycache`` (a no-op when up to date).

    With ``PYTHONPYCACHEPREFIX`` set, Python looks for the bytecode of every module under that prefix
    only, the standard library's too: left out, the standard library modules berth imports
    (``email``, ``http.server``, ``asyncio``, ...) would be compiled at every start, which a Python
    image never does (its standard library ships compiled)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            str(ROOT / "app"),
            *([str(baseline / "app")] if baseline is not None else []),
            sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["stdlib"],
        ],
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)},
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # the standard library's test data holds files that do not compile
    )


def short_name(kind: str) -> str:
    """``kind`` in a process's, a log's or a namespace's name."""
    return {KUBE: "kube", BERTH: "berth", BASELINE: "baseline"}[kind]


def berth_entry(baseline: Path | None) -> list[str]:
    """The interpreter arguments that run berth's CLI: this checkout's ``app``, or ``baseline``'s
    (put first on ``sys.path``, so that its ``app`` package is the one imported)."""
    if baseline is None:
        return ["-m", "app.cli.main"]
    code = (
        f"import sys; sys.path.insert(0, {str(baseline)!r}); from app.cli.main import main; sys.exit(main())"
    )
    return ["-c", code]


def spawn_until_ready(
    kind: str, cp: LocalControlPlane, workdir: Path, run: int, pycache: Path, baseline: Path | None
) -> tuple[Process, float]:
    """Start ``kind`` and return it with the seconds from spawn to its first ``/readyz`` 200."""
    name = f"{short_name(kind)}-{run}"
    proc: Process
    if kind in (BERTH, BASELINE):
        berth = BerthScheduler(
            workdir,
            cp.kubeconfig,
            name=name,
            namespace="default",
            lease_name="unused",
            leader_elect=False,
            qps=QPS,
            burst=QPS,
            verbosity=1,
            scheduler_name="default-scheduler",
        )
        argv = [
            sys.executable, *berth_entry(baseline if kind == BASELINE else None), "run", "--config", str(berth.config),
            "--secure-port", str(berth.port), "--bind-address", "127.0.0.1", "-v", "1",
        ]  # fmt: skip
        proc, port, env = berth, berth.port, {"PYTHONPYCACHEPREFIX": str(pycache)}
    else:
        kube = KubeScheduler(
            cp.bin_dir, cp.kubeconfig, workdir, scheduler_config(cp.kubeconfig, [], qps=QPS, burst=QPS), name
        )
        argv = [
            str(kube.binary), f"--config={kube.config_file}", f"--kubeconfig={kube.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={kube.port}",
            f"--authentication-kubeconfig={kube.kubeconfig}", f"--authorization-kubeconfig={kube.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--v=1",
        ]  # fmt: skip
        proc, port, env = kube, kube.port, {}
    started = time.monotonic()
    proc.spawn(argv, env)
    ctx = _insecure()
    while True:
        if not proc.alive:
            raise RuntimeError(f"{kind} exited before it was ready; see {proc.log}")
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=2, context=ctx) as resp:
                if resp.status == 200:
                    return proc, time.monotonic() - started
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() - started > 600:
            proc.stop()
            raise RuntimeError(f"{kind} not ready after 600s; see {proc.log}")
        time.sleep(0.05)


def measure(
    kind: str,
    cp: LocalControlPlane,
    client: KubeClient,
    workdir: Path,
    pending: int,
    pycache: Path,
    baseline: Path | None,
) -> Result:
    """Start-up and memory, then throughput on ``pending`` new pods (none: start-up and memory only)."""
    result = Result(kind)
    print(f"[{kind}] starting", file=sys.stderr)
    proc, result.ready_seconds = spawn_until_ready(kind, cp, workdir, 1, pycache, baseline)
    result.ready_cpu_seconds = cpu_seconds(proc)
    try:
        time.sleep(SETTLE)
        result.rss_after_sync_mib = proc_status(proc, "VmRSS")
        result.peak_rss_mib = proc_status(proc, "VmHWM")
    finally:
        proc.stop()
    print(
        f"[{kind}] ready in {result.ready_seconds:.1f}s ({result.ready_cpu_seconds:.1f}s CPU), "
        f"RSS {result.rss_after_sync_mib:.0f} MiB",
        file=sys.stderr,
    )
    if not pending:
        return result
    namespace = f"pending-{short_name(kind)}"
    create_all(client, [("/api/v1/namespaces", {"metadata": {"name": namespace}})])
    create_all(client, [(f"/api/v1/namespaces/{namespace}/pods", pod_body(i, None)) for i in range(pending)])
    watch = BindWatch(client, namespace)
    proc, result.restart_ready_seconds = spawn_until_ready(kind, cp, workdir, 2, pycache, baseline)
    meter = CpuMeter(proc)
    try:
        watch.wait(pending, timeout=600)
        result.peak_rss_mib = max(result.peak_rss_mib, proc_status(proc, "VmHWM"))
    finally:
        meter.stop()
        proc.stop()
    times = list(watch.times.values())
    result.bound = len(times)
    result.pods_per_second, _ = server_rate(server_bind_times(client, namespace))
    if times:
        result.cpu_ms_per_pod = 1e3 * meter.between(min(times), max(times)) / len(times)
    remove_pods(client, namespace)
    return result


def remove_pods(client: KubeClient, namespace: str) -> None:
    """Delete the namespace's pods at once and wait until they are gone (a slow API server may take
    longer than a request's timeout to delete a collection: then ask again)."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            client.request("DELETE", path, params={"gracePeriodSeconds": "0"}, timeout=120)
            if not client.get_json(path, {"limit": "1"})["items"]:
                return
        except KubeError as err:
            print(f"deleting the pods of {namespace}: {err}; again", file=sys.stderr)
        time.sleep(2)
    raise RuntimeError(f"the pods of {namespace} are still there after 600s")


def load_averages() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def print_table(nodes: int, pods: int, pending: int, results: list[Result], loads: tuple[str, str]) -> None:
    """The results side by side, with each berth's ratio to kube-scheduler."""
    kube = next((r for r in results if r.name == KUBE), None)
    berths = [r for r in results if r.name != KUBE]
    rows: list[tuple[str, str, Any]] = [
        ("ready (caches synced), s", "{:.1f}", lambda r: r.ready_seconds),
        ("CPU to ready (user+sys), s", "{:.1f}", lambda r: r.ready_cpu_seconds),
        ("RSS after sync, MiB", "{:.0f}", lambda r: r.rss_after_sync_mib),
        ("peak RSS, MiB", "{:.0f}", lambda r: r.peak_rss_mib),
        (f"ready with {pending} pending, s", "{:.1f}", lambda r: r.restart_ready_seconds),
        (f"pods/s ({pending} pending, API server times)", "{:.0f}", lambda r: r.pods_per_second),
        ("CPU ms/pod", "{:.2f}", lambda r: r.cpu_ms_per_pod),
        ("bound", "{:.0f}", lambda r: r.bound),
    ]
    if not pending:
        rows = rows[:4]  # start-up and memory only
    print(f"\n{nodes} nodes, {pods} bound pods (load average {loads[0]} before, {loads[1]} after)\n")
    names = [KUBE, *(r.name for r in berths)]
    ratios = [f"{short_name(r.name) if r.name == BASELINE else 'berth'}/kube" for r in berths]
    print("| | " + " | ".join([*names, *ratios]) + " |")
    print("|---" * (1 + len(names) + len(ratios)) + "|")
    for label, fmt, get in rows:
        cells = [fmt.format(get(kube)) if kube else "-"] + [fmt.format(get(b)) for b in berths]
        cells += [f"{get(b) / get(kube):.2f}x" if kube and get(kube) else "-" for b in berths]
        print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=30000, help="bound pods in the cluster")
    parser.add_argument(
        "--pending",
        type=int,
        default=2000,
        help="new pods each scheduler schedules (0: start-up and memory only)",
    )
    parser.add_argument("--only", choices=[KUBE, "berth"], help="measure one scheduler only")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path.home() / ".cache" / "berth" / "scale",
        help="populated etcd data",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also run berth from DIR's app/ (another checkout), before this one's",
    )
    parser.add_argument("--populate-only", action="store_true", help="populate (if needed) and stop")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the schedulers' logs here")
    args = parser.parse_args()
    seed = args.cache_dir / f"etcd-{args.nodes}n-{args.pods}p"
    if not seed.exists():
        populate(seed, args.nodes, args.pods)
    if args.populate_only:
        return 0
    pycache = args.cache_dir / "pycache"
    compile_bytecode(pycache, args.baseline)
    kinds = [KUBE, BERTH] if args.only is None else [KUBE if args.only == KUBE else BERTH]
    if args.baseline is not None and BERTH in kinds:
        kinds.insert(kinds.index(BERTH), BASELINE)
    before = load_averages()
    workdir = Path(tempfile.mkdtemp(prefix="berth-scale-"))
    cp = LocalControlPlane(default_bin_dir(), etcd_seed=seed, ready_timeout=300.0)
    cp.start()
    results = []
    try:
        client = KubeClient.from_config(str(cp.kubeconfig), qps=QPS, burst=QPS)
        for kind in kinds:
            results.append(measure(kind, cp, client, workdir, args.pending, pycache, args.baseline))
    finally:
        cp.stop()
        if args.keep_logs:
            shutil.copytree(workdir, args.keep_logs, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(args.nodes, args.pods, args.pending, results, (before, load_averages()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
