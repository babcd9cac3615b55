"""``berth simulate STATE``: the what-if face, offline on a cluster-state file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from app.cli.common import add_html_flag, load_configuration, offline_setup, write_html_report
from app.cli.options import CommandError
from app.config.types import SchedulerConfiguration
from app.framework.registry import Registry
from app.framework.runtime import FrameworkError

# The simulator itself is imported when a command runs it: every command builds this parser.
from app.simulate.formats import DEFAULT_MAX_HINTED_PODS, OUTPUT_FORMATS

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
    sim.add_argument(
        "--max-hints",
        type=int,
        default=DEFAULT_MAX_HINTED_PODS,
        metavar="N",
        help='Search verified "fits if" hints for at most N unschedulable pods (0 turns hints off; '
        f"pods of a shape already answered do not count). Default {DEFAULT_MAX_HINTED_PODS}.",
    )
    sim.add_argument(
        "--compare-config",
        default=None,
        metavar="FILE",
        help="A second KubeSchedulerConfiguration: run STATE under it too, with the same seed, and report the "
        "pods placed differently, the plugin scores behind each move, the unschedulable delta, per-node "
        "utilization under both and the nodes each leaves empty (docs/compare.md).",
    )
    sim.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table", help="Output format.")
    add_html_flag(sim)
    return parser


@contextmanager
def input_errors(config: str | None) -> Iterator[None]:
    """Bad input as CLI errors: a state or pod file exits 2 naming file and field; a configuration
    whose profiles cannot be built names the configuration (exit 2 for ``--compare-config``'s)."""
    from app.simulate.compare import CompareConfigError
    from app.simulate.state import StateError

    try:
        yield
    except StateError as err:
        raise CommandError(str(err), STATE_ERROR_EXIT) from err
    except CompareConfigError as err:
        raise CommandError(str(err), STATE_ERROR_EXIT) from err
    except FrameworkError as err:
        raise CommandError(f"{config or 'configuration'}: {err}") from err


def compare_configuration(path: str, registry: Registry) -> SchedulerConfiguration:
    """``--compare-config``: bad input to the comparison, so exit 2 with the file and field named."""
    try:
        return load_configuration(path, registry)
    except CommandError as err:
        message = str(err)
        raise CommandError(
            message if message.startswith(path) else f"{path}: {message}", STATE_ERROR_EXIT
        ) from err


def write_report(text: str, warnings: Iterable[str]) -> None:
    """Warnings to stderr, the report (unless already streamed: empty) to stdout."""
    for warning in warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    if text:  # empty when the report was streamed to stdout already
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run(args: argparse.Namespace) -> int:
    """Load config and state, simulate, print the report."""
    from app.simulate import simulate

    setup = offline_setup(args.plugin_module, args.config, args.write_config_to)
    if setup is None:
        return 0
    registry, cfg = setup
    if not args.state:
        raise CommandError('"berth simulate" requires a STATE file argument')
    if args.max_hints < 0:
        raise CommandError(f"invalid --max-hints {args.max_hints}: must be 0 or more")
    compare = None
    if args.compare_config:
        compare = (args.compare_config, compare_configuration(args.compare_config, registry))
    with input_errors(args.config):
        text, warnings = simulate(
            args.state,
            cfg,
            registry,
            seed=args.seed,
            output="json" if args.html else args.output,
            schedule_all=args.schedule_all,
            max_hints=args.max_hints,
            config=args.config,
            compare=compare,
            # -o json is written pod by pod; an --html report needs the document itself.
            out=None if args.html else sys.stdout,
        )
    if args.html:
        text = write_html_report(args.html, text, "simulate", args.output, cfg, registry)
    write_report(text, warnings)
    return 0
