"""A real local Kubernetes control plane (etcd + kube-apiserver) for berth's tests.

One implementation, two users:

* the session-scoped ``control_plane`` pytest fixture (``tests/kube/fixtures.py``);
* ``hack/control-plane.sh up``, which runs ``python tests/kube/controlplane.py up``.

The binaries are built by ``hack/control-plane.sh build`` into
``${BERTH_CACHE:-~/.cache/berth}/k8s-<K8S_VERSION>/bin`` (versions come from ``hack/versions.env``).
Both processes listen on free loopback ports and keep all their state (PKI, etcd data, logs, kubeconfig)
in one temporary directory that is deleted on :meth:`LocalControlPlane.stop`.

The API server runs the way controller-runtime envtest and scheduler_perf run it: a self-made CA,
client-certificate auth with an admin in ``O=system:masters``, ``--authorization-mode=RBAC``, and the
``ServiceAccount`` and ``TaintNodesByCondition`` admission plugins disabled, because no controller-manager or
kubelet runs (no ``default`` ServiceAccount would ever appear, and new Nodes would keep the ``not-ready`` taint).

This module only uses the standard library (plus the ``openssl`` command), so it runs with any Python >= 3.11.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl")
PORT_ATTEMPTS = 3
#: Label on the Nodes :func:`create_fake_nodes` makes: no kubelet runs behind them, so a pod bound to one
#: stays ``Pending`` (nothing starts its containers); binding is all a scheduler needs to show.
NO_KUBELET_LABEL = "berth.local/no-kubelet"
FAKE_NODE_ZONES = ("zone-a", "zone-b", "zone-c")
#: What every fake Node offers (scheduler_perf's node template, as the benchmarks use).
FAKE_NODE_CAPACITY = {"cpu": "4", "memory": "32Gi", "pods": "110"}
BUILD_HINT = "run `hack/control-plane.sh build` (a cold build takes a while; later runs are a no-op)"


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (or a process died)."""


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """Parse ``hack/versions.env`` (plain ``KEY=VALUE`` lines, ``#`` comments)."""
    versions: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        versions[key.strip()] = value.strip().strip("\"'")
    return versions


def k8s_version() -> str:
    """The pinned Kubernetes version, e.g. ``v1.36.3``."""
    return read_versions()["K8S_VERSION"]


def default_bin_dir() -> Path:
    """Where ``hack/control-plane.sh build`` puts the binaries (``$BERTH_K8S_BIN_DIR`` overrides it)."""
    override = os.environ.get("BERTH_K8S_BIN_DIR")
    if override:
        return Path(override)
    cache = Path(os.environ.get("BERTH_CACHE") or Path.home() / ".cache" / "berth")
    return cache / f"k8s-{k8s_version()}" / "bin"


def missing_binaries(bin_dir: Path) -> list[str]:
    """Names of the required binaries that are not executable files in ``bin_dir``."""
    return [name for name in BINARIES if not os.access(bin_dir / name, os.X_OK)]


def kube_scheduler_write_config(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kube-scheduler ARGS --write-config-to OUT`` offline: the configuration it completes, written
    to ``out`` (read it when the return code is 0), and its error output when it refuses.

    Without ``--kubeconfig`` among ``args`` it gets ``--master`` (any address: the client is built
    before the file is written and never used); ``--secure-port=0`` keeps it from listening, as the
    default port may be taken on a shared machine."""
    master = (
        []
        if any(a == "--kubeconfig" or a.startswith("--kubeconfig=") for a in args)
        else ["--master=https://127.0.0.1:1"]
    )
    return subprocess.run(
        [
            str(default_bin_dir() / "kube-scheduler"),
            *args,
            *master,
            "--secure-port=0",
            f"--write-config-to={out}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held open together so they differ)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def _openssl(*args: str, cwd: Path) -> None:
    """Run one ``openssl`` command quietly, raising with its stderr on failure."""
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed:\n{proc.stderr}")


@dataclass(frozen=True)
class Pki:
    """Paths of the generated certificates and keys."""

    dir: Path
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public_key: Path
    sa_private_key: Path


def generate_pki(pki_dir: Path, days: int = 7) -> Pki:
    """Create a CA, a serving cert for 127.0.0.1/localhost, an admin client cert and an SA key pair."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError(
            "the `openssl` command is needed to generate the control plane's certificates"
        )
    pki_dir.mkdir(parents=True, exist_ok=True)
    d = str(days)
    leaf = (
        "basicConstraints=critical,CA:FALSE\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
    )
    (pki_dir / "serving.ext").write_text(
        leaf + "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        "subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1\n"
    )
    (pki_dir / "client.ext").write_text(
        leaf + "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
    )
    # CA: self-signed, valid for `days` days.
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", d, "-subj", "/CN=berth-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=pki_dir,
    )  # fmt: skip
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "serving.ext"),
        ("admin", "/O=system:masters/CN=berth-admin", "client.ext"),
    ):
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", subject,
            cwd=pki_dir,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", d, "-extfile", ext, "-out", f"{name}.crt",
            cwd=pki_dir,
        )  # fmt: skip
    # Service-account token signing key pair.
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki_dir)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki_dir)
    for key in pki_dir.glob("*.key"):
        key.chmod(0o600)
    return Pki(
        dir=pki_dir,
        ca_cert=pki_dir / "ca.crt",
        serving_cert=pki_dir / "apiserver.crt",
        serving_key=pki_dir / "apiserver.key",
        admin_cert=pki_dir / "admin.crt",
        admin_key=pki_dir / "admin.key",
        sa_public_key=pki_dir / "sa.pub",
        sa_private_key=pki_dir / "sa.key",
    )


def fake_node(name: str, zone: str) -> dict[str, object]:
    """A Ready Node object without a kubelet: capacity, zone and hostname labels, :data:`NO_KUBELET_LABEL`.

    The API server keeps a Node's ``status`` on create, so it is Ready at once; with the
    TaintNodesByCondition admission plugin off (see the module docstring) it gets no not-ready taint.
    """
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone,
                NO_KUBELET_LABEL: "true",
            },
        },
        "status": {
            "capacity": FAKE_NODE_CAPACITY,
            "allocatable": FAKE_NODE_CAPACITY,
            "conditions": [{"type": "Ready", "status": "True", "reason": "FakeNode"}],
        },
    }


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str = "admin") -> Path:
    """Write a kubeconfig (JSON is valid YAML) that points at ``server`` with a client certificate."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "berth", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "berth", "context": {"cluster": "berth", "user": user}}],
        "current-context": "berth",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


def _die_with_parent() -> None:
    """Child ``preexec_fn``: get SIGTERM if the Python parent dies (Linux only; best effort)."""
    with contextlib.suppress(Exception):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file (empty if it does not exist)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class _Proc:
    """A started child process and its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class LocalControlPlane:
    """etcd + kube-apiserver on loopback, with all state in ``workdir``.

    Use :meth:`start` / :meth:`stop` or the context manager. After :meth:`start`, ``server``,
    ``kubeconfig``, ``ca_file``, ``client_cert`` and ``client_key`` are set.
    """

    bin_dir: Path
    workdir: Path | None = None
    ready_timeout: float = 120.0
    grace_period: float = 10.0
    keep_workdir: bool = False
    extra_apiserver_args: Sequence[str] = ()
    #: An etcd data directory to start from (copied, never modified): a populated cluster reused across runs.
    etcd_seed: Path | None = None
    server: str = ""
    etcd_url: str = ""
    kubeconfig: Path = field(default_factory=Path)
    ca_file: Path = field(default_factory=Path)
    client_cert: Path = field(default_factory=Path)
    client_key: Path = field(default_factory=Path)
    _procs: list[_Proc] = field(default_factory=list, repr=False)
    _own_workdir: bool = field(default=False, repr=False)
    _apiserver_args: list[str] = field(default_factory=list, repr=False)

    # ---- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> LocalControlPlane:
        """Generate certs, start etcd and kube-apiserver, wait for ``/readyz``, write the kubeconfig."""
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise ControlPlaneError(
                f"control-plane binaries missing in {self.bin_dir}: {', '.join(missing)}; {BUILD_HINT}"
            )
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="berth-control-plane-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start()
                return self
            except ControlPlaneError as err:
                self._stop_processes()
                # The free ports are picked before the processes bind them: retry if another process won.
                if "address already in use" not in str(err) or attempt == PORT_ATTEMPTS:
                    self.stop()
                    raise
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _start(self) -> None:
        assert self.workdir is not None
        w = self.workdir
        shutil.rmtree(w / "etcd-data", ignore_errors=True)
        if self.etcd_seed is not None:
            shutil.copytree(self.etcd_seed, w / "etcd-data")
        pki = generate_pki(w / "pki")
        etcd_port, peer_port, api_port = free_ports(3)
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        self.server = f"https://127.0.0.1:{api_port}"
        self.ca_file, self.client_cert, self.client_key = pki.ca_cert, pki.admin_cert, pki.admin_key
        deadline = time.monotonic() + self.ready_timeout

        etcd = self._spawn(
            "etcd",
            [
                "--name=node0",
                f"--data-dir={w / 'etcd-data'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=node0={peer_url}",
                "--unsafe-no-fsync=true",  # test data only
                "--log-level=warn",
            ],
        )
        self._wait(etcd, f"{self.etcd_url}/health", None, deadline)

        self._apiserver_args = [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}",
            f"--cert-dir={w / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_public_key}",
            f"--service-account-signing-key-file={pki.sa_private_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--authorization-mode=RBAC",
            # No controller-manager or kubelet: no `default` ServiceAccount would ever be created, and
            # new Nodes would keep the not-ready taint forever (as scheduler_perf does).
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            *self.extra_apiserver_args,
        ]
        apiserver = self._spawn("kube-apiserver", self._apiserver_args)
        self._wait(apiserver, f"{self.server}/readyz", self._admin_context(), deadline)
        self.kubeconfig = write_kubeconfig(
            w / "admin.kubeconfig", self.server, pki.ca_cert, pki.admin_cert, pki.admin_key
        )

    def start_controller_manager(
        self, controllers: Sequence[str], ready_timeout: float = 60.0, extra_args: Sequence[str] = ()
    ) -> None:
        """Start kube-controller-manager with only ``controllers`` (e.g. the PV binder), as the admin,
        without serving (no port) and without leader election (plus ``extra_args``); wait until each
        controller started.

        Only the tests that need a controller start it (see ``tests/e2e/test_storage.py``), so the
        fixtures of every other test keep their startup time.
        """
        if not self._apiserver_args:
            raise ControlPlaneError("start_controller_manager() before start()")
        if any(p.name == "kube-controller-manager" and p.popen.poll() is None for p in self._procs):
            raise ControlPlaneError("kube-controller-manager is already running")
        proc = self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--secure-port=0",
                "--use-service-account-credentials=false",
                "-v=2",
                *extra_args,
            ],
        )
        deadline = time.monotonic() + ready_timeout
        pending = set(controllers)
        while pending:
            if proc.popen.poll() is not None:
                raise ControlPlaneError(
                    f"kube-controller-manager exited with {proc.popen.returncode}; last lines of {proc.log}:\n{_tail(proc.log)}"
                )
            text = proc.log.read_text(errors="replace")
            pending = {c for c in pending if f'"Controller starting..." controller="{c}"' not in text}
            if pending and time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"kube-controller-manager did not start {sorted(pending)} in {ready_timeout:.0f}s; "
                    f"last lines of {proc.log}:\n{_tail(proc.log)}"
                )
            time.sleep(0.25)

    @contextlib.contextmanager
    def controller_manager(self, controllers: Sequence[str]) -> Iterator[None]:
        """kube-controller-manager with only ``controllers`` while the block runs (a fixture's body)."""
        self.start_controller_manager(controllers)
        try:
            yield
        finally:
            self.stop_controller_manager()

    def stop_controller_manager(self) -> None:
        """Stop kube-controller-manager if it runs."""
        for proc in [p for p in self._procs if p.name == "kube-controller-manager"]:
            self._terminate(proc)
            self._procs.remove(proc)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (SIGTERM, then SIGKILL after the grace period); etcd keeps running
        and keeps the data, so :meth:`start_apiserver` brings the same cluster back."""
        for proc in [p for p in self._procs if p.name == "kube-apiserver"]:
            self._terminate(proc)
            self._procs.remove(proc)

    def start_apiserver(self) -> None:
        """Start kube-apiserver again with the arguments of the first start (same port, certificates
        and etcd), appending to its log, and wait for ``/readyz``: the kubeconfig stays valid.

        While it was down its port was free for the taking (another process's ``free_port()``, or an
        outgoing connection's ephemeral source port): if it is taken, retry until it is released
        or ``ready_timeout`` passes.
        """
        if not self._apiserver_args:
            raise ControlPlaneError("start_apiserver() before start()")
        if any(p.name == "kube-apiserver" and p.popen.poll() is None for p in self._procs):
            raise ControlPlaneError("kube-apiserver is already running")
        deadline = time.monotonic() + self.ready_timeout
        while True:
            apiserver = self._spawn("kube-apiserver", self._apiserver_args, append=True)
            try:
                self._wait(apiserver, f"{self.server}/readyz", self._admin_context(), deadline)
                return
            except ControlPlaneError as err:
                self._procs.remove(apiserver)
                self._terminate(apiserver)
                if "address already in use" not in str(err) or time.monotonic() > deadline:
                    raise
            time.sleep(1.0)

    @contextlib.contextmanager
    def frozen_apiserver(self) -> Iterator[None]:
        """kube-apiserver stopped with SIGSTOP inside the block, resumed with SIGCONT after it: its
        connections stay open and requests sent meanwhile are answered (or applied) only then."""
        (proc,) = [p for p in self._procs if p.name == "kube-apiserver" and p.popen.poll() is None]
        proc.popen.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            proc.popen.send_signal(signal.SIGCONT)

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop kube-apiserver, leave it down for ``downtime`` seconds, start it again (etcd untouched).

        Clients see connection errors while it is down and watches end; what a restart does to the
        API server's own state (a fresh watch cache, so old resourceVersions may be too old) is the point.
        """
        self.stop_apiserver()
        if downtime > 0:
            time.sleep(downtime)
        self.start_apiserver()

    def stop(self) -> None:
        """Terminate the processes (API server first), kill them after the grace period, delete the data."""
        self._stop_processes()
        if self.workdir is not None and self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_processes(self) -> None:
        for proc in reversed(self._procs):
            self._terminate(proc)
        self._procs.clear()

    def _terminate(self, proc: _Proc) -> None:
        """SIGTERM ``proc``, SIGKILL it if it outlives the grace period."""
        if proc.popen.poll() is None:
            proc.popen.terminate()
            try:
                proc.popen.wait(timeout=self.grace_period)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(timeout=self.grace_period)

    def __enter__(self) -> LocalControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---- queries -----------------------------------------------------------------------------------

    def dead_processes(self) -> list[str]:
        """Names (and exit codes) of child processes that have exited."""
        return [f"{p.name} (exit {p.popen.returncode})" for p in self._procs if p.popen.poll() is not None]

    def process_ids(self) -> dict[str, int]:
        """The running components' process ids by name (etcd, kube-apiserver, ...): for measuring them."""
        return {p.name: p.popen.pid for p in self._procs if p.popen.poll() is None}

    def log_file(self, name: str) -> Path:
        """The log file of ``etcd`` or ``kube-apiserver``."""
        assert self.workdir is not None
        return self.workdir / f"{name}.log"

    def env(self) -> dict[str, str]:
        """Environment for tools that talk to this control plane (``KUBECONFIG``)."""
        return {"KUBECONFIG": str(self.kubeconfig)}

    def shell_env(self) -> dict[str, str]:
        """What a shell needs to work with this control plane by hand: ``KUBECONFIG``; ``PATH`` with the
        built kubectl first (a system kubectl may be older than the API server); the CA that signed the
        admin client certificate (berth's ``--client-ca-file``) and that certificate and key, which
        authenticate as ``berth-admin`` in ``system:masters``, so berth's endpoints authorize them."""
        return {
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{self.bin_dir}:{os.environ.get('PATH', '')}",
            "BERTH_CLIENT_CA": str(self.ca_file),
            "BERTH_CLIENT_CERT": str(self.client_cert),
            "BERTH_CLIENT_KEY": str(self.client_key),
        }

    def create_fake_nodes(self, count: int) -> list[str]:
        """Create Ready Nodes ``node-1`` .. ``node-<count>``, spread over three zones and labelled
        :data:`NO_KUBELET_LABEL`; return their names. No kubelet runs behind them: a scheduler binds pods
        to them, and the pods then stay ``Pending``."""
        names = [f"node-{i}" for i in range(1, count + 1)]
        for index, name in enumerate(names):
            self.request_json("POST", "/api/v1/nodes", fake_node(name, FAKE_NODE_ZONES[index % 3]))
        return names

    def request_json(self, method: str, path: str, body: object | None = None) -> dict[str, object]:
        """One API request as the admin; the decoded answer. An HTTP error raises
        :class:`ControlPlaneError` with the API server's message."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.server}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._admin_context()) as resp:
                answer: dict[str, object] = json.loads(resp.read())
                return answer
        except urllib.error.HTTPError as err:
            raise ControlPlaneError(
                f"{method} {path}: HTTP {err.code}: {err.read()[:500].decode(errors='replace')}"
            ) from err

    # ---- helpers -----------------------------------------------------------------------------------

    def _admin_context(self) -> ssl.SSLContext:
        """TLS to the API server as the admin (trusting the generated CA)."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
        return ctx

    def _spawn(self, name: str, args: list[str], append: bool = False) -> _Proc:
        log = self.log_file(name)
        with log.open("ab" if append else "wb") as out:
            popen = subprocess.Popen(
                [str(self.bin_dir / name), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us only; we stop the children in order
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        proc = _Proc(name, popen, log)
        self._procs.append(proc)
        return proc

    def _wait(self, proc: _Proc, url: str, ctx: ssl.SSLContext | None, deadline: float) -> None:
        """Poll ``url`` until it answers 200, the process exits, or the deadline passes."""
        last = "no answer yet"
        while True:
            if proc.popen.poll() is not None:
                raise ControlPlaneError(
                    f"{proc.name} exited with {proc.popen.returncode} before it was ready; "
                    f"last lines of {proc.log}:\n{_tail(proc.log)}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code}: {err.read()[:500].decode(errors='replace')}"
            except (OSError, ssl.SSLError) as err:
                last = repr(err)
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{proc.name} not ready at {url} after {self.ready_timeout:.0f}s ({last}); "
                    f"last lines of {proc.log}:\n{_tail(proc.log)}"
                )
            time.sleep(0.25)


# ---- command line (hack/control-plane.sh up) -----------------------------------------------------------


def paste_lines(cp: LocalControlPlane, nodes: Sequence[str], env_file: Path) -> str:
    """What ``up`` prints for the user to paste into another shell: the variables of
    :meth:`LocalControlPlane.shell_env` (plus the repository's ``.venv/bin``, where ``berth`` is) as
    ``export`` lines, and, as comments, how to run ``berth run`` against the cluster and ask it why."""
    env = cp.shell_env()
    path = f"{cp.bin_dir}:{REPO_ROOT / '.venv' / 'bin'}"
    node_text = (
        f"{len(nodes)} nodes ({', '.join(nodes)}; no kubelet: bound pods stay Pending)"
        if nodes
        else "no nodes"
    )
    return "\n".join(
        [
            f"# berth's local cluster: API server {cp.server}, {node_text}.",
            f"# Paste these lines into another shell (or: . {env_file}):",
            f"export KUBECONFIG={env['KUBECONFIG']}",
            f'export PATH="{path}:$PATH"',
            f"export BERTH_CLIENT_CA={env['BERTH_CLIENT_CA']}",
            f"export BERTH_CLIENT_CERT={env['BERTH_CLIENT_CERT']}",
            f"export BERTH_CLIENT_KEY={env['BERTH_CLIENT_KEY']}",
            "# Then, from the repository, a scheduler for pods with schedulerName berth-scheduler:",
            '#   berth run --kubeconfig "$KUBECONFIG" --config examples/standalone-config.yaml \\',
            '#     --bind-address 127.0.0.1 --secure-port 10259 --client-ca-file "$BERTH_CLIENT_CA"',
            "# and why it placed (or could not place) pod NAME:",
            '#   curl -sk --cert "$BERTH_CLIENT_CERT" --key "$BERTH_CLIENT_KEY" \\',
            "#     https://127.0.0.1:10259/debug/pods/default/NAME",
            "",
        ]
    )


def _cmd_up(args: argparse.Namespace) -> int:
    """Start the control plane (with ``--nodes`` fake Nodes), print the lines to paste, and run until
    SIGINT/SIGTERM."""
    stop = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    workdir = Path(args.workdir) if args.workdir else None
    cp = LocalControlPlane(
        Path(args.bin_dir), workdir=workdir, ready_timeout=args.timeout, keep_workdir=args.keep
    )
    started = time.monotonic()
    try:
        cp.start()
        nodes = cp.create_fake_nodes(args.nodes)
    except ControlPlaneError as err:
        print(f"[control-plane] ERROR: {err}", file=sys.stderr)
        cp.stop()
        return 1
    assert cp.workdir is not None
    env_file = cp.workdir / "env.sh"
    lines = paste_lines(cp, nodes, env_file)
    env_file.write_text(lines)
    print(f"[control-plane] ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    print(f"[control-plane] logs: {cp.log_file('kube-apiserver')}  {cp.log_file('etcd')}", file=sys.stderr)
    print("[control-plane] Ctrl-C to stop and delete all data", file=sys.stderr)
    print(lines, flush=True)
    rc = 0
    try:
        while not stop:
            dead = cp.dead_processes()
            if dead:
                print(f"[control-plane] ERROR: {', '.join(dead)} died; see the logs above", file=sys.stderr)
                rc = 1
                break
            time.sleep(0.5)
    finally:
        print("[control-plane] stopping", file=sys.stderr)
        cp.stop()
    return rc


def _node_count(text: str) -> int:
    """``--nodes``: a whole number from 0 to 1000."""
    if not text.isdigit() or int(text) > 1000:
        raise argparse.ArgumentTypeError(f"--nodes wants a whole number from 0 to 1000, got {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``controlplane.py up [--bin-dir DIR] [--workdir DIR] [--keep] [--timeout S] [--nodes N]``."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__.splitlines()[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start etcd + kube-apiserver (and fake Nodes) and run until Ctrl-C")
    up.add_argument("--bin-dir", default=None, help="directory with the binaries (default: the build cache)")
    up.add_argument(
        "--workdir",
        default=None,
        help="state directory, kept on exit (default: a new temporary directory, deleted on exit)",
    )
    up.add_argument("--keep", action="store_true", help="keep the state directory on exit")
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness")
    up.add_argument(
        "--nodes",
        type=_node_count,
        default=0,
        help="create this many Ready Nodes without a kubelet (node-1..node-N, zones a/b/c; default 0)",
    )
    args = parser.parse_args(argv)
    if args.bin_dir is None:
        args.bin_dir = str(default_bin_dir())
    return _cmd_up(args)


if __name__ == "__main__":
    sys.exit(main())
