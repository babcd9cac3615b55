"""``berth run`` started the way the standalone Deployment starts it, outside a cluster.

The container's arguments are taken from the rendered Deployment, with only what a pod provides
replaced: ``$(POD_NAMESPACE)`` is the namespace the manifests were applied to, the ConfigMap's
``config.yaml`` is a file, and the in-cluster service account is a kubeconfig holding a token of the
manifests' ServiceAccount (the file's ``clientConnection.kubeconfig``: as kube-scheduler, berth
ignores ``--kubeconfig`` when ``--config`` is given). The secure port moves to a free loopback port so that
several tests can run.
"""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from deploy.manifests import config_map_file, container, expand_env, find, flag_value, replace_flag
from e2e.stack import READY_TIMEOUT, Process, free_port
from e2e.standalone import insecure_context

WAIT = 30.0


class ManifestScheduler(Process):
    """``python -m app.cli.main`` with the standalone Deployment's arguments."""

    def __init__(
        self, docs: list[dict[str, Any]], namespace: str, kubeconfig: Path, workdir: Path, name: str
    ) -> None:
        super().__init__(name, workdir / f"{name}.log")
        berth = container(find(docs, "Deployment"), "berth")
        args = expand_env(berth["args"], {"POD_NAMESPACE": namespace})
        config = config_map_file(docs, flag_value(args, "--config"), workdir)
        settings = yaml.safe_load(config.read_text())
        settings.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
        config.write_text(yaml.safe_dump(settings))
        self.port = free_port()
        args = replace_flag(args, "--config", str(config))
        args = replace_flag(args, "--secure-port", str(self.port))
        args = replace_flag(args, "--bind-address", "127.0.0.1")
        self.argv = [sys.executable, "-m", "app.cli.main", *args]

    @property
    def base(self) -> str:
        """The HTTPS base URL."""
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout: float = READY_TIMEOUT) -> ManifestScheduler:
        """Spawn it and wait for /readyz: leader election and informers are running with its identity."""
        self.spawn(self.argv, {"PYTHONUNBUFFERED": "1"})
        self.wait_ready(f"{self.base}/readyz", insecure_context(), timeout)
        return self

    def get(
        self, path: str, bearer: str | None = None, cert: tuple[Path, Path] | None = None
    ) -> tuple[int, str]:
        """GET ``path``, with a bearer token or a client certificate (cert file, key file) when given:
        ``(status, body)``."""
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        req = urllib.request.Request(f"{self.base}{path}", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10, context=insecure_context(cert)) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def wait_log(self, *fragments: str, timeout: float = WAIT) -> str:
        """The first log line containing every fragment; fails after ``timeout`` with the log's tail."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            for line in text.splitlines():
                if all(f in line for f in fragments):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line with {fragments} after {timeout:.0f}s:\n{text[-3000:]}")
            time.sleep(0.2)
