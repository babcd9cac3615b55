"""``berth snapshot``: write the live cluster's scheduling-relevant objects as a ``berth simulate`` state file."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from app.cli.options import CommandError
from app.kube.client import KubeClient, KubeError


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register the ``snapshot`` sub-command."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "snapshot",
        help="Write the live cluster's scheduling-relevant objects as a state file for berth simulate.",
        description="List every kind berth's plugins read (Nodes, Pods, PriorityClasses, Namespaces, "
        "owners and PodDisruptionBudgets, storage and DRA objects) from the cluster, drop managedFields and "
        "status noise, and write them as one v1 List that berth simulate and berth capacity read.",
    )
    flags = parser.add_argument_group("Snapshot flags")
    flags.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="Path to a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster config).",
    )
    flags.add_argument(
        "--master",
        metavar="URL",
        help="The address of the Kubernetes API server (overrides the kubeconfig's).",
    )
    flags.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help='Where to write the state ("-", the default, is standard output); a FILE ending in .json is '
        "written as JSON, anything else as YAML.",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """List the cluster and write the state file; a summary of what it holds goes to stderr."""
    from app.simulate.snapshot import format_snapshot, take_snapshot  # only this command needs it

    try:
        client = KubeClient.from_config(args.kubeconfig, args.master, user_agent="berth-snapshot")
        with client:
            snap = take_snapshot(client)
    except KubeError as err:
        raise CommandError(f"snapshot: {err.message if err.status == 0 else err}") from err
    text = format_snapshot(snap, as_json=args.output.endswith(".json"))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as err:
            raise CommandError(f"{args.output}: cannot write: {err.strerror or err}") from err
    for warning in snap.warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    counts = ", ".join(f"{n} {kind}" for kind, n in snap.counts.items() if n)
    where = "standard output" if args.output == "-" else os.path.abspath(args.output)
    sys.stderr.write(f"Snapshot: {counts or 'no objects'} written to {where}\n")
    return 0
