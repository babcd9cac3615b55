"""What the web UI costs: scheduling throughput with a browser on ``/ui/``, and the size and opening
time of a large ``--html`` report.

``--part live``: ``berth run`` on a real control plane (bench/standalone.py's SchedulingBasic-like
rounds: N nodes, M pods created before the scheduler starts), alternately alone and with chromium
showing ``/ui/`` in two tabs (the decisions page and the nodes page, each polling every 2 s) from
just after the scheduler answers until its last pod is bound. One process, one control plane,
rounds interleaved (``--repeat`` pairs, alternating which goes first); the ratio is the median of the
pairs' ratios of average pods/s (binds over first-to-last bind, from a watch). The browser's polls
are counted.

``--part report``: a state of ``--report-nodes`` nodes (4 cpu / 32Gi, three zones, a third of them
with a running pod) and ``--report-pods`` pending pods (2% of them selecting a label no node has, so
their FitError lists every node), ``berth simulate --html`` through the CLI; prints the file size,
the time to write it, and the time chromium takes from navigation to the decisions table drawn (then
to a pod's page and the nodes page), best of three openings.

``--part verbs``: what recording the decisions for ``berth serve``'s UI costs its extender verbs.
In process, bench/extender.py's cluster (``--verb-nodes`` nodes, two running pods each) and pods:
for every pod /filter (``NodeNames``, all nodes), then /prioritize of the nodes it passed, as
kube-scheduler calls them; rounds alternately with the recording on (as ``berth serve`` runs) and
off (an :class:`ExtenderDecisions` that keeps nothing), ``--repeat`` pairs. Prints the time per
pod of each round, the median ratio, and the share of the verbs' time spent inside the recording.

Chromium is Debian's (/usr/bin/chromium; hack/browser.sh installs it), driven by Playwright.

Usage: ``.venv/bin/python bench/ui.py [--part live|report|verbs|all] [--nodes 200] [--pods 1000] [--repeat 2]
[--report-nodes 5000] [--report-pods 2000] [--verb-nodes 500,5000] [--verb-pods 200]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from e2e.standalone import SCHEDULER_NAME, BerthScheduler  # noqa: E402
from e2e_throughput import QPS, BindWatch, create_all, node_body, pod_body  # noqa: E402
from extender import build as extender_cluster  # noqa: E402
from extender import pod_raw  # noqa: E402
from standalone import CpuMeter, Result, interleaved_rounds, summarise  # noqa: E402

from app import gcpolicy  # noqa: E402
from app.api.objects import parse_pod  # noqa: E402
from app.cli.main import main as berth  # noqa: E402
from app.extender.decisions import ExtenderDecisions  # noqa: E402
from app.extender.service import ExtenderService  # noqa: E402
from app.extender.wire import ExtenderArgs  # noqa: E402
from app.kube.client import KubeClient  # noqa: E402
from kube.controlplane import LocalControlPlane  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ALONE, WATCHED = "berth run", "berth run + browser on /ui/"
ZONES = ("zone-a", "zone-b", "zone-c")


def launch_chromium(playwright: Any) -> Any:
    """Debian's chromium, headless."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
    )


class UiWatcher:
    """Two tabs on a ``berth run``'s /ui/ (decisions and nodes), counting the API polls they make."""

    def __init__(self, browser: Any, proc: BerthScheduler) -> None:
        assert proc.client_cert is not None
        cert, key = proc.client_cert
        self.context = browser.new_context(
            viewport={"width": 1280, "height": 800},
            ignore_https_errors=True,
            client_certificates=[{"origin": proc.base, "certPath": str(cert), "keyPath": str(key)}],
        )
        self.polls = 0
        self.context.on("response", self._count)
        for page in ("#/decisions", "#/nodes"):
            self.context.new_page().goto(f"{proc.base}/ui/{page}")

    def _count(self, response: Any) -> None:
        if "/ui/api/" in response.url:
            self.polls += 1

    def pump(self, seconds: float) -> None:
        """Let the pages run (Playwright's sync API dispatches events only while it is called)."""
        self.context.pages[0].wait_for_timeout(seconds * 1000)

    def close(self) -> None:
        self.context.close()


def live_round(
    kind: str, n: int, cp: LocalControlPlane, client: KubeClient, workdir: Path, pods: int, browser: Any
) -> tuple[Result, int]:
    """One round: create the pods, start berth run (with the browser on /ui/ for WATCHED), wait for
    every bind. Returns the result and the number of /ui/api polls the browser made."""
    namespace = f"ui-bench-{n}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    bodies = [pod_body(i) for i in range(pods)]
    for body in bodies:
        body["spec"]["schedulerName"] = SCHEDULER_NAME  # type: ignore[index]
    print(f"[{kind} #{n}] creating {pods} pods", file=sys.stderr)
    create_all(client, f"/api/v1/namespaces/{namespace}/pods", bodies)
    watch = BindWatch(client, namespace)
    proc = BerthScheduler.on(
        cp, workdir, namespace=namespace, lease_name="ui-bench", name=f"berth-ui-{n}", verbosity=1
    )
    watcher: UiWatcher | None = None
    meter: CpuMeter | None = None
    polls = 0
    try:
        proc.start()
        meter = CpuMeter(proc)
        if kind == WATCHED:
            watcher = UiWatcher(browser, proc)
            deadline = time.monotonic() + 600
            while len(watch.times) < pods and time.monotonic() < deadline:
                watcher.pump(0.5)
            polls = watcher.polls
        watch.wait(pods, timeout=600)
    finally:
        if meter is not None:
            meter.stop()
        if watcher is not None:
            watcher.close()
        proc.stop()
    result = Result(kind, pods)
    summarise(result, list(watch.times.values()))
    if meter is not None and watch.times:
        result.cpu_seconds = meter.between(min(watch.times.values()), max(watch.times.values()))
    client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": "0"})
    return result, polls


def bench_live(args: argparse.Namespace, playwright: Any) -> None:
    browser = launch_chromium(playwright)
    workdir = Path(tempfile.mkdtemp(prefix="berth-ui-bench-"))
    try:
        rounds = interleaved_rounds(
            args.nodes,
            args.repeat,
            [ALONE, WATCHED],
            lambda kind, n, cp, client: live_round(kind, n, cp, client, workdir, args.pods, browser),
        )
    finally:
        browser.close()
    print(f"\n## Live UI: {args.nodes} nodes x {args.pods} pods, qps/burst {QPS}/{QPS}, rounds interleaved\n")
    print("| round | bound | seconds | avg pods/s | p50 pods/s | berth CPU ms/pod | /ui/api polls |")
    print("|---|---|---|---|---|---|---|")
    for r, polls in rounds:
        cpu = 1e3 * r.cpu_seconds / max(r.bound, 1)
        print(
            f"| {r.name} | {r.bound}/{r.pods} | {r.seconds:.1f} | {r.average:.0f} | {r.p50:.0f} | {cpu:.2f} "
            f"| {polls} |"
        )
    alone = [r for r, _ in rounds if r.name == ALONE]
    watched = [r for r, _ in rounds if r.name == WATCHED]
    for what, value in (
        ("average pods/s", lambda r: r.average),
        ("berth CPU per pod", lambda r: r.cpu_seconds),
    ):
        ratios = [value(w) / value(a) if value(a) else 0.0 for a, w in zip(alone, watched, strict=False)]
        print(
            f"with / without the browser, {what}: {statistics.median(ratios):.2f}x "
            f"(pairs: {', '.join(f'{x:.2f}' for x in ratios)})"
        )


def report_state(nodes: int, pods: int) -> str:
    """A YAML state: ``nodes`` nodes, a running pod on every third, ``pods`` pending pods."""
    docs: list[dict[str, Any]] = []
    for i in range(nodes):
        body = node_body(i)
        body["metadata"]["labels"]["topology.kubernetes.io/zone"] = ZONES[i % len(ZONES)]  # type: ignore[index]
        docs.append(body)
        if i % 3 == 0:
            running = pod_body(i)
            running["metadata"] = {"name": f"running-{i:05d}", "namespace": "kube-system"}
            running["spec"]["nodeName"] = body["metadata"]["name"]  # type: ignore[index]
            docs.append(running)
    for i in range(pods):
        pending = pod_body(i)
        pending["metadata"] = {"name": f"pod-{i:05d}", "namespace": f"team-{i % 5}"}
        if i % 50 == 0:  # 2%: no node has the label, so the FitError names all of them
            pending["spec"]["nodeSelector"] = {"disktype": "nvme"}  # type: ignore[index]
        docs.append(pending)
    return yaml.safe_dump_all(docs, sort_keys=False)


def bench_report(args: argparse.Namespace, playwright: Any) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="berth-ui-report-"))
    state = workdir / "state.yaml"
    state.write_text(report_state(args.report_nodes, args.report_pods))
    html = workdir / "report.html"
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = berth(["simulate", str(state), "--seed", "1", "--html", str(html)])
    written = time.perf_counter() - start
    assert code == 0, f"berth simulate exited {code}"
    size = html.stat().st_size
    browser = launch_chromium(playwright)
    timings: dict[str, list[float]] = {"decisions": [], "pod": [], "nodes": []}
    try:
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(html.as_uri())
            page.wait_for_selector("#decisions tbody tr")
            timings["decisions"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.click(f'#decisions a:text-is("team-1/pod-{1:05d}")')
            page.wait_for_selector("#score-bars")
            timings["pod"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.click("nav a:text-is('Nodes')")
            page.wait_for_selector("#heatmap a")
            timings["nodes"].append(time.perf_counter() - t0)
            assert errors == [], errors
            page.close()
    finally:
        browser.close()
    print(f"\n## Report: {args.report_nodes} nodes, {args.report_pods} pending pods\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| report size | {size / 2**20:.1f} MiB (limit 20 MB) |")
    print(f"| berth simulate --html (simulation + report) | {written:.1f} s |")
    for what, label in (
        ("decisions", "open in chromium to the decisions table"),
        ("pod", "click a pod to its scores"),
        ("nodes", "to the nodes page (heatmap)"),
    ):
        print(f"| {label} | {min(timings[what]):.2f} s best, {max(timings[what]):.2f} s worst of 3 |")


class TimedDecisions(ExtenderDecisions):
    """The store ``berth serve`` uses, timing its recording calls; ``keep=False`` records nothing."""

    def __init__(self, keep: bool) -> None:
        super().__init__()
        self.keep = keep
        self.seconds = 0.0  # inside the verbs, before their answers
        self.settling = 0.0  # settling the records, once a /filter answer is sent

    def filtered(self, *args: Any) -> None:
        self.seconds += self._timed(super().filtered, args)

    def scored(self, *args: Any) -> None:
        self.seconds += self._timed(super().scored, args)

    def settle(self) -> None:
        self.settling += self._timed(super().settle, ())

    def _timed(self, record: Any, args: tuple[Any, ...]) -> float:
        if not self.keep:
            return 0.0
        start = time.perf_counter()
        record(*args)
        return time.perf_counter() - start


def verbs_round(nodes: int, pods: int, keep: bool, round_no: int) -> tuple[float, float, float]:
    """Seconds per pod for /filter + /prioritize, and of them recording inside the verbs and
    settling the records after /filter's answer."""
    engine, raws, _ = extender_cluster(nodes)
    gcpolicy.install()  # as berth serve runs: the loaded cache frozen out of full collections
    names = [raw["metadata"]["name"] for raw in raws]
    decisions = TimedDecisions(keep)
    service = ExtenderService(engine, decisions=decisions)
    rng = random.Random(round_no)
    bodies = [parse_pod(pod_raw(f"p-{round_no}-{i}", rng)) for i in range(pods)]
    start = time.perf_counter()
    for pod in bodies:
        passed = service.filter(ExtenderArgs(pod, None, names)).node_names or []
        service.speculate()
        service.prioritize(ExtenderArgs(pod, None, list(passed)))
    elapsed = time.perf_counter() - start
    gcpolicy.uninstall()
    return elapsed / pods, decisions.seconds / pods, decisions.settling / pods


def bench_verbs(args: argparse.Namespace) -> None:
    print(f"\n## Extender verbs with and without recording decisions ({args.verb_pods} pods a round)\n")
    print(
        "| nodes | round | ms per pod (/filter + /prioritize) | recording in the verbs, µs per pod "
        "| settling after /filter's answer, µs per pod |"
    )
    print("|---|---|---|---|---|")
    for nodes in (int(n) for n in args.verb_nodes.split(",")):
        ratios = []
        for pair in range(args.repeat):
            order = (True, False) if pair % 2 == 0 else (False, True)
            timings = {keep: verbs_round(nodes, args.verb_pods, keep, pair) for keep in order}
            for keep in order:
                per_pod, recording, settling = timings[keep]
                label = "recording" if keep else "not recording"
                print(
                    f"| {nodes} | {label} | {1e3 * per_pod:.2f} | {1e6 * recording:.0f} | {1e6 * settling:.0f} |"
                )
            ratios.append(timings[True][0] / timings[False][0])
        print(
            f"| {nodes} | recording / not, median of {len(ratios)} pairs | "
            f"{statistics.median(ratios):.3f}x ({', '.join(f'{r:.3f}' for r in ratios)}) | | |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["live", "report", "verbs", "all"], default="all")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2, help="pairs of rounds, alternating the order")
    parser.add_argument("--report-nodes", type=int, default=5000)
    parser.add_argument("--report-pods", type=int, default=2000)
    parser.add_argument("--verb-nodes", default="500,5000", help="comma-separated cluster sizes")
    parser.add_argument("--verb-pods", type=int, default=200)
    args = parser.parse_args()
    if args.part in ("verbs", "all"):
        bench_verbs(args)
    if args.part == "verbs":
        return 0
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        if args.part in ("report", "all"):
            bench_report(args, playwright)
        if args.part in ("live", "all"):
            bench_live(args, playwright)
    return 0


if __name__ == "__main__":
    sys.exit(main())
