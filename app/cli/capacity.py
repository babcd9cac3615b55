"""``berth capacity STATE POD``: how many more replicas of POD fit on the cluster of STATE."""

from __future__ import annotations

import argparse
from typing import Any

from app.cli.common import add_html_flag, offline_setup, write_html_report
from app.cli.options import CommandError
from app.cli.simulate import input_errors, write_report
from app.simulate.formats import CAPACITY_OUTPUT_FORMATS


def _replica_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'invalid count "{text}": expected a whole number') from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid count {value}: must be 0 or more")
    return value


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``capacity`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "capacity",
        help="Count how many more replicas of a pod fit on a cluster-state file.",
        description="Schedule copies of POD one at a time on STATE's nodes and running pods (as "
        "kube-scheduler v1.36.3 would, preemption off, as cluster-capacity does) until one does not fit; "
        "print how many fit, on which nodes, and the FitError that stops the next one.",
    )
    parser.add_argument(
        "state", metavar="STATE", nargs="?", help='The cluster-state file ("-" reads standard input).'
    )
    parser.add_argument("pod", metavar="POD", nargs="?", help="A file with the one Pod to replicate.")
    flags = parser.add_argument_group("Capacity flags")
    flags.add_argument("--max", type=_replica_count, default=None, metavar="N", help="Stop after N replicas.")
    flags.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="Seed for tie-breaking (random when unset; printed).",
    )
    flags.add_argument(
        "-o", "--output", choices=CAPACITY_OUTPUT_FORMATS, default="table", help="Output format."
    )
    add_html_flag(flags)
    return parser


def run(args: argparse.Namespace) -> int:
    """Load config, state and pod; count the replicas; print the report."""
    from app.simulate.capacity import format_capacity, load_pod_template, run_capacity
    from app.simulate.inputs import new_seed, read_state

    setup = offline_setup(args.plugin_module, args.config, args.write_config_to)
    if setup is None:
        return 0
    registry, cfg = setup
    if not args.state or not args.pod:
        raise CommandError('"berth capacity" requires a STATE file and a POD file argument')
    with input_errors(args.config):
        state = read_state(args.state)
        template = load_pod_template(args.pod, state, cfg)
        seed = new_seed() if args.seed is None else args.seed
        result = run_capacity(state, template, cfg, registry, seed, args.max)
    warnings = list(state.warnings)
    if state.pending:
        warnings.append(
            f"{state.path}: {len(state.pending)} pending pod(s) left out: capacity counts the room "
            "the running pods leave"
        )
    text = format_capacity(result, "json" if args.html else args.output)
    if args.html:
        text = write_html_report(args.html, text, "capacity", args.output, cfg, registry)
    write_report(text, warnings)
    return 0
