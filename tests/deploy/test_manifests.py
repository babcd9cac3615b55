"""The manifests under manifests/: they render, apply, fit together and configure what they run.

- Every directory (and the standalone base with the coordinated-leader-election component) applies
  to the real API server with ``kubectl apply -k DIR --dry-run=server``: schemas, defaulting,
  validation and admission all run, nothing is stored.
- The rendered objects fit together: every ServiceAccount, Role, ConfigMap and port a Deployment
  or binding names is in the render (or is one of kube's bootstrap roles); every container has
  probes on /healthz and /readyz and resource requests; the only cluster-specific value is the
  image name.
- The containers' arguments parse with berth's own parser, and every ConfigMap configuration
  loads both in the stock ``kube-scheduler --config F --write-config-to OUT`` (exit 0) and in
  ``berth run|serve --config F --write-config-to -``, with the Deployment's flags applied, and both
  agree on the leader-election Lease and the profile.
- A namespace overlay moves everything, RBAC subjects included, but the RoleBinding to kube's
  extension-apiserver-authentication-reader Role, which stays in kube-system.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy.manifests import (
    AUTHENTICATION_READER,
    COMPONENT,
    DIRECTORIES,
    MANIFESTS,
    container,
    documented_replacements,
    expand_env,
    find,
    flag_value,
    kubectl,
    of_kind,
    render,
    replace_flag,
    write_overlay,
)
from server.pki import CA

from app.cli.main import build_parser, main
from kube.controlplane import LocalControlPlane, kube_scheduler_write_config

NAMESPACE = "berth-system"
BOOTSTRAP_ROLES = {
    ("ClusterRole", "system:kube-scheduler"),
    ("ClusterRole", "system:volume-scheduler"),
    ("Role", "extension-apiserver-authentication-reader"),
}
"""Roles kube-apiserver creates at startup in every cluster; the manifests bind them, never define them."""

IMAGES = {
    "berth": re.compile(r"berth:\d+\.\d+\.\d+"),
    "kube-scheduler": re.compile(r"registry\.k8s\.io/kube-scheduler:v1\.36\.3"),
}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    """``kubectl kustomize`` of every directory."""
    return {d: render(MANIFESTS / d) for d in DIRECTORIES}


@pytest.fixture(scope="module")
def with_component(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An overlay: the standalone base with coordinated leader election (as the component's comment says)."""
    return write_overlay(tmp_path_factory.mktemp("cle"), MANIFESTS / "standalone", components=[COMPONENT])


# --- applied to the real API server -------------------------------------------------------------


@pytest.fixture(scope="module")
def manifest_namespace(control_plane: LocalControlPlane) -> str:
    """The manifests' namespace, created for real: a dry run creates nothing, so the namespaced objects
    of one dry-run apply would otherwise not find it."""
    with contextlib.suppress(AssertionError):  # it may exist already
        kubectl(
            "create",
            "namespace",
            NAMESPACE,
            kubeconfig=control_plane.kubeconfig,
            bin_dir=control_plane.bin_dir,
        )
    return NAMESPACE


@pytest.mark.kube
@pytest.mark.parametrize("directory", [*DIRECTORIES, "standalone+coordinated-leader-election"])
def test_applies_with_server_side_dry_run(
    control_plane: LocalControlPlane,
    manifest_namespace: str,
    with_component: Path,
    directory: str,
) -> None:
    path = with_component if directory.endswith("coordinated-leader-election") else MANIFESTS / directory
    docs = render(path)
    out = kubectl(
        "apply",
        "-k",
        str(path),
        "--dry-run=server",
        kubeconfig=control_plane.kubeconfig,
        bin_dir=control_plane.bin_dir,
    )
    lines = out.splitlines()
    assert len(lines) == len(docs), out
    for doc in docs:
        name = doc["metadata"]["name"]
        assert any(f"/{name} " in line and line.endswith("(server dry run)") for line in lines), (name, out)


# --- the rendered objects fit together ------------------------------------------------------------


def _pod_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for deployment in of_kind(docs, "Deployment"):
        yield deployment["metadata"]["name"], deployment["spec"]["template"]["spec"]


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_references_resolve_within_the_render(
    rendered: dict[str, list[dict[str, Any]]], directory: str
) -> None:
    docs = rendered[directory]
    names = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs}
    for d in docs:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            ns = d["metadata"].get("namespace")
            kube_system = (
                d["kind"] == "RoleBinding"
                and d["roleRef"]["name"] == "extension-apiserver-authentication-reader"
            )
            assert ns == ("kube-system" if kube_system else NAMESPACE), (d["kind"], d["metadata"])
        if d["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            ref = d["roleRef"]
            ns = d["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
            assert (ref["kind"], ns, ref["name"]) in names or (ref["kind"], ref["name"]) in BOOTSTRAP_ROLES, (
                ref
            )
            for s in d["subjects"]:
                if s["kind"] == "ServiceAccount":
                    assert ("ServiceAccount", s["namespace"], s["name"]) in names, s
    for name, spec in _pod_specs(docs):
        assert ("ServiceAccount", NAMESPACE, spec["serviceAccountName"]) in names, name
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", NAMESPACE, volume["configMap"]["name"]) in names, volume
        for c in spec["containers"]:
            ports = {p["name"] for p in c["ports"]}
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = c[probe]["httpGet"]
                assert (get["path"], get["scheme"], get["port"] in ports) == (path, "HTTPS", True), (
                    name,
                    c["name"],
                )
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), (name, c["name"])
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
    for service in of_kind(docs, "Service"):
        selected = [
            spec
            for name, spec in _pod_specs(docs)
            if service["spec"]["selector"].items()
            <= find(docs, "Deployment", name)["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(selected) == 1, service["metadata"]["name"]


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_no_cluster_specific_value_but_the_image(
    rendered: dict[str, list[dict[str, Any]]], directory: str
) -> None:
    text = yaml.safe_dump_all(rendered[directory])
    for _, spec in _pod_specs(rendered[directory]):
        for c in spec["containers"]:
            assert IMAGES[c["name"]].fullmatch(c["image"]), c["image"]
        assert "nodeName" not in spec and "nodeSelector" not in spec
    # Only loopback and the wildcard address: no cluster IPs, no cluster domain, no node names.
    for literal in re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", text):
        address = ipaddress.ip_address(literal)
        assert address.is_loopback or address.is_unspecified, literal
    assert "cluster.local" not in text and "clusterIP" not in text


def test_standalone_two_replicas_one_leader_and_a_disruption_budget(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    docs = rendered["standalone"]
    deployment = find(docs, "Deployment", "berth-scheduler")
    assert deployment["spec"]["replicas"] == 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    pdb = find(docs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    args = container(deployment, "berth")["args"]
    lease = flag_value(args, "--leader-elect-resource-name")
    assert flag_value(args, "--leader-elect") == "true"
    assert flag_value(args, "--leader-elect-resource-namespace") == "$(POD_NAMESPACE)"
    config = yaml.safe_load(find(docs, "ConfigMap")["data"]["config.yaml"])
    assert (
        config["leaderElection"]["leaderElect"] is True and config["leaderElection"]["resourceName"] == lease
    )
    role = find(docs, "Role")
    assert [r.get("resourceNames") for r in role["rules"]] == [None, [lease]]


def test_a_namespace_overlay_moves_everything_but_the_kube_system_binding_rbac_subjects_included(
    tmp_path: Path,
) -> None:
    """With the replacements the kustomization's comment gives, every subject follows the ServiceAccount."""
    standalone = MANIFESTS / "standalone"
    overlay = write_overlay(
        tmp_path,
        standalone,
        namespace="elsewhere",
        components=[COMPONENT],
        replacements=documented_replacements(standalone),
    )
    docs = render(overlay)
    for d in docs:
        if d["kind"] == "Namespace":
            assert d["metadata"]["name"] == "elsewhere"
        elif d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            kube_system = d["metadata"]["name"] == AUTHENTICATION_READER
            assert d["metadata"]["namespace"] == ("kube-system" if kube_system else "elsewhere"), d[
                "metadata"
            ]
        for s in d.get("subjects", []):
            assert s["namespace"] == "elsewhere", (d["metadata"]["name"], s)
    assert "CoordinatedLeaderElection=true" in str(container(find(docs, "Deployment"), "berth")["args"])


def test_a_bare_namespace_overlay_leaves_the_binding_in_kube_system_but_not_its_subject(
    tmp_path: Path,
) -> None:
    """Why the comment asks for the replacements: kustomize's namespace transformer skips the binding
    (its annotation), and its name-reference fixing updates a RoleBinding's ServiceAccount subject only
    when the account is in a namespace the binding already names."""
    docs = render(write_overlay(tmp_path, MANIFESTS / "standalone", namespace="elsewhere"))
    binding = find(docs, "RoleBinding", AUTHENTICATION_READER)
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "berth-scheduler", "namespace": NAMESPACE}
    ]
    assert find(docs, "ServiceAccount")["metadata"]["namespace"] == "elsewhere"


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_no_kustomize_internal_annotation_reaches_the_cluster(
    rendered: dict[str, list[dict[str, Any]]], directory: str
) -> None:
    for d in rendered[directory]:
        annotations = d["metadata"].get("annotations") or {}
        assert not [k for k in annotations if k.startswith("internal.config.kubernetes.io/")], d["metadata"]


# --- the containers' flags and configurations --------------------------------------------------------


def _berth_containers(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for d in of_kind(docs, "Deployment"):
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c["name"] == "berth":
                yield c


def _mounted(docs: list[dict[str, Any]], deployment: dict[str, Any], c: dict[str, Any], path: str) -> str:
    """The content of the ConfigMap key mounted at ``path`` in container ``c``."""
    directory, key = path.rsplit("/", 1)
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    for mount in c["volumeMounts"]:
        if mount["mountPath"] == directory and "configMap" in volumes[mount["name"]]:
            return str(find(docs, "ConfigMap", volumes[mount["name"]]["configMap"]["name"])["data"][key])
    raise AssertionError(f"{path} is not a mounted ConfigMap key of {c['name']}")


def _berth_config(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``berth ARGV --write-config-to -`` in process (the code ``python -m app.cli.main`` runs)."""
    capsys.readouterr()
    assert main([*argv, "--write-config-to", "-"]) == 0
    config: dict[str, Any] = yaml.safe_load(capsys.readouterr().out)
    return config


def _kube_scheduler_config(argv: list[str], out: Path) -> dict[str, Any]:
    """``kube-scheduler ARGV --write-config-to OUT``: exit 0 and the configuration it completed.

    (see :func:`kube.controlplane.kube_scheduler_write_config`)."""
    done = kube_scheduler_write_config(out, *argv)
    assert done.returncode == 0, done.stderr[-3000:]
    config: dict[str, Any] = yaml.safe_load(out.read_text())
    return config


def _same_essentials(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    for key in (
        "leaderElect",
        "resourceName",
        "resourceNamespace",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
    ):
        assert ours["leaderElection"][key] == theirs["leaderElection"][key], key
    assert [p["schedulerName"] for p in ours["profiles"]] == [p["schedulerName"] for p in theirs["profiles"]]
    assert (ours["percentageOfNodesToScore"] or 0) == (theirs.get("percentageOfNodesToScore") or 0)
    assert ours["podInitialBackoffSeconds"] == theirs["podInitialBackoffSeconds"]


def test_standalone_configuration_loads_in_berth_run_and_kube_scheduler(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = rendered["standalone"]
    deployment = find(docs, "Deployment")
    c = container(deployment, "berth")
    args = expand_env(c["args"], {"POD_NAMESPACE": "somewhere"})
    config = tmp_path / "config.yaml"
    config.write_text(_mounted(docs, deployment, c, flag_value(args, "--config")))
    ours = _berth_config(replace_flag(args, "--config", str(config)), capsys)
    assert ours["leaderElection"]["resourceNamespace"] == "somewhere"  # the flag overrides the file
    # kube-scheduler has the same leader-election flags; the file is the same.
    flags = [a for a in args[1:] if a.startswith("--leader-elect")]
    theirs = _kube_scheduler_config([f"--config={config}", *flags], tmp_path / "out.yaml")
    _same_essentials(ours, theirs)


def test_extender_configurations_load_in_kube_scheduler_and_berth_serve(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = rendered["extender"]
    deployment = find(docs, "Deployment")
    scheduler, berth = container(deployment, "kube-scheduler"), container(deployment, "berth")
    command = expand_env(scheduler["command"], {"POD_NAMESPACE": "somewhere"})
    assert command[0] == "kube-scheduler"
    ks_config = tmp_path / "kube-scheduler-config.yaml"
    ks_config.write_text(_mounted(docs, deployment, scheduler, flag_value(command, "--config")))
    theirs = _kube_scheduler_config(
        replace_flag(command[1:], "--config", str(ks_config)), tmp_path / "out.yaml"
    )
    assert theirs["leaderElection"]["resourceNamespace"] == "somewhere"
    (extender,) = theirs["extenders"]
    # kube-scheduler reaches berth's plain listener in the pod: loopback, berth's --port.
    assert (
        extender["urlPrefix"]
        == f"http://{flag_value(berth['args'], '--address')}:{flag_value(berth['args'], '--port')}"
    )
    assert extender["bindVerb"] == "bind" and extender["nodeCacheCapable"] is True

    berth_config = tmp_path / "berth-config.yaml"
    berth_config.write_text(_mounted(docs, deployment, berth, flag_value(berth["args"], "--config")))
    ours = _berth_config(replace_flag(berth["args"], "--config", str(berth_config)), capsys)
    assert [p["schedulerName"] for p in ours["profiles"]] == [p["schedulerName"] for p in theirs["profiles"]]
    # The same file loads in kube-scheduler too (berth's configuration is a KubeSchedulerConfiguration).
    _kube_scheduler_config([f"--config={berth_config}"], tmp_path / "berth-out.yaml")


def test_mtls_configuration_names_berths_service_and_certificates(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = rendered["extender-mtls"]
    scheduler_deployment = find(docs, "Deployment", "berth-extender-scheduler")
    berth_deployment = find(docs, "Deployment", "berth-extender")
    scheduler = container(scheduler_deployment, "kube-scheduler")
    assert [c["name"] for c in scheduler_deployment["spec"]["template"]["spec"]["containers"]] == [
        "kube-scheduler"
    ]
    text = _mounted(docs, scheduler_deployment, scheduler, flag_value(scheduler["command"], "--config"))
    ks = yaml.safe_load(text)
    (extender,) = ks["extenders"]
    service = find(docs, "Service", "berth-extender")
    berth = container(berth_deployment, "berth")
    (port,) = service["spec"]["ports"]
    assert extender["urlPrefix"] == f"https://{service['metadata']['name']}:{port['port']}"
    assert int(flag_value(berth["args"], "--secure-port")) == port["port"]
    assert flag_value(berth["args"], "--port") == "0"  # no unauthenticated listener
    # The certificate files are in the Secret volumes the Deployments mount.
    mounts = {m["mountPath"]: m["name"] for m in scheduler["volumeMounts"]}
    for tls_key in ("certFile", "keyFile", "caFile"):
        directory = extender["tlsConfig"][tls_key].rsplit("/", 1)[0]
        assert directory in mounts, extender["tlsConfig"][tls_key]
    berth_mounts = {m["mountPath"] for m in berth["volumeMounts"]}
    for flag in ("--tls-cert-file", "--tls-private-key-file", "--client-ca-file"):
        assert flag_value(berth["args"], flag).rsplit("/", 1)[0] in berth_mounts, flag
    # kube-scheduler opens the certificate files while it builds the extender: real files stand in.
    ca = CA.create(tmp_path, "ca")
    cert, key = ca.issue(tmp_path, "berth-kube-scheduler")
    for field, real in (("certFile", cert), ("keyFile", key), ("caFile", ca.cert_file)):
        text = text.replace(extender["tlsConfig"][field], str(real))
    config = tmp_path / "kube-scheduler-config.yaml"
    config.write_text(text)
    command = expand_env(scheduler["command"], {"POD_NAMESPACE": "somewhere"})
    theirs = _kube_scheduler_config(replace_flag(command[1:], "--config", str(config)), tmp_path / "out.yaml")
    assert theirs["extenders"][0]["tlsConfig"]["certFile"] == str(cert)
    berth_config = tmp_path / "berth-config.yaml"
    berth_config.write_text(_mounted(docs, berth_deployment, berth, flag_value(berth["args"], "--config")))
    ours = _berth_config(["serve", f"--config={berth_config}"], capsys)
    assert [p["schedulerName"] for p in ours["profiles"]] == [p["schedulerName"] for p in theirs["profiles"]]


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_berth_containers_arguments_parse(rendered: dict[str, list[dict[str, Any]]], directory: str) -> None:
    for c in _berth_containers(rendered[directory]):
        args = build_parser().parse_args(expand_env(c["args"], {"POD_NAMESPACE": NAMESPACE}))
        assert args.command in ("run", "serve")
        assert args.config.startswith("/etc/berth/")
        exposed = {p["containerPort"] for p in c["ports"]}
        assert args.secure_port in exposed and args.bind_address == "0.0.0.0"


def test_standalone_overlay_arguments_parse_with_the_feature_gate(with_component: Path) -> None:
    docs = render(with_component)
    args = build_parser().parse_args(container(find(docs, "Deployment"), "berth")["args"])
    assert args.feature_gates == ["CoordinatedLeaderElection=true"]  # repeatable, as kube's
    role = find(docs, "Role", "berth-scheduler-lease-candidate")
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leasecandidates"],
            "verbs": ["list", "watch", "create", "update"],
        }
    ]
