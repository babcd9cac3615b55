"""Flags shared by berth's commands, grouped into flag sets as kube-scheduler prints them."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from app import __version__

KUBE_VERSION = "v1.36.3"


class CommandError(Exception):
    """A user error that ends the command with a message and an exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        self.exit_code = exit_code
        super().__init__(message)


class Parser(argparse.ArgumentParser):
    """argparse with cobra's conventions: ``Error: ...`` and exit code 1 on bad flags, and no
    abbreviations (pflag has none: ``--stat`` is an unknown flag, not ``--state``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            extra = message.removeprefix("unrecognized arguments: ").split()
            flags = [a for a in extra if a.startswith("-")]
            message = (
                f"unknown flag: {flags[0]}" if flags else f"unknown arguments: {' '.join(extra)}"
            )  # cobra's words
        sys.stderr.write(f"Error: {message}\nRun '{self.prog} --help' for usage.\n")
        raise SystemExit(1)


def add_misc_flags(parser: argparse.ArgumentParser) -> None:
    """--config, --write-config-to, --plugin-module (into a "Misc flags" group the command may have begun)."""
    # A command with misc flags of its own (serve's --kubeconfig/--master) creates the group first.
    existing = [g for g in parser._action_groups if g.title == "Misc flags"]
    misc = existing[0] if existing else parser.add_argument_group("Misc flags")
    misc.add_argument(
        "--config", metavar="FILE", help="The path to the KubeSchedulerConfiguration file (YAML or JSON)."
    )
    misc.add_argument(
        "--write-config-to",
        metavar="FILE",
        help="If set, write the completed configuration (all defaults filled in) to this file ('-' for stdout) "
        "and exit.",
    )
    misc.add_argument(
        "--plugin-module",
        metavar="MODULE",
        action="append",
        default=[],
        help="Import MODULE and register its out-of-tree scheduling plugins (repeatable). Plugins advertised in "
        "the 'berth.plugins' entry-point group are always registered.",
    )


def add_log_flags(parser: argparse.ArgumentParser) -> None:
    """-v/--v and --logging-format."""
    logs = parser.add_argument_group("Logs flags")
    logs.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=0,
        metavar="N",
        help="Number for the log level verbosity.",
    )
    logs.add_argument(
        "--logging-format",
        choices=("text", "json"),
        default="text",
        help="Sets the log format. Permitted formats: 'json', 'text'.",
    )


def version_text() -> str:
    """What ``--version`` prints."""
    return f"berth v{__version__} (kube-scheduler {KUBE_VERSION} semantics)"
