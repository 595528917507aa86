"""Start-up: `python -m tfcnnwrap --help` against a bare `python -c pass`, and `report` on a 15-run sweep.

Alternates the commands, several runs each, and prints medians. Goals (issue 7): --help <= 10x
`python -c pass`; report on a 15-run sweep < 1 s.

    python benchmarks/bench_startup.py --runs 20
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall(argv, env, cwd=None):
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def make_sweep(path, runs=3):
    """A finished 15-run sweep directory in the contract's format."""
    path.mkdir(parents=True)
    models = [("resnet50", 64), ("resnet152", 32), ("inception3", 64), ("vgg16", 64), ("alexnet", 512)]
    meta = {"format": 1, "created_at": "2026-11-30T10:15:00Z", "device": "gpu", "tensorflow_version": "1.12.0",
            "plan": {"models": [{"model": m, "batch_size": b} for m, b in models], "runs": runs}}
    (path / "sweep.json").write_text(json.dumps(meta))
    with open(path / "runs.jsonl", "w") as fh:
        for m, b in models:
            for k in range(1, runs + 1):
                fh.write(json.dumps({"model": m, "batch_size": b, "run": k, "status": "ok",
                                     "images_per_sec": 100.0 + k, "exit_code": 0, "duration_s": 60.0,
                                     "started_at": "2026-11-30T10:15:00Z",
                                     "log": "logs/%s-bs%d-run%d.log" % (m, b, k), "command": []}) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-startup-"))
    make_sweep(work / "sweep")

    cases = {
        "python -c pass": [py, "-c", "pass"],
        "python -m tfcnnwrap --help": [py, "-m", "tfcnnwrap", "--help"],
        "python -m tfcnnwrap report SWEEP (15 runs)": [py, "-m", "tfcnnwrap", "report", str(work / "sweep")],
        "python -m tfcnnwrap report SWEEP --format json": [py, "-m", "tfcnnwrap", "report", str(work / "sweep"),
                                                           "--format", "json"],
    }
    for argv in cases.values():  # warm-up: page cache, .pyc files
        wall(argv, env)
    times = {name: [] for name in cases}
    for _ in range(opts.runs):
        for name, argv in cases.items():
            times[name].append(wall(argv, env))
    base = statistics.median(times["python -c pass"])
    print("| command | median (s) | min (s) | max (s) | x python -c pass |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        med = statistics.median(values)
        print("| `%s` | %.3f | %.3f | %.3f | %.1f |" % (name, med, min(values), max(values), med / base))


if __name__ == "__main__":
    main()
