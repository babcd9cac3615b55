"""``berth simulate STATE``: the what-if face, offline on a cluster-state file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.cli.common import build_registry, load_configuration, write_config
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
    return parser


def run(args: argparse.Namespace) -> int:
    """Load config and state, simulate, print the report."""
    registry = build_registry(args.plugin_module)
    cfg = load_configuration(args.config, registry)
    if args.write_config_to:
        write_config(cfg, args.write_config_to)
        return 0
    if not args.state:
        raise CommandError('"berth simulate" requires a STATE file argument')
    try:
        text, warnings = simulate(
            args.state, cfg, registry, seed=args.seed, output=args.output, schedule_all=args.schedule_all
        )
    except StateError as err:
        raise CommandError(str(err), STATE_ERROR_EXIT) from err
    except FrameworkError as err:
        raise CommandError(f"{args.config or 'configuration'}: {err}") from err
    for warning in warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
