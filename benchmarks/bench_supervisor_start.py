"""What one run's supervisor costs: CPU and wall of ``procs.ProcessGroup(["true"])`` from start to close.

Every benchmark run of a sweep (and every probe) starts one supervisor (``procs._SUPERVISOR``: a bare
``python -I -S``). CPU is ``getrusage(RUSAGE_CHILDREN)`` user+sys (supervisor and ``true``); ``python -I -S -c
pass`` and ``true`` alone are measured in the same rounds for scale. Rounds alternate the variants.

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30, help="starts per variant and round")
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    true = shutil.which("true") or "/bin/true"
    variants = {
        "ProcessGroup([true]) (supervisor + true)": lambda: supervised(true),
        "python -I -S -c pass": lambda: subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True),
        "true": lambda: subprocess.run([true], check=True),
    }
    found = {name: ([], []) for name in variants}
    print("supervisor from %s; load average %.2f %.2f %.2f" % ((procs.__file__,) + os.getloadavg()))
    for _ in range(opts.rounds):
        for name, start in variants.items():
            cpu0, wall0 = children_cpu(), time.perf_counter()
            for _ in range(opts.runs):
                start()
            found[name][0].append((children_cpu() - cpu0) / opts.runs * 1000)
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
