"""Running one scenario through berth (in process) and the oracle (kube-scheduler's framework), comparing
the two, and shrinking a mismatching scenario to a small state file that replays it.

The oracle is ``hack/parity-oracle.sh``'s binary in ``-batch`` mode: one long-lived process, one JSON line
per scenario. It runs kube-scheduler's default profile minus :func:`disabled_plugins`, the plugins of that
profile berth's registry does not have yet (derived at run time, so the list shrinks as plugins land).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from parity.generator import Obj, Scenario

from app.config import load_config, parse_config
from app.config.defaults import KUBE_SCHEDULER_DEFAULT_PLUGINS
from app.framework.registry import Registry
from app.plugins.registry import in_tree_registry
from app.simulate import new_engine, parse_state, run_simulation, to_json_dict

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "hack" / "parity-oracle.sh"

#: What the suite compares, in report order.
ASPECTS = ("feasibility", "reasons", "scores", "best", "message", "counts", "preemption")


def disabled_plugins(registry: Registry) -> list[str]:
    """kube-scheduler's default-profile plugins berth's registry lacks: the oracle runs without them."""
    return [p.name for p in KUBE_SCHEDULER_DEFAULT_PLUGINS if not registry.has(p.name)]


def build_oracle() -> Path:
    """Build the oracle (a no-op when built from the same source) and return its path."""
    out = subprocess.run([str(BUILD_SCRIPT), "build"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"hack/parity-oracle.sh build failed:\n{out.stderr}")
    return Path(out.stdout.strip().splitlines()[-1])


class Oracle:
    """The oracle in batch mode: ``ask`` sends one scenario and reads its verdicts."""

    def __init__(self, binary: Path, disable: list[str]) -> None:
        self.disable = disable
        # kube-scheduler's own log lines, kept for when the oracle dies.
        self.log = Path(tempfile.mkstemp(prefix="parity-oracle-", suffix=".log")[1])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [str(binary), "-batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
            )

    def ask(self, state: Path, config: Path | None) -> dict[str, Any]:
        """The oracle's output for a state file (and configuration file)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"state": str(state), "config": str(config) if config else "", "disable": self.disable}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle exited ({self.proc.poll()}) on {state}; its log: {self.log}")
        out: dict[str, Any] = json.loads(line)
        return out

    def close(self) -> None:
        """Stop the oracle process."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.log.unlink(missing_ok=True)


def write_scenario(scenario: Scenario, directory: Path, name: str) -> tuple[Path, Path | None]:
    """Write the state (multi-document YAML) and the configuration, if any; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    state = directory / f"{name}.yaml"
    state.write_text(yaml.safe_dump_all(scenario.objects, sort_keys=False))
    config = None
    if scenario.config is not None:
        config = directory / f"{name}-config.yaml"
        config.write_text(yaml.safe_dump(scenario.config, sort_keys=False))
    return state, config


def run_berth(scenario: Scenario, registry: Registry, seed: int = 1) -> dict[str, Any]:
    """``berth simulate -o json`` of the scenario, in process."""
    cfg = load_config(None, registry) if scenario.config is None else parse_config(scenario.config, registry)
    text = yaml.safe_dump_all(scenario.objects, sort_keys=False)
    state = parse_state(text, f"scenario-{scenario.seed}.yaml")
    return to_json_dict(run_simulation(state, new_engine(state, cfg, registry, seed)))


@dataclass
class Comparison:
    """How berth's verdicts on one scenario compare with the oracle's, aspect by aspect."""

    agree: dict[str, bool] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)  # aspect -> what differs
    score_values: int = 0  # (node, plugin) normalized scores compared
    score_values_equal: int = 0
    preempting: bool = False  # the oracle preempted (or berth did)

    @property
    def ok(self) -> bool:
        """Whether every aspect agrees."""
        return all(self.agree.values())


#: NodeResourcesFit's reasons for these resources come in a fixed order; the others (extended resources,
#: hugepages) in Go map order, which changes from run to run in kube-scheduler itself.
_FIXED_ORDER_RESOURCES = (
    "Too many pods",
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
)


def _filter_map(record: dict[str, Any]) -> dict[str, Any]:
    """The filter map with NodeResourcesFit's map-ordered (scalar resource) reasons sorted."""
    out = {}
    for node, verdict in record["filter"].items():
        reasons = verdict["reasons"]
        if verdict["plugin"] == "NodeResourcesFit":
            # Sort the map-ordered reasons among themselves, in the places they hold.
            scalar = iter(sorted(r for r in reasons if r not in _FIXED_ORDER_RESOURCES))
            reasons = [r if r in _FIXED_ORDER_RESOURCES else next(scalar) for r in reasons]
        # What kube-scheduler says (berth's own details with amounts have no counterpart in kube).
        out[node] = {"plugin": verdict["plugin"], "status": verdict["status"], "reasons": reasons}
    return out


def _best(record: dict[str, Any]) -> list[str]:
    scores = record["scores"]
    if not scores:
        return [record["node"]] if record["node"] else []
    top = max(s["total"] for s in scores.values())
    return sorted(n for n, s in scores.items() if s["total"] == top)


def compare(berth: dict[str, Any], oracle: dict[str, Any]) -> Comparison:
    """Compare the records of the scenario's pending pods (one per scenario in the suite)."""
    c = Comparison()
    if oracle.get("error"):
        c.agree["oracle"] = False
        c.details["oracle"] = oracle["error"]
        return c
    b_pods = {p["pod"]: p for p in berth["pods"]}
    o_pods = {p["pod"]: p for p in oracle["pods"]}
    if set(b_pods) != set(o_pods):
        c.agree["pods"] = False
        c.details["pods"] = f"berth {sorted(b_pods)} oracle {sorted(o_pods)}"
        return c

    def check(aspect: str, b: object, o: object) -> None:
        same = b == o
        c.agree[aspect] = c.agree.get(aspect, True) and same
        if not same:
            c.details[aspect] = f"berth {b!r}\n    oracle {o!r}"

    for name, b in b_pods.items():
        o = o_pods[name]
        check(
            "feasibility",
            (b["status"], sorted(b["filter"]), b["feasibleNodes"]),
            (o["status"], sorted(o["filter"]), o["feasibleNodes"]),
        )
        check("reasons", _filter_map(b), _filter_map(o))
        check("message", b["message"], o["message"])
        check("counts", b["evaluatedNodes"], o["evaluatedNodes"])
        check(
            "preemption",
            (b["nominatedNode"], sorted(b["victims"])),
            (o["nominatedNode"], sorted(o["victims"])),
        )
        c.preempting = c.preempting or bool(b["victims"] or o["victims"])
        # Ties are broken at random by both: the chosen node must be one of the oracle's best.
        check(
            "best", (_best(b), b["node"] in o["bestNodes"] or b["node"] == o["node"]), (o["bestNodes"], True)
        )
        check("scores", b["scores"], o["scores"])
        for node, o_scores in o["scores"].items():
            b_scores = b["scores"].get(node, {})
            for plugin, value in o_scores.items():
                c.score_values += 1
                c.score_values_equal += b_scores.get(plugin) == value
    return c


def run_scenario(
    scenario: Scenario, oracle: Oracle, registry: Registry, directory: Path
) -> tuple[Comparison, dict[str, Any], dict[str, Any]]:
    """Write, run on both sides and compare one scenario."""
    state, config = write_scenario(scenario, directory, f"scenario-{scenario.seed}")
    o = oracle.ask(state, config)
    b = run_berth(scenario, registry)
    return compare(b, o), b, o


def _candidates(scenario: Scenario) -> Iterator[Scenario]:
    """Smaller variants: without the configuration, then without each object but the pending pod."""
    if scenario.config is not None:
        yield Scenario(scenario.seed, scenario.objects, None, scenario.features)
    for i in reversed(range(len(scenario.objects) - 1)):
        yield Scenario(
            scenario.seed,
            scenario.objects[:i] + scenario.objects[i + 1 :],
            scenario.config,
            scenario.features,
        )


def minimize(scenario: Scenario, still_fails: Callable[[Scenario], bool], budget: int = 400) -> Scenario:
    """Greedily drop the configuration and objects while ``still_fails`` holds (at most ``budget`` tries)."""
    progress = True
    while progress and budget > 0:
        progress = False
        for candidate in _candidates(scenario):
            budget -= 1
            if budget < 0:
                break
            if still_fails(candidate):
                scenario, progress = candidate, True
                break
    return scenario


def replay_text(state: Path, config: Path | None, disable: list[str]) -> str:
    """The commands that replay a written scenario on both sides."""
    cfg = f" --config {config}" if config else ""
    ocfg = f" -config {config}" if config else ""
    off = f" -disable {','.join(disable)}" if disable else ""
    return f"  .venv/bin/berth simulate -o json{cfg} {state}\n  $(hack/parity-oracle.sh build){off}{ocfg} {state}"


def new_workdir() -> Path:
    """A fresh directory for scenario files."""
    return Path(tempfile.mkdtemp(prefix="berth-parity-"))


def default_registry() -> Registry:
    """berth's in-tree registry (what ``berth simulate`` runs)."""
    return in_tree_registry()


__all__ = [
    "ASPECTS",
    "Comparison",
    "Obj",
    "Oracle",
    "build_oracle",
    "compare",
    "default_registry",
    "disabled_plugins",
    "minimize",
    "new_workdir",
    "replay_text",
    "run_berth",
    "run_scenario",
    "write_scenario",
]
