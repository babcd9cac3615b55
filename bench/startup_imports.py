"""``berth run``'s fixed cost before its informers start: the CPU, wall time and RSS of its imports,
this checkout against another side by side, alternated, in fresh interpreters.

Each probe does what ``berth run`` does before it connects: builds the ``berth`` parser and parses
``run``'s flags, then imports the modules its setup, endpoints and HTTPS server use (no cluster is
needed). One warm-up probe per checkout first (it writes the bytecode); then ``--rounds`` rounds,
the checkouts alternated within each; medians are printed, with the range.

Usage: ``python bench/startup_imports.py --baseline DIR [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """\
import json, resource, sys, time
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
rss0, cpu0, wall0, modules0 = rss(), cpu(), time.perf_counter(), len(sys.modules)
from app.cli.main import build_parser
build_parser().parse_args(["run", "--secure-port=0"])
import app.standalone.run, app.standalone.setup, app.standalone.endpoints, app.server.httpserver
print(json.dumps({"interpreter": rss0, "imports_rss": rss() - rss0, "imports_cpu": cpu() - cpu0,
                  "process_cpu": cpu(), "wall": time.perf_counter() - wall0,
                  "modules": len(sys.modules) - modules0}))
"""
FIELDS = (
    ("interpreter RSS (MiB)", "interpreter", "{:.1f}"),
    ("+ imports RSS (MiB)", "imports_rss", "{:.1f}"),
    ("imports CPU (ms)", "imports_cpu", "{:.0f}", 1000),
    ("process CPU incl. interpreter (ms)", "process_cpu", "{:.0f}", 1000),
    ("imports wall (ms)", "wall", "{:.0f}", 1000),
    ("modules imported", "modules", "{:.0f}"),
)


def probe(checkout: Path) -> dict[str, float]:
    """One fresh interpreter importing ``checkout``'s berth run start path."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=checkout, check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> int:
    """Alternate the probes, print the medians side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, metavar="DIR", help="another checkout")
    parser.add_argument("--rounds", type=int, default=7, help="probes per checkout (alternated)")
    args = parser.parse_args()
    checkouts = {"baseline": args.baseline.resolve(), "this": ROOT}
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for path in checkouts.values():
        probe(path)  # warm-up: bytecode
    for _ in range(args.rounds):
        for name, path in checkouts.items():
            samples[name].append(probe(path))
    print(f"{'median of ' + str(args.rounds) + ' (range)':38} {'baseline':>22} {'this':>22} {'this/base':>9}")
    for label, key, fmt, *scale in FIELDS:
        factor = scale[0] if scale else 1
        cells, medians = [], []
        for name in checkouts:
            values = [s[key] * factor for s in samples[name]]
            medians.append(statistics.median(values))
            cells.append(f"{fmt.format(medians[-1])} ({fmt.format(min(values))}-{fmt.format(max(values))})")
        ratio = medians[1] / medians[0] if medians[0] else float("nan")
        print(f"{label:38} {cells[0]:>22} {cells[1]:>22} {ratio:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
