"""Run the shell blocks of berth's docs as a reader would, inside a private network namespace.

``unshare -rn python tests/docs/run_blocks.py REPORT.json [FILE.md ...]``

The docs use berth's default ports (8888, 8889, 10259) as a reader would; in a network namespace of their
own those are free whatever else runs on the machine, so the blocks run exactly as written. Inside it:

1. bring the loopback interface up;
2. start the test control plane with three kubelet-less Nodes (``hack/control-plane.sh up --nodes 3``,
   the cluster the docs tell the reader to start) and export what ``up`` prints (KUBECONFIG, PATH with the
   built kubectl, BERTH_CLIENT_CA/CERT/KEY), with this checkout's ``.venv/bin`` first on PATH (where
   ``make install`` links ``berth`` from);
3. for each file, in a fresh directory holding symlinks to the repository's top-level entries (so that
   ``examples/...`` and ``make`` work and the files a block writes land in the scratch directory), run its
   blocks in order (see :mod:`docs.blocks`), then stop its background servers and delete its pods;
4. write one JSON record per block to REPORT: where, mode, exit code, seconds and the output's tail.

Standard library only, plus :mod:`kube.controlplane`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs.blocks import REPO_ROOT, Block, doc_files, shell_blocks

from kube.controlplane import LocalControlPlane, default_bin_dir

NODES = 3
BLOCK_TIMEOUT = 240.0
"""Seconds a block may run (``make demo`` is the longest, well under that)."""
BACKGROUND_TIMEOUT = 60.0
"""Seconds a background server may take to answer its URL."""
OUTPUT_TAIL = 6000
"""Characters of each block's output kept in the report."""


def loopback_up() -> None:
    """Bring ``lo`` up in this (new) network namespace: SIOCGIFFLAGS, set IFF_UP, SIOCSIFFLAGS."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, siocgifflags, request)[:18])[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def answers(url: str) -> bool:
    """Whether anything answers HTTP(S) at ``url`` (any status; no certificate checks)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ssl.SSLError):
        return False


def scratch_dir(root: Path) -> Path:
    """A directory that looks like a checkout: symlinks to the repository's top-level entries."""
    work = Path(tempfile.mkdtemp(prefix="docs-", dir=root))
    for entry in REPO_ROOT.iterdir():
        if entry.name != ".git":
            (work / entry.name).symlink_to(entry)
    return work


def tail(text: str) -> str:
    """The end of a block's output, as much as the report keeps."""
    return text[-OUTPUT_TAIL:]


def record(block: Block, **fields: Any) -> dict[str, Any]:
    """One report entry."""
    return {"where": block.where, "mode": block.mode, "argument": block.argument, **fields}


def run_file(
    blocks: list[Block], env: dict[str, str], root: Path, cp: LocalControlPlane
) -> list[dict[str, Any]]:
    """Run one file's blocks in order in a fresh scratch directory; stop its servers and pods after."""
    work = scratch_dir(root)
    servers: list[tuple[Block, subprocess.Popen[bytes], Path]] = []
    results: list[dict[str, Any]] = []
    failed = False
    try:
        for block in blocks:
            if block.mode == "not-run":
                results.append(record(block, status="not-run"))
                continue
            if failed:
                results.append(record(block, status="skipped", output="an earlier block of this file failed"))
                continue
            started = time.monotonic()
            if block.mode == "background":
                log = work / f"background-{block.line}.log"
                with log.open("wb") as out:
                    proc = subprocess.Popen(
                        ["bash", "-euo", "pipefail", "-c", block.text],
                        cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                    )  # fmt: skip
                servers.append((block, proc, log))
                deadline = time.monotonic() + BACKGROUND_TIMEOUT
                while not answers(block.argument) and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                ok = proc.poll() is None and answers(block.argument)
                output = log.read_text(errors="replace")
                if not ok:
                    failed = True
                    output += f"\n[doc test] {block.argument} did not answer (exit code {proc.poll()})"
                results.append(
                    record(block, status="passed" if ok else "failed", code=proc.poll(),
                           seconds=round(time.monotonic() - started, 1), output=tail(output))
                )  # fmt: skip
                continue
            try:
                proc_run = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", block.text],
                    cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    timeout=BLOCK_TIMEOUT, check=False, start_new_session=True,
                )  # fmt: skip
                code, output = proc_run.returncode, proc_run.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as err:
                code, output = -1, (err.output or b"").decode(errors="replace") + "\n[doc test] timed out"
            failed = code != 0
            results.append(
                record(block, status="failed" if failed else "passed", code=code,
                       seconds=round(time.monotonic() - started, 1), output=tail(output))
            )  # fmt: skip
    finally:
        for block, proc, log in servers:
            stop(proc)
            server_log = log.read_text(errors="replace")
            for entry in results:
                if entry["where"] == block.where:
                    entry["server_log"] = tail(server_log)
        with contextlib.suppress(Exception):
            cp.request_json("DELETE", "/api/v1/namespaces/default/pods?gracePeriodSeconds=0")
        shutil.rmtree(work, ignore_errors=True)
    return results


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the block's whole process group; SIGKILL it if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main(argv: list[str]) -> int:
    """Run the blocks of the files named in ``argv[1:]`` (default: all docs); write the report to ``argv[0]``."""
    report = Path(argv[0])
    files = [Path(a).resolve() for a in argv[1:]] or doc_files()
    loopback_up()
    root = Path(tempfile.mkdtemp(prefix="berth-doc-blocks-"))
    cp = LocalControlPlane(default_bin_dir(), workdir=root / "cluster")
    results: list[dict[str, Any]] = []
    try:
        cp.start()
        cp.create_fake_nodes(NODES)
        env = {**os.environ, **cp.shell_env(), "BINDIR": str(root / "bin")}
        env["PATH"] = f"{REPO_ROOT / '.venv' / 'bin'}:{cp.bin_dir}:{os.environ.get('PATH', '')}"
        env.pop("VIRTUAL_ENV", None)
        for path in files:
            blocks = shell_blocks([path])
            if blocks:
                results.extend(run_file(blocks, env, root, cp))
    finally:
        cp.stop()
        shutil.rmtree(root, ignore_errors=True)
        report.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
