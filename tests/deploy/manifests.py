"""The deployment manifests as the tests see them: rendered by kubectl's built-in kustomize, applied
with the test control plane's kubectl, and turned into the files a process outside a cluster needs
(the ConfigMap's configuration, the Deployment's arguments, a ServiceAccount-token kubeconfig).

Everything goes through the ``kubectl`` v1.36.3 that ``hack/control-plane.sh build`` made, so what
is tested is what ``kubectl apply -k manifests/...`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from kube.controlplane import REPO_ROOT, default_bin_dir

MANIFESTS = REPO_ROOT / "manifests"
DIRECTORIES = ("standalone", "extender", "extender-mtls")
"""Every directory a user applies with ``kubectl apply -k`` (the coordinated-leader-election component is
applied through an overlay)."""

COMPONENT = MANIFESTS / "standalone" / "coordinated-leader-election"
AUTHENTICATION_READER = "berth-scheduler-authentication-reader"
"""The standalone manifests' RoleBinding in kube-system (``rbac-kube-system.yaml``)."""
KUBECTL_TIMEOUT = 60.0


class KubectlError(AssertionError):
    """kubectl exited non-zero (the message has its output)."""


def kubectl(*args: str, kubeconfig: Path | None = None, bin_dir: Path | None = None) -> str:
    """Run kubectl and return its stdout; raise :class:`KubectlError` with stderr when it fails."""
    binary = (bin_dir or default_bin_dir()) / "kubectl"
    argv = [str(binary), *args, *(("--kubeconfig", str(kubeconfig)) if kubeconfig else ())]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT, check=False)
    if done.returncode != 0:
        raise KubectlError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}{done.stdout}")
    return done.stdout


def render(directory: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize DIRECTORY``: the objects ``kubectl apply -k`` would send."""
    return [doc for doc in yaml.safe_load_all(kubectl("kustomize", str(directory))) if doc]


def documented_replacements(directory: Path) -> list[dict[str, Any]]:
    """The ``replacements:`` that the comment of ``directory``'s kustomization.yaml tells an overlay
    to add (the indented YAML block after ``#   replacements:``), so that the tests use what it says."""
    lines = (directory / "kustomization.yaml").read_text().splitlines()
    start = lines.index("#   replacements:")
    block = []
    for line in lines[start:]:
        if not line.startswith("#   "):
            break
        block.append(line[len("#   ") :])
    found: list[dict[str, Any]] = yaml.safe_load("\n".join(block))["replacements"]
    return found


def write_overlay(
    where: Path,
    base: Path,
    *,
    namespace: str | None = None,
    name_suffix: str | None = None,
    components: Sequence[Path] = (),
    replacements: Sequence[dict[str, Any]] = (),
) -> Path:
    """A kustomization in ``where`` over ``base``, the way a user customizes the manifests.

    kustomize accepts only relative paths to bases and components, so they are written relative to
    ``where``.
    """
    where.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base, where)],
    }
    if namespace:
        doc["namespace"] = namespace
    if name_suffix:
        doc["nameSuffix"] = name_suffix
    if components:
        doc["components"] = [os.path.relpath(c, where) for c in components]
    if replacements:
        doc["replacements"] = list(replacements)
    # As JSON (which is YAML): PyYAML leaves a string such as "-12e45" unquoted, as YAML 1.1 reads
    # it as a string, and kustomize, reading YAML 1.2, then sees a number.
    (where / "kustomization.yaml").write_text(json.dumps(doc, indent=2))
    return where


def find(docs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one object of ``kind`` (named ``name`` when given); fails when there is none or several."""
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (
        f"expected one {kind} {name or ''}, found {[d['metadata']['name'] for d in found]}"
    )
    return found[0]


def of_kind(docs: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Every object of ``kind``."""
    return [d for d in docs if d["kind"] == kind]


def container(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    """The container ``name`` of a Deployment's pod template."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    found = [c for c in containers if c["name"] == name]
    assert len(found) == 1, f"no container {name} in {[c['name'] for c in containers]}"
    return found[0]


def expand_env(args: Sequence[str], env: dict[str, str]) -> list[str]:
    """The kubelet's ``$(VAR)`` expansion of container arguments."""
    out = []
    for arg in args:
        for key, value in env.items():
            arg = arg.replace(f"$({key})", value)
        out.append(arg)
    return out


def replace_flag(args: Sequence[str], flag: str, value: str) -> list[str]:
    """``args`` with ``--flag=...`` set to ``value`` (the flag must be there, in ``=`` form)."""
    prefix = f"{flag}="
    assert any(a.startswith(prefix) for a in args), f"{flag} not in {list(args)}"
    return [f"{prefix}{value}" if a.startswith(prefix) else a for a in args]


def flag_value(args: Sequence[str], flag: str) -> str:
    """The value of ``--flag=VALUE`` in ``args``."""
    prefix = f"{flag}="
    values = [a[len(prefix) :] for a in args if a.startswith(prefix)]
    assert len(values) == 1, f"{flag} given {len(values)} times in {list(args)}"
    return values[0]


def config_map_file(docs: Iterable[dict[str, Any]], mount_path: str, out_dir: Path) -> Path:
    """Write the ConfigMap key that a container sees at ``mount_path`` (``/etc/berth/config.yaml``) to
    ``out_dir`` and return the file: the volume, its ConfigMap and the key are looked up as the
    kubelet would (mountPath + key)."""
    docs = list(docs)
    directory, key = mount_path.rsplit("/", 1)
    for deployment in of_kind(docs, "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec["containers"]:
            for mount in c.get("volumeMounts", []):
                if mount["mountPath"].rstrip("/") != directory:
                    continue
                source = volumes[mount["name"]].get("configMap")
                if source is None:
                    continue
                data = find(docs, "ConfigMap", source["name"])["data"]
                path = out_dir / key
                path.write_text(data[key])
                return path
    raise AssertionError(f"no ConfigMap volume is mounted where {mount_path} would be")


def token_kubeconfig(path: Path, server: str, ca_file: Path, token: str, user: str) -> Path:
    """A kubeconfig that authenticates with a bearer ``token`` (what the in-cluster config amounts to)."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "test", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
                ],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
                "current-context": "test",
            }
        )
    )
    path.chmod(0o600)
    return path
