"""kube-scheduler's scheduler_perf configurations, read from the Go module cache.

``test/integration/scheduler_perf/*/performance-config.yaml`` of ``k8s.io/kubernetes@<version>`` (the
version pinned in ``hack/versions.env``) hold test cases: a workload template (a list of ops such as
``createNodes`` or ``createPods`` whose counts are ``$params``), workloads that give the params, and
feature gates and labels on both. This module parses them the way scheduler_perf does
(``scheduler_perf.go``, ``operations.go``, ``executor.go``): strict field names, ``$param``
substitution, ``createPodSets`` unrolled into ``createPods``, template paths relative to the config file,
and templates rendered with Go's text/template (``{{.Index}}``, ``{{Mod .Index 50}}``, ...).

Nothing is copied into the project: :func:`upstream_dir` finds the files in ``$(go env GOMODCACHE)``.
``bench/scheduler_perf.py`` runs what this module describes.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kube.controlplane import k8s_version  # noqa: E402

SCHEDULER_PERF = Path("test/integration/scheduler_perf")

# What scheduler_perf's setupTestCase does to the gates (scheduler_perf.go): a workload that turns
# SchedulerQueueingHints off runs at emulated version 1.33 (the gate is locked on since 1.34);
# every other one gets OpportunisticBatching=false unless it sets that gate itself.
QUEUEING_HINTS = "SchedulerQueueingHints"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
QUEUEING_HINTS_OFF_EMULATED_VERSION = "1.33"


class ConfigError(ValueError):
    """An upstream file this bench cannot read (the message names the file and the field)."""


# ---- where the files are ---------------------------------------------------------------------------


def go_binary() -> str:
    """The ``go`` command: ``$GO``, else the one on PATH, else Go's default install (as hack/control-plane.sh)."""
    return os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"


def go_mod_cache() -> Path:
    """``$GOMODCACHE``, else ``go env GOMODCACHE``."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = go_binary()
    try:
        out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise ConfigError(f"cannot ask go for its module cache ({err}); set GOMODCACHE") from err
    return Path(out.strip())


def upstream_dir(version: str | None = None) -> Path:
    """scheduler_perf's directory in ``k8s.io/kubernetes@<version>`` in the module cache."""
    version = version or k8s_version()
    path = go_mod_cache() / f"k8s.io/kubernetes@{version}" / SCHEDULER_PERF
    if not path.is_dir():
        raise ConfigError(
            f"{path} is missing: `hack/control-plane.sh build` downloads k8s.io/kubernetes@{version} into the "
            "Go module cache"
        )
    return path


# ---- Go templates ----------------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"cannot cast {value!r} to float64")
    return float(value)


def _divide(i: Any, j: Any) -> float:
    if _number(j) == 0:
        raise ZeroDivisionError("division by zero")
    return _number(i) / _number(j)


def _product(*numbers: Any) -> float:
    result = 1.0
    for n in numbers:
        result *= _number(n)
    return result


def _go_mod(a: int, b: int) -> int:
    """Go's ``%``: the remainder has the sign of the dividend (Python's has the divisor's)."""
    if b == 0:
        raise ZeroDivisionError("integer divide by zero")
    return int(math.fmod(a, b))


# operations.go's getTemplateFuncs.
TEMPLATE_FUNCS: dict[str, Callable[..., float | int]] = {
    "AddFloat": lambda *n: sum(_number(x) for x in n),
    "AddInt": lambda *n: int(sum(_number(x) for x in n)),
    "SubtractFloat": lambda i, j: _number(i) - _number(j),
    "SubtractInt": lambda i, j: int(_number(i) - _number(j)),
    "MultiplyFloat": _product,
    "MultiplyInt": lambda *n: int(_product(*n)),
    "DivideFloat": _divide,
    "DivideInt": lambda i, j: int(_divide(i, j)),
    "Mod": lambda a, b: _go_mod(int(_number(a)), int(_number(b))),
}


def _go_format(value: Any) -> str:
    """How text/template prints a value (fmt's %v): integral floats without a fraction."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


def render_template(text: str, env: Mapping[str, Any], source: str = "template") -> str:
    """Render the subset of Go's text/template that scheduler_perf's templates use: ``{{.Field}}``
    and ``{{Func arg ...}}`` with :data:`TEMPLATE_FUNCS`, arguments ``.Field`` or numbers."""

    def argument(token: str) -> Any:
        if token.startswith("."):
            if token[1:] not in env:
                raise ConfigError(f"{source}: {{{{{token}}}}}: no field {token[1:]} (have {', '.join(env)})")
            return env[token[1:]]
        if _NUMBER.match(token):
            return float(token) if "." in token else int(token)
        raise ConfigError(f"{source}: unsupported template argument {token!r}")

    def action(match: re.Match[str]) -> str:
        tokens = match.group(1).split()
        if not tokens:
            raise ConfigError(f"{source}: empty template action {match.group(0)!r}")
        if len(tokens) == 1 and tokens[0] not in TEMPLATE_FUNCS:
            return _go_format(argument(tokens[0]))
        func = TEMPLATE_FUNCS.get(tokens[0])
        if func is None:
            raise ConfigError(f"{source}: unsupported template function {tokens[0]!r} in {match.group(0)!r}")
        try:
            return _go_format(func(*(argument(t) for t in tokens[1:])))
        except (TypeError, ZeroDivisionError) as err:
            raise ConfigError(f"{source}: {match.group(0)}: {err}") from err

    return _ACTION.sub(action, text)


def load_object(path: Path, env: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One Kubernetes object from a (templated, when ``env`` is given) YAML file."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror or err}") from err
    if env is not None:
        text = render_template(text, env, str(path))
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {err}") from err
    if not isinstance(obj, dict):
        raise ConfigError(f"{path}: expected one object, got {type(obj).__name__}")
    return obj


# ---- ops -------------------------------------------------------------------------------------------


def parse_duration(value: str, where: str) -> float:
    """A Go duration (``500ms``, ``5s``, ``1m30s``) in seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ConfigError(f"{where}: invalid duration {value!r}")
    return sum(float(n) * units[u] for n, u in parts)


@dataclass(frozen=True)
class Op:
    """One op of an expanded workload; ``index`` is its position (it names default namespaces)."""

    index: int


@dataclass(frozen=True)
class NodeStrategy:
    """One of createNodes' prepare strategies (test/utils/runners.go), applied after creation."""

    kind: str
    """``label``, ``uniqueLabel`` or ``allocatable``."""
    label_key: str = ""
    label_values: tuple[str, ...] = ()
    allocatable: Mapping[str, str] = field(default_factory=dict)
    csi_allocatable: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    migrated_plugins: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateNodes(Op):
    """createNodes: ``count`` nodes from ``template`` (or the base node), then ``strategy``."""

    count: int
    template: Path | None
    strategy: NodeStrategy | None


@dataclass(frozen=True)
class CreateNamespaces(Op):
    """createNamespaces: ``<prefix>-0`` .. ``<prefix>-<count-1>`` from ``template``."""

    prefix: str
    count: int
    template: Path | None


@dataclass(frozen=True)
class CreatePods(Op):
    """createPods (and each namespace of createPodSets)."""

    count: int
    namespace: str
    template: Path | None
    collect_metrics: bool
    skip_wait: bool
    steady_state: bool = False
    duration: float = 0.0
    pv_template: Path | None = None
    pvc_template: Path | None = None


@dataclass(frozen=True)
class DeletePods(Op):
    """deletePods: the pods of ``namespace`` matching ``label_selector``."""

    namespace: str
    label_selector: Mapping[str, str]
    per_second: int
    skip_wait: bool


@dataclass(frozen=True)
class Churn(Op):
    """churn: objects from ``templates`` created (``create``) or created and deleted in turn (``recreate``)."""

    mode: str
    number: int
    interval: float
    namespace: str
    templates: tuple[Path, ...]


@dataclass(frozen=True)
class Barrier(Op):
    """barrier: wait for the namespaces' pods (all known namespaces when empty)."""

    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str]
    stage: str


@dataclass(frozen=True)
class Sleep(Op):
    """sleep."""

    seconds: float


@dataclass(frozen=True)
class CreateAny(Op):
    """createAny: ``count`` objects from a template (``.Index``, ``.Count``)."""

    template: Path
    namespace: str
    count: int


@dataclass(frozen=True)
class UpdateAny(Op):
    """updateAny: ``count`` objects from a template PUT (and their status), ``per_second`` if set."""

    template: Path
    namespace: str
    count: int
    per_second: int
    subresources: tuple[str, ...]


@dataclass(frozen=True)
class StartCollecting(Op):
    """startCollectingMetrics: a measured window over ``namespaces``."""

    name: str
    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str]


@dataclass(frozen=True)
class StopCollecting(Op):
    """stopCollectingMetrics: the end of the open window."""


@dataclass(frozen=True)
class CreateResourceDriver(Op):
    """createResourceDriver: scheduler_perf's test DRA driver, one ResourceSlice of
    ``max_claims_per_node`` devices per node whose name matches the glob ``nodes``."""

    driver_name: str
    max_claims_per_node: int
    nodes: str


@dataclass(frozen=True)
class Unsupported(Op):
    """An op this bench cannot run; ``reason`` says why."""

    opcode: str
    reason: str


DRA_OPCODES = {
    "allocResourceClaims": "allocates ResourceClaims in the test process through the scheduler's own DRA manager",
    "createResourceClaims": "creates ResourceClaims for a DRA driver simulated in the test process",
}
"""scheduler_perf ops that need code running inside its process next to the scheduler."""

IN_PROCESS_HOOKS: dict[str, tuple[str, set[str]]] = {
    "nodedeclaredfeatures": (
        "its Go test replaces the node-feature registry with mock features and patches the nodes from "
        "hooks inside the test process (WithPreRunFn, WithNodeUpdateFn)",
        {"numNodeDeclaredFeatures"},
    ),
}
"""Suites (scheduler_perf subdirectories) whose Go tests run hooks in process, and the params they read."""

_FIELDS: dict[str, set[str]] = {
    "createNodes": {
        "count",
        "countParam",
        "nodeTemplatePath",
        "nodeAllocatableStrategy",
        "labelNodePrepareStrategy",
        "uniqueNodeLabelStrategy",
    },
    "createNamespaces": {"prefix", "count", "countParam", "namespaceTemplatePath"},
    "createPods": {
        "count",
        "countParam",
        "steadyState",
        "steadyStateParam",
        "duration",
        "durationParam",
        "collectMetrics",
        "namespace",
        "podTemplatePath",
        "skipWaitToCompletion",
        "persistentVolumeTemplatePath",
        "persistentVolumeClaimTemplatePath",
    },
    "createPodSets": {"count", "countParam", "namespacePrefix", "createPodsOp"},
    "deletePods": {"namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"},
    "churn": {"mode", "number", "intervalMilliseconds", "namespace", "templatePaths"},
    "barrier": {"namespaces", "labelSelector", "stageRequirement"},
    "sleep": {"duration", "durationParam"},
    "createAny": {"namespace", "templatePath", "count", "countParam"},
    "updateAny": {"namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources"},
    "startCollectingMetrics": {"name", "namespaces", "labelSelector"},
    "stopCollectingMetrics": set(),
    "createResourceDriver": {"driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes"},
}


@dataclass
class Workload:
    """One workload of a test case: its params, labels, gates and throughput threshold."""

    name: str
    params: dict[str, Any]
    labels: list[str]
    feature_gates: dict[str, bool]
    threshold: Any = None


@dataclass
class TestCase:
    """One test case of a performance-config.yaml."""

    name: str
    config: Path
    ops: list[dict[str, Any]]
    workloads: list[Workload]
    labels: list[str] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    default_pod_template: Path | None = None
    scheduler_config: Path | None = None

    __test__ = False  # not a pytest class, whatever its name

    @property
    def suite(self) -> str:
        """The scheduler_perf subdirectory the test case comes from (``misc``, ``affinity``, ...)."""
        return self.config.parent.name

    def path(self, relative: str) -> Path:
        """A path of the config, relative to its directory (scheduler_perf runs in that package)."""
        return (self.config.parent / relative).resolve()


class _Params:
    """A workload's params, as scheduler_perf's ``params``: numbers are ints, and every one must be used."""

    def __init__(self, where: str, params: dict[str, Any]) -> None:
        self.where = where
        self.params = params
        self.used: set[str] = set()

    def get(self, reference: str, kind: type = int) -> Any:
        name = reference.removeprefix("$")
        self.used.add(name)
        if name not in self.params:
            raise ConfigError(f"{self.where}: parameter {name} is undefined")
        value = self.params[name]
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{self.where}: parameter {name} has the wrong type {type(value).__name__}")
            return int(value)
        if not isinstance(value, kind):
            raise ConfigError(f"{self.where}: parameter {name} has the wrong type {type(value).__name__}")
        return value


def _bool_map(raw: Any, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, bool) for v in raw.values()):
        raise ConfigError(f"{where}: featureGates must map gate names to true/false")
    return {str(k): v for k, v in raw.items()}


def _strings(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise ConfigError(f"{where}: expected a list of strings")
    return list(raw)


def load_test_cases(directory: Path | None = None) -> list[TestCase]:
    """Every test case of every ``*/performance-config.yaml`` under scheduler_perf, in path order."""
    directory = directory or upstream_dir()
    cases: list[TestCase] = []
    for config in sorted(directory.glob("*/performance-config.yaml")):
        cases.extend(parse_config(config))
    if not cases:
        raise ConfigError(f"{directory}: no */performance-config.yaml")
    return cases


def parse_config(config: Path) -> list[TestCase]:
    """The test cases of one performance-config.yaml."""
    try:
        raw = yaml.safe_load(config.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{config}: {err}") from err
    if not isinstance(raw, list):
        raise ConfigError(f"{config}: expected a list of test cases")
    known = {
        "name",
        "featureGates",
        "metricsCollectorConfig",
        "workloadTemplate",
        "workloads",
        "schedulerConfigPath",
        "defaultPodTemplatePath",
        "labels",
        "defaultThresholdMetricSelector",
    }
    cases = []
    for i, item in enumerate(raw):
        where = f"{config}: test case {i}"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{where}: a test case needs a name")
        where = f"{config}: {item['name']}"
        unknown = set(item) - known
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        ops = item.get("workloadTemplate")
        if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
            raise ConfigError(f"{where}: workloadTemplate must be a list of ops")
        workloads = []
        for w in item.get("workloads") or []:
            if not isinstance(w, dict) or not isinstance(w.get("name"), str):
                raise ConfigError(f"{where}: every workload needs a name")
            workloads.append(
                Workload(
                    name=w["name"],
                    params=dict(w.get("params") or {}),
                    labels=_strings(w.get("labels"), f"{where}/{w['name']}: labels"),
                    feature_gates=_bool_map(w.get("featureGates"), f"{where}/{w['name']}"),
                    threshold=w.get("threshold"),
                )
            )
        case = TestCase(
            name=item["name"],
            config=config,
            ops=ops,
            workloads=workloads,
            labels=_strings(item.get("labels"), f"{where}: labels"),
            feature_gates=_bool_map(item.get("featureGates"), where),
        )
        if item.get("defaultPodTemplatePath"):
            case.default_pod_template = case.path(item["defaultPodTemplatePath"])
        if item.get("schedulerConfigPath"):
            case.scheduler_config = case.path(item["schedulerConfigPath"])
        cases.append(case)
    return cases


def full_name(case: TestCase, workload: Workload) -> str:
    """``TestCase/Workload``, as scheduler_perf names its benchmarks."""
    return f"{case.name}/{workload.name}"


def find_workload(cases: list[TestCase], name: str) -> tuple[TestCase, Workload]:
    """The workload named ``TestCase/Workload`` (workload names may contain ``/`` themselves)."""
    case_name, _, workload_name = name.partition("/")
    for case in cases:
        if case.name != case_name:
            continue
        for workload in case.workloads:
            if workload.name == workload_name:
                return case, workload
        names = ", ".join(w.name for w in case.workloads)
        raise ConfigError(f"test case {case_name} has no workload {workload_name!r} (it has: {names})")
    raise ConfigError(f"no test case {case_name!r} (try --list)")


def _selector(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: labelSelector must be a map of labels")
    return {str(k): str(v) for k, v in raw.items()}


def _count(op: dict[str, Any], params: _Params, where: str, default: int | None = None) -> int:
    if op.get("countParam"):
        return int(params.get(op["countParam"]))
    if "count" in op:
        if not isinstance(op["count"], int) or op["count"] < 0:
            raise ConfigError(f"{where}: count must be a non-negative integer")
        return int(op["count"])
    if default is None:
        raise ConfigError(f"{where}: count or countParam is required")
    return default


def _node_strategy(op: dict[str, Any], where: str) -> NodeStrategy | None:
    if op.get("nodeAllocatableStrategy") is not None:
        raw = op["nodeAllocatableStrategy"]
        return NodeStrategy(
            "allocatable",
            allocatable={str(k): str(v) for k, v in (raw.get("nodeAllocatable") or {}).items()},
            csi_allocatable=dict(raw.get("csiNodeAllocatable") or {}),
            migrated_plugins=tuple(raw.get("migratedPlugins") or ()),
        )
    if op.get("labelNodePrepareStrategy") is not None:
        raw = op["labelNodePrepareStrategy"]
        values = tuple(str(v) for v in raw.get("labelValues") or ())
        if not raw.get("labelKey") or not values:
            raise ConfigError(f"{where}: labelNodePrepareStrategy needs labelKey and labelValues")
        return NodeStrategy("label", label_key=str(raw["labelKey"]), label_values=values)
    if op.get("uniqueNodeLabelStrategy") is not None:
        raw = op["uniqueNodeLabelStrategy"]
        if not raw.get("labelKey"):
            raise ConfigError(f"{where}: uniqueNodeLabelStrategy needs labelKey")
        return NodeStrategy("uniqueLabel", label_key=str(raw["labelKey"]))
    return None


def _create_pods(
    case: TestCase, op: dict[str, Any], index: int, params: _Params, where: str, namespace: str | None = None
) -> CreatePods:
    steady = bool(
        params.get(op["steadyStateParam"], bool) if op.get("steadyStateParam") else op.get("steadyState")
    )
    duration = 0.0
    if op.get("durationParam"):
        duration = parse_duration(params.get(op["durationParam"], str), where)
    elif op.get("duration"):
        duration = parse_duration(str(op["duration"]), where)
    collect, skip = bool(op.get("collectMetrics")), bool(op.get("skipWaitToCompletion"))
    if collect and skip:
        raise ConfigError(f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time")
    template = case.path(op["podTemplatePath"]) if op.get("podTemplatePath") else case.default_pod_template
    return CreatePods(
        index,
        count=_count(op, params, where),
        namespace=namespace or op.get("namespace") or f"namespace-{index}",
        template=template,
        collect_metrics=collect,
        skip_wait=skip,
        steady_state=steady,
        duration=duration,
        pv_template=case.path(op["persistentVolumeTemplatePath"])
        if op.get("persistentVolumeTemplatePath")
        else None,
        pvc_template=case.path(op["persistentVolumeClaimTemplatePath"])
        if op.get("persistentVolumeClaimTemplatePath")
        else None,
    )


def _create_resource_driver(
    op: dict[str, Any], index: int, params: _Params, where: str
) -> CreateResourceDriver:
    """createResourceDriver with upstream's checks (createResourceDriverOp.isValid after patchParams)."""
    if op.get("maxClaimsPerNodeParam"):
        per_node = params.get(str(op["maxClaimsPerNodeParam"]))
    else:
        per_node = int(op.get("maxClaimsPerNode") or 0)
    if per_node < 0:
        raise ConfigError(f"{where}: invalid maxClaimsPerNode={per_node}")
    if not op.get("driverName"):
        raise ConfigError(f"{where}: driverName must be set")
    if not op.get("nodes"):
        raise ConfigError(f"{where}: nodes must be set")
    return CreateResourceDriver(index, str(op["driverName"]), per_node, str(op["nodes"]))


def expand(case: TestCase, workload: Workload) -> list[Op]:
    """The workload's ops with its params filled in (scheduler_perf's unrollWorkloadTemplate and
    patchParams). Ops this bench cannot run become :class:`Unsupported` with the reason; a param the
    workload defines and no op uses is an error, as upstream."""
    params = _Params(f"{case.config}: {full_name(case, workload)}", workload.params)
    if case.suite in IN_PROCESS_HOOKS:
        params.used.update(IN_PROCESS_HOOKS[case.suite][1])
    ops: list[Op] = []
    for i, op in enumerate(case.ops):
        opcode = op.get("opcode")
        where = f"{case.config}: {case.name}: op {i} ({opcode})"
        if opcode in DRA_OPCODES:
            # Not run, but its $params count as used (every one must be, as upstream checks).
            params.used.update(v[1:] for k, v in op.items() if k.endswith("Param") and isinstance(v, str))
            ops.append(Unsupported(len(ops), opcode, DRA_OPCODES[opcode]))
            continue
        if opcode not in _FIELDS:
            raise ConfigError(f"{where}: unknown opcode {opcode!r}")
        unknown = set(op) - _FIELDS[opcode] - {"opcode"}
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        index = len(ops)
        if opcode == "createNodes":
            template = case.path(op["nodeTemplatePath"]) if op.get("nodeTemplatePath") else None
            ops.append(CreateNodes(index, _count(op, params, where), template, _node_strategy(op, where)))
        elif opcode == "createNamespaces":
            if not op.get("prefix"):
                raise ConfigError(f"{where}: prefix is required")
            template = case.path(op["namespaceTemplatePath"]) if op.get("namespaceTemplatePath") else None
            ops.append(CreateNamespaces(index, str(op["prefix"]), _count(op, params, where), template))
        elif opcode == "createPods":
            ops.append(_create_pods(case, op, index, params, where))
        elif opcode == "createPodSets":
            inner = op.get("createPodsOp")
            if not isinstance(inner, dict):
                raise ConfigError(f"{where}: createPodsOp is required")
            for n in range(_count(op, params, where)):
                namespace = f"{op.get('namespacePrefix', '')}-{n}"
                ops.append(_create_pods(case, inner, len(ops), params, where, namespace))
        elif opcode == "deletePods":
            per_second = int(op.get("deletePodsPerSecond") or 0)
            if per_second < 0:
                raise ConfigError(f"{where}: deletePodsPerSecond must be non-negative")
            ops.append(
                DeletePods(
                    index,
                    str(op.get("namespace") or ""),
                    _selector(op.get("labelSelector"), where),
                    per_second,
                    bool(op.get("skipWaitToCompletion")),
                )
            )
        elif opcode == "churn":
            mode, number = op.get("mode"), int(op.get("number") or 0)
            if mode not in ("create", "recreate"):
                raise ConfigError(f"{where}: invalid mode {mode!r}; must be create or recreate")
            if number < 0 or (mode == "recreate" and number == 0):
                raise ConfigError(f"{where}: number must be positive for recreate, non-negative for create")
            paths = _strings(op.get("templatePaths"), f"{where}: templatePaths")
            if not paths:
                raise ConfigError(f"{where}: at least one template path is needed")
            ops.append(
                Churn(
                    index,
                    mode,
                    number,
                    (op.get("intervalMilliseconds") or 500) / 1000,
                    op.get("namespace") or f"namespace-{index}",
                    tuple(case.path(p) for p in paths),
                )
            )
        elif opcode == "barrier":
            stage = op.get("stageRequirement") or "Scheduled"
            if stage not in ("Scheduled", "Attempted"):
                raise ConfigError(f"{where}: invalid stageRequirement {stage!r}")
            namespaces = tuple(_strings(op.get("namespaces"), f"{where}: namespaces"))
            ops.append(Barrier(index, namespaces, _selector(op.get("labelSelector"), where), stage))
        elif opcode == "sleep":
            if op.get("durationParam"):
                seconds = parse_duration(params.get(op["durationParam"], str), where)
            else:
                seconds = parse_duration(str(op.get("duration") or "0s"), where)
            ops.append(Sleep(index, seconds))
        elif opcode in ("createAny", "updateAny"):
            if not op.get("templatePath"):
                raise ConfigError(f"{where}: templatePath must be set")
            template, namespace = case.path(op["templatePath"]), str(op.get("namespace") or "")
            count = _count(op, params, where, default=1)
            if opcode == "createAny":
                ops.append(CreateAny(index, template, namespace, count))
            else:
                subresources = tuple(_strings(op.get("subresources"), f"{where}: subresources"))
                per_second = int(op.get("updatePerSecond") or 0)
                ops.append(UpdateAny(index, template, namespace, count, per_second, subresources))
        elif opcode == "createResourceDriver":
            ops.append(_create_resource_driver(op, index, params, where))
        elif opcode == "startCollectingMetrics":
            namespaces = tuple(_strings(op.get("namespaces"), f"{where}: namespaces"))
            if not namespaces:
                raise ConfigError(f"{where}: namespaces cannot be empty")
            name = str(op.get("name") or "")
            ops.append(StartCollecting(index, name, namespaces, _selector(op.get("labelSelector"), where)))
        else:  # stopCollectingMetrics
            ops.append(StopCollecting(index))
    unused = sorted(set(workload.params) - params.used)
    if unused:
        raise ConfigError(f"{params.where}: the parameters {unused} are defined but unused")
    return ops


# ---- what a workload needs -------------------------------------------------------------------------


def feature_gates(case: TestCase, workload: Workload) -> tuple[dict[str, bool], str | None]:
    """The gates a workload runs with and the emulated version, if any (scheduler_perf's setupTestCase)."""
    gates = {**case.feature_gates, **workload.feature_gates}
    if gates.get(QUEUEING_HINTS) is False:
        return gates, QUEUEING_HINTS_OFF_EMULATED_VERSION
    gates.setdefault(OPPORTUNISTIC_BATCHING, False)
    return gates, None


_VOLUME_KINDS = {
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
}


def _template_files(case: TestCase, ops: list[Op]) -> list[Path]:
    files: list[Path] = []
    for op in ops:
        if isinstance(op, CreatePods):
            files += [p for p in (op.template, op.pv_template, op.pvc_template) if p is not None]
        elif isinstance(op, CreateNodes | CreateAny | UpdateAny) and op.template is not None:
            files.append(op.template)
        elif isinstance(op, Churn):
            files += list(op.templates)
    return files


def required_plugins(case: TestCase, ops: list[Op]) -> dict[str, str]:
    """Scheduling plugins a workload's objects need, with why: volumes (VolumeBinding), DRA
    (DynamicResources), node declared features (NodeDeclaredFeatures)."""
    needed: dict[str, str] = {}
    for op in ops:
        if isinstance(op, Unsupported) and op.opcode in DRA_OPCODES:
            needed["DynamicResources"] = f"{op.opcode} op"
        if isinstance(op, CreateResourceDriver):
            needed["DynamicResources"] = "createResourceDriver op"
        if isinstance(op, CreatePods) and op.pvc_template is not None:
            needed["VolumeBinding"] = "pods with PersistentVolumeClaims"
        if isinstance(op, CreateNodes) and op.strategy is not None and op.strategy.csi_allocatable:
            needed["NodeVolumeLimits"] = "CSINode volume limits"
    for path in _template_files(case, ops):
        text = path.read_text() if path.is_file() else ""
        if re.search(r"^apiVersion:\s*resource\.k8s\.io/", text, re.MULTILINE) or "resourceClaims:" in text:
            needed["DynamicResources"] = f"DRA objects ({path.name})"
        kind = re.search(r"^kind:\s*(\w+)", text, re.MULTILINE)
        if (
            (kind and kind.group(1) in _VOLUME_KINDS)
            or "persistentVolumeClaim:" in text
            or "ephemeral:" in text
        ):
            needed["VolumeBinding"] = f"volume objects ({path.name})"
        if "declaredFeatures" in text:
            needed["NodeDeclaredFeatures"] = f"nodes declaring features ({path.name})"
    return needed


def harness_problems(case: TestCase, ops: list[Op]) -> list[str]:
    """Why this bench cannot run the workload with any scheduler (empty: it can)."""
    problems = [f"op {op.index} {op.opcode}: {op.reason}" for op in ops if isinstance(op, Unsupported)]
    if case.suite in IN_PROCESS_HOOKS:
        problems.append(f"{case.suite}: {IN_PROCESS_HOOKS[case.suite][0]}")
    if case.scheduler_config is not None:
        problems.append(
            f"schedulerConfigPath {case.scheduler_config.name}: custom scheduler configs are not wired in"
        )
    for op in ops:
        if isinstance(op, CreatePods) and op.steady_state:
            problems.append(f"op {op.index} createPods: steadyState mode is not implemented")
        if isinstance(op, CreatePods) and op.pvc_template is not None and op.pv_template is None:
            problems.append(
                f"op {op.index} createPods: persistentVolumeClaimTemplatePath without a PV template"
            )
    return problems
