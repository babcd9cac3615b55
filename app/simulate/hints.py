"""Counterfactual hints ("fits if…") for unschedulable pods, each verified by the engine.

For a pod the run could not place, :class:`HintFinder` proposes changes read off its failing nodes
(tolerate a taint, lower a request, label nodes, drop a node-affinity requirement, relax a spread
constraint, evict lower-priority pods, add a node like an existing one), applies each to a copy of
the cluster as the pod's attempt saw it, and runs the pod's PreFilter and Filter plugins on every node
again: PreFilter on every node (spread and inter-pod affinity count over the nodes they are given),
Filter on the nodes the change is about (those that carry the taint, failed the affinity, lacked the
resource...). Only changes after which the pod passes some of them are kept, with those nodes.

The copy is a second engine (its own cache, random generator and nominator) kept in step with the
run: every pod the run places is added to it, every victim removed, so the run itself is never
touched (hints change no decision, not even a tie-break). A change to the cluster (a label, an
evicted pod, a new node) is applied to the copy for one check and undone after it. Verification
filters only: it does not score, reserve or bind, nor call extenders. Each pod gets at most
:data:`MAX_CANDIDATES_PER_KIND` checks per kind of change, and a pod of the same shape as one already
answered (same namespace, labels, priority and spec: the replicas of one workload) on an unchanged
cluster gets the same hints without new checks.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from app import logs
from app.api.objects import Node, Pod, parse_pod
from app.config.types import SchedulerConfiguration
from app.framework.preemption.pdb import filter_pods_with_pdb_violation, list_pdbs
from app.framework.preemption.util import importance_key
from app.framework.registry import Registry
from app.framework.runtime import Framework
from app.framework.status import NodeToStatus, Status
from app.framework.types import NodeInfo
from app.plugins.defaultpreemption.default_preemption import DefaultPreemption
from app.plugins.noderesources.fit import compute_pod_resource_request, fits_request
from app.scheduler.scheduler import Engine
from app.simulate.explain import (
    describe_requirement,
    filter_details,
    name_list,
    readable_amount,
    score_weights,
    untolerated_taints,
)
from app.simulate.formats import DEFAULT_MAX_HINTED_PODS
from app.simulate.runner import PodRecord
from app.simulate.state import ClusterState

__all__ = ["HINT_KINDS", "MAX_CANDIDATES_PER_KIND", "Hint", "HintFinder", "RecordExplainer", "hint_dict"]

#: Kinds of hints, best first: changes to the pod's own spec before changes to the cluster.
HINT_KINDS = (
    "tolerate-taint",
    "drop-node-affinity-term",
    "relax-spread",
    "lower-request",
    "label-nodes",
    "preempt",
    "add-nodes",
)
#: How many changes of one kind are checked per pod (each check filters every node once).
MAX_CANDIDATES_PER_KIND = 4
#: Nodes a label-nodes hint labels at most (the first failing ones, in the order of the filter map).
MAX_LABELLED_NODES = 8
_HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True)
class Hint:
    """One verified change and the nodes the pod fits on once it is made."""

    kind: str  # one of HINT_KINDS
    summary: str
    change: dict[str, Any]
    nodes: list[str]
    verified: bool = True


def hint_dict(hint: Hint) -> dict[str, Any]:
    """A hint as the JSON output lists it."""
    return {
        "kind": hint.kind,
        "summary": hint.summary,
        "change": hint.change,
        "nodes": hint.nodes,
        "verified": hint.verified,
    }


def quantity(resource: str, amount: int) -> str:
    """A Kubernetes quantity for ``amount`` (millicores for cpu, bytes or counts otherwise)."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if amount and amount % size == 0:
            return f"{amount // size}{unit}"
    return str(amount)


def _respec(pod: Pod, edit: Callable[[dict[str, Any]], None]) -> Pod:
    """The pod with ``edit`` applied to a copy of its manifest, admitted as the original was."""
    raw = copy.deepcopy(dict(pod.raw))
    edit(raw.setdefault("spec", {}))
    parsed = parse_pod(raw)
    return dataclasses.replace(
        parsed, priority=pod.priority, preemption_policy=pod.preemption_policy, uid=pod.uid
    )


def _relabelled(node: Node, labels: Mapping[str, str], name: str | None = None) -> Node:
    """``node`` with ``labels`` added (and renamed, for a new node like it); its manifest follows."""
    meta = dict(node.raw.get("metadata") or {})
    merged = {**node.labels, **labels}
    meta["labels"] = merged
    changes: dict[str, Any] = {"labels": merged}
    if name is not None:
        meta["name"] = name
        meta["uid"] = changes["uid"] = f"{node.uid or node.name}-copy"
        changes["name"] = name
    return dataclasses.replace(node, raw={**node.raw, "metadata": meta}, **changes)


class HintFinder:
    """Keeps a copy of the cluster in step with a run and finds verified hints for its unschedulable pods."""

    def __init__(
        self,
        state: ClusterState,
        cfg: SchedulerConfiguration,
        registry: Registry,
        seed: int | None,
        max_pods: int = 0,
    ) -> None:
        """``max_pods``: how many pods hints are searched for (0: no limit); pods of a shape already
        answered on an unchanged cluster do not count."""
        self.max_pods = max_pods
        self.searched = 0
        self.unhinted = 0  # unschedulable pods past the budget
        self._state = state
        self._cfg = cfg
        self._registry = registry
        self._seed = seed
        self._engine: Engine | None = None
        # The run's changes to the cluster so far (pod, added?), replayed when the copy is built.
        self._log: list[tuple[Pod, bool]] = []
        # Hints by pod shape while the cluster does not change: the replicas of one workload that fail in
        # a row get the same hints without checking them again (the same pod on the same cluster).
        self._known: dict[bytes, list[Hint]] = {}

    # --- keeping the copy in step ------------------------------------------------------------

    def observe(self, record: PodRecord) -> None:
        """Record what ``record``'s attempt changed: its victims left, the pod itself was placed."""
        changes = [(victim, False) for victim in record.victims]
        attempt = record.attempt
        if record.status == "Scheduled" and attempt is not None and attempt.assumed is not None:
            changes.append((attempt.assumed, True))
        if changes:
            self._known.clear()
        if self._engine is None:
            self._log.extend(changes)
            return
        for pod, added in changes:
            self._apply(pod, added)

    def _apply(self, pod: Pod, added: bool) -> None:
        assert self._engine is not None
        if added:
            self._engine.cache.add_pod(pod)
        else:
            self._engine.cache.remove_pod(pod)

    def _copy(self) -> Engine:
        if self._engine is None:
            engine = Engine(self._cfg, self._registry, objects=self._state.objects, seed=self._seed)
            for node in self._state.nodes:
                engine.cache.add_node(node)
            for pod in self._state.running:
                engine.cache.add_pod(pod)
            self._engine = engine
            for pod, added in self._log:
                self._apply(pod, added)
            self._log.clear()
        return self._engine

    # --- checking a change -------------------------------------------------------------------

    def _nodes(self) -> list[NodeInfo]:
        engine = self._copy()
        engine.cache.update_snapshot(engine.algorithm.snapshot)
        return engine.algorithm.snapshot.list()

    def _fits(self, pod: Pod, only: Sequence[str]) -> list[str]:
        """The nodes of ``only`` whose filters pass ``pod`` on the copy as it is now.

        PreFilter sees every node (topology spread and inter-pod affinity count over the nodes they are
        given, as in the attempt); Filter runs on ``only``, the nodes the change is about.
        """
        engine = self._copy()
        fwk = engine.framework_for(pod)
        if fwk is None:
            return []
        nodes = self._nodes()
        state = engine.new_cycle_state()
        pre_result, status, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
        if status is not None and not status.is_success():
            return []
        allowed = pre_result.node_names if pre_result is not None else None
        wanted = set(only)
        candidates = [n for n in nodes if n.name in wanted and (allowed is None or n.name in allowed)]
        feasible, _ = fwk.run_filter_plugins_all(state, pod, candidates, fwk.active_filters(state))
        return [n.name for n in feasible]

    @contextmanager
    def _nodes_changed(self, nodes: Sequence[Node]) -> Iterator[None]:
        """The copy with ``nodes`` added or replacing those of the same name, for one check."""
        cache = self._copy().cache
        previous = [cache.get_node(n.name) for n in nodes]
        for node in nodes:
            cache.add_node(node)
        try:
            yield
        finally:
            for node, old in zip(nodes, previous, strict=True):
                if old is not None:
                    cache.add_node(old)
                else:
                    cache.remove_node(node)

    @contextmanager
    def _pods_removed(self, pods: Sequence[Pod]) -> Iterator[None]:
        cache = self._copy().cache
        for pod in pods:
            cache.remove_pod(pod)
        try:
            yield
        finally:
            for pod in pods:
                cache.add_pod(pod)

    # --- the hints ---------------------------------------------------------------------------

    def hints_for(self, record: PodRecord) -> list[Hint]:
        """Verified hints for an unschedulable ``record``, best first (see :data:`HINT_KINDS`)."""
        if record.status != "Unschedulable" or not self._state.nodes:
            return []
        pod = record.pod
        fwk = self._copy().framework_for(pod)
        if fwk is None:
            return []
        shape = _shape(pod)
        known = self._known.get(shape)
        if known is not None:
            return [dataclasses.replace(h) for h in known]
        if self.max_pods and self.searched >= self.max_pods:
            self.unhinted += 1
            return []
        self.searched += 1
        failed = record.filter
        hints: list[Hint] = []
        for finder in (
            self._tolerate_taint,
            self._drop_affinity,
            self._relax_spread,
            self._lower_request,
            self._label_nodes,
            self._preempt,
            self._add_nodes,
        ):
            try:
                hints.extend(finder(pod, failed, fwk))
            except Exception as err:  # a change the pod's manifest cannot take costs that hint, not the run
                logs.info("Skipping a kind of hint", 2, pod=pod.key, hint=finder.__name__, err=str(err))
        self._known[shape] = hints
        return hints

    def _failing(self, failed: Mapping[str, Status], plugin: str) -> list[str]:
        return [name for name, status in failed.items() if status.plugin == plugin]

    def _tolerate_taint(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        taints: dict[str, Any] = {}
        tainted: dict[str, list[str]] = {}  # taint -> the failing nodes that carry it
        for name in self._failing(failed, "TaintToleration"):
            node = self._copy().cache.get_node(name)
            if node is None:
                continue
            for taint in node.taints:
                if str(taint) in untolerated_taints(pod, node):
                    taints.setdefault(str(taint), taint)
                    tainted.setdefault(str(taint), []).append(name)
        hints = []
        for text, taint in list(taints.items())[:MAX_CANDIDATES_PER_KIND]:
            toleration = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
            if not taint.value:
                toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
            changed = _respec(pod, functools.partial(_add_toleration, toleration=toleration))
            fits = self._fits(changed, tainted[text])
            if fits:
                hints.append(
                    Hint(
                        "tolerate-taint",
                        f"tolerate taint {text}: fits on {name_list(fits)}",
                        {"toleration": toleration},
                        fits,
                    )
                )
        return hints

    def _drop_affinity(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        unmatched = self._failing(failed, "NodeAffinity")
        if not unmatched:
            return []
        candidates: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], None]]] = []
        for key, value in sorted(pod.node_selector.items()):
            candidates.append(
                (
                    f"drop nodeSelector {key}={value}",
                    {"nodeSelector": key},
                    functools.partial(_drop_selector, key=key),
                )
            )
        required = pod.node_affinity.required if pod.node_affinity is not None else None
        terms = required.terms if required is not None else ()
        for i, term in enumerate(terms):
            for j, req in enumerate(term.match_expressions):
                said = describe_requirement(req)
                edit: Callable[[dict[str, Any]], None]
                if len(term.match_expressions) + len(term.match_fields) > 1:
                    edit = functools.partial(_drop_requirement, term=i, index=j)
                    text = f"drop {said} from nodeAffinity term {i + 1}"
                elif len(terms) == 1:
                    edit = _drop_required_affinity
                    text = f"drop the required nodeAffinity ({said})"
                else:
                    continue  # terms are ORed: dropping one of several never widens the choice
                candidates.append((text, {"term": i + 1, "requirement": said}, edit))
        hints = []
        for text, change, edit_spec in candidates[:MAX_CANDIDATES_PER_KIND]:
            fits = self._fits(_respec(pod, edit_spec), unmatched)
            if fits:
                hints.append(
                    Hint("drop-node-affinity-term", f"{text}: fits on {name_list(fits)}", change, fits)
                )
        return hints

    def _relax_spread(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        skewed = self._failing(failed, "PodTopologySpread")
        if not skewed:
            return []
        hints = []
        for i, constraint in enumerate(pod.topology_spread_constraints):
            if constraint.when_unsatisfiable != "DoNotSchedule":
                continue
            key = constraint.topology_key
            found = False
            # The smallest maxSkew that lets the pod in, tried upwards; then ScheduleAnyway.
            for skew in range(constraint.max_skew + 1, constraint.max_skew + MAX_CANDIDATES_PER_KIND):
                tighter = functools.partial(_set_spread, index=i, key="maxSkew", value=skew)
                fits = self._fits(_respec(pod, tighter), skewed)
                if fits:
                    summary = f"relax topology spread on {key} to maxSkew {skew}: fits on {name_list(fits)}"
                    hints.append(Hint("relax-spread", summary, {"constraint": i + 1, "maxSkew": skew}, fits))
                    found = True
                    break
            if found:
                continue
            anyway = _respec(
                pod, functools.partial(_set_spread, index=i, key="whenUnsatisfiable", value="ScheduleAnyway")
            )
            fits = self._fits(anyway, skewed)
            if fits:
                summary = f"make topology spread on {key} ScheduleAnyway: fits on {name_list(fits)}"
                change = {"constraint": i + 1, "whenUnsatisfiable": "ScheduleAnyway"}
                hints.append(Hint("relax-spread", summary, change, fits))
        return hints

    def _lower_request(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        request = compute_pod_resource_request(pod)
        # Per resource, the free amounts of the nodes that lacked it, most free first.
        free: dict[str, list[int]] = {}
        totals: dict[str, int] = {}  # the pod's request of each, in the cache's units
        nodes = {n.name: n for n in self._nodes()}
        short = self._failing(failed, "NodeResourcesFit")
        for name in short:
            info = nodes.get(name)
            if info is None:
                continue
            for lack in fits_request(request, info):
                if lack.resource_name != "pods" and lack.capacity - lack.used > 0:
                    free.setdefault(lack.resource_name, []).append(lack.capacity - lack.used)
                    totals[lack.resource_name] = lack.requested
        hints = []
        for resource, amounts in free.items():
            total = totals[resource]
            for amount in sorted(set(amounts), reverse=True)[:MAX_CANDIDATES_PER_KIND]:
                changed = _lowered(pod, resource, total - amount)
                if changed is None:
                    break
                fits = self._fits(changed, short)
                if fits:
                    to, was = readable_amount(resource, amount), readable_amount(resource, total)
                    summary = f"lower the {resource} request to {to} (from {was}): fits on {name_list(fits)}"
                    change = {
                        "resource": resource,
                        "request": quantity(resource, amount),
                        "from": quantity(resource, total),
                    }
                    hints.append(Hint("lower-request", summary, change, fits))
                    break
        return hints

    def _label_nodes(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        groups: dict[tuple[tuple[str, str], ...], list[Node]] = {}
        for name in self._failing(failed, "NodeAffinity"):
            node = self._copy().cache.get_node(name)
            labels = _labels_needed(pod, node) if node is not None else None
            if node is not None and labels:
                group = groups.setdefault(tuple(sorted(labels.items())), [])
                if len(group) < MAX_LABELLED_NODES:
                    group.append(node)
        hints = []
        for wanted, nodes in sorted(groups.items(), key=lambda g: -len(g[1]))[:MAX_CANDIDATES_PER_KIND]:
            relabelled = [_relabelled(n, dict(wanted)) for n in nodes]
            with self._nodes_changed(relabelled):
                fits = self._fits(pod, [n.name for n in nodes])
            if fits:
                said = ", ".join(f"{k}={v}" for k, v in wanted)
                summary = f"label node(s) {name_list(fits)} with {said}: fits there"
                hints.append(Hint("label-nodes", summary, {"labels": dict(wanted), "nodes": fits}, fits))
        return hints

    def _preempt(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        """The victims DefaultPreemption itself would choose on the copy: its dry run over the failing
        nodes (kube's candidate count and offset) and its pick among the candidates, so PDB-violating
        victims are spared first and nodes needing fewer violations preferred; those that still
        violate a PodDisruptionBudget are named."""
        plugin = next((p for p in fwk.post_filter if isinstance(p, DefaultPreemption)), None)
        if plugin is None:
            return []
        engine = self._copy()
        nodes = self._nodes()
        state = engine.new_cycle_state()
        _, status, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
        if status is not None and not status.is_success():
            return []
        evaluator = plugin.evaluator
        candidates, _, _ = evaluator.find_candidates(state, nodes, pod, NodeToStatus.of(failed))
        best = evaluator.select_candidate(candidates)
        if best is None:
            return []
        victims = best.victims.pods
        # Read off the snapshot before the check below removes the victims from it.
        violating = self._pdb_violating(plugin, pod, best.name, victims)
        if not self._fits_without(pod, victims, best.name):
            return []
        why = (
            " (preemptionPolicy Never forbids the scheduler to do it)"
            if pod.preemption_policy == "Never"
            else ""
        )
        pdb = f"; {name_list(violating)} violate(s) a PodDisruptionBudget" if violating else ""
        names = ", ".join(v.key for v in victims)
        summary = f"evict lower-priority pod(s) {names} from {best.name}: fits there{pdb}{why}"
        change = {"node": best.name, "evict": [v.key for v in victims], "pdbViolations": violating}
        return [Hint("preempt", summary, change, [best.name])]

    def _pdb_violating(
        self, plugin: DefaultPreemption, pod: Pod, node: str, victims: Sequence[Pod]
    ) -> list[str]:
        """Which ``victims`` violate a PDB, as SelectVictimsOnNode counted them: the budgets are spent
        over every pod it may evict on the node, most important first."""
        pdbs = list_pdbs(plugin.handle.objects)
        info = self._copy().algorithm.snapshot.get(node)
        if not pdbs or info is None:
            return []
        key = importance_key(time.time())
        potential = sorted(
            (pi for pi in info.pods if plugin.is_preemption_allowed(info, pi, pod)),
            key=lambda pi: key(pi.pod),
        )
        violating, _ = filter_pods_with_pdb_violation(potential, pdbs)
        chosen = {v.uid or v.key for v in victims}
        return [pi.pod.key for pi in violating if (pi.pod.uid or pi.pod.key) in chosen]

    def _fits_without(self, pod: Pod, victims: Sequence[Pod], node: str) -> bool:
        with self._pods_removed(victims):
            return bool(self._fits(pod, [node]))

    def _add_nodes(self, pod: Pod, failed: Mapping[str, Status], fwk: Framework) -> list[Hint]:
        shapes: dict[tuple[Any, ...], Node] = {}
        for node in self._state.nodes:
            if node.unschedulable:
                continue
            labels = tuple(sorted((k, v) for k, v in node.labels.items() if k != _HOSTNAME))
            taints = tuple(str(t) for t in node.taints)
            shapes.setdefault((labels, taints, tuple(sorted(node.allocatable.items()))), node)
        for like in list(shapes.values())[:MAX_CANDIDATES_PER_KIND]:
            name = _new_node_name(like.name, self._copy())
            new = _relabelled(like, {_HOSTNAME: name} if _HOSTNAME in like.labels else {}, name=name)
            with self._nodes_changed([new]):
                fits = self._fits(pod, [name])
            if fits:
                summary = f"add 1 node like {like.name}: fits on the new node"
                return [Hint("add-nodes", summary, {"like": like.name, "count": 1, "name": name}, fits)]
        return []


def _shape(pod: Pod) -> bytes:
    """What the scheduler sees of a pod but its name: pods of one shape get the same answers."""
    spec = pod.raw.get("spec") or {}
    return orjson.dumps(
        [pod.namespace, pod.labels, pod.priority, pod.preemption_policy, spec], option=orjson.OPT_SORT_KEYS
    )


def _add_toleration(spec: dict[str, Any], toleration: dict[str, str]) -> None:
    spec.setdefault("tolerations", []).append(toleration)


def _drop_selector(spec: dict[str, Any], key: str) -> None:
    spec["nodeSelector"].pop(key)


def _drop_requirement(spec: dict[str, Any], term: int, index: int) -> None:
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    required["nodeSelectorTerms"][term]["matchExpressions"].pop(index)


def _drop_required_affinity(spec: dict[str, Any]) -> None:
    spec["affinity"]["nodeAffinity"].pop("requiredDuringSchedulingIgnoredDuringExecution")


def _set_spread(spec: dict[str, Any], *, index: int, key: str, value: object) -> None:
    spec["topologySpreadConstraints"][index][key] = value


def _cache_units(resource: str, value: Any) -> int:
    """A parsed quantity in the cache's units: cpu in millicores (rounded up, as the cache does), else as is."""
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


def _lowered(pod: Pod, resource: str, by: int) -> Pod | None:
    """The pod with its largest container's ``resource`` request lowered ``by`` (cache units), or
    its pod-level request when it has one; None when that container asks for less than ``by``."""
    if resource in pod.pod_requests:
        level = _cache_units(resource, pod.pod_requests[resource]) - by
        if level <= 0:
            return None

        def edit_level(spec: dict[str, Any]) -> None:
            spec["resources"]["requests"][resource] = quantity(resource, level)

        return _respec(pod, edit_level)
    sizes = [_cache_units(resource, c.requests.get(resource, 0)) for c in pod.containers]
    if not sizes or max(sizes) <= by:
        return None
    index = sizes.index(max(sizes))
    lowered = quantity(resource, sizes[index] - by)

    def edit(spec: dict[str, Any]) -> None:
        container = spec["containers"][index]
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})[resource] = lowered
        limits = resources.get("limits") or {}
        if resource in limits:
            limits[resource] = lowered  # a limit below the request is invalid; the limit follows it down

    return _respec(pod, edit)


def _labels_needed(pod: Pod, node: Node) -> dict[str, str] | None:
    """Labels whose addition makes ``node`` match the pod's nodeSelector and first required term,
    or None when adding labels cannot do it (NotIn, DoesNotExist, Gt/Lt, matchFields)."""
    needed = {k: v for k, v in pod.node_selector.items() if node.labels.get(k) != v}
    required = pod.node_affinity.required if pod.node_affinity is not None else None
    if required is not None and not required.matches(node.name, node.labels):
        term = required.terms[0] if required.terms else None
        if term is None or term.match_fields:
            return None
        for req in term.match_expressions:
            if req.matches(node.labels):
                continue
            if req.operator == "In" and req.values:
                needed[req.key] = sorted(req.values)[0]
            elif req.operator == "Exists":
                needed[req.key] = "true"
            else:
                return None
    return needed


def _new_node_name(like: str, engine: Engine) -> str:
    name = f"{like}-new"
    n = 1
    while engine.cache.get_node(name) is not None:
        n += 1
        name = f"{like}-new-{n}"
    return name


class RecordExplainer:
    """The run's observer: per record the profile's score weights, the failing nodes' details with
    amounts, and for an unschedulable pod its verified hints; then the copy follows the run."""

    def __init__(
        self,
        state: ClusterState,
        cfg: SchedulerConfiguration,
        registry: Registry,
        seed: int | None,
        max_hinted_pods: int = DEFAULT_MAX_HINTED_PODS,
        with_details: bool = True,
    ) -> None:
        """Hints are searched for at most ``max_hinted_pods`` unschedulable pods (0: none);
        ``with_details`` False leaves ``details`` empty (the table does not show them)."""
        self.hints = HintFinder(state, cfg, registry, seed, max_hinted_pods) if max_hinted_pods > 0 else None
        self.with_details = with_details

    def warnings(self) -> list[str]:
        """One line when unschedulable pods went without hints for the budget, else none."""
        finder = self.hints
        if finder is None or not finder.unhinted:
            return []
        return [
            f"hints were searched for the first {finder.max_pods} unschedulable pods only, "
            f"{finder.unhinted} more have none (--max-hints N to search more)"
        ]

    def __call__(self, record: PodRecord, engine: Engine) -> None:
        """Explain ``record`` from ``engine`` as its attempt left it (read only)."""
        fwk = engine.framework_for(record.pod)
        if fwk is not None and record.attempt is not None:
            record.weights = score_weights(fwk)
            if record.filter and self.with_details:
                nodes = engine.algorithm.snapshot.list()
                placed = record.status == "Scheduled"
                record.details = filter_details(fwk, record.pod, record.filter, nodes, placed)
        if self.hints is not None:
            record.hints = self.hints.hints_for(record)
            self.hints.observe(record)
