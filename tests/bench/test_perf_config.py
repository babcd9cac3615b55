"""bench/perf_config.py: upstream scheduler_perf configs read from the Go module cache.

Only the parsing (no cluster, no scheduler): listing the workloads, filling in their params,
rendering the Go templates, and saying which ones cannot run and why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load_perf_config() -> ModuleType:
    """bench/perf_config.py by its path: putting bench/ on sys.path would shadow test packages
    (bench/extender.py against tests/extender)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "perf_config.py"
    spec = importlib.util.spec_from_file_location("perf_config", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["perf_config"] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


pc = _load_perf_config()


@pytest.fixture(scope="module")
def cases() -> list[pc.TestCase]:
    try:
        directory = pc.upstream_dir()
    except pc.ConfigError as err:
        pytest.skip(f"no scheduler_perf in the Go module cache: {err}")
    return pc.load_test_cases(directory)


def test_lists_upstream_workloads_by_their_benchmark_names(cases: list[pc.TestCase]) -> None:
    names = {pc.full_name(c, w) for c in cases for w in c.workloads}
    assert {
        "SchedulingBasic/5000Nodes_10000Pods",
        "Unschedulable/5kNodes/100Init/10kPods",
        "PreemptionBasic/1000Nodes",
        "TopologySpreading/5000Nodes_5000Pods",
    } <= names
    case, workload = pc.find_workload(cases, "Unschedulable/5kNodes/100Init/10kPods")
    assert (case.name, workload.name, case.suite) == ("Unschedulable", "5kNodes/100Init/10kPods", "misc")


def test_every_upstream_workload_expands(cases: list[pc.TestCase]) -> None:
    for case in cases:
        for workload in case.workloads:
            ops = pc.expand(case, workload)
            assert ops, pc.full_name(case, workload)


def test_expand_fills_in_params_templates_and_default_namespaces(cases: list[pc.TestCase]) -> None:
    case, workload = pc.find_workload(cases, "SchedulingBasic/5000Nodes_10000Pods")
    nodes, init, measure = pc.expand(case, workload)
    assert isinstance(nodes, pc.CreateNodes) and nodes.count == 5000 and nodes.template is None
    assert isinstance(init, pc.CreatePods) and (init.count, init.namespace, init.collect_metrics) == (
        1000,
        "namespace-1",
        False,
    )
    assert isinstance(measure, pc.CreatePods) and measure.count == 10000 and measure.collect_metrics
    assert measure.template is not None and measure.template.name == "pod-default.yaml"
    assert measure.template.is_file()
    # QueueingHints off: scheduler_perf emulates 1.33; otherwise it turns OpportunisticBatching off.
    assert pc.feature_gates(case, workload) == ({"SchedulerQueueingHints": False}, "1.33")
    _, enabled = pc.find_workload(cases, "SchedulingBasic/5000Nodes_10000Pods_QueueingHintsEnabled")
    assert pc.feature_gates(case, enabled) == (
        {"SchedulerQueueingHints": True, "OpportunisticBatching": False},
        None,
    )


def test_node_strategies_and_pod_sets(cases: list[pc.TestCase]) -> None:
    case, workload = pc.find_workload(cases, "TopologySpreading/5000Nodes_5000Pods")
    nodes = pc.expand(case, workload)[0]
    assert isinstance(nodes, pc.CreateNodes) and nodes.strategy is not None
    assert nodes.strategy.kind == "label"
    assert nodes.strategy.label_key == "topology.kubernetes.io/zone"
    assert len(nodes.strategy.label_values) == 3
    pod_sets = [
        (c, w) for c in cases for w in c.workloads if any(o.get("opcode") == "createPodSets" for o in c.ops)
    ]
    case, workload = pod_sets[0]
    unrolled = [op for op in pc.expand(case, workload) if isinstance(op, pc.CreatePods)]
    prefix = next(o for o in case.ops if o.get("opcode") == "createPodSets")["namespacePrefix"]
    assert {op.namespace for op in unrolled} >= {f"{prefix}-0"}


def test_templates_render_index_count_and_functions(cases: list[pc.TestCase]) -> None:
    directory = pc.upstream_dir()
    blocker = directory / "event_handling/templates/podupdate-pod-blocker.yaml"
    pod = pc.load_object(blocker, {"Index": 7, "Count": 100})
    assert pod["metadata"]["name"] == "pod-blocker-7"
    assert (
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] == "300Mi"
    )  # DivideInt 30000 .Count
    assert pc.render_template("port: 8{{ Mod .Index 12 }}", {"Index": 25}) == "port: 81"
    with pytest.raises(pc.ConfigError, match="unsupported template function 'Nope'"):
        pc.render_template("{{Nope .Index}}", {"Index": 1}, "x.yaml")
    with pytest.raises(pc.ConfigError, match=r"x\.yaml.*no field Size"):
        pc.render_template("{{.Size}}", {"Index": 1}, "x.yaml")


def test_says_what_cannot_run_and_why(cases: list[pc.TestCase]) -> None:
    dra = [(c, w) for c in cases if c.suite == "dra" for w in c.workloads]
    assert dra
    for case, workload in dra:
        ops = pc.expand(case, workload)
        assert any(
            "createResourceDriver" in p or "allocResourceClaims" in p for p in pc.harness_problems(case, ops)
        ) or ("DynamicResources" in pc.required_plugins(case, ops)), pc.full_name(case, workload)
    case, workload = pc.find_workload(cases, "NodeDeclaredFeaturesEnabled/5000Nodes20DeclaredFeatures")
    assert any("WithPreRunFn" in p for p in pc.harness_problems(case, pc.expand(case, workload)))
    case, workload = pc.find_workload(cases, "SchedulingBasic/500Nodes")
    ops = pc.expand(case, workload)
    assert pc.harness_problems(case, ops) == [] and pc.required_plugins(case, ops) == {}


def test_dra_workloads_publish_slices_through_the_resource_driver_op(cases: list[pc.TestCase]) -> None:
    case, workload = pc.find_workload(
        cases, "SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled"
    )
    ops = pc.expand(case, workload)
    # maxClaimsPerNodeParam filled in from the workload, the glob kept for matching node names.
    assert [op for op in ops if isinstance(op, pc.CreateResourceDriver)] == [
        pc.CreateResourceDriver(2, "test-driver.cdi.k8s.io", 10, "scheduler-perf-dra-*")
    ]
    assert pc.harness_problems(case, ops) == []
    assert pc.required_plugins(case, ops)["DynamicResources"] == "DRA objects (pod-with-claim-template.yaml)"
    # Claims allocated by the test process itself still cannot be run from outside it.
    case, workload = pc.find_workload(cases, "SteadyStateClusterResourceClaimTemplate/empty_100nodes")
    problems = pc.harness_problems(case, pc.expand(case, workload))
    assert any(p.startswith("op 5 allocResourceClaims:") for p in problems)
    assert not any("createResourceDriver" in p for p in problems)


def test_resource_driver_op_checks_its_fields_as_upstream(tmp_path: Path) -> None:
    config = tmp_path / "performance-config.yaml"
    op = "  - opcode: createResourceDriver\n    nodes: dra-*\n    maxClaimsPerNodeParam: $claims\n"
    config.write_text(
        f"- name: NoDriver\n  workloadTemplate:\n{op}  workloads:\n  - name: w\n    params: {{claims: 3}}\n"
    )
    (case,) = pc.parse_config(config)
    with pytest.raises(
        pc.ConfigError, match=r"NoDriver: op 0 \(createResourceDriver\): driverName must be set"
    ):
        pc.expand(case, case.workloads[0])
    config.write_text(
        "- name: Negative\n  workloadTemplate:\n  - opcode: createResourceDriver\n    driverName: d\n"
        "    nodes: '*'\n    maxClaimsPerNode: -1\n  workloads:\n  - name: w\n"
    )
    (case,) = pc.parse_config(config)
    with pytest.raises(pc.ConfigError, match=r"invalid maxClaimsPerNode=-1"):
        pc.expand(case, case.workloads[0])


def test_bad_input_names_the_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "performance-config.yaml"
    config.write_text(
        "- name: Broken\n  workloadTemplate:\n  - opcode: createPods\n    countParam: $pods\n    bogus: 1\n"
        "  workloads:\n  - name: w\n    params: {pods: 3}\n"
    )
    (case,) = pc.parse_config(config)
    with pytest.raises(
        pc.ConfigError, match=r"performance-config.yaml: Broken: op 0 \(createPods\): unknown field"
    ):
        pc.expand(case, case.workloads[0])
    config.write_text(
        "- name: Unused\n  workloadTemplate:\n  - opcode: createNodes\n    count: 1\n"
        "  workloads:\n  - name: w\n    params: {extra: 3}\n"
    )
    (case,) = pc.parse_config(config)
    with pytest.raises(pc.ConfigError, match=r"parameters \['extra'\] are defined but unused"):
        pc.expand(case, case.workloads[0])
