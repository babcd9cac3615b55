"""Per-thread CPU of ``berth run`` over each measured window of ``bench/scheduler_perf.py``.

Runs scheduler_perf (berth only) and reads, at each window's start and end, every thread of the
berth process: user and system CPU (``/proc/PID/task/TID/stat``) and context switches
(``/proc/PID/task/TID/status``). Python threads have no OS name on CPython 3.11, so berth run is
started with a ``sitecustomize`` (on ``PYTHONPATH``, in a temporary directory) that writes each
thread's native id and Python name to a file as the thread starts. Threads of one pool (``binding_3``,
``berth-scheduler-event-writer-12``) are summed under the pool's name. Prints, per window, CPU ms
per measured pod by thread, the system part, and context switches per pod; ``--json`` keeps them.

    .venv/bin/python bench/thread_cpu.py SchedulingWithResourceClaim/2000pods_100nodes

Every other argument goes to scheduler_perf as it is (``--set``, ``--repeat``, ``--keep-logs``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scheduler_perf

_TICK = os.sysconf("SC_CLK_TCK")
_POOL_SUFFIX = re.compile(r"[_-]\d+$")

SITECUSTOMIZE = '''\
"""bench/thread_cpu.py: record each thread's native id and Python name as it starts."""
import os
import threading

_DIR = os.environ.get("BERTH_BENCH_THREAD_NAMES")
if _DIR:
    _bootstrap_inner = threading.Thread._bootstrap_inner

    def _named_bootstrap_inner(self):
        try:
            directory = os.path.join(_DIR, str(os.getpid()))
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, str(threading.get_native_id())), "w") as f:
                f.write(self.name)
        except OSError:
            pass
        _bootstrap_inner(self)

    threading.Thread._bootstrap_inner = _named_bootstrap_inner
'''

ThreadTimes = dict[str, tuple[float, float, int]]
"""Native thread id: (user seconds, system seconds, context switches)."""


def read_threads(pid: int) -> ThreadTimes:
    """Every thread of ``pid`` now (an empty dict once the process is gone)."""
    times: ThreadTimes = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            switches = 0
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
        except OSError:
            continue  # the thread ended meanwhile
        times[tid] = (int(fields[11]) / _TICK, int(fields[12]) / _TICK, switches)
    return times


def thread_group(names_dir: Path, pid: int, tid: str) -> str:
    """The thread's Python name without a pool's index; ``MainThread`` for the process's own."""
    if tid == str(pid):
        return "MainThread"
    try:
        name = (names_dir / str(pid) / tid).read_text()
    except OSError:
        return "(unnamed)"  # not started through threading (none in berth), or its file is gone
    return _POOL_SUFFIX.sub("", name)


def window_threads(
    names_dir: Path, pid: int, before: ThreadTimes, after: ThreadTimes, pods: int
) -> dict[str, dict[str, float]]:
    """Per thread group: CPU ms per pod, its system part, context switches per pod."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for tid, (user, system, switches) in after.items():
        user0, system0, switches0 = before.get(tid, (0.0, 0.0, 0))
        group = sums[thread_group(names_dir, pid, tid)]
        group[0] += user - user0
        group[1] += system - system0
        group[2] += switches - switches0
    pods = max(pods, 1)
    return {
        name: {
            "cpu_ms_per_pod": 1e3 * (user + system) / pods,
            "system_ms_per_pod": 1e3 * system / pods,
            "context_switches_per_pod": switches / pods,
        }
        for name, (user, system, switches) in sums.items()
    }


def install(names_dir: Path, results: list[dict[str, Any]]) -> None:
    """Wrap scheduler_perf's windows so that each also reads berth's threads at its start and end."""
    start = scheduler_perf.Measurement.__init__
    finish = scheduler_perf.Measurement.finish
    before: dict[int, ThreadTimes] = {}

    def measuring_init(self: scheduler_perf.Measurement, *args: Any, **kwargs: Any) -> None:
        before[id(self)] = read_threads(args[1].scheduler_pid)  # (name, run, namespaces, selector)
        start(self, *args, **kwargs)

    def measuring_finish(self: scheduler_perf.Measurement) -> scheduler_perf.Window:
        pid = self.run.scheduler_pid
        after = read_threads(pid)
        window = finish(self)
        threads = window_threads(names_dir, pid, before.pop(id(self)), after, window.measured_pods)
        results.append(
            {
                "window": window.name,
                "measured_pods": window.measured_pods,
                "cpu_ms_per_pod": window.cpu_ms_per_pod,
                "load_average": os.getloadavg(),
                "threads": threads,
            }
        )
        return window

    scheduler_perf.Measurement.__init__ = measuring_init  # type: ignore[method-assign]
    scheduler_perf.Measurement.finish = measuring_finish  # type: ignore[method-assign]


def print_table(result: dict[str, Any]) -> None:
    """One window's threads, dearest first."""
    print(
        f"\n{result['window']}: {result['measured_pods']} pods, berth run {result['cpu_ms_per_pod']:.2f} CPU ms/pod, "
        f"load average {result['load_average'][0]:.1f}"
    )
    print("| thread | CPU ms/pod | of it system | context switches/pod |")
    print("|---|---|---|---|")
    threads = sorted(result["threads"].items(), key=lambda kv: -kv[1]["cpu_ms_per_pod"])
    for name, t in threads:
        if not t["cpu_ms_per_pod"] and not t["context_switches_per_pod"]:
            continue  # an informer with nothing to watch in this workload
        print(
            f"| {name} | {t['cpu_ms_per_pod']:.3f} | {t['system_ms_per_pod']:.3f} | "
            f"{t['context_switches_per_pod']:.2f} |"
        )
    total = sum(t["cpu_ms_per_pod"] for t in result["threads"].values())
    print(f"| all threads | {total:.3f} | | |")


def main() -> int:
    """Run scheduler_perf with the accounting; its exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the per-thread results here")
    ours, rest = parser.parse_known_args()
    if any(a == "--scheduler" or a.startswith("--scheduler=") for a in rest):
        parser.error("berth run only: --scheduler is set by this script")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="berth-thread-cpu-") as tmp:
        hook_dir, names_dir = Path(tmp) / "hook", Path(tmp) / "names"
        hook_dir.mkdir()
        names_dir.mkdir()
        (hook_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
        os.environ["BERTH_BENCH_THREAD_NAMES"] = str(names_dir)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(hook_dir), os.environ.get("PYTHONPATH")])
        )
        install(names_dir, results)
        sys.argv = [str(Path(scheduler_perf.__file__)), *rest, "--scheduler", "berth"]
        status = scheduler_perf.main()
    for result in results:
        print_table(result)
    if ours.json is not None:
        ours.json.write_text(json.dumps(results, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
