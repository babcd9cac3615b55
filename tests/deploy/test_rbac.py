"""The manifests' RBAC is sufficient and minimal, on the real control plane.

- Sufficient: ``kubectl apply -k`` of the standalone manifests (in a namespace and with names of this
  run's own, through an overlay with the replacements the kustomization's comment asks for), then
  ``berth run`` with the Deployment's arguments, the ConfigMap's configuration and a TokenRequest token
  of the manifests' ServiceAccount: it elects itself, syncs its informers, binds a pod and records its
  Scheduled event, its secure port reviews a bearer token, and it read the cluster's client CA (the
  kube-system binding), so a client certificate authenticates.
- Minimal: every verb a rule grants is a request berth makes (the capability table in
  ``deploy/capabilities.py``); with any one rule removed (a ServiceAccount bound to the same roles minus
  that rule) exactly the capabilities only that rule grants are refused (403) and all others still
  work. For the bind and events rules, ``berth run`` itself is shown failing.
- The extender's ClusterRole (``berth serve`` with a cluster connection) gets the same table and
  matrix; the coordinated-leader-election component's Role the same table.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy import accounts
from deploy.berthrun import ManifestScheduler
from deploy.capabilities import (
    BIND,
    COORDINATED,
    DENIED,
    EXTENDER,
    LEASE_NAME,
    STANDALONE,
    STANDALONE_NOT_GRANTED,
    Capability,
    Rule,
    lost_without,
    rules_of,
)
from deploy.manifests import (
    COMPONENT,
    MANIFESTS,
    documented_replacements,
    find,
    kubectl,
    of_kind,
    render,
    write_overlay,
)
from e2e.cluster import Cluster, two_node_cluster
from kubernetes import client
from server import rbac

from app.cli.serving import AUTHENTICATION_CONFIGMAP
from app.kube.client import KubeClient
from kube.controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

# The rules as written in the files (for test ids; the tests render the manifests themselves).
STANDALONE_RULES = rules_of(
    d
    for d in yaml.safe_load_all((MANIFESTS / "standalone" / "rbac.yaml").read_text())
    if d["kind"].endswith("Role")
)
COORDINATED_RULES = rules_of(
    d for d in yaml.safe_load_all((COMPONENT / "rbac.yaml").read_text()) if d["kind"] == "Role"
)
EXTENDER_RULES = rules_of(
    d
    for d in yaml.safe_load_all((MANIFESTS / "extender" / "rbac-berth.yaml").read_text())
    if d["kind"] == "ClusterRole"
)


@dataclass
class Deployed:
    """The standalone manifests applied under this run's namespace and name suffix."""

    control_plane: LocalControlPlane
    admin: KubeClient
    namespace: str
    docs: list[dict[str, Any]]
    workdir: Path
    service_account: str
    token: str
    kubeconfig: Path
    client: KubeClient
    identities: dict[str, Path] = field(default_factory=dict)

    @property
    def rules(self) -> list[Rule]:
        """The applied Role's and ClusterRole's rules."""
        return rules_of([*of_kind(self.docs, "ClusterRole"), *of_kind(self.docs, "Role")])

    @property
    def scheduler_name(self) -> str:
        """The profile's schedulerName in the ConfigMap."""
        config = yaml.safe_load(find(self.docs, "ConfigMap")["data"]["config.yaml"])
        return str(config["profiles"][0]["schedulerName"])

    def identity_without(self, rule: Rule) -> tuple[Path, KubeClient]:
        """A ServiceAccount with the manifests' ClusterRole and Role minus ``rule`` (made once per rule):
        its kubeconfig and a client."""
        name = f"without-{rule.role_kind.lower()}-{rule.index}"
        if name not in self.identities:
            cluster_rules = [r.rule for r in self.rules if r.role_kind == "ClusterRole" and r != rule]
            namespace_rules = [r.rule for r in self.rules if r.role_kind == "Role" and r != rule]
            accounts.grant(self.admin, self.namespace, name, cluster_rules, namespace_rules)
            bearer = rbac.token(self.admin, self.namespace, name)
            self.identities[name], kc = accounts.client_for(self.control_plane, self.workdir, name, bearer)
            return self.identities[name], kc
        return self.identities[name], KubeClient.from_config(str(self.identities[name]))


@pytest.fixture(scope="module")
def deployed(
    control_plane: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    """``kubectl apply -k`` of an overlay of manifests/standalone (``namespace:`` and ``nameSuffix:`` of
    this run, so that nothing collides), and a token of its ServiceAccount."""
    workdir = tmp_path_factory.mktemp("rbac")
    tag = uuid.uuid4().hex[:6]
    namespace = f"berth-rbac-{tag}"
    standalone = MANIFESTS / "standalone"
    overlay = write_overlay(
        workdir / "overlay",
        standalone,
        namespace=namespace,
        name_suffix=f"-{tag}",
        replacements=documented_replacements(standalone),
    )
    kubectl("apply", "-k", str(overlay), kubeconfig=control_plane.kubeconfig, bin_dir=control_plane.bin_dir)
    docs = render(overlay)
    sa = find(docs, "ServiceAccount")["metadata"]["name"]
    with KubeClient.from_config(str(control_plane.kubeconfig)) as admin:
        # The Lease exists, released, as after an earlier leader stepped down: berth PUTs only Leases it
        # has read, and a PUT of a missing Lease would be authorized as a create.
        rbac.create(
            admin,
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            {"metadata": {"name": LEASE_NAME}, "spec": {"leaseDurationSeconds": 15}},
        )
        bearer = rbac.token(admin, namespace, sa)
        path, kc = accounts.client_for(control_plane, workdir, sa, bearer)
        # berth reads the client CA once at startup: the kube-system binding must be in force by then.
        accounts.wait_readable(kc, AUTHENTICATION_CONFIGMAP)
        try:
            yield Deployed(control_plane, admin, namespace, docs, workdir, sa, bearer, path, kc)
        finally:
            kc.close()


@pytest.fixture
def cluster(kube_client: client.ApiClient, deployed: Deployed) -> Iterator[Cluster]:
    """Two 4-cpu nodes; pods in the manifests' namespace."""
    with two_node_cluster(kube_client, deployed.namespace) as c:
        yield c


def _ids(rules: Sequence[Rule]) -> list[str]:
    return [r.label for r in rules]


# --- the table: every grant is a capability, every capability is granted ---------------------------


@pytest.mark.parametrize(
    ("rules", "caps"),
    [(STANDALONE_RULES, STANDALONE), (EXTENDER_RULES, EXTENDER), (COORDINATED_RULES, COORDINATED)],
    ids=["standalone", "extender", "coordinated-leader-election"],
)
def test_every_verb_granted_is_a_request_berth_makes_and_every_request_is_granted(
    rules: list[Rule], caps: list[Capability]
) -> None:
    for rule in rules:
        assert "*" not in str(rule.rule), f"{rule.label}: no wildcards"
        for group, resource, verb in rule.grants_triples():
            users = [c for c in caps if (c.group, c.resource, c.verb) == (group, resource, verb)]
            assert users, f"{rule.label} grants {verb} {group}/{resource}, which berth never requests"
    for cap in caps:
        assert any(r.grants(cap) for r in rules), f"no rule grants: {cap}"
    for rule in rules:
        assert lost_without(rule, rules, caps), f"{rule.label} is redundant: other rules grant all it grants"


# --- the manifests' ServiceAccount: everything berth does, nothing else ----------------------------


def test_the_service_account_may_make_every_request_of_berth_and_no_other(deployed: Deployed) -> None:
    got = accounts.settle(deployed.client, deployed.namespace, STANDALONE)
    assert all(status not in DENIED for status, _ in got.values())
    for cap in STANDALONE_NOT_GRANTED:
        status, message = cap.send(deployed.client, deployed.namespace)
        assert status == 403, f"{cap}: {status} {message}"


# --- one rule removed: exactly its capabilities fail -----------------------------------------------


def _check_without(deployed: Deployed, rule: Rule, rules: Sequence[Rule], caps: Sequence[Capability]) -> None:
    lost = lost_without(rule, rules, caps)
    kept = [c for c in caps if c not in lost]
    _, kc = deployed.identity_without(rule)
    with kc:
        accounts.settle(kc, deployed.namespace, kept)  # the other rules are in force ...
        for cap in lost:  # ... and this one's capabilities are refused, by RBAC
            status, message = cap.send(kc, deployed.namespace)
            assert status == 403, f"{cap}: {status} {message}"
            assert f'cannot {cap.verb} resource "{cap.resource}"' in message, message


@pytest.mark.parametrize("index", range(len(STANDALONE_RULES)), ids=_ids(STANDALONE_RULES))
def test_standalone_without_one_rule_loses_exactly_its_capabilities(deployed: Deployed, index: int) -> None:
    rules = deployed.rules
    # The rendered rules are the file's, in the same order (only the role names carry the suffix).
    assert [r.rule for r in rules] == [r.rule for r in STANDALONE_RULES]
    _check_without(deployed, rules[index], rules, STANDALONE)


@pytest.mark.parametrize("index", range(len(EXTENDER_RULES)), ids=_ids(EXTENDER_RULES))
def test_extender_without_one_rule_loses_exactly_its_capabilities(deployed: Deployed, index: int) -> None:
    # The extender's ClusterRole alone (berth serve needs no Lease); only its requests are checked.
    rule = EXTENDER_RULES[index]
    lost = lost_without(rule, EXTENDER_RULES, EXTENDER)
    kept = [c for c in EXTENDER if c not in lost]
    name = f"extender-without-{index}"
    accounts.grant(
        deployed.admin, deployed.namespace, name, [r.rule for r in EXTENDER_RULES if r != rule], []
    )
    bearer = rbac.token(deployed.admin, deployed.namespace, name)
    _, kc = accounts.client_for(deployed.control_plane, deployed.workdir, name, bearer)
    with kc:
        accounts.settle(kc, deployed.namespace, kept)
        for cap in lost:
            status, message = cap.send(kc, deployed.namespace)
            assert status == 403, f"{cap}: {status} {message}"


# --- berth run itself ------------------------------------------------------------------------------


def test_berth_run_with_the_manifests_schedules_a_pod_end_to_end(
    deployed: Deployed, cluster: Cluster, tmp_path: Path
) -> None:
    berth = ManifestScheduler(
        deployed.docs, deployed.namespace, deployed.kubeconfig, tmp_path, "berth-full"
    ).start()
    try:
        pod = cluster.create_pod("full", cpu="1", scheduler_name=deployed.scheduler_name)
        assert cluster.wait_bound(pod) in cluster.nodes
        message = cluster.wait_event(pod, "Scheduled", "Successfully assigned")
        assert message.startswith(f"Successfully assigned {deployed.namespace}/{pod} to ")
        status, body = berth.get("/readyz?verbose")
        assert status == 200 and "[+]leaderElection ok" in body and "[+]sched-handler-sync ok" in body
        # A bearer token on the secure port: berth's TokenReview authenticates it, its SubjectAccessReview
        # refuses /metrics to this ServiceAccount (no nonResourceURLs rule): 403 naming the user.
        status, body = berth.get("/metrics", bearer=deployed.token)
        user = f"system:serviceaccount:{deployed.namespace}:{deployed.service_account}"
        assert status == 403, body
        assert json.loads(body)["message"] == f'forbidden: User "{user}" cannot get path "/metrics"'
        # The client CA came from kube-system/extension-apiserver-authentication (the manifests' binding
        # there): the admin's client certificate authenticates, and system:masters may read /configz.
        cp = deployed.control_plane
        status, body = berth.get("/configz", cert=(cp.client_cert, cp.client_key))
        assert status == 200, body
        assert "Unable to look up client-ca-file" not in berth.log.read_text(errors="replace")
    finally:
        berth.stop()


@contextlib.contextmanager
def _berth_without(
    deployed: Deployed, cap: Capability, workdir: Path, name: str
) -> Iterator[ManifestScheduler]:
    """``berth run`` as a ServiceAccount whose roles lack the one rule that grants ``cap``."""
    (rule,) = [r for r in deployed.rules if r.grants(cap)]
    kubeconfig, kc = deployed.identity_without(rule)
    kc.close()
    berth = ManifestScheduler(deployed.docs, deployed.namespace, kubeconfig, workdir, name).start()
    try:
        yield berth
    finally:
        berth.stop()


def test_without_the_binding_rule_berth_run_cannot_bind(
    deployed: Deployed, cluster: Cluster, tmp_path: Path
) -> None:
    with _berth_without(deployed, BIND, tmp_path, "berth-no-binding"):
        pod = cluster.create_pod("no-binding", cpu="1", scheduler_name=deployed.scheduler_name)
        message = cluster.wait_event(pod, "FailedScheduling", 'cannot create resource "pods/binding"')
        assert "forbidden" in message
        assert cluster.read_pod(pod).spec.node_name is None


def test_without_the_events_rule_berth_run_cannot_record_events(
    deployed: Deployed, cluster: Cluster, tmp_path: Path
) -> None:
    create_event = next(c for c in STANDALONE if c.resource == "events" and c.verb == "create")
    with _berth_without(deployed, create_event, tmp_path, "berth-no-events") as berth:
        pod = cluster.create_pod("no-events", cpu="1", scheduler_name=deployed.scheduler_name)
        assert cluster.wait_bound(pod) in cluster.nodes  # scheduling itself is unaffected ...
        line = berth.wait_log("Server rejected event", f'\\"name\\":\\"{pod}\\"')  # ... its event is refused
        # The text log quotes the API server's message: the events rule is what is missing.
        assert 'cannot create resource \\"events\\" in API group \\"events.k8s.io\\"' in line, line
        assert [reason for reason, _ in cluster.events(pod)] == []
