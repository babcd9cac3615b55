"""``berth capacity``: how many more replicas of a pod fit on a cluster state, as
kubernetes-sigs/cluster-capacity counts them.

Copies of the pod are scheduled one at a time through the full engine (every filter and score
plugin of its profile, each copy counted for the next) with preemption off, until one does not fit:
that copy's FitError says what stops the next replica. The state's pending pods are left out, as
cluster-capacity leaves them out: the question is the room on the cluster as it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from app.api.errors import FieldError
from app.api.objects import Pod, json_type_name, parse_pod
from app.config.types import SchedulerConfiguration
from app.framework.registry import Registry
from app.scheduler.scheduler import Engine
from app.simulate.formats import CAPACITY_OUTPUT_FORMATS
from app.simulate.report import seed_line
from app.simulate.state import BUILTIN_PRIORITY_CLASSES, ClusterState, StateError
from app.simulate.state import _read_text as read_text  # the same errors as a state file's

__all__ = [
    "CAPACITY_OUTPUT_FORMATS",
    "CapacityError",
    "CapacityResult",
    "format_capacity",
    "load_pod_template",
    "run_capacity",
]


class CapacityError(StateError):
    """The pod file is unreadable or not a schedulable pod; the message names the file and field."""


@dataclass(slots=True)
class CapacityResult:
    """The replicas that fit, per node (every node, in state order), and what stopped the next one."""

    pod: str  # the template's namespace/name
    replicas: int
    per_node: dict[str, int]
    stopped_by: str  # "FitError", "Error" or "Max"
    message: str  # the FitError (or error) of the first copy that did not fit, or why counting stopped
    seed: int


def _pod_document(text: str, path: str) -> Mapping[str, Any]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise CapacityError(path, f"invalid YAML: {err}") from None
    if len(docs) != 1:
        raise CapacityError(path, f"expected exactly one Pod, found {len(docs)} documents")
    [raw] = docs
    if not isinstance(raw, Mapping):
        raise CapacityError(path, f"expected a Pod object, got {json_type_name(raw)}")
    if raw.get("kind") != "Pod" or raw.get("apiVersion") != "v1":
        raise CapacityError(
            path, f"kind: expected a Pod (apiVersion v1), got {raw.get('kind')!r} ({raw.get('apiVersion')!r})"
        )
    return raw


def _priority(pod: Pod, state: ClusterState, path: str) -> int:
    """What the Priority admission plugin would give the pod on this cluster."""
    if pod.priority is not None:
        return pod.priority
    classes = {pc.name: pc for pc in (*BUILTIN_PRIORITY_CLASSES, *state.priority_classes)}
    if pod.priority_class_name:
        pc = classes.get(pod.priority_class_name)
        if pc is None:
            raise CapacityError(
                path,
                f"spec.priorityClassName: Not found: no PriorityClass with name "
                f"{pod.priority_class_name} in the state",
            )
        return pc.value
    defaults = [pc.value for pc in state.priority_classes if pc.global_default]
    return min(defaults) if defaults else 0


def load_pod_template(path: str, state: ClusterState, cfg: SchedulerConfiguration) -> Pod:
    """The pod to replicate, from a one-Pod YAML or JSON file, admitted against ``state``."""
    text = read_text(path)
    try:
        pod = parse_pod(_pod_document(text, path))
    except FieldError as err:
        raise CapacityError(path, f"{err}") from None
    if pod.node_name:
        raise CapacityError(path, "spec.nodeName: must be empty: capacity places the copies itself")
    served = [p.scheduler_name for p in cfg.profiles]
    if pod.scheduler_name not in served:
        raise CapacityError(
            path,
            f'spec.schedulerName: "{pod.scheduler_name}" is served by no profile '
            f"(profiles: {', '.join(served)})",
        )
    return dataclasses.replace(pod, priority=_priority(pod, state, path))


def run_capacity(
    state: ClusterState,
    template: Pod,
    cfg: SchedulerConfiguration,
    registry: Registry,
    seed: int,
    max_replicas: int | None = None,
    memoize: bool = True,
) -> CapacityResult:
    """Schedule copies of ``template`` on ``state``'s nodes and running pods until one does not fit
    (or ``max_replicas`` fit). Without a maximum, counting also stops one copy past every node's
    allowed pods: only a configuration without NodeResourcesFit gets there, and nothing else would stop it.

    ``memoize``: between copies, node-local filter verdicts and raw scores of the nodes the last
    copy did not change are kept (app/scheduler/node_memo.py): the same counts, a fraction of the
    plugin calls. Off only to check that claim."""
    engine = Engine(cfg, registry, objects=state.objects, seed=seed)
    engine.algorithm.memoize_node_local = memoize
    for profile in engine.profiles.values():
        profile.post_filter = []  # preemption off: a copy takes only free room, as cluster-capacity's
    for node in state.nodes:
        engine.cache.add_node(node)
    for pod in state.running:
        engine.cache.add_pod(pod)
    fwk = engine.framework_for(template)
    per_node = {node.name: 0 for node in state.nodes}
    pod_slots = int(sum(node.allocatable.get("pods", 0) for node in state.nodes))
    # One copy past the pod slots gets NodeResourcesFit's "Too many pods": the FitError to report.
    limit = max_replicas if max_replicas is not None else pod_slots + 1
    replicas = 0
    while replicas < limit:
        suffix = f"capacity-{replicas + 1}"
        copy = dataclasses.replace(
            template, name=f"{template.name}-{suffix}", uid=f"{template.uid or template.name}-{suffix}"
        )
        attempt = engine.schedule_one(copy, fwk)
        if attempt.status != "Scheduled" or attempt.node is None:
            stopped_by = "FitError" if attempt.status == "Unschedulable" else "Error"
            return CapacityResult(template.key, replicas, per_node, stopped_by, attempt.message, seed)
        per_node[attempt.node] = per_node.get(attempt.node, 0) + 1
        replicas += 1
    why = (
        f"stopped at --max {max_replicas}"
        if max_replicas is not None
        else f"stopped after {replicas}: more than the nodes' allocatable pods ({pod_slots}) fit, "
        "so no plugin counts pods (is NodeResourcesFit disabled?)"
    )
    return CapacityResult(template.key, replicas, per_node, "Max", why, seed)


def format_capacity(result: CapacityResult, output: str = "table") -> str:
    """``-o table``: the count, one row per node that takes replicas, what stops the next; ``-o json``."""
    if output == "json":
        doc = {
            "pod": result.pod,
            "replicas": result.replicas,
            "nodes": result.per_node,
            "stoppedBy": {"reason": result.stopped_by, "message": result.message},
            "seed": result.seed,
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    lines = [f"{result.replicas} more replica(s) of {result.pod} fit."]
    taking = [(name, n) for name, n in result.per_node.items() if n]
    if taking:
        width = max(len("NODE"), *(len(name) for name, _ in taking)) + 3
        lines.append("")
        lines.append("NODE".ljust(width) + "REPLICAS")
        lines.extend(name.ljust(width) + str(n) for name, n in taking)
    lines.append("")
    label = "The next one does not fit" if result.stopped_by == "FitError" else "Stopped"
    lines.append(f"{label}: {result.message}")
    lines.append("")
    return "\n".join(lines) + "\n" + seed_line(result.seed)
