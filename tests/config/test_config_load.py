"""Loading files, strict decoding and ``dump_config`` (``--write-config-to``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.errors import FieldError
from app.api.validation import format_duration, parse_duration
from app.config import ConfigFileError, Extender, dump_config, load_config, parse_config
from app.plugins.nodeaffinity.args import NodeAffinityArgs
from app.plugins.noderesources.args import NodeResourcesFitArgs

FULL = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 32
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
leaderElection:
  leaderElect: false
  leaseDuration: 1m30s
  renewDeadline: 1m
  retryPeriod: 100ms
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 100.5
  burst: 200
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 2
        - name: memory
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: node-role.kubernetes.io/worker
              operator: Exists
- schedulerName: bin-packing
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
extenders:
- urlPrefix: https://127.0.0.1:8443/scheduler
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 3
  bindVerb: bind
  enableHTTPS: true
  tlsConfig: {caFile: /etc/ext/ca.crt, caData: aGVsbG8=}
  httpTimeout: 10s
  nodeCacheCapable: true
  managedResources:
  - {name: example.com/foo, ignoredByScheduler: true}
"""


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_full_file_loads(tmp_path: Path, catalog: Any) -> None:
    cfg = load_config(write(tmp_path, FULL), catalog)
    assert cfg.parallelism == 32 and cfg.percentage_of_nodes_to_score == 50
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        False,
        90.0,
        60.0,
        0.1,
    )
    assert cfg.client_connection.qps == 100.5 and cfg.client_connection.burst == 200
    assert cfg.client_connection.content_type == "application/vnd.kubernetes.protobuf"
    first, second = cfg.profiles
    fit = first.args_for("NodeResourcesFit")
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "MostAllocated"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [("cpu", 2), ("memory", 1)]
    affinity = first.args_for("NodeAffinity")
    assert isinstance(affinity, NodeAffinityArgs) and affinity.added_affinity is not None
    assert [p.name for p in first.plugins.score.enabled] == ["NodeResourcesFit"]
    assert second.percentage_of_nodes_to_score == 100
    assert "NodeResourcesBalancedAllocation" not in [pc.name for pc in second.plugin_config]
    [ext] = cfg.extenders
    assert ext == Extender(
        url_prefix="https://127.0.0.1:8443/scheduler",
        filter_verb="filter",
        prioritize_verb="prioritize",
        weight=3,
        bind_verb="bind",
        enable_https=True,
        tls_config=ext.tls_config,
        http_timeout=10.0,
        node_cache_capable=True,
        managed_resources=ext.managed_resources,
    )
    assert ext.tls_config is not None and ext.tls_config.ca_data == b"hello"
    assert ext.managed_resources[0].ignored_by_scheduler
    # Round trip through the write-config-to form.
    assert parse_config(dump_config(cfg), catalog) == cfg
    assert parse_config(yaml.safe_load(yaml.safe_dump(dump_config(cfg))), catalog) == cfg


def test_json_input(tmp_path: Path, catalog: Any) -> None:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "json-scheduler"}],
    }
    cfg = load_config(write(tmp_path, json.dumps(raw), "c.json"), catalog)
    assert cfg.profiles[0].scheduler_name == "json-scheduler"
    # Tab-indented JSON is not YAML, but still loads.
    cfg = load_config(write(tmp_path, json.dumps(raw, indent="\t"), "t.json"), catalog)
    assert cfg.profiles[0].scheduler_name == "json-scheduler"


def test_none_is_all_defaults(catalog: Any) -> None:
    cfg = load_config(None, catalog)
    assert cfg == parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}, catalog
    )


def test_file_errors(tmp_path: Path, catalog: Any) -> None:
    with pytest.raises(ConfigFileError) as exc:
        load_config(str(tmp_path / "missing.yaml"), catalog)
    assert exc.value.path.endswith("missing.yaml")
    with pytest.raises(ConfigFileError):
        load_config(str(tmp_path), catalog)  # a directory
    with pytest.raises(ConfigFileError):
        load_config(write(tmp_path, "a: [1, 2\n"), catalog)
    # An escape past Unicode's last code point: a syntax error with its place, not chr()'s ValueError.
    for escape in ("\\U0011FFFF", "\\UFFFFFFFF"):
        with pytest.raises(ConfigFileError, match=r"(?s)line 1, column 13:.*escape beyond Unicode"):
            load_config(write(tmp_path, f'apiVersion: "{escape}"\n'), catalog)
    # Several documents: the first is decoded, the rest not even parsed (kube-scheduler's decoder).
    with pytest.raises(FieldError, match=r'^apiVersion: Unsupported value: "a"'):
        load_config(write(tmp_path, "apiVersion: a\n---\napiVersion: b\n"), catalog)
    with pytest.raises(FieldError, match="expected a KubeSchedulerConfiguration object"):
        load_config(write(tmp_path, "- a\n- b\n"), catalog)
    with pytest.raises(FieldError, match="expected a KubeSchedulerConfiguration object"):
        load_config(write(tmp_path, ""), catalog)


def test_duplicate_fields(tmp_path: Path, catalog: Any) -> None:
    text = FULL.replace("  burst: 200\n", "  burst: 200\n  burst: 300\n")
    with pytest.raises(FieldError) as exc:
        load_config(write(tmp_path, text), catalog)
    assert str(exc.value) == 'clientConnection.burst: duplicate field "burst"'
    with pytest.raises(FieldError) as exc:
        load_config(write(tmp_path, '{"kind": "a",\t"kind": "b"}', "d.json"), catalog)
    assert exc.value.message == 'duplicate field "kind"'


V1 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("kind: KubeSchedulerConfiguration\n", "apiVersion", "Required value"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "apiVersion",
            'Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: "kubescheduler.config.k8s.io/v1"',
        ),
        ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n", "kind", 'Unsupported value: "Policy"'),
        (V1 + "foo: 1\n", "foo", 'unknown field "foo"'),
        (
            V1 + "profiles:\n- schedulerName: a\n  plugin: {}\n",
            "profiles[0].plugin",
            'unknown field "plugin"',
        ),
        (
            V1 + "extenders:\n- urlPrefix: x\n  enableHttps: true\n",
            "extenders[0].enableHttps",
            'unknown field "enableHttps"',
        ),
        (V1 + "parallelism: abc\n", "parallelism", "expected an integer, got string"),
        (V1 + "parallelism: 4294967296\n", "parallelism", "out of range for int32"),
        (V1 + "profiles: {a: 1}\n", "profiles", "expected an array, got object"),
        (V1 + "profiles: [[1]]\n", "profiles[0]", "expected an object, got array"),
        (
            V1 + "leaderElection: {leaseDuration: 15}\n",
            "leaderElection.leaseDuration",
            "expected a string, got number",
        ),
        (
            V1 + "leaderElection: {leaseDuration: 15x}\n",
            "leaderElection.leaseDuration",
            'time: unknown unit "x" in duration "15x"',
        ),
        (V1 + "enableProfiling: 'yes'\n", "enableProfiling", "expected a boolean"),
        (
            V1 + "extenders:\n- urlPrefix: x\n  tlsConfig: {caData: '!!'}\n",
            "extenders[0].tlsConfig.caData",
            "illegal base64",
        ),
        (
            V1 + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: [1]\n",
            "profiles[0].pluginConfig[0].args",
            "expected an object",
        ),
        (
            V1 + "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: Foo\n",
            "profiles[0].plugins.filter.enabled[0].name",
            'FilterPlugin "Foo" does not exist',
        ),
        (
            V1 + "profiles:\n- plugins:\n    placementScore: {enabled: [{name: X}]}\n",
            "profiles[0].plugins.placementScore.enabled[0].name",
            "berth does not support",
        ),
    ],
)
def test_bad_input(tmp_path: Path, catalog: Any, text: str, path: str, message: str) -> None:
    with pytest.raises(FieldError) as exc:
        load_config(write(tmp_path, text), catalog)
    assert exc.value.path == path
    assert message in exc.value.message


def test_bad_scoring_strategy_type_path(tmp_path: Path, catalog: Any) -> None:
    text = V1 + (
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {}\n"
        "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Foo\n"
    )
    with pytest.raises(FieldError) as exc:
        load_config(write(tmp_path, text), catalog)
    assert str(exc.value) == (
        'profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: "Foo": '
        'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    )


WRITE_CONFIG_TO = """\
apiVersion: kubescheduler.config.k8s.io/v1
clientConnection:
  acceptContentTypes: ""
  burst: 100
  contentType: application/vnd.kubernetes.protobuf
  kubeconfig: ""
  qps: 50
enableContentionProfiling: true
enableProfiling: true
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 15s
  renewDeadline: 10s
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
  retryPeriod: 2s
parallelism: 16
percentageOfNodesToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- pluginConfig:
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeAffinityArgs
    name: NodeAffinity
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesBalancedAllocationArgs
      resources:
      - name: cpu
        weight: 1
      - name: memory
        weight: 1
    name: NodeResourcesBalancedAllocation
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        type: LeastAllocated
    name: NodeResourcesFit
  plugins:
    bind: {}
    filter: {}
    multiPoint:
      enabled:
      - name: SchedulingGates
        weight: 0
      - name: PrioritySort
        weight: 0
      - name: NodeUnschedulable
        weight: 0
      - name: NodeName
        weight: 0
      - name: TaintToleration
        weight: 3
      - name: NodeAffinity
        weight: 2
      - name: NodePorts
        weight: 0
      - name: NodeResourcesFit
        weight: 1
      - name: NodeResourcesBalancedAllocation
        weight: 1
      - name: ImageLocality
        weight: 1
      - name: DefaultBinder
        weight: 0
    permit: {}
    placementGenerate: {}
    placementScore: {}
    postBind: {}
    postFilter: {}
    preBind: {}
    preEnqueue: {}
    preFilter: {}
    preScore: {}
    queueSort: {}
    reserve: {}
    score: {}
  schedulerName: default-scheduler
"""


def test_dump_default_config(catalog: Any) -> None:
    cfg = load_config(None, catalog)
    dumped = dump_config(cfg)
    assert dumped == yaml.safe_load(WRITE_CONFIG_TO)
    assert list(dumped) == sorted(dumped)
    assert parse_config(dumped, catalog) == cfg


def test_dump_extenders_and_options(tmp_path: Path, catalog: Any) -> None:
    dumped = dump_config(load_config(write(tmp_path, FULL), catalog))
    assert dumped["leaderElection"] == {
        "leaderElect": False,
        "leaseDuration": "1m30s",
        "renewDeadline": "1m0s",
        "resourceLock": "leases",
        "resourceName": "kube-scheduler",
        "resourceNamespace": "kube-system",
        "retryPeriod": "100ms",
    }
    assert dumped["extenders"] == [
        {
            "bindVerb": "bind",
            "enableHTTPS": True,
            "filterVerb": "filter",
            "httpTimeout": "10s",
            "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
            "nodeCacheCapable": True,
            "prioritizeVerb": "prioritize",
            "tlsConfig": {"caData": "aGVsbG8=", "caFile": "/etc/ext/ca.crt"},
            "urlPrefix": "https://127.0.0.1:8443/scheduler",
            "weight": 3,
        }
    ]
    profiles: Any = dumped["profiles"]
    assert profiles[1]["percentageOfNodesToScore"] == 100
    assert profiles[0]["plugins"]["score"] == {
        "disabled": [{"name": "ImageLocality", "weight": 0}],
        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
    }


@pytest.mark.parametrize(
    ("text", "seconds", "formatted"),
    [
        ("15s", 15.0, "15s"),
        ("1m30s", 90.0, "1m30s"),
        ("100ms", 0.1, "100ms"),
        ("0", 0.0, "0s"),
        ("1h", 3600.0, "1h0m0s"),
        ("1.5s", 1.5, "1.5s"),
        ("2m", 120.0, "2m0s"),
        ("500us", 0.0005, "500µs"),
        ("-5s", -5.0, "-5s"),
    ],
)
def test_durations(text: str, seconds: float, formatted: str) -> None:
    assert parse_duration(text) == seconds
    assert format_duration(seconds) == formatted


@pytest.mark.parametrize("bad", ["", "15", "s", "1x", "1s2"])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: "
            + "1" * 5000,
            "parallelism: integer of 5000 digits is out of range",
        ),
        ("x: " + "[" * 600 + "]" * 600, "nested more than 254 levels deep"),
        ('{"x": ' + "[" * 1100 + "]" * 1100 + "}", "nested more than 254 levels deep"),
    ],
    ids=["huge-int", "deep-yaml", "deep-json"],
)
def test_hostile_config_files_are_clean_errors(tmp_path: Path, text: str, message: str) -> None:
    from app.cli.common import load_configuration
    from app.cli.options import CommandError
    from app.plugins.registry import in_tree_registry

    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(CommandError, match=message):
        load_configuration(str(path), in_tree_registry())
