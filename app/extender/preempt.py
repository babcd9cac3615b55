"""The extender preempt verb: berth's say on the victims kube-scheduler's preemption proposes.

kube-scheduler's DefaultPreemption dry-runs preemption with its in-tree filters only, then hands
the candidates to every extender with a ``preemptVerb`` (``Evaluator.callExtenders``). The answer
replaces the candidates: a node left out is dropped, and each node's victims become the pods named
in the answer (mapped back by UID to pods on that node in kube-scheduler's snapshot; a UID it does
not find there is an error). berth answers, for each proposed node, the question its own /filter
will ask once the victims are gone: *would berth's PreFilter and Filter plugins accept the pod
there?*

For each node, on a copy of berth's NodeInfo (the cache's view):

- The proposed victims berth holds on that node (matched by UID; full objects from
  ``NodeNameToVictims`` are matched by their UID too) are removed, through the PreFilter extensions
  as kube-scheduler's SelectVictimsOnNode does. If the pod still does not fit, the node is
  **dropped** (a taint, node affinity or a port conflict berth knows about, say). A node berth has
  no NodeInfo for is dropped as well: berth's /filter would reject the pod there, so evicting pods
  for it would be for nothing.
- If it fits, the victims are reprieved one by one in SelectVictimsOnNode's order
  (:func:`~app.plugins.defaultpreemption.default_preemption.select_victims`: PDB-violating ones
  first, then the others, most important first) and the ones not needed leave the list, which may
  therefore **shrink**. The answer keeps the request's order (most important first), which
  kube-scheduler's pickOneNodeForPreemption relies on.
- Victims berth does not hold on that node (a UID not in its cache, or cached elsewhere) are
  **kept**: berth cannot judge them, and they cannot make the pod fit in berth's view either.
- **Never an empty list.** kube-scheduler v1.36 fails the whole preemption with ``expected at least
  one victim pod on node`` when an answer has an empty ``Pods`` (a non-ignorable extender), and only
  drops the node for an ignorable one. When berth would reprieve every victim, the pod already fits
  in berth's view, so berth has no objection to the node and no better list: it keeps the node with
  the request's list (which kube-scheduler's own filters need, and berth's accept). A list that
  arrives empty (only releases after v1.36 send one, and they accept one back) is echoed when the
  pod fits.
- ``NumPDBViolations`` is recounted for the returned list as kube-scheduler counts it: the PDB
  budgets (berth's PodDisruptionBudget objects) are spent by the proposed victims berth has an
  object for, most important first, and the returned victims that overdraw one are counted. It is
  SelectVictimsOnNode's count when berth knows every victim. A victim berth has no object for
  counts as no violation.

A shrunken list means berth's view is looser than kube-scheduler's (kube-scheduler already
reprieved what its own filters allow); kube-scheduler re-runs its filters on the nominated node
after the evictions, so the pod still lands only where both agree.

Engine errors (a plugin Error, no such profile) answer HTTP 200 with the request's victims
unchanged and ``Error`` set. ``ExtenderPreemptionResult`` has no ``Error`` field and
kube-scheduler's decoder ignores unknown keys, so for it this answer means "no objection",
exactly as if berth had no preempt verb, while the message still reaches logs and humans.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from app import logs
from app.api.objects import Pod
from app.extender.service import ExtenderService, NoProfileError, _error_text
from app.extender.wire import NodeVictims, PreemptionArgs, PreemptionResult
from app.framework.cycle_state import CycleState
from app.framework.preemption.pdb import PodDisruptionBudget, filter_pods_with_pdb_violation, list_pdbs
from app.framework.preemption.util import importance_key
from app.framework.runtime import Framework
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo
from app.plugins.defaultpreemption.default_preemption import select_victims
from app.scheduler.algorithm import SchedulingError
from app.scheduler.scheduler import Engine

__all__ = ["preempt", "unchanged"]


def preempt(service: ExtenderService, args: PreemptionArgs) -> PreemptionResult:
    """What /preempt answers for ``args``, with the profile of ``service``.

    Engine errors are returned as the request's victims unchanged with ``error`` set; other
    exceptions propagate (the server answers them the same way, see :func:`unchanged`).
    """
    try:
        fwk = service.framework()
        kept = _Preemption(service.engine, fwk, args.pod).run(args.victims)
    except (NoProfileError, SchedulingError) as err:
        return unchanged(args, _error_text(err))
    service.decisions.preempted(
        fwk, args.pod, {node: _keys(service.engine, v.uids) for node, v in kept.items()}
    )
    return PreemptionResult(kept)


def _keys(engine: Engine, uids: Sequence[str]) -> list[str]:
    """The victims' ``namespace/name`` as berth's cache knows them (the UID of a pod it does not)."""
    keys = []
    for uid in uids:
        pod = engine.cache.get_pod(uid)
        keys.append(uid if pod is None else pod.key)
    return keys


def unchanged(args: PreemptionArgs, error: str) -> PreemptionResult:
    """The request's victims as the answer, with ``error``: berth raises no objection to any node."""
    victims = {node: NodeVictims(list(v.uids), v.num_pdb_violations) for node, v in args.victims.items()}
    return PreemptionResult(victims, error)


class _Preemption:
    """One /preempt call: the pod, a CycleState after PreFilter, and the cluster's PDBs."""

    def __init__(self, engine: Engine, fwk: Framework, pod: Pod) -> None:
        self.engine = engine
        self.fwk = fwk
        self.pod = pod
        self.pdbs: list[PodDisruptionBudget] = list_pdbs(engine.objects)
        # One "now" for the whole call, so that pods without a start time compare equal everywhere.
        self.now = time.time()

    def run(self, proposals: Mapping[str, NodeVictims]) -> dict[str, NodeVictims]:
        """The nodes kept, in request order, each with its victims."""
        engine, fwk, pod = self.engine, self.fwk, self.pod
        snapshot = engine.algorithm.snapshot
        engine.cache.update_snapshot(snapshot)
        by_name = snapshot.node_info_map
        infos = [by_name[name] for name in proposals if name in by_name]
        # PreFilter once over the proposed nodes, as the scheduling cycle did before kube-scheduler's
        # dry run; each node then works on a clone of this state.
        state = engine.new_cycle_state()
        pre_result, status, with_nodes = fwk.run_pre_filter_plugins(state, pod, infos)
        if status is not None and not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            # berth's /filter rejects the pod on every node, whatever is evicted.
            logs.info(
                "Preempt: PreFilter rejects the pod on every node", 3, pod=pod.key, reason=status.message()
            )
            return {}
        allowed = None if pre_result is None else pre_result.node_names
        kept: dict[str, NodeVictims] = {}
        for name, proposed in proposals.items():
            info = by_name.get(name)
            if info is None:
                self._drop(name, "node not found in berth's cache")
            elif allowed is not None and name not in allowed:
                self._drop(name, f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(with_nodes))}]")
            else:
                victims = self._on_node(state, info, proposed)
                if victims is not None:
                    kept[name] = victims
        return kept

    def _on_node(self, state: CycleState, info: NodeInfo, proposed: NodeVictims) -> NodeVictims | None:
        """The victims to keep on ``info``'s node, or None to drop the node."""
        node_info = info  # select_victims works on a copy; the filters below only read it
        here = {pi.pod.uid: pi for pi in node_info.pods}
        potential = [here[uid] for uid in dict.fromkeys(proposed.uids) if uid in here]
        status: Status | None
        if potential:
            victims, _, status = select_victims(
                self.fwk, self.engine.nominator, state.clone(), self.pod, node_info, potential, self.pdbs
            )
        else:
            # Nothing berth holds there to remove: its filters judge the node as it is.
            victims = []
            nominated = self.engine.nominator.nominated_pods_for_node(node_info.name)
            status = self.fwk.run_filter_plugins_with_nominated_pods(
                state.clone(), self.pod, node_info, nominated
            )
        if status is not None and not status.is_success():
            if status.code is Code.ERROR:
                raise SchedulingError(status)
            self._drop(node_info.name, status.message())
            return None
        reprieved = {pi.pod.uid for pi in potential}.difference(p.uid for p in victims)
        uids = [uid for uid in proposed.uids if uid not in reprieved]
        if not uids:
            uids = list(proposed.uids)  # every victim reprieved: keep the request's list (module doc)
        return NodeVictims(uids, self._pdb_violations(proposed, uids, here))

    def _pdb_violations(self, proposed: NodeVictims, uids: Sequence[str], here: Mapping[str, PodInfo]) -> int:
        """How many of ``uids`` overdraw a PDB when every proposed victim spends its budgets."""
        if not self.pdbs:
            return 0
        infos: dict[str, PodInfo] = {}
        for i, uid in enumerate(proposed.uids):
            if uid in infos:
                continue
            if uid in here:
                infos[uid] = here[uid]
                continue
            pod = proposed.pods[i] if proposed.pods is not None else self.engine.cache.get_pod(uid)
            if pod is not None:
                infos[uid] = PodInfo(pod)
        key = importance_key(self.now)
        ordered = sorted(infos.values(), key=lambda pi: key(pi.pod))
        violating, _ = filter_pods_with_pdb_violation(ordered, self.pdbs)
        bad = {pi.pod.uid for pi in violating}
        return sum(1 for uid in dict.fromkeys(uids) if uid in bad)

    def _drop(self, node: str, reason: str) -> None:
        logs.info(
            "Preempt: node dropped, the pod would not fit there",
            3,
            pod=self.pod.key,
            node=node,
            reason=reason,
        )
