"""What berth does with the API server, one request per capability, and RBAC's matching of rules to them.

Each :class:`Capability` names what berth loses without it ("DefaultBinder: bind a pod") and makes
the request berth makes for it — same method, path, query and content type, taken from berth's own
modules where they are public (the informers' collections come from ``app.kube.informer``, so a kind
berth starts watching shows up here and must be granted). Requests that write are sent with
``dryRun=All`` or name an object that does not exist: authorization is decided before either matters,
so the answer is 403 exactly when RBAC refuses, and nothing in the cluster changes however often the
table runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from app.kube.client import KubeClient, KubeError
from app.kube.dra import DRA_RESOURCES
from app.kube.handlers import OBJECT_RESOURCES
from app.kube.informer import NODES, PODS, ResourceType
from app.kube.leasecandidate import LEASE_CANDIDATES_API
from app.server.authn import TOKEN_REVIEW_PATH
from app.server.authz import SAR_PATH

LEASE_NAME = "berth-scheduler"
"""The Lease of the standalone manifests (``--leader-elect-resource-name``)."""

MISSING = "berth-rbac-no-such-object"
"""A name no object has: writes to it are authorized, then answered 404."""

_STRATEGIC = "application/strategic-merge-patch+json"
_DRY_RUN = {"dryRun": "All"}
DENIED = (401, 403)

Request = Callable[[KubeClient, str], tuple[int, str]]
"""Send the request as the client's identity, in the berth namespace given; ``(status, message)``."""


@dataclass(frozen=True)
class Capability:
    """One thing berth does, and the RBAC attributes the API server authorizes it with."""

    name: str
    group: str
    resource: str  # "pods", or "pods/binding" for a subresource
    verb: str
    send: Request
    resource_name: str = ""

    def __str__(self) -> str:
        return self.name


def _answer(status: int, data: bytes) -> tuple[int, str]:
    return status, "" if 200 <= status < 300 else KubeError.from_response(status, data).message


def _call(
    method: str,
    path: str,
    body: object | None = None,
    params: dict[str, str] | None = None,
    content_type: str | None = None,
) -> Request:
    """A request whose path may contain ``{ns}`` (the berth namespace)."""

    def send(client: KubeClient, namespace: str) -> tuple[int, str]:
        url = path.format(ns=quote(namespace, safe=""))
        return _answer(*client.request(method, url, body=body, params=params, content_type=content_type))

    return send


def _group(rtype: ResourceType) -> str:
    return rtype.api_version.rpartition("/")[0]


def _list(rtype: ResourceType) -> Request:
    """The reflector's first page."""
    params = {"limit": "500"}
    if rtype.field_selector:
        params["fieldSelector"] = rtype.field_selector
    return _call("GET", rtype.path, params=params)


def _watch(rtype: ResourceType) -> Request:
    """The reflector's watch; closed as soon as the API server has accepted it."""

    def send(client: KubeClient, namespace: str) -> tuple[int, str]:
        params = {"allowWatchBookmarks": "true", "timeoutSeconds": "1"}
        if rtype.field_selector:
            params["fieldSelector"] = rtype.field_selector
        try:
            client.watch(rtype.path, params).close()
        except KubeError as err:
            return err.status, err.message
        return 200, ""

    return send


def informer_capabilities(kinds: Iterable[ResourceType]) -> list[Capability]:
    """List and watch of every kind an informer of berth's keeps."""
    out = []
    for rtype in kinds:
        group = _group(rtype)
        out.append(Capability(f"{rtype.kind} informer: list", group, rtype.resource, "list", _list(rtype)))
        out.append(Capability(f"{rtype.kind} informer: watch", group, rtype.resource, "watch", _watch(rtype)))
    return out


INFORMER_KINDS: tuple[ResourceType, ...] = (NODES, PODS, *OBJECT_RESOURCES, *DRA_RESOURCES)
"""What both faces watch: nodes, pods and the kinds the plugins read (DynamicResources' too)."""

_POD = "/api/v1/namespaces/{ns}/pods/" + MISSING
_BINDING = {
    "apiVersion": "v1",
    "kind": "Binding",
    "metadata": {"name": MISSING, "uid": "00000000-0000-0000-0000-000000000000"},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node"},
}
_EVENTS = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
_CLAIM = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/" + MISSING
_CLAIM_BODY = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": MISSING},
    "spec": {"devices": {"requests": []}},
}
_PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": MISSING},
    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp"}},
}
_PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": MISSING},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}
_LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"


def _event_body() -> dict[str, Any]:
    """A Scheduled event as berth's recorder writes it (events.k8s.io/v1)."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{MISSING}.1", "namespace": "placeholder"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "berth-scheduler",
        "reportingInstance": "berth-scheduler-rbac-test",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "Successfully assigned",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": MISSING},
    }


def _create_event(client: KubeClient, namespace: str) -> tuple[int, str]:
    body = _event_body()
    body["metadata"]["namespace"] = namespace
    body["regarding"]["namespace"] = namespace
    path = _EVENTS.format(ns=quote(namespace, safe=""))
    return _answer(*client.request("POST", path, body=body, params=_DRY_RUN))


def _lease(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": "rbac-test", "leaseDurationSeconds": 15},
    }


_SAR = {
    "apiVersion": "authorization.k8s.io/v1",
    "kind": "SubjectAccessReview",
    "spec": {"user": "someone", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
}
_TOKEN_REVIEW = {
    "apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenReview",
    "spec": {"token": "not-a-token"},
}

# --- the capabilities of each face --------------------------------------------------------------

READ_POD = Capability(
    "binding conflicts: read the pod back (deleted, re-created or already bound)",
    "",
    "pods",
    "get",
    _call("GET", _POD),
)
BIND = Capability(
    "bind a pod (pods/binding, DefaultBinder and the extender's /bind)",
    "",
    "pods/binding",
    "create",
    _call("POST", _POD + "/binding", _BINDING, _DRY_RUN),
)
DELEGATED_AUTH = [
    Capability(
        "secure port: authenticate bearer tokens (TokenReview)",
        "authentication.k8s.io",
        "tokenreviews",
        "create",
        _call("POST", TOKEN_REVIEW_PATH, _TOKEN_REVIEW),
    ),
    Capability(
        "secure port: authorize callers of /metrics, /configz, /debug (SubjectAccessReview)",
        "authorization.k8s.io",
        "subjectaccessreviews",
        "create",
        _call("POST", SAR_PATH, _SAR),
    ),
]

STANDALONE: list[Capability] = [
    *informer_capabilities(INFORMER_KINDS),
    READ_POD,
    BIND,
    Capability(
        "preemption: delete the victims",
        "",
        "pods",
        "delete",
        _call("DELETE", _POD, {"kind": "DeleteOptions", "apiVersion": "v1"}, _DRY_RUN),
    ),
    Capability(
        "pod status: PodScheduled condition, nominatedNodeName, DisruptionTarget",
        "",
        "pods/status",
        "patch",
        _call("PATCH", _POD + "/status", {"status": {"nominatedNodeName": None}}, _DRY_RUN, _STRATEGIC),
    ),
    Capability(
        "events: Scheduled, FailedScheduling, Preempted", "events.k8s.io", "events", "create", _create_event
    ),
    Capability(
        "events: count a repeated event (series patch)",
        "events.k8s.io",
        "events",
        "patch",
        _call("PATCH", _EVENTS + "/" + MISSING, {"series": {"count": 2}}, _DRY_RUN, _STRATEGIC),
    ),
    Capability(
        "DynamicResources PreBind: add the finalizer to a claim it allocates",
        "resource.k8s.io",
        "resourceclaims",
        "update",
        _call("PUT", _CLAIM, _CLAIM_BODY, _DRY_RUN),
    ),
    Capability(
        "DynamicResources: write a claim's allocation and reservation, deallocate, unreserve",
        "resource.k8s.io",
        "resourceclaims/status",
        "update",
        _call("PUT", _CLAIM + "/status", _CLAIM_BODY, _DRY_RUN),
    ),
    *DELEGATED_AUTH,
    # --- storage: VolumeBinding's PreBind ---
    Capability(
        "volume binding: set a PersistentVolume's claimRef",
        "",
        "persistentvolumes",
        "update",
        _call("PUT", "/api/v1/persistentvolumes/" + MISSING, _PV, _DRY_RUN),
    ),
    Capability(
        "volume binding: annotate a claim with its selected node",
        "",
        "persistentvolumeclaims",
        "update",
        _call("PUT", "/api/v1/namespaces/{ns}/persistentvolumeclaims/" + MISSING, _PVC, _DRY_RUN),
    ),
    Capability(
        "leader election: create the Lease",
        "coordination.k8s.io",
        "leases",
        "create",
        _call("POST", _LEASES, _lease(LEASE_NAME), _DRY_RUN),
        LEASE_NAME,
    ),
    Capability(
        "leader election: read the Lease",
        "coordination.k8s.io",
        "leases",
        "get",
        _call("GET", _LEASES + "/" + LEASE_NAME),
        LEASE_NAME,
    ),
    Capability(
        "leader election: renew or take over the Lease",
        "coordination.k8s.io",
        "leases",
        "update",
        _call("PUT", _LEASES + "/" + LEASE_NAME, _lease(LEASE_NAME), _DRY_RUN),
        LEASE_NAME,
    ),
]
"""``berth run`` (manifests/standalone)."""

EXTENDER: list[Capability] = [*informer_capabilities(INFORMER_KINDS), READ_POD, BIND]
"""``berth serve`` with a cluster connection (manifests/extender, ClusterRole berth-extender)."""

_CANDIDATES = LEASE_CANDIDATES_API + "/namespaces/{ns}/leasecandidates"
_CANDIDATE = {
    "apiVersion": "coordination.k8s.io/v1beta1",
    "kind": "LeaseCandidate",
    "metadata": {"name": MISSING},
}
COORDINATED: list[Capability] = [
    Capability(
        "coordinated election: list its LeaseCandidate",
        "coordination.k8s.io",
        "leasecandidates",
        "list",
        _call("GET", _CANDIDATES, params={"fieldSelector": f"metadata.name={MISSING}", "limit": "500"}),
    ),
    Capability(
        "coordinated election: watch for the API server's pings",
        "coordination.k8s.io",
        "leasecandidates",
        "watch",
        _call(
            "GET",
            _CANDIDATES,
            params={"fieldSelector": f"metadata.name={MISSING}", "watch": "1", "timeoutSeconds": "1"},
        ),
    ),
    Capability(
        "coordinated election: publish its LeaseCandidate",
        "coordination.k8s.io",
        "leasecandidates",
        "create",
        _call("POST", _CANDIDATES, _CANDIDATE, _DRY_RUN),
    ),
    Capability(
        "coordinated election: renew it, answer a ping",
        "coordination.k8s.io",
        "leasecandidates",
        "update",
        _call("PUT", _CANDIDATES + "/" + MISSING, _CANDIDATE, _DRY_RUN),
    ),
]
"""``berth run --feature-gates=CoordinatedLeaderElection=true`` (the coordinated-leader-election component)."""

STANDALONE_NOT_GRANTED: list[Capability] = [
    Capability("read a Lease of another component", "coordination.k8s.io", "leases", "get",
               _call("GET", _LEASES + "/kube-scheduler"), "kube-scheduler"),
    Capability("create a Lease outside its namespace", "coordination.k8s.io", "leases", "create",
               _call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                     _lease(LEASE_NAME), _DRY_RUN), LEASE_NAME),
    Capability("read Secrets", "", "secrets", "list", _call("GET", "/api/v1/secrets", params={"limit": "1"})),
    Capability("create pods", "", "pods", "create",
               _call("POST", "/api/v1/namespaces/{ns}/pods", {"metadata": {"name": MISSING}}, _DRY_RUN)),
    Capability("change a pod's spec", "", "pods", "patch", _call("PATCH", _POD, {}, _DRY_RUN)),
    Capability("update nodes", "", "nodes", "patch", _call("PATCH", "/api/v1/nodes/" + MISSING, {}, _DRY_RUN)),
]  # fmt: skip
"""Requests berth never makes, which the standalone role must therefore refuse (least privilege)."""


# --- RBAC rule matching (the rules as the manifests write them) ---------------------------------


@dataclass(frozen=True)
class Rule:
    """One rule of a Role or ClusterRole of the manifests, and where it is."""

    role_kind: str
    role_name: str
    index: int
    rule: dict[str, Any]

    @property
    def label(self) -> str:
        """``ClusterRole/berth-scheduler[2] pods/binding create``, for test ids and messages."""
        r = self.rule
        names = f" ({','.join(r['resourceNames'])})" if r.get("resourceNames") else ""
        return (
            f"{self.role_kind}/{self.role_name}[{self.index}] "
            f"{','.join(r.get('resources', []))} {','.join(r.get('verbs', []))}{names}"
        )

    def grants(self, cap: Capability) -> bool:
        """Whether RBAC lets this rule authorize ``cap`` (``*`` included, as the API server reads it)."""
        r = self.rule

        def has(values: Sequence[str], value: str) -> bool:
            return "*" in values or value in values

        return (
            has(r.get("apiGroups", []), cap.group)
            and has(r.get("resources", []), cap.resource)
            and has(r.get("verbs", []), cap.verb)
            and (not r.get("resourceNames") or cap.resource_name in r["resourceNames"])
        )

    def grants_triples(self) -> list[tuple[str, str, str]]:
        """Every (group, resource, verb) this rule spells out."""
        r = self.rule
        return [
            (g, res, v)
            for g in r.get("apiGroups", [])
            for res in r.get("resources", [])
            for v in r.get("verbs", [])
        ]


def rules_of(roles: Iterable[dict[str, Any]]) -> list[Rule]:
    """The rules of ``roles`` (Role and ClusterRole objects), in order."""
    return [
        Rule(role["kind"], role["metadata"]["name"], i, rule)
        for role in roles
        for i, rule in enumerate(role.get("rules", []))
    ]


def lost_without(rule: Rule, rules: Sequence[Rule], caps: Sequence[Capability]) -> list[Capability]:
    """The capabilities only ``rule`` grants: what berth loses when it is removed."""
    return [c for c in caps if rule.grants(c) and not any(r.grants(c) for r in rules if r != rule)]
