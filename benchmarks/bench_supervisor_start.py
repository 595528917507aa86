"""What one run's supervisor costs: CPU and wall of ``procs.ProcessGroup(["true"])`` from start to close.

Every command outside a sweep (a probe, a query) starts one supervisor (``procs._SUPERVISOR``: a bare
``python -I -S``); inside a sweep each run's supervisor is a fork of the sweep's one ``procs.SharedSupervisor``
(the "shared" row; its own start, once per sweep, is not in the per-command figure). CPU is
``getrusage(RUSAGE_CHILDREN)`` user+sys (supervisor and ``true``), plus the shared supervisor's own and its reaped
children's (from /proc); ``python -I -S -c pass`` and ``true`` alone are measured in the same rounds for scale.
Rounds alternate the variants.

    python benchmarks/bench_supervisor_start.py --runs 30 --rounds 3
    PYTHONPATH=/tmp/other-checkout python benchmarks/bench_supervisor_start.py   # another checkout's supervisor
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tfcnnwrap.run import procs  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def supervised(true: str) -> None:
    with procs.ProcessGroup([true]) as group:
        group.wait()


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and the children it has reaped (Linux): the shared supervisor's forks are its
    children, not ours, so getrusage of our children does not see them."""
    with open("/proc/%d/stat" % pid, "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def shared_supervised(true: str, shared: "procs.SharedSupervisor") -> None:
    procs.SharedSupervisor._current = shared
    try:
        supervised(true)
    finally:
        procs.SharedSupervisor._current = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30, help="starts per variant and round")
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    true = shutil.which("true") or "/bin/true"
    shared_class = getattr(procs, "SharedSupervisor", None)  # absent in a checkout from before it
    shared = shared_class.start() if shared_class is not None else None
    if shared_class is not None:
        shared_class._current = None  # only the shared row goes through it
    variants = {
        "ProcessGroup([true]) (supervisor + true)": lambda: supervised(true),
        "python -I -S -c pass": lambda: subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True),
        "true": lambda: subprocess.run([true], check=True),
    }
    if shared is not None:
        variants["ProcessGroup([true]) through the sweep's shared supervisor (fork + true)"] = lambda: (
            shared_supervised(true, shared)
        )
    found = {name: ([], []) for name in variants}
    print("supervisor from %s; load average %.2f %.2f %.2f" % ((procs.__file__,) + os.getloadavg()))
    for _ in range(opts.rounds):
        for name, start in variants.items():
            cpu = (lambda: children_cpu() + tree_cpu(shared.process.pid)) if shared is not None else children_cpu
            cpu0, wall0 = cpu(), time.perf_counter()
            for _ in range(opts.runs):
                start()
            found[name][0].append((cpu() - cpu0) / opts.runs * 1000)
            found[name][1].append((time.perf_counter() - wall0) / opts.runs * 1000)
    print("| start | CPU ms (median of rounds) | min-max | wall ms | min-max |")
    print("|---|---|---|---|---|")
    for name, (cpu, wall) in found.items():
        print(
            "| %s | %.1f | %.1f-%.1f | %.1f | %.1f-%.1f |"
            % (name, statistics.median(cpu), min(cpu), max(cpu), statistics.median(wall), min(wall), max(wall))
        )


if __name__ == "__main__":
    main()
