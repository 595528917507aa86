"""A/B of the library verbs: two checkouts' code against their own copies of one library, alternated.

    python benchmarks/bench_library_ab.py N BEFORE_CODE BEFORE_DATA AFTER_CODE AFTER_DATA REPO SWEEP

Runs `compare SWEEP --rank --source all` (table and JSON), `pull REPO` and `python -c pass` N times each, the
two sides alternated, from a folder holding no tfcnnwrap (``-m`` puts the working directory first on the
path); prints each one's median wall clock and CPU (user + system, the process and its children). A library
an older tfcnnwrap reads needs its own copy: a newer one migrates its index when it opens it.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    n, old_code, old_data, new_code, new_data, repo, sweep = sys.argv[1:8]
    sides = {"before": (old_code, old_data), "after": (new_code, new_data)}
    commands = {
        "rank (table)": ["compare", sweep, "--rank", "--source", "all"],
        "rank (json)": ["compare", sweep, "--rank", "--source", "all", "--format", "json"],
        "pull": ["pull", repo],
        "python -c pass": None,
    }
    out: dict = {}
    away = tempfile.mkdtemp(prefix="bench-ab-")
    for _ in range(int(n)):
        for label, args in commands.items():
            for side, (code, data) in sides.items():
                if args is None and side == "after":
                    continue
                env = dict(os.environ, PYTHONPATH=code, TFCNNWRAP_DATA=data)
                argv = [sys.executable, "-c", "pass"] if args is None else [sys.executable, "-m", "tfcnnwrap", *args]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                proc = subprocess.run(argv, env=env, cwd=away, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if proc.returncode != 0:
                    raise SystemExit("%s (%s) failed: %s" % (label, side, proc.stderr.decode()[-500:]))
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                out.setdefault((label, side), []).append((wall, cpu))
    for (label, side), values in out.items():
        print(
            "%-15s %-7s wall median %.2f s  CPU median %.2f s  (walls %s)"
            % (
                label,
                side,
                statistics.median(v[0] for v in values),
                statistics.median(v[1] for v in values),
                ", ".join("%.2f" % v[0] for v in values),
            )
        )
    print("load average %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
