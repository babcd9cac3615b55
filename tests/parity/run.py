"""The deep parity pass: ``make parity N=5000`` (``PYTHONPATH=tests python -m parity.run -n 5000``).

Runs N random scenarios through berth and the oracle, prints the agreement per aspect, and for each
aspect that ever disagreed writes the first mismatching scenario, minimized, with the commands that
replay it. Exit status 1 when anything disagreed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity import gen_storage
from parity.generator import Scenario, generate
from parity.harness import (
    ASPECTS,
    Comparison,
    Oracle,
    build_oracle,
    default_registry,
    disabled_plugins,
    minimize,
    new_workdir,
    replay_text,
    run_scenario,
    write_scenario,
)


@dataclass
class Tally:
    """Agreement counts over a run."""

    scenarios: int = 0
    agree: Counter[str] = field(default_factory=Counter)
    compared: Counter[str] = field(default_factory=Counter)
    score_values: int = 0
    score_values_equal: int = 0
    preempting: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # the oracle's verdicts: Scheduled, ..., scored
    failures: dict[str, list[int]] = field(default_factory=dict)  # aspect -> seeds

    def add(self, seed: int, c: Comparison, oracle: dict[str, Any]) -> None:
        """Count one scenario's comparison and what the oracle decided."""
        self.scenarios += 1
        for pod in oracle.get("pods", []):
            self.outcomes[pod["status"]] += 1
            self.outcomes["scored (>1 feasible node)"] += bool(pod["scores"])
        self.score_values += c.score_values
        self.score_values_equal += c.score_values_equal
        self.preempting += c.preempting
        for aspect, same in c.agree.items():
            self.compared[aspect] += 1
            self.agree[aspect] += same
            if not same:
                self.failures.setdefault(aspect, []).append(seed)

    def table(self) -> str:
        """The agreement table, one line per aspect."""
        lines = [f"{'aspect':<14}{'agree':>8}{'of':>8}{'rate':>10}"]
        for aspect in [*ASPECTS, *(a for a in self.compared if a not in ASPECTS)]:
            n = self.compared[aspect]
            if n:
                lines.append(
                    f"{aspect:<14}{self.agree[aspect]:>8}{n:>8}{100 * self.agree[aspect] / n:>9.2f}%"
                )
        if self.score_values:
            rate = 100 * self.score_values_equal / self.score_values
            lines.append(
                f"{'score values':<14}{self.score_values_equal:>8}{self.score_values:>8}{rate:>9.2f}%"
            )
        lines.append(f"scenarios with preemption: {self.preempting}")
        lines.append("oracle verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())))
        return "\n".join(lines)


def run(
    n: int, seed: int, out: Path, minimize_failures: bool = True, progress: bool = False
) -> tuple[Tally, str]:
    """Run ``n`` scenarios with seeds ``seed .. seed+n-1``; return the tally and the mismatch report."""
    registry = default_registry()
    disable = disabled_plugins(registry)
    oracle = Oracle(build_oracle(), disable)
    work = out / "scenarios"
    tally = Tally()
    report: list[str] = []
    try:
        started = time.monotonic()
        for i in range(n):
            scenario = generate(seed + i)
            comparison, _, verdicts = run_scenario(scenario, oracle, registry, work)
            tally.add(scenario.seed, comparison, verdicts)
            if progress and (i + 1) % 250 == 0:
                print(f"  {i + 1}/{n} scenarios, {time.monotonic() - started:.0f} s", file=sys.stderr)
        for aspect, seeds in tally.failures.items():
            first = generate(seeds[0])
            report.append(_report_mismatch(aspect, seeds, first, oracle, registry, out, minimize_failures))
    finally:
        oracle.close()
    return tally, "\n".join(report)


def _report_mismatch(
    aspect: str,
    seeds: list[int],
    scenario: Scenario,
    oracle: Oracle,
    registry: object,
    out: Path,
    shrink: bool,
) -> str:
    from app.framework.registry import Registry
    from app.simulate.state import StateError

    assert isinstance(registry, Registry)
    work = out / "minimize"

    def still_fails(candidate: Scenario) -> bool:
        try:
            c, _, _ = run_scenario(candidate, oracle, registry, work)
        except StateError:  # a dropped object something else names (a pod's PriorityClass)
            return False
        return not c.agree.get(aspect, True)

    small = minimize(scenario, still_fails) if shrink else scenario
    comparison, _, _ = run_scenario(small, oracle, registry, work)
    state, config = write_scenario(small, out, f"mismatch-{aspect}-{scenario.seed}")
    shown = ", ".join(map(str, seeds[:10])) + (" ..." if len(seeds) > 10 else "")
    return (
        f"{aspect}: {len(seeds)} scenario(s) disagree (seeds {shown}); features of seed {scenario.seed}: "
        f"{', '.join(scenario.features) or '-'}\n"
        f"  minimized to {len(small.objects)} objects: {state}\n"
        f"    {comparison.details.get(aspect, '')}\n"
        f"  replay:\n{replay_text(state, config, oracle.disable)}"
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: ``-n`` scenarios from ``--seed`` (random unless given), files under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", type=int, default=5000, help="number of scenarios")
    parser.add_argument("--seed", type=int, default=None, help="first scenario seed (random by default)")
    parser.add_argument(
        "--out", type=Path, default=None, help="where mismatch files go (a temp dir by default)"
    )
    parser.add_argument("--no-minimize", action="store_true", help="report mismatches as generated")
    parser.add_argument(
        "--storage-share",
        type=float,
        default=gen_storage.STORAGE_SHARE,
        help="share of scenarios with storage objects (1 for a storage-heavy pass)",
    )
    args = parser.parse_args(argv)
    gen_storage.STORAGE_SHARE = args.storage_share
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    out = args.out or new_workdir()
    print(f"parity: {args.n} scenarios from seed {seed} (replay with --seed {seed}); files in {out}")
    started = time.monotonic()
    tally, report = run(args.n, seed, out, not args.no_minimize, progress=True)
    print(tally.table())
    print(f"{tally.scenarios} scenarios in {time.monotonic() - started:.0f} s")
    if report:
        print(report)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
