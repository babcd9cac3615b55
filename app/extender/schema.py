"""pydantic models of the extender wire types, used ONLY to document them in the OpenAPI schema.

Requests are never validated through these (see :mod:`app.extender.wire`); the field aliases are the
Go field names kube-scheduler puts on the wire. ``Pod`` and the node items are core/v1 objects,
documented as free-form objects.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ExtenderArgs",
    "ExtenderError",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "Victims",
]


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


# What the decoder requires of a pod (app.api.objects.parse_pod): an object with metadata.name.
_POD_SCHEMA: dict[str, Any] = {
    "required": ["metadata"],
    "properties": {
        "metadata": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    },
}


class NodeList(_Wire):
    """A core/v1 ``NodeList``."""

    metadata: dict[str, Any] = Field(default_factory=dict, description="ListMeta (ignored).")
    items: list[dict[str, Any]] | None = Field(description="core/v1 Node objects.")


class ExtenderArgs(_Wire):
    """The /filter and /prioritize request. Keys match case-insensitively; one node form is set
    (Nodes wins when both are)."""

    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={"anyOf": [{"required": ["Nodes"]}, {"required": ["NodeNames"]}]},
    )

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

    pods: list[dict[str, Any]] | None = Field(alias="Pods", description="core/v1 Pod objects.")
    num_pdb_violations: int = Field(
        0, alias="NumPDBViolations", description="How many of the pods overdraw a PodDisruptionBudget."
    )


class MetaPod(_Wire):
    """A victim by identity."""

    uid: str = Field(alias="UID", description="The pod's metadata.uid.")


class MetaVictims(_Wire):
    """A node's victims as UIDs, most important first."""

    pods: list[MetaPod] | None = Field(alias="Pods")
    num_pdb_violations: int = Field(
        0, alias="NumPDBViolations", description="How many of the pods overdraw a PodDisruptionBudget."
    )


class ExtenderPreemptionArgs(_Wire):
    """The /preempt request. Keys match case-insensitively; one victim form is set."""

    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={
            "anyOf": [{"required": ["NodeNameToVictims"]}, {"required": ["NodeNameToMetaVictims"]}]
        },
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
