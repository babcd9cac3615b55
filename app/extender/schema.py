"""pydantic models of the extender wire types: the OpenAPI document, and the decoders' field tables.

The field aliases are the Go field names kube-scheduler puts on the wire. Requests are decoded by
hand on the hot path (:mod:`app.extender.wire`, :mod:`app.extender.bind`), but what those decoders
accept comes from these models: the keys they know (:func:`folded_fields`, matched
case-insensitively as Go does), which are required (:func:`required_fields`, a field without a
default) and which one-of groups must have a member that is not null (``anyOf`` in the models'
``json_schema_extra``, :func:`one_of_groups`). ``Pod`` and the node items are core/v1 objects: the
document states what every object needs (an object with a non-empty ``metadata.name``) and the
types of the fields berth reads at its first levels; a field berth reads deeper that has the wrong
type is refused with its path named. ``tests/fuzz/test_fuzz_openapi.py`` runs schemathesis against
the served document to hold the two together.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderError",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "Victims",
    "folded_fields",
    "one_of_groups",
    "required_fields",
]


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The range of Go's int64, which kube-scheduler's decoder refuses to leave (the decoders check it)."""

DOCUMENTED_INT64_BOUND = 2**63 - 1024
"""The bound the document states: inside int64 and exact as a float64, because JSON Schema tools
compare numbers as floats, and 2**63 - 1 rounds to 2**63 (so 2**63 + 191 would pass as "at most the
maximum")."""


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


def folded_fields(model: type[BaseModel]) -> dict[str, str]:
    """Case-folded key -> Go field name (the alias) of ``model``'s fields: what a decoder matches."""
    return {(f.alias or name).casefold(): f.alias or name for name, f in model.model_fields.items()}


def required_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The Go field names of ``model``'s fields without a default."""
    return tuple(f.alias or name for name, f in model.model_fields.items() if f.is_required())


def one_of_groups(model: type[BaseModel]) -> tuple[str, ...]:
    """The Go field names of ``model``'s one-of group: at least one must be set and not null."""
    options: list[dict[str, Any]] = model.model_json_schema(by_alias=True)["anyOf"]
    return tuple(str(option["required"][0]) for option in options)


def _one_of(*names: str) -> dict[str, Any]:
    """``json_schema_extra`` for a one-of group: at least one of ``names`` present and not null
    (Go decodes null as the zero value, so the decoders treat null as absent)."""
    return {
        "anyOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names]
    }


# What the decoders require of every object: a non-empty metadata.name; and the types of the fields
# berth reads at the first levels (app.api.objects.parse_pod and parse_node check every field they read).
# null is Go's zero value wherever a decoder reads a field: allowed except for the name itself.
_STRING_MAP: dict[str, Any] = {"type": ["object", "null"], "additionalProperties": {"type": "string"}}
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}


def _object_schema(*metadata: str) -> dict[str, Any]:
    """A core/v1 object whose ``metadata`` fields ``metadata`` (besides the name) berth reads and checks."""
    fields = {
        "namespace": _NULLABLE_STRING,
        "uid": _NULLABLE_STRING,
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    }
    return {
        "required": ["metadata"],
        "properties": {
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    **{f: fields[f] for f in metadata},
                },
            },
            "spec": {"type": ["object", "null"]},
            "status": {"type": ["object", "null"]},
        },
    }


_POD_SCHEMA = _object_schema("namespace", "uid", "labels", "annotations")
_NODE_SCHEMA = _object_schema("uid", "labels")


class NodeList(_Wire):
    """A core/v1 ``NodeList``."""

    metadata: dict[str, Any] | None = Field(None, description="ListMeta (ignored).")
    items: list[dict[str, Any]] | None = Field(
        description="core/v1 Node objects.", json_schema_extra={"items": _NODE_SCHEMA}
    )


class ExtenderArgs(_Wire):
    """The /filter and /prioritize request. Keys match case-insensitively; one node form is set
    (Nodes wins when both are)."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra=_one_of("Nodes", "NodeNames"))

    pod: dict[str, Any] = Field(
        alias="Pod", description="The core/v1 Pod being scheduled.", json_schema_extra=_POD_SCHEMA
    )
    nodes: NodeList | None = Field(
        None, alias="Nodes", description="Candidate nodes as full objects (nodeCacheCapable: false)."
    )
    node_names: list[str] | None = Field(
        None, alias="NodeNames", description="Candidate node names (nodeCacheCapable: true)."
    )


class ExtenderFilterResult(_Wire):
    """The /filter answer. Every key is always present; empty maps are null."""

    nodes: NodeList | None = Field(alias="Nodes", description="Passing nodes, echoing the request's objects.")
    node_names: list[str] | None = Field(alias="NodeNames", description="Passing node names.")
    failed_nodes: dict[str, str] | None = Field(
        alias="FailedNodes", description="Node name to reason; Unschedulable (preemption may help)."
    )
    failed_and_unresolvable_nodes: dict[str, str] | None = Field(
        alias="FailedAndUnresolvableNodes", description="Node name to reason; UnschedulableAndUnresolvable."
    )
    error: str = Field(alias="Error", description="Non-empty when the call failed.")


class HostPriority(_Wire):
    """One /prioritize entry; /prioritize answers a bare array of these."""

    host: str = Field(alias="Host")
    score: int = Field(alias="Score", ge=0, le=10, description="total * 10 // (100 * sum of Score weights).")


class Victims(_Wire):
    """A node's proposed victims as full objects (``nodeCacheCapable: false``), most important first."""

    pods: list[dict[str, Any]] | None = Field(
        None, alias="Pods", description="core/v1 Pod objects.", json_schema_extra={"items": _POD_SCHEMA}
    )
    num_pdb_violations: int | None = Field(
        0,
        alias="NumPDBViolations",
        description="How many of the pods overdraw a PodDisruptionBudget (a Go int64).",
        ge=-DOCUMENTED_INT64_BOUND,
        le=DOCUMENTED_INT64_BOUND,
    )


class MetaPod(_Wire):
    """A victim by identity."""

    uid: str | None = Field("", alias="UID", description="The pod's metadata.uid.")


class MetaVictims(_Wire):
    """A node's victims as UIDs, most important first."""

    pods: list[MetaPod] | None = Field(None, alias="Pods")
    num_pdb_violations: int | None = Field(
        0,
        alias="NumPDBViolations",
        description="How many of the pods overdraw a PodDisruptionBudget (a Go int64).",
        ge=-DOCUMENTED_INT64_BOUND,
        le=DOCUMENTED_INT64_BOUND,
    )


class ExtenderPreemptionArgs(_Wire):
    """The /preempt request. Keys match case-insensitively; one victim form is set."""

    model_config = ConfigDict(
        populate_by_name=True, json_schema_extra=_one_of("NodeNameToVictims", "NodeNameToMetaVictims")
    )

    pod: dict[str, Any] = Field(
        alias="Pod", description="The core/v1 Pod that preempts.", json_schema_extra=_POD_SCHEMA
    )
    node_name_to_victims: dict[str, Victims] | None = Field(
        None, alias="NodeNameToVictims", description="Candidate node to victims as full objects."
    )
    node_name_to_meta_victims: dict[str, MetaVictims] | None = Field(
        None, alias="NodeNameToMetaVictims", description="Candidate node to victims as UIDs."
    )


class ExtenderPreemptionResult(_Wire):
    """The /preempt answer: the nodes berth keeps, each with a non-empty list of victims."""

    node_name_to_meta_victims: dict[str, MetaVictims] = Field(
        alias="NodeNameToMetaVictims",
        description="Nodes where the pod fits once these pods are gone; a node left out is vetoed.",
    )
    error: str | None = Field(
        None,
        alias="Error",
        description="berth's addition, only on an engine error (the request's victims are then echoed); "
        "kube-scheduler ignores it.",
    )


class ExtenderError(_Wire):
    """The body of a non-200 answer (400, 404, 405, 413)."""

    error: str = Field(alias="Error")


class ExtenderBindingArgs(_Wire):
    """The /bind request. Keys match case-insensitively; null is taken as absent."""

    pod_name: str = Field(alias="PodName", min_length=1)
    pod_namespace: str = Field(alias="PodNamespace", min_length=1)
    pod_uid: str | None = Field(
        "", alias="PodUID", description="Checked as a precondition of the Binding when set (may be empty)."
    )
    node: str = Field(alias="Node", min_length=1)


class ExtenderBindingResult(_Wire):
    """The /bind answer: an empty ``Error`` means bound."""

    error: str = Field(alias="Error")
