"""``berth simulate STATE``: the what-if face, offline on a cluster-state file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from app.cli.common import add_html_flag, offline_setup, write_html_report
from app.cli.options import CommandError
from app.framework.runtime import FrameworkError
from app.simulate import OUTPUT_FORMATS, StateError, simulate

# A bad state file is bad input to the simulation itself: exit 2, as the issue asks.
STATE_ERROR_EXIT = 2


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``simulate`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "simulate",
        help="Schedule the pending pods of a cluster-state file offline and explain every decision.",
        description="Schedule the pending pods of STATE (YAML or JSON: Nodes, Pods, PriorityClasses; "
        "multi-document or a v1 List) one at a time, as kube-scheduler v1.36.3 would, and explain each decision.",
    )
    parser.add_argument(
        "state", metavar="STATE", nargs="?", help='The cluster-state file ("-" reads standard input).'
    )
    sim = parser.add_argument_group("Simulation flags")
    sim.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="Seed for every random choice (ties among best nodes, preemption's start): the same seed "
        "repeats a run exactly. Random when unset; always printed.",
    )
    sim.add_argument(
        "--schedule-all",
        action="store_true",
        help="Schedule pods whose schedulerName no profile serves with the first profile "
        "(by default they are Skipped, as kube-scheduler leaves them to their scheduler).",
    )
    sim.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table", help="Output format.")
    add_html_flag(sim)
    return parser


@contextmanager
def input_errors(config: str | None) -> Iterator[None]:
    """Bad input as CLI errors: a state or pod file exits 2 naming file and field; a configuration
    whose profiles cannot be built names the configuration."""
    try:
        yield
    except StateError as err:
        raise CommandError(str(err), STATE_ERROR_EXIT) from err
    except FrameworkError as err:
        raise CommandError(f"{config or 'configuration'}: {err}") from err


def write_report(text: str, warnings: Iterable[str]) -> None:
    """Warnings to stderr, the report to stdout."""
    for warning in warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run(args: argparse.Namespace) -> int:
    """Load config and state, simulate, print the report."""
    setup = offline_setup(args.plugin_module, args.config, args.write_config_to)
    if setup is None:
        return 0
    registry, cfg = setup
    if not args.state:
        raise CommandError('"berth simulate" requires a STATE file argument')
    with input_errors(args.config):
        text, warnings = simulate(
            args.state,
            cfg,
            registry,
            seed=args.seed,
            output="json" if args.html else args.output,
            schedule_all=args.schedule_all,
        )
    if args.html:
        text = write_html_report(args.html, text, "simulate", args.output, cfg, registry)
    write_report(text, warnings)
    return 0
