"""Docs that cannot drift: README.md and docs/*.md checked against the code and run as a reader would.

* every ``sh``/``bash`` block runs (``tests/docs/run_blocks.py``, in a network namespace of its own so
  that the docs' default ports are free, against the test control plane with three kubelet-less Nodes);
  blocks marked ``<!-- not-run: reason -->`` are listed at the end of the test output;
* every relative link points at a file that exists;
* every ``--flag`` named for berth exists in berth's parsers;
* every ``scheduler_*`` / ``berth_*`` metric named exists in berth's ``/metrics``;
* every file under ``examples/`` is used by some test.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docs.blocks import NOT_RUN, REPO_ROOT, Block, doc_files, parse, shell_blocks
from e2e.stack import BerthServer
from e2e.standalone import BerthScheduler

from app.cli.main import build_parser
from kube.controlplane import LocalControlPlane

#: Docs other helpers write in their own branches, linked from here before the merge brings them. The
#: lead deletes this list after merging them: from then on a link to a missing file fails again.

#: Flags the docs name in prose for programs other than berth (``berth`` command lines are always
#: checked against the sub-command's own parser).
FOREIGN_FLAGS = {
    "--nodes": "hack/control-plane.sh up",
    "--runtime-config": "kube-apiserver",
    "--enable-admission-plugins": "kube-apiserver",
    "--request-timeout": "kube-apiserver",
}

#: Words the docs use that look like metric names but are not.
NOT_METRICS = {
    "scheduler_perf": "kube-scheduler's benchmark suite",
    "berth_disk_speed": "the plugin tutorial's package name",
    # kube-scheduler's families that docs/metrics.md names as absent in berth
    "scheduler_volume_": "kube's volume binder cache families (scheduler_volume_*)",
    "scheduler_batch_attempts_total": "kube's OpportunisticBatching",
    "scheduler_batch_cache_flushed_total": "kube's OpportunisticBatching",
    "scheduler_get_node_hint_duration_seconds": "kube's OpportunisticBatching",
    "scheduler_store_schedule_results_duration_seconds": "kube's OpportunisticBatching",
}


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_METRIC = re.compile(r"\b((?:scheduler|berth)_[a-z0-9_]+)")
_BERTH_COMMAND = re.compile(r"(?:^|[\s;&|(]|\$ )berth\s+(run|serve|simulate)\b(.*)")
_METRIC_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")

ALL_SHELL_BLOCKS = shell_blocks()


@pytest.mark.kube
@pytest.mark.parametrize("block", ALL_SHELL_BLOCKS, ids=[b.where for b in ALL_SHELL_BLOCKS])
def test_shell_block_runs(block: Block, block_results: dict[str, dict[str, Any]]) -> None:
    """The block exits 0 (a background block: its server answers), as a reader typing it would see."""
    if block.mode == "not-run":
        NOT_RUN.append(block)
        pytest.skip(f"not-run: {block.argument}")
    result = block_results[block.where]
    assert result["status"] == "passed", (
        f"{block.where} ({result['status']}, exit {result.get('code')}):\n{block.text}\n--- output ---\n"
        f"{result.get('output', '')}\n--- server log ---\n{result.get('server_log', '')}"
    )


def _relative_links(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, target)`` of every link to a file (no URL scheme, no pure #anchor) in ``path``."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            yield number, target.split("#", 1)[0]


def test_links_point_at_files_that_exist() -> None:
    """A reader following a link finds the file."""
    broken = []
    for path in doc_files():
        for number, target in _relative_links(path):
            resolved = (path.parent / target).resolve()
            if not resolved.exists():
                broken.append(f"{path.relative_to(REPO_ROOT)}:{number}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def _berth_flags() -> dict[str, set[str]]:
    """The option strings of each berth sub-command's parser."""
    flags: dict[str, set[str]] = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                flags[name] = {option for a in sub._actions for option in a.option_strings}
    return flags


def _bench_flags() -> set[str]:
    """The flags of the benchmark scripts (``bench/*.py``), which the performance doc quotes."""
    found: set[str] = set()
    for script in (REPO_ROOT / "bench").glob("*.py"):
        found.update(re.findall(r"add_argument\(\s*\"(--[a-z][a-z0-9-]*)\"", script.read_text()))
    return found


def _berth_command_lines(block: Block) -> Iterator[tuple[str, str]]:
    """``(sub-command, rest of the command)`` of each ``berth`` command in a block (continuations joined)."""
    text = re.sub(r"\\\n", " ", block.text)
    for line in text.splitlines():
        for match in _BERTH_COMMAND.finditer(line):
            yield match.group(1), match.group(2)


def test_flags_named_in_the_docs_exist() -> None:
    """A flag the docs give berth is one of its parser's: in a ``berth SUB`` command line, SUB's own; in
    prose (an inline code span starting with ``--``), any sub-command's or a benchmark script's."""
    flags = _berth_flags()
    every = set().union(*flags.values(), _bench_flags())
    unknown = []
    for path in doc_files():
        for block in parse(path):
            if block.info not in {"sh", "bash", "console", "text"}:
                continue
            for command, rest in _berth_command_lines(block):
                for flag in _FLAG.findall(rest.split("#", 1)[0].split("|", 1)[0]):
                    if flag not in flags[command]:
                        unknown.append(f"{block.where}: berth {command} {flag}")
        prose = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
        for span in _INLINE_CODE.findall(prose):
            if not span.startswith("--"):
                continue
            word = span.split()[0].split("=", 1)[0]
            if "*" in word:  # a family of flags (``--requestheader-*``): at least one must exist
                if not fnmatch.filter(every, word):
                    unknown.append(f"{path.relative_to(REPO_ROOT)}: {span}")
                continue
            flag = _FLAG.match(span)
            if flag and flag.group(1) not in every and flag.group(1) not in FOREIGN_FLAGS:
                unknown.append(f"{path.relative_to(REPO_ROOT)}: {span}")
    assert not unknown, "flags berth does not have:\n" + "\n".join(unknown)


def _families(exposition: str) -> set[str]:
    """Metric family names in a Prometheus text exposition."""
    return {line.split()[2] for line in exposition.splitlines() if line.startswith("# HELP ")}


@pytest.fixture(scope="module")
def exposed_metrics(control_plane: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The metric families of ``berth serve``'s and ``berth run``'s ``/metrics``."""
    workdir = tmp_path_factory.mktemp("metrics")
    serve = BerthServer(control_plane.kubeconfig, workdir).start()
    try:
        with urllib.request.urlopen(f"{serve.url}/metrics", timeout=10) as resp:
            families = _families(resp.read().decode())
    finally:
        serve.stop()
    run = BerthScheduler.on(
        control_plane, workdir, namespace="kube-system", lease_name="docs-metrics", name="docs-metrics"
    ).start()
    try:
        families |= _families(run.get("/metrics")[1])
    finally:
        run.stop()
    return families | _registered_families()


def _registered_families() -> set[str]:
    """Every family berth registers: a labelled family without a series yet is left out of the
    exposition, as kube-scheduler leaves it out, but it exists."""
    from app import metrics
    from app.cli import main  # noqa: F401  (imports every face, so every family is registered)

    return {family.name for family in metrics.REGISTRY.collect()}


@pytest.mark.kube
def test_metrics_named_in_the_docs_exist(exposed_metrics: set[str]) -> None:
    """A ``scheduler_*`` or ``berth_*`` metric the docs name is one berth exposes (a counter may be named
    with its ``_total`` sample, a histogram with ``_bucket``/``_sum``/``_count``)."""
    unknown = []
    for path in doc_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name in _METRIC.findall(line):
                if name in NOT_METRICS:
                    continue
                base = next((name[: -len(s)] for s in _METRIC_SUFFIXES if name.endswith(s)), name)
                if name not in exposed_metrics and base not in exposed_metrics:
                    unknown.append(f"{path.relative_to(REPO_ROOT)}:{number}: {name}")
    assert not unknown, f"metrics berth does not expose (it has {sorted(exposed_metrics)}):\n" + "\n".join(
        unknown
    )


def test_every_example_is_used_by_a_test() -> None:
    """Each file under examples/ is named by some test module (a plugin module by its import name), so an
    example that stops working fails a test."""
    sources = [p.read_text() for p in (REPO_ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name]
    unused = []
    for example in sorted((REPO_ROOT / "examples").rglob("*")):
        if example.is_dir() or "__pycache__" in example.parts:
            continue
        name = example.stem if example.suffix == ".py" else example.name
        if not any(name in text and "examples" in text for text in sources):
            unused.append(example.relative_to(REPO_ROOT).as_posix())
    assert not unused, f"examples no test uses: {unused}"


def test_excerpts_match_their_files() -> None:
    """A block marked ``<!-- from: PATH -->`` appears verbatim in PATH: the code the docs show is the
    code the tests run."""
    stale = []
    for path in doc_files():
        for block in parse(path):
            if block.mode == "from":
                source = REPO_ROOT / block.argument
                if not source.is_file() or block.text not in source.read_text():
                    stale.append(f"{block.where}: not an excerpt of {block.argument}")
    assert not stale, "\n".join(stale)


def test_block_directives_are_well_formed() -> None:
    """Every doc parses: fences close, directives precede shell blocks, not-run blocks give a reason."""
    for path in doc_files():
        parse(path)  # raises DocError naming the file and line
