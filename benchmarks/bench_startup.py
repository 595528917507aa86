"""Start-up: `python -m tfcnnwrap --help` against a bare `python -c pass`, and `report` on a 15-run sweep.

Alternates the commands, several runs each, and prints medians. Goals (issue 7): --help <= 10x
`python -c pass`; report on a 15-run sweep < 1 s.

    python benchmarks/bench_startup.py --runs 20

`--verbs` times the reading verbs instead (issue 39, "Start-up, round two"): list, references, verify,
report of a 10-run sweep (with the summary.json a sweep leaves, and without it: pandas), compare --rank; each
from /tmp with the user cache in a temporary directory (warmed by the first run), against `python -c pass`
in the same rounds. Goals: report <= 8x, compare --rank <= 10x, list and references <= 4x.

    python benchmarks/bench_startup.py --verbs --runs 5
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
    meta = {
        "format": 1,
        "created_at": "2026-11-30T10:15:00Z",
        "device": "gpu",
        "tensorflow_version": "1.12.0",
        "plan": {"models": [{"model": m, "batch_size": b} for m, b in models], "runs": runs},
    }
    (path / "sweep.json").write_text(json.dumps(meta))
    with open(path / "runs.jsonl", "w") as fh:
        for m, b in models:
            for k in range(1, runs + 1):
                fh.write(
                    json.dumps(
                        {
                            "model": m,
                            "batch_size": b,
                            "run": k,
                            "status": "ok",
                            "images_per_sec": 100.0 + k,
                            "exit_code": 0,
                            "duration_s": 60.0,
                            "started_at": "2026-11-30T10:15:00Z",
                            "log": "logs/%s-bs%d-run%d.log" % (m, b, k),
                            "command": [],
                        }
                    )
                    + "\n"
                )


def keep_summary(path):
    """summary.json as the sweep leaves it after its last run (its own code, so the figures are today's)."""
    sys.path.insert(0, str(ROOT))
    from tfcnnwrap.results.aggregate import config_rows
    from tfcnnwrap.results.store import load_sweep
    from tfcnnwrap.results.summarycache import write_summary_json

    sweep, _, runs = load_sweep(path)
    write_summary_json(sweep, runs, config_rows(runs))


def verb_cases(py, work):
    """The reading verbs' commands over a results directory of a 10-run sweep and the egpu-H2D sample."""
    import shutil

    results = work / "results"
    make_sweep(results / "sweep10", runs=2)  # 5 configurations x 2 runs
    shutil.copytree(ROOT / "tests" / "data" / "samples" / "results" / "egpu-H2D", results / "egpu-H2D")
    shutil.copytree(results / "sweep10", results / "sweep10-old")  # as a sweep from before summary.json
    for name in ("sweep10", "egpu-H2D"):
        keep_summary(results / name)
    tf = [py, "-m", "tfcnnwrap"]
    sys.path.insert(0, str(ROOT / "tests"))
    from bundledata import logged_sweep  # a sweep with its logs, as the tests export one

    logged_sweep(work / "logged")
    (work / "bundles").mkdir()
    subprocess.run(
        tf + ["export", str(work / "logged"), "--out", str(work / "bundles")],
        check=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.DEVNULL,
    )
    bundle = next((work / "bundles").iterdir())
    return {
        "python -c pass": [py, "-c", "pass"],
        "list": tf + ["list", str(results)],
        "references": tf + ["references"],
        "verify BUNDLE": tf + ["verify", str(bundle)],
        "report SWEEP (10 runs)": tf + ["report", str(results / "sweep10")],
        "report SWEEP (10 runs, no summary.json)": tf + ["report", str(results / "sweep10-old")],
        "compare SWEEP --rank": tf + ["compare", str(results / "egpu-H2D"), "--rank"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--verbs", action="store_true", help="the reading verbs (issue 39) instead")
    ap.add_argument("--baseline", help="another checkout's root: its tfcnnwrap timed in the same rounds")
    opts = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-startup-"))
    env["XDG_CACHE_HOME"] = str(work / "cache")  # the parsed references, made by the warm-up
    # as installed: each module's .pyc written by the warm-up and read after it (with this set, every run
    # compiles each tfcnnwrap module from source again: ~90 ms of a `compare --rank`)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    make_sweep(work / "sweep")

    cases = (
        verb_cases(py, work)
        if opts.verbs
        else {
            "python -c pass": [py, "-c", "pass"],
            "python -m tfcnnwrap --help": [py, "-m", "tfcnnwrap", "--help"],
            "python -m tfcnnwrap report SWEEP (15 runs)": [py, "-m", "tfcnnwrap", "report", str(work / "sweep")],
            "python -m tfcnnwrap report SWEEP --format json": [
                py,
                "-m",
                "tfcnnwrap",
                "report",
                str(work / "sweep"),
                "--format",
                "json",
            ],
        }
    )
    envs = {name: env for name in cases}
    if opts.baseline:  # the same commands against another tree (say /work/main), in the same rounds
        other = dict(env, PYTHONPATH=str(Path(opts.baseline).resolve()))
        for name in [n for n in cases if n != "python -c pass"]:
            cases[name + " [baseline]"] = cases[name]
            envs[name + " [baseline]"] = other
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    for name, argv in cases.items():  # warm-up: page cache, .pyc files, the references' cache
        wall(argv, envs[name], cwd="/tmp")
    times = {name: [] for name in cases}
    for _ in range(opts.runs):
        for name, argv in cases.items():
            times[name].append(wall(argv, envs[name], cwd="/tmp"))
    base = statistics.median(times["python -c pass"])
    print("| command | median (s) | min (s) | max (s) | x python -c pass |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        med = statistics.median(values)
        print("| `%s` | %.3f | %.3f | %.3f | %.1f |" % (name, med, min(values), max(values), med / base))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
