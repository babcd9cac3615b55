"""Flags shared by berth's commands, grouped into flag sets as kube-scheduler prints them."""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from app import __version__
from app.api.quantity import parse_quantity
from app.api.validation import parse_duration

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
    """kube's "Logs flags": -v/--v, --vmodule, --logging-format, --log-flush-frequency and the
    split-stream options of both formats."""
    logs = parser.add_argument_group("Logs flags")
    logs.add_argument(
        "--log-flush-frequency",
        type=go_duration,
        default=5.0,
        metavar="DURATION",
        help="Maximum number of seconds between log flushes (default 5s). Unbuffered streams are written at "
        "once; buffered info streams (--log-*-info-buffer-size) are flushed at this period.",
    )
    for fmt in ("json", "text"):
        kind = fmt.upper() if fmt == "json" else "text"
        logs.add_argument(
            f"--log-{fmt}-info-buffer-size",
            type=_quantity_bytes,
            default=0,
            metavar="QUANTITY",
            help=f"[Alpha] In {kind} format with split output streams, the info messages can be buffered for a "
            "while to increase performance. The default value of zero bytes disables buffering. The size can be "
            "specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of "
            "those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        )
        add_bool_flag(
            logs,
            f"--log-{fmt}-split-stream",
            False,
            f"[Alpha] In {kind} format, write error messages to stderr and info messages to stdout. The "
            "default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        )
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
    logs.add_argument(
        "--vmodule",
        type=_vmodule,
        default=(),
        metavar="PATTERN=N,...",
        help="comma-separated list of pattern=N settings for file-filtered logging (only works for text log "
        "format); a pattern matches a Python file's name without .py (or its path when it holds a /), * and ? "
        "as globs.",
    )


def go_duration(text: str) -> float:
    """A Go duration flag (``10s``, ``5m0s``) in seconds; negatives pass (callers check them)."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


_BOOLS = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}


def parse_bool(text: str) -> bool:
    """A pflag boolean (``true``, ``false``, ``1``, ``0``, ``t``, ``f``, any case)."""
    value = _BOOLS.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f'invalid boolean "{text}" (want true or false)')
    return value


def add_bool_flag(group: Any, flag: str, default: bool | None, help: str) -> None:
    """A pflag-style boolean: ``--flag`` alone is true, ``--flag=false`` false (None: unset)."""
    group.add_argument(
        flag, type=parse_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help
    )


def _quantity_bytes(text: str) -> int:
    try:
        value = parse_quantity(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f'"{text}" is negative')
    return int(value)


def _vmodule(text: str) -> tuple[tuple[str, int], ...]:
    """klog's ``--vmodule``: ``pattern=N`` pairs."""
    pairs = []
    for part in text.split(","):
        if not part:
            continue
        pattern, sep, level = part.partition("=")
        if not sep or not pattern:
            raise argparse.ArgumentTypeError(f"expect comma-separated list of filename=N, got {part!r}")
        try:
            pairs.append((pattern, int(level)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r}: {level!r} is not a number") from None
    return tuple(pairs)


def version_text() -> str:
    """What ``--version`` prints."""
    return f"berth v{__version__} (kube-scheduler {KUBE_VERSION} semantics)"


def parse_string_slice(text: str) -> list[str]:
    """pflag's ``StringSlice`` value: one CSV record (quotes allowed), empty for ``""``."""
    if not text:
        return []
    try:
        return next(csv.reader([text]))
    except csv.Error as err:
        raise argparse.ArgumentTypeError(f'"{text}": {err}') from None


class StringSliceAction(argparse.Action):
    """pflag's ``StringSlice``/``Int32Slice`` flags: the first use replaces the default, later
    uses append; each value is a comma-separated list (converted by ``type`` item by item)."""

    def __init__(self, *args: Any, item: Callable[[str], Any] = str, **kwargs: Any) -> None:
        self.item = item
        super().__init__(*args, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        try:
            items = [self.item(v) for v in parse_string_slice(str(values))]
        except ValueError as err:
            raise argparse.ArgumentError(self, f'invalid argument "{values}": {err}') from None
        seen = getattr(namespace, f"_{self.dest}_set", False)
        current = list(getattr(namespace, self.dest) or []) if seen else []
        setattr(namespace, self.dest, current + items)
        setattr(namespace, f"_{self.dest}_set", True)
