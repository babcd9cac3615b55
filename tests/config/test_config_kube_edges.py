"""Configuration edge cases where berth follows kube-scheduler v1.36.3 (each also in the corpus that
tests/config/test_corpus.py runs through the real kube-scheduler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.api.errors import FieldError
from app.api.validation import ConfigErrors
from app.config import dump_config, load_config
from app.plugins.noderesources.args import NodeResourcesFitArgs
from app.plugins.registry import in_tree_registry

REGISTRY = in_tree_registry()
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(tmp_path: Path, body: str, name: str = "c.yaml") -> object:
    path = tmp_path / name
    path.write_text(HEAD + body)
    return load_config(str(path), REGISTRY)


def test_only_the_first_document_counts(tmp_path: Path) -> None:
    cfg = load(tmp_path, "parallelism: 8\n---\nkind: Secret\ndata: [1, 2\n")
    assert cfg.parallelism == 8  # type: ignore[attr-defined]


def test_a_null_profile_is_an_empty_one(tmp_path: Path) -> None:
    cfg = load(tmp_path, "profiles: [null]\n")
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]  # type: ignore[attr-defined]


def test_an_extender_without_url_prefix_is_accepted_and_its_timeout_completes_to_5s(tmp_path: Path) -> None:
    cfg = load(tmp_path, "extenders:\n- filterVerb: filter\n")
    assert dump_config(cfg)["extenders"] == [{"filterVerb": "filter", "httpTimeout": "5s", "urlPrefix": ""}]  # type: ignore[arg-type]


def test_ignored_by_scheduler_resources_become_node_resources_fit_ignored_resources(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {ignoredResources: [example.com/mine]}\n"
        "extenders:\n- urlPrefix: http://x\n  managedResources:\n  - {name: topolvm.io/capacity, ignoredByScheduler: true}\n"
        "  - {name: example.com/counted}\n",
    )
    fit = cfg.profiles[0].args_for("NodeResourcesFit")  # type: ignore[attr-defined]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.ignored_resources == ["topolvm.io/capacity"]  # the extenders' list replaces the file's


def test_ignored_by_scheduler_needs_node_resources_fit(tmp_path: Path) -> None:
    with pytest.raises(FieldError) as err:
        load(
            tmp_path,
            "profiles:\n- plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}}\n"
            "extenders:\n- urlPrefix: http://x\n  managedResources: [{name: a.io/b, ignoredByScheduler: true}]\n",
        )
    assert str(err.value) == "profiles[0].pluginConfig: can't find NodeResourcesFitArgs in plugin config"


def test_every_args_error_is_listed_with_the_rest_of_validation(tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors) as err:
        load(
            tmp_path,
            "parallelism: 0\nprofiles:\n- pluginConfig:\n"
            "  - {name: DefaultPreemption, args: {minCandidateNodesPercentage: 500}}\n"
            "  - {name: InterPodAffinity, args: {hardPodAffinityWeight: -1}}\n",
        )
    assert [e.path for e in err.value.errors] == [
        "parallelism",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
        "profiles[0].pluginConfig[1].args.hardPodAffinityWeight",
    ]


def test_node_resources_fit_args_are_validated_only_where_the_plugin_runs(tmp_path: Path) -> None:
    bad_fit = "  pluginConfig:\n  - {name: NodeResourcesFit, args: {scoringStrategy: {type: Nope}}}\n"
    # Disabled: kube-scheduler never validates them (its validator is registered under another name).
    cfg = load(
        tmp_path, "profiles:\n- plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}}\n" + bad_fit
    )
    assert cfg.profiles[0].args_for("NodeResourcesFit") is None  # type: ignore[attr-defined]
    with pytest.raises(FieldError) as err:
        load(tmp_path, "profiles:\n- schedulerName: a\n" + bad_fit)
    assert err.value.path == "profiles[0].pluginConfig[0].args.scoringStrategy.type"


def test_unreadable_extender_tls_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FieldError) as err:
        load(tmp_path, f"extenders:\n- urlPrefix: https://x\n  tlsConfig: {{caFile: {tmp_path}/nope.crt}}\n")
    assert (
        str(err.value)
        == f"extenders[0].tlsConfig.caFile: open {tmp_path}/nope.crt: no such file or directory"
    )
