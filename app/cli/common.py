"""Setup steps shared by commands: plugin registry, configuration, --write-config-to."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import orjson
import yaml

from app.api.errors import FieldError
from app.cli.options import CommandError
from app.config import ConfigFileError, dump_config, load_config
from app.config.types import SchedulerConfiguration
from app.framework.registry import Registry, RegistryError
from app.plugins.registry import in_tree_registry


def build_registry(plugin_modules: Sequence[str]) -> Registry:
    """In-tree plugins, entry-point plugins, then ``--plugin-module`` plugins."""
    registry = in_tree_registry()
    try:
        registry.load_entry_points()
        for module in plugin_modules:
            registry.load_module(module)
    except RegistryError as err:
        raise CommandError(str(err)) from err
    return registry


def load_configuration(path: str | None, registry: Registry) -> SchedulerConfiguration:
    """Load ``--config`` (defaults when None); errors name the file and field."""
    try:
        return load_config(path, registry)
    except ConfigFileError as err:
        raise CommandError(str(err)) from err
    except FieldError as err:
        raise CommandError(f"{path}: {err}" if path else str(err)) from err


def offline_setup(
    plugin_modules: Sequence[str], config: str | None, write_config_to: str | None
) -> tuple[Registry, SchedulerConfiguration] | None:
    """The registry and configuration of an offline command (``simulate``, ``capacity``); None when
    ``--write-config-to`` has written the configuration, which is all the command had to do."""
    registry = build_registry(plugin_modules)
    cfg = load_configuration(config, registry)
    if write_config_to:
        write_config(cfg, write_config_to)
        return None
    return registry, cfg


def write_config(cfg: SchedulerConfiguration, target: str) -> None:
    """``--write-config-to``: the completed configuration as YAML (JSON for *.json files)."""
    data = dump_config(cfg)
    text = (
        orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
        if target.endswith(".json")
        else yaml.safe_dump(data, sort_keys=False)
    )
    if target == "-":
        sys.stdout.write(text)
        return
    try:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as err:
        raise CommandError(f"writing configuration to {target}: {err.strerror}") from err


def add_html_flag(group: Any) -> None:
    """``--html FILE`` of ``berth simulate`` and ``berth capacity``."""
    group.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="Also write the web UI's report of the run to FILE: one self-contained HTML file "
        "(no server, no network) with the decisions, each pod's filter verdicts and scores, and the nodes.",
    )


def write_html_report(
    path: str, json_text: str, kind: str, output: str, cfg: SchedulerConfiguration, registry: Registry
) -> str:
    """Write the HTML report of ``json_text`` (the run's ``-o json``) to ``path``; return what stdout
    gets: the JSON when ``-o json`` was asked for, else one line naming the file."""
    from app.ui.report import profile_weights, render_report, report_summary

    doc = orjson.loads(json_text)
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(render_report(doc, kind, profile_weights(cfg, registry)))
    except OSError as err:
        raise CommandError(f"--html {path}: {err.strerror or err}") from err
    return json_text if output == "json" else f"Wrote {path}: {report_summary(kind, doc)}\n"
