"""PodDisruptionBudgets as preemption reads them (policy/v1 raw objects, ``filterPodsWithPDBViolation``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.api.errors import FieldError
from app.api.selectors import LabelSelector, parse_label_selector
from app.framework.interfaces import ObjectLister
from app.framework.types import PodInfo

__all__ = ["KIND", "PodDisruptionBudget", "filter_pods_with_pdb_violation", "list_pdbs", "parse_pdb"]

KIND = "PodDisruptionBudget"


@dataclass(slots=True, frozen=True)
class PodDisruptionBudget:
    """What preemption needs of a PDB: namespace, selector, disruptionsAllowed, disruptedPods.

    ``selector`` is None for a nil selector or one that does not parse: such a PDB matches
    nothing, as ``LabelSelectorAsSelector`` failing does in kube-scheduler.
    """

    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Same namespace and a non-empty selector matching ``labels`` (an empty selector matches nothing)."""
        sel = self.selector
        return namespace == self.namespace and sel is not None and not sel.empty and sel.matches(labels)


def _map(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    return value if isinstance(value, Mapping) else {}


def parse_pdb(raw: Mapping[str, Any]) -> PodDisruptionBudget:
    """A PDB from its raw object; malformed parts make it match nothing rather than fail preemption."""
    meta = _map(raw, "metadata")
    spec = _map(raw, "spec")
    status = _map(raw, "status")
    selector: LabelSelector | None = None
    raw_sel = spec.get("selector")
    if isinstance(raw_sel, Mapping):
        try:
            selector = parse_label_selector(raw_sel, "spec.selector")
        except FieldError:
            selector = None
    allowed = status.get("disruptionsAllowed", 0)
    disrupted = status.get("disruptedPods")
    return PodDisruptionBudget(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=selector,
        disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
        disrupted_pods=frozenset(disrupted) if isinstance(disrupted, Mapping) else frozenset(),
    )


def list_pdbs(objects: ObjectLister) -> list[PodDisruptionBudget]:
    """Every PDB of the cluster (``pdbLister.List(labels.Everything())``)."""
    return [parse_pdb(o) for o in objects.list_cluster(KIND)]


def filter_pods_with_pdb_violation(
    pod_infos: Iterable[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in the input order.

    Each PDB's budget starts at ``disruptionsAllowed`` and is spent by the matching pods in order;
    a pod already in ``disruptedPods`` spends nothing. A pod whose eviction drives a budget below
    zero violates it.
    """
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pod_infos:
        pod = info.pod
        violated = False
        if pod.labels:  # a pod without labels matches no PDB
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod.namespace, pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating
