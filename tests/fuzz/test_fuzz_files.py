"""State files and configuration files under generated and mutated text: a clean error naming the
file, or a result that prints; never another exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz.bookkeeping import COUNTS
from fuzz.strategies import config_texts, state_texts
from hypothesis import given

from app.cli.common import load_configuration
from app.cli.options import CommandError
from app.config import load_config
from app.framework.runtime import FrameworkError
from app.plugins.registry import in_tree_registry
from app.scheduler.scheduler import Engine
from app.simulate import StateError, format_result, new_engine, parse_state, run_simulation

REGISTRY = in_tree_registry()
DEFAULTS = load_config(None, REGISTRY)


@given(state_texts())
def test_state_files_load_or_fail_cleanly(text: str) -> None:
    COUNTS["state files"] += 1
    try:
        state = parse_state(text, "fuzz.yaml")
    except StateError as err:
        COUNTS["state files refused"] += 1
        assert str(err).startswith("fuzz.yaml: ")
        str(err).encode("utf-8", "backslashreplace")  # what stderr writes
        return
    result = run_simulation(state, new_engine(state, DEFAULTS, REGISTRY, seed=1))
    for output in ("json", "table"):
        format_result(result, output).encode("utf-8")  # stdout is strict UTF-8


@given(config_texts())
def test_configuration_files_load_or_fail_cleanly(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    COUNTS["config files"] += 1
    path = Path(tmp_path_factory.mktemp("cfg")) / "config.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        cfg = load_configuration(str(path), REGISTRY)
        Engine(cfg, REGISTRY)
    except (CommandError, FrameworkError) as err:
        COUNTS["config files refused"] += 1
        assert str(err)
