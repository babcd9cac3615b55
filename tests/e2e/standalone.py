"""``berth run`` as a real process next to the test control plane (shared by tests and bench)."""

from __future__ import annotations

import json
import re
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from e2e.stack import LIVE, READY_TIMEOUT, Process, free_port

if TYPE_CHECKING:
    from kube.controlplane import LocalControlPlane

SCHEDULER_NAME = "berth-scheduler"
_IDENTITY = re.compile(r'"Starting berth scheduler" .*?identity="([^"]+)"')

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: {leader_elect}
  leaseDuration: {lease}s
  renewDeadline: {renew}s
  retryPeriod: {retry}s
  resourceName: {lease_name}
  resourceNamespace: {namespace}
profiles:
- schedulerName: {scheduler_name}
{profile_extra}"""


def insecure_context(cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """TLS without server verification (berth's serving certificate is self-signed in these tests),
    presenting the client certificate ``cert`` (cert file, key file) when given."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


class BerthScheduler(Process):
    """``python -m app.cli.main run`` with a generated configuration.

    Callers authenticate with ``client_cert`` (signed by ``client_ca``, e.g. the control plane's
    admin certificate, which its RBAC authorizes everywhere); the probes are open to anyone.
    """

    def __init__(
        self,
        workdir: Path,
        kubeconfig: Path,
        *,
        name: str = "berth-run",
        namespace: str,
        lease_name: str,
        leader_elect: bool = True,
        lease: float = 4.0,
        renew: float = 3.0,
        retry: float = 0.5,
        qps: int = 5000,
        burst: int = 5000,
        client_ca: Path | None = None,
        client_cert: tuple[Path, Path] | None = None,
        extra_args: tuple[str, ...] = (),
        verbosity: int = 3,
        scheduler_name: str = SCHEDULER_NAME,
        extra_config: str = "",
        profile_extra: str = "",
    ) -> None:
        """``extra_config`` is YAML appended to the configuration's top level (``extenders: ...``)."""
        super().__init__(name, workdir / f"{name}.log")
        self.kubeconfig = kubeconfig
        self.port = free_port()
        self.config = workdir / f"{name}.yaml"
        self.config.write_text(
            CONFIG.format(
                kubeconfig=kubeconfig,
                qps=qps,
                burst=burst,
                leader_elect=str(leader_elect).lower(),
                lease=lease,
                renew=renew,
                retry=retry,
                lease_name=lease_name,
                namespace=namespace,
                scheduler_name=scheduler_name,
                profile_extra=profile_extra,  # more of the profile (pluginConfig), indented by two
            )
            + extra_config
        )
        self.client_ca = client_ca
        self.client_cert = client_cert
        self.extra_args = extra_args
        self.verbosity = verbosity

    @classmethod
    def on(
        cls,
        cp: LocalControlPlane,
        workdir: Path,
        *,
        namespace: str,
        lease_name: str,
        name: str,
        **kwargs: Any,
    ) -> BerthScheduler:
        """A ``berth run`` on control plane ``cp`` whose endpoints answer the admin certificate
        (``cp``'s RBAC authorizes it everywhere)."""
        return cls(
            workdir,
            cp.kubeconfig,
            name=name,
            namespace=namespace,
            lease_name=lease_name,
            client_ca=cp.ca_file,
            client_cert=(cp.client_cert, cp.client_key),
            **kwargs,
        )

    @property
    def base(self) -> str:
        """The HTTPS base URL."""
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout: float = READY_TIMEOUT) -> BerthScheduler:
        """Spawn it and wait for /livez (readiness may wait for leadership and informers)."""
        self.spawn(
            [
                sys.executable,
                "-m",
                "app.cli.main",
                "run",
                "--config",
                str(self.config),  # its clientConnection.kubeconfig: with --config kube ignores --kubeconfig
                "--secure-port",
                str(self.port),
                "--bind-address",
                "127.0.0.1",
                "-v",
                str(self.verbosity),
                *(("--client-ca-file", str(self.client_ca)) if self.client_ca else ()),
                *self.extra_args,
            ]
        )
        LIVE.append(self)
        self.wait_ready(f"{self.base}/livez", insecure_context(), timeout)
        return self

    def get(self, path: str) -> tuple[int, str]:
        """GET ``path`` with the client certificate: ``(status, body)``."""
        ctx = insecure_context(self.client_cert)
        try:
            with urllib.request.urlopen(f"{self.base}{path}", timeout=5, context=ctx) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def get_json(self, path: str) -> Any:
        """GET ``path`` and decode it."""
        status, body = self.get(path)
        assert status == 200, (status, body)
        return json.loads(body)

    def identity(self) -> str:
        """The leader-election identity of the latest start ("" before it logged one): what a Lease
        holding by this process names as ``holderIdentity``. Each start picks a new one."""
        found = _IDENTITY.findall(self.log.read_text(errors="replace")) if self.log.exists() else []
        return found[-1] if found else ""
