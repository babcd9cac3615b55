"""berth and a stock kube-scheduler as real processes next to a :class:`~kube.controlplane.LocalControlPlane`.

Shared by the end-to-end tests (``tests/e2e``) and ``bench/e2e_throughput.py``. Everything runs the
way a user would run it: ``berth serve --kubeconfig ...`` as a subprocess (``python -m app.cli.main``
from the repository, so the tree under test is what runs) and the ``kube-scheduler`` binary built by
``hack/control-plane.sh build`` with ``--config`` a ``KubeSchedulerConfiguration`` whose
``extenders:`` entry points at berth. Each process logs to its own file, shown when a test fails.

Standard library only (like ``kube.controlplane``), so the bench needs nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGINS_DIR = REPO_ROOT / "examples" / "plugins"
READY_TIMEOUT = 60.0

LIVE: list[Process] = []
"""Processes started and not yet stopped, newest last (for the log sections of failed tests)."""


class StackError(RuntimeError):
    """A process did not start, or died."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of ``path`` ("" if it does not exist)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Process:
    """A child process with its output in ``log``; started by :meth:`spawn`, ended by :meth:`stop`."""

    def __init__(self, name: str, log: Path) -> None:
        self.name = name
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        """Whether the process is running."""
        return self.popen is not None and self.popen.poll() is None

    def spawn(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Start ``argv``, appending its output to the log (a restarted process keeps one log)."""
        with self.log.open("ab") as out:
            out.write(f"\n==== {time.strftime('%H:%M:%S')} starting: {' '.join(argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(
                list(argv),
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,  # Ctrl-C reaches pytest only; we stop the children ourselves
            )
        if self not in LIVE:
            LIVE.append(self)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Send ``sig`` to the process (its pid only), then kill it if it outlives ``timeout``."""
        popen = self.popen
        if popen is not None and popen.poll() is None:
            popen.send_signal(sig)
            try:
                popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(timeout=timeout)
        with contextlib.suppress(ValueError):
            LIVE.remove(self)

    def wait_ready(self, url: str, ctx: ssl.SSLContext | None = None, timeout: float = READY_TIMEOUT) -> None:
        """Poll ``url`` until it answers 200; raise :class:`StackError` if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            if not self.alive:
                code = self.popen.returncode if self.popen is not None else None
                raise StackError(f"{self.name} exited ({code}) before it was ready:\n{tail(self.log)}")
            try:
                with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code}: {err.read()[:300].decode(errors='replace')}"
            except OSError as err:
                last = repr(err)
            if time.monotonic() > deadline:
                raise StackError(
                    f"{self.name} not ready at {url} after {timeout:.0f}s ({last}):\n{tail(self.log)}"
                )
            time.sleep(0.1)


class BerthServer(Process):
    """``berth serve --kubeconfig KUBECONFIG --port PORT [ARGS]``; the ports survive restarts.

    With ``https`` it also serves HTTPS on ``127.0.0.1:<secure_port>`` (``secure_url``), the
    certificate generated into ``<workdir>/<name>-certs/berth.crt`` (:attr:`ca_file`); otherwise
    the secure port is off, so that no two test servers compete for the default one.
    """

    def __init__(
        self,
        kubeconfig: Path,
        workdir: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        name: str = "berth",
        https: bool = False,
    ) -> None:
        super().__init__(name, workdir / f"{name}.log")
        self.kubeconfig = kubeconfig
        self.args = list(args)
        self.env = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.https = https
        self.secure_port = free_port() if https else 0
        self.secure_url = f"https://127.0.0.1:{self.secure_port}"
        self.cert_dir = workdir / f"{name}-certs"

    @property
    def ca_file(self) -> Path:
        """The generated serving certificate (followed by its CA): what clients verify berth with."""
        return self.cert_dir / "berth.crt"

    def start(self, timeout: float = READY_TIMEOUT) -> BerthServer:
        """Start berth and wait for /readyz (which includes the informers' sync)."""
        argv = [sys.executable, "-m", "app.cli.main", "serve", "--kubeconfig", str(self.kubeconfig)]
        argv += ["--port", str(self.port), "--secure-port", str(self.secure_port)]
        if self.https:
            argv += ["--bind-address", "127.0.0.1", "--cert-dir", str(self.cert_dir)]
        argv += self.args
        self.spawn(argv, {"PYTHONUNBUFFERED": "1", **self.env})
        self.wait_ready(f"{self.url}/readyz", timeout=timeout)
        return self

    def post(self, verb: str, body: Any, timeout: float = 10.0) -> Any:
        """POST ``body`` as JSON to ``/verb`` and decode the answer."""
        req = urllib.request.Request(
            f"{self.url}/{verb}", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def metric(self, name: str, labels: Mapping[str, str]) -> float:
        """The value of one sample in /metrics (0 when absent), e.g. ``berth_extender_requests_total``."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        want = {f'{k}="{v}"' for k, v in labels.items()}
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            label_text, _, value = line[len(name) + 1 :].rpartition("} ")
            if want <= set(label_text.split(",")):
                return float(value)
        return 0.0


@dataclass
class ExtenderEntry:
    """One ``extenders:`` entry of a KubeSchedulerConfiguration (v1 field names)."""

    url_prefix: str
    node_cache_capable: bool = True
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    bind_verb: str = "bind"
    preempt_verb: str = ""
    weight: int = 1
    ignorable: bool = False
    http_timeout: str = "5s"
    managed_resources: list[dict[str, Any]] = field(default_factory=list)
    enable_https: bool = False
    tls_config: dict[str, Any] | None = None
    """``tlsConfig`` (``caFile``, ``certFile``, ``keyFile``, ...), for an https ``url_prefix``."""

    def to_dict(self) -> dict[str, Any]:
        """The entry as kube-scheduler decodes it (strictly: exact v1 spellings)."""
        out: dict[str, Any] = {
            "urlPrefix": self.url_prefix,
            "filterVerb": self.filter_verb,
            "prioritizeVerb": self.prioritize_verb,
            "weight": self.weight,
            "nodeCacheCapable": self.node_cache_capable,
            "ignorable": self.ignorable,
            "httpTimeout": self.http_timeout,
        }
        if self.bind_verb:
            out["bindVerb"] = self.bind_verb
        if self.preempt_verb:
            out["preemptVerb"] = self.preempt_verb
        if self.managed_resources:
            out["managedResources"] = self.managed_resources
        if self.enable_https:
            out["enableHTTPS"] = True
        if self.tls_config:
            out["tlsConfig"] = self.tls_config
        return out


def scheduler_config(
    kubeconfig: Path,
    extenders: Sequence[ExtenderEntry] = (),
    scheduler_name: str = "default-scheduler",
    qps: int = 50,
    burst: int = 100,
) -> dict[str, Any]:
    """A ``kubescheduler.config.k8s.io/v1`` KubeSchedulerConfiguration: one profile, leader election off."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}],
        "extenders": [e.to_dict() for e in extenders],
    }


class KubeScheduler(Process):
    """The stock ``kube-scheduler`` binary with ``--config`` (written as JSON, which is YAML)."""

    def __init__(
        self, bin_dir: Path, kubeconfig: Path, workdir: Path, config: Mapping[str, Any], name: str
    ) -> None:
        super().__init__(name, workdir / f"{name}.log")
        self.binary = bin_dir / "kube-scheduler"
        self.kubeconfig = kubeconfig
        self.config_file = workdir / f"{name}.config.yaml"
        self.config_file.write_text(json.dumps(config, indent=2) + "\n")
        self.port = free_port()

    def start(
        self, verbosity: int = 2, timeout: float = READY_TIMEOUT, extra_args: Sequence[str] = ()
    ) -> KubeScheduler:
        """Start it and wait for its /readyz (caches synced); serving on a free loopback port.
        ``extra_args`` go after the others (``--feature-gates``, ``--emulated-version``, ...)."""
        self.spawn(
            [
                str(self.binary),
                f"--config={self.config_file}",
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                f"--v={verbosity}",
                *extra_args,
            ]
        )
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed in memory
        self.wait_ready(f"https://127.0.0.1:{self.port}/readyz", ctx, timeout)
        return self
