"""``berth``: the command line, shaped like kube-scheduler's (cobra command, flag sets, Args check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson

from app import featuregates, logs
from app.cli import capacity, run, serve, simulate, snapshot
from app.cli.kubeflags import VersionAction, apply_emulation
from app.cli.options import CommandError, Parser, add_log_flags, add_misc_flags

_VERSION_HELP = "--version, --version=raw prints version information and quits"


def _logging_errors(args: argparse.Namespace) -> list[str]:
    """component-base's logging validation (``logsapi.ValidateAndApply``)."""
    errors = []
    if args.log_flush_frequency <= 0:
        errors.append(f"flushFrequency: Invalid value: {args.log_flush_frequency}: Must be greater than zero")
    if args.vmodule and args.logging_format != "text":
        errors.append("vmodule: Forbidden: Only supported for text log format")
    alpha = featuregates.DEFAULT.enabled("LoggingAlphaOptions")
    fmt = args.logging_format
    if getattr(args, f"log_{fmt}_split_stream") and not alpha:
        errors.append(f"options.{fmt}.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled")
    if getattr(args, f"log_{fmt}_info_buffer_size") and not alpha:
        errors.append(f"options.{fmt}.infoBufferSize: Forbidden: Feature LoggingAlphaOptions is disabled")
    return errors


def _configure_logging(args: argparse.Namespace) -> None:
    errors = _logging_errors(args)
    if errors:
        raise CommandError("; ".join(errors))
    fmt = args.logging_format
    logs.configure(
        args.verbosity,
        fmt,
        vmodule=args.vmodule,
        split_stream=getattr(args, f"log_{fmt}_split_stream"),
        info_buffer_size=getattr(args, f"log_{fmt}_info_buffer_size"),
        flush_frequency=args.log_flush_frequency,
    )


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per face."""
    parser = Parser(
        prog="berth",
        description="berth: a Kubernetes scheduler in Python with kube-scheduler v1.36.3 semantics.",
    )
    parser.add_argument("--version", action=VersionAction, metavar="VERSION", help=_VERSION_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (run, serve, simulate, capacity, snapshot):
        sub = module.add_parser(commands)
        if module is not snapshot:  # snapshot runs no scheduler: no --config or --plugin-module
            add_misc_flags(sub)
        add_log_flags(sub)
        sub.add_argument("--version", action=VersionAction, metavar="VERSION", help=_VERSION_HELP)
        sub.add_argument("extra_args", nargs="*", help=argparse.SUPPRESS)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``berth`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    # kube-scheduler's Args check: a command that takes no positional arguments rejects them.
    if args.extra_args:
        got = "[" + " ".join(orjson.dumps(a).decode() for a in args.extra_args) + "]"  # Go's %q of a []string
        allowed = {
            "simulate": "takes only the STATE argument",
            "capacity": "takes only the STATE and POD arguments",
        }.get(args.command, "does not take any arguments")
        sys.stderr.write(f'Error: "berth {args.command}" {allowed}, got {got}\n')
        return 1
    try:
        # kube's PersistentPreRunE sets the feature gates before anything, logging included
        if hasattr(args, "feature_gates"):
            if hasattr(args, "emulated_version"):
                apply_emulation(args)
            try:
                featuregates.DEFAULT.set_flag(args.feature_gates)
            except featuregates.FeatureGateError as err:
                raise CommandError(str(err)) from err
        _configure_logging(args)
        return int(args.run(args))
    except CommandError as err:
        sys.stderr.write(f"Error: {err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
