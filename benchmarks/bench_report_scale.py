"""Scaling: `report` and `compare` over a results history of 10,000 runs (issue 7, item 5; goal < 2 s each).

Builds, in a temporary directory, sweep directories in the contract's format:

- ``big-a`` and ``big-b``: 10,000 runs each (5 models x 10 batch sizes x 200 runs, 1% of them failed),
- ``results/``: a history of 200 sweeps x 50 runs (10,000 runs) for `report` without a SWEEP_DIR, which
  picks the newest sweep under results/,

then times, as a user runs them, each command several times (wall clock of the whole process, measured
with time.perf_counter around subprocess.run; the first call of each is a discarded warm-up):

    python -m tfcnnwrap report big-a --format json
    python -m tfcnnwrap report --format json                 (in the history's directory)
    python -m tfcnnwrap compare big-a --against "1080-Ti,2080,2080-Ti,Vega 64,V100" --format json
    python -m tfcnnwrap compare big-a big-b --format json

Usage:
    python benchmarks/bench_report_scale.py [--repeat 5] [--runs 10000] [--json FILE] [--keep]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from sweepdata import SEED_2070, write_sweep  # noqa: E402

GOAL_S = 2.0
BATCH_SIZES = [8, 16, 24, 32, 48, 64, 96, 128, 256, 512]


def big_results(runs, rng, scale=1.0):
    """{(model, batch_size): [images/sec or 'oom', ...]} holding ``runs`` runs in all."""
    pairs = [(m, bs) for m in SEED_2070 for bs in BATCH_SIZES]
    per_pair = max(1, runs // len(pairs))
    results = {}
    for model, bs in pairs:
        centre = SEED_2070[model] * scale
        results[(model, bs)] = [
            "oom" if rng.random() < 0.01 else round(rng.gauss(centre, centre * 0.01), 2) for _ in range(per_pair)
        ]
    return results


def history(root, sweeps, runs_each, rng):
    """``sweeps`` sweep directories under root/results, ``runs_each`` runs each, distinct creation times."""
    results_dir = root / "results"
    pairs = [(m, bs) for m in SEED_2070 for bs in (32, 64)]
    for i in range(sweeps):
        per_pair = max(1, runs_each // len(pairs))
        data = {(m, bs): [round(rng.gauss(SEED_2070[m], 1.0), 2) for _ in range(per_pair)] for m, bs in pairs}
        path = write_sweep(results_dir / ("2026%04d-101500" % (i + 1)), data)
        meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
        meta["created_at"] = "2026-11-30T%02d:%02d:%02dZ" % (i // 3600, (i // 60) % 60, i % 60)
        (path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    return results_dir


def count_runs(path):
    with open(path / "runs.jsonl", "rb") as fh:
        return sum(1 for _ in fh)


def wall(argv, cwd, env):
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s" % (proc.returncode, " ".join(argv), proc.stderr.decode()[-2000:]))
    return elapsed, proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per command (default 5)")
    ap.add_argument("--runs", type=int, default=10000, help="runs per big sweep and in the history (default 10000)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the generated directories")
    opts = ap.parse_args()

    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-scale-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    py = sys.executable
    try:
        a = write_sweep(work / "big-a", big_results(opts.runs, rng))
        b = write_sweep(work / "big-b", big_results(opts.runs, rng, scale=1.02))
        hist = history(work, sweeps=200, runs_each=max(1, opts.runs // 200), rng=rng)
        hist_runs = sum(count_runs(p) for p in hist.iterdir())
        print(
            "generated: big-a %d runs, big-b %d runs, results/ %d sweeps with %d runs (in %s)"
            % (count_runs(a), count_runs(b), len(list(hist.iterdir())), hist_runs, work)
        )

        against = "1080-Ti,2080,2080-Ti,Vega 64,V100"
        cases = [
            ("python -c pass", [py, "-c", "pass"], work),
            (
                "report big-a --format json (%d runs)" % count_runs(a),
                [py, "-m", "tfcnnwrap", "report", str(a), "--format", "json"],
                work,
            ),
            (
                "report --format json (newest of 200 sweeps under results/)",
                [py, "-m", "tfcnnwrap", "report", "--format", "json"],
                work,
            ),
            (
                "compare big-a --against (5 references) --format json",
                [py, "-m", "tfcnnwrap", "compare", str(a), "--against", against, "--format", "json"],
                work,
            ),
            (
                "compare big-a --against (5 references), table",
                [py, "-m", "tfcnnwrap", "compare", str(a), "--against", against],
                work,
            ),
            (
                "compare big-a big-b --format json",
                [py, "-m", "tfcnnwrap", "compare", str(a), str(b), "--format", "json"],
                work,
            ),
            ("compare big-a big-b, table", [py, "-m", "tfcnnwrap", "compare", str(a), str(b)], work),
        ]
        figures = []
        print("\n| command | median s | min s | max s | goal |")
        print("|---|---|---|---|---|")
        for label, argv, cwd in cases:
            wall(argv, cwd, env)  # warm-up: page cache and .pyc files
            times = [wall(argv, cwd, env)[0] for _ in range(opts.repeat)]
            median = statistics.median(times)
            goal = "" if label.startswith("python -c") else ("ok" if median < GOAL_S else "MISSED (< %g s)" % GOAL_S)
            figures.append(
                {
                    "command": label,
                    "median_s": median,
                    "min_s": min(times),
                    "max_s": max(times),
                    "goal_met": None if not goal else median < GOAL_S,
                }
            )
            print("| %s | %.2f | %.2f | %.2f | %s |" % (label, median, min(times), max(times), goal))
            sys.stdout.flush()
        print(
            "\nPython %s on %s, %d CPUs; %d timed runs each."
            % (sys.version.split()[0], sys.platform, os.cpu_count() or 0, opts.repeat)
        )
        if opts.json:
            Path(opts.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
        return 0 if all(f["goal_met"] is not False for f in figures) else 1
    finally:
        if opts.keep:
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
