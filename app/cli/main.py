"""``berth``: the command line, shaped like kube-scheduler's (cobra command, flag sets, Args check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson

from app import logs
from app.cli import capacity, run, serve, simulate
from app.cli.options import CommandError, Parser, add_log_flags, add_misc_flags, version_text


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per face."""
    parser = Parser(
        prog="berth",
        description="berth: a Kubernetes scheduler in Python with kube-scheduler v1.36.3 semantics.",
    )
    parser.add_argument(
        "--version", action="version", version=version_text(), help="Print version information and quit."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (run, serve, simulate, capacity):
        sub = module.add_parser(commands)
        add_misc_flags(sub)
        add_log_flags(sub)
        sub.add_argument(
            "--version", action="version", version=version_text(), help="Print version information and quit."
        )
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
    logs.configure(args.verbosity, args.logging_format)
    try:
        return int(args.run(args))
    except CommandError as err:
        sys.stderr.write(f"Error: {err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
