"""``make demo``: berth run scheduling two pods on a throw-away local cluster, start to finish.

1. Start the local control plane (etcd + kube-apiserver built by ``hack/control-plane.sh build``) with
   three Ready Nodes that have no kubelet, one per zone (what ``hack/control-plane.sh up --nodes 3`` runs).
2. Start ``berth run --config examples/standalone-config.yaml`` against it and wait until it is ready
   (leader, caches synced).
3. ``kubectl apply -f examples/demo-pods.yaml``: a pod berth places and one no node can hold.
4. Print where the first was bound, the second's FitError (its ``PodScheduled`` condition), and berth's
   ``/debug/pods`` explanation of both (per-node filter verdicts and per-plugin scores).
5. Stop berth (SIGTERM: it releases its Lease and exits 0) and the control plane, deleting all data.

Every command a user could type is printed with a ``$`` before it. Exits 0 when all of that happened,
1 (naming the step, with berth's log) when something did not.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from kube.controlplane import (  # noqa: E402 (the control plane lives with the tests that use it most)
    ControlPlaneError,
    LocalControlPlane,
    default_bin_dir,
    free_ports,
)

NODES = 3
CONFIG = REPO_ROOT / "examples" / "standalone-config.yaml"
PODS = REPO_ROOT / "examples" / "demo-pods.yaml"
FITS, TOO_BIG = "demo-fits", "demo-too-big"
WAIT = 60.0
"""Seconds any one step may take."""


class DemoError(RuntimeError):
    """A step of the demo did not happen."""


def say(text: str) -> None:
    """A line of the demo's narrative."""
    print(f"\n==> {text}", flush=True)


def berth_command() -> str:
    """The ``berth`` of this virtual environment (``make demo`` runs this with ``.venv/bin/python``)."""
    beside = Path(sys.executable).parent / "berth"
    found = str(beside) if beside.exists() else shutil.which("berth")
    if found is None:
        raise DemoError("the berth command is not installed: run `make demo` (it installs it)")
    return found


def show(argv: list[str], env: dict[str, str]) -> str:
    """Print ``$ argv`` and run it, printing and returning its output; a failure raises."""
    print("$ " + " ".join(argv), flush=True)
    proc = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=WAIT, check=False
    )
    print(proc.stdout, end="", flush=True)
    if proc.returncode != 0:
        raise DemoError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def tls_context(cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """TLS to berth: its serving certificate is self-signed (generated at start), so no verification."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None and key is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def get(url: str, ctx: ssl.SSLContext) -> tuple[int, str]:
    """``(status, body)`` of a GET; ``(0, reason)`` when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError as err:
        return 0, str(err)


def wait_for(what: str, check: Any, berth: subprocess.Popen[bytes] | None = None) -> Any:
    """Poll ``check()`` until it returns something truthy; raise naming ``what`` after :data:`WAIT`."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if berth is not None and berth.poll() is not None:
            raise DemoError(f"berth run exited with {berth.returncode} while waiting for {what}")
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise DemoError(f"{what}: not after {WAIT:.0f}s")


def pod_status(cp: LocalControlPlane, name: str) -> tuple[str, str]:
    """``(nodeName, PodScheduled=False message)`` of pod ``default/name``, "" where not (yet) set."""
    pod = cp.request_json("GET", f"/api/v1/namespaces/default/pods/{name}")
    node = str(pod.get("spec", {}).get("nodeName") or "")  # type: ignore[attr-defined]
    for cond in pod.get("status", {}).get("conditions") or []:  # type: ignore[attr-defined]
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return node, str(cond.get("message", ""))
    return node, ""


def explain(trace: dict[str, Any]) -> list[str]:
    """A ``/debug/pods`` answer, line by line: the verdict, each rejecting node's plugin and reasons,
    and each scored node's per-plugin scores and weighted total."""
    lines = [
        f"{trace['pod']}: {trace['status']} on {trace.get('node') or '-'} "
        f"({trace['feasibleNodes']} of {trace['evaluatedNodes']} nodes feasible)"
    ]
    for node, verdict in sorted((trace.get("filter") or {}).items()):
        lines.append(
            f"  filter {node}: {verdict['plugin']} {verdict['status']}: {'; '.join(verdict['reasons'])}"
        )
    for node, scores in sorted((trace.get("scores") or {}).items()):
        plugins = ", ".join(f"{plugin} {score}" for plugin, score in scores.items() if plugin != "total")
        lines.append(f"  score  {node}: total {scores['total']} = {plugins}")
    totals = sorted((scores["total"] for scores in (trace.get("scores") or {}).values()), reverse=True)
    if len(totals) > 1 and totals[0] == totals[1]:
        lines.append("  (a tie: like kube-scheduler, berth picks one of the best nodes at random)")
    return lines


def run_demo(workdir: Path) -> None:
    """The demo's steps; raises :class:`DemoError` or :class:`ControlPlaneError` when one fails."""
    started = time.monotonic()
    say(f"Starting the local control plane with {NODES} Nodes that have no kubelet (one per zone)")
    cp = LocalControlPlane(default_bin_dir(), workdir=workdir / "cluster")
    berth: subprocess.Popen[bytes] | None = None
    berth_log = workdir / "berth-run.log"
    try:
        cp.start()
        nodes = cp.create_fake_nodes(NODES)
        env = {**os.environ, **cp.shell_env()}
        print(f"API server {cp.server}; nodes {', '.join(nodes)} ({time.monotonic() - started:.1f}s)")
        show(["kubectl", "get", "nodes", "-L", "topology.kubernetes.io/zone"], env)

        (port,) = free_ports(1)
        argv = [
            berth_command(), "run", "--kubeconfig", str(cp.kubeconfig), "--config", str(CONFIG.relative_to(REPO_ROOT)),
            "--bind-address", "127.0.0.1", "--secure-port", str(port), "--client-ca-file", str(cp.ca_file),
        ]  # fmt: skip
        say("Starting berth run, the scheduler for pods with schedulerName: berth-scheduler")
        print("$ " + " ".join(argv) + " &", flush=True)
        with berth_log.open("wb") as log:
            berth = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"https://127.0.0.1:{port}"
        wait_for("berth run ready (/readyz)", lambda: get(f"{base}/readyz", tls_context())[0] == 200, berth)
        print(get(f"{base}/readyz?verbose", tls_context())[1].rstrip())

        say("Creating a pod berth can place and one it cannot")
        show(["kubectl", "apply", "-f", str(PODS.relative_to(REPO_ROOT))], env)
        node = wait_for(f"pod {FITS} bound", lambda: pod_status(cp, FITS)[0], berth)
        fit_error = wait_for(f"pod {TOO_BIG} marked unschedulable", lambda: pod_status(cp, TOO_BIG)[1], berth)
        show(["kubectl", "get", "pods", "-o", "wide"], env)
        print(f"{FITS} was bound to {node}; it stays Pending because no kubelet runs on the fake nodes.")
        print(f"{TOO_BIG} is Unschedulable: {fit_error}")

        say("Why: berth's /debug/pods explanation of each (client certificate signed by --client-ca-file)")
        client = tls_context(cp.client_cert, cp.client_key)
        for name in (FITS, TOO_BIG):
            print(
                f"$ curl -sk --cert {cp.client_cert} --key {cp.client_key} {base}/debug/pods/default/{name} | jq"
            )
            status, body = get(f"{base}/debug/pods/default/{name}", client)
            if status != 200:
                raise DemoError(f"/debug/pods/default/{name} answered {status}: {body}")
            print("\n".join(explain(json.loads(body))))

        say("Tearing down: berth run first (it releases its Lease), then the control plane")
        berth.send_signal(signal.SIGTERM)
        code = berth.wait(timeout=WAIT)
        berth = None
        if code != 0:
            raise DemoError(f"berth run exited with {code} on SIGTERM")
    finally:
        if berth is not None:
            berth.kill()
            berth.wait()
        cp.stop()
    say(f"Done in {time.monotonic() - started:.1f}s: everything stopped and deleted.")


def main() -> int:
    """Run the demo in a temporary directory; 0 when every step happened."""
    workdir = Path(tempfile.mkdtemp(prefix="berth-demo-"))
    try:
        run_demo(workdir)
    except (DemoError, ControlPlaneError, subprocess.TimeoutExpired) as err:
        print(f"\nmake demo FAILED: {err}", file=sys.stderr)
        log = workdir / "berth-run.log"
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-40:]
            print("last lines of berth run's log:\n" + "\n".join(tail), file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
