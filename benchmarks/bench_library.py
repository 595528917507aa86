"""Scale of the library (issue 24): import 10,000 bundles, rank a sweep against them, pull an up-to-date repo.

Builds, in a temporary directory, N synthetic bundles (default 10,000): 20 GPUs, the seed's five models x 3
runs each, every run with its log (header, step lines, total) so each bundle verifies as a real one does.
Then times, as a user runs them (wall clock of the whole process around subprocess.run):

    python -m tfcnnwrap import BUNDLE_DIR                     (into an empty TFCNNWRAP_DATA; goal <= 300 s at 100,000)
    python -m tfcnnwrap compare SWEEP --rank --format json   (against that library; goal <= 1.5 s; --repeat times)
    python -m tfcnnwrap pull REPO                             (a bare repository holding every bundle, already
                                                               imported and fetched once; goal <= 1 s)
    python -m tfcnnwrap site library --out DIR                (goal <= 600 s at 100,000; --no-site leaves it out)

Usage:
    python benchmarks/bench_library.py [--bundles 10000] [--repeat 3] [--json FILE] [--keep]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bundledata import log_text, logged_sweep  # noqa: E402
from sweepdata import SEED_2070, SEED_BATCH  # noqa: E402

from tfcnnwrap.results.bundlerecords import LogEntry  # noqa: E402
from tfcnnwrap.share import bundle as bundles  # noqa: E402

GOALS_S = {"import": 300.0, "rank": 1.5, "pull": 1.0, "site": 600.0}  # issue 39: the goals at 100,000
GPUS = ["GeForce RTX %d" % n for n in (2060, 2070, 2080, 3060, 3070, 3080, 3090, 4070, 4080, 4090)] + [
    "Tesla V100",
    "Tesla T4",
    "A100-SXM4-40GB",
    "Radeon RX Vega 64",
    "Quadro RTX 6000",
    "TITAN RTX",
    "GeForce GTX 1080 Ti",
    "GeForce GTX 1070",
    "Tesla P100",
    "H100 PCIe",
]


def synthetic_bundle(i):
    """Bundle number ``i``: its GPU, a speed factor, 5 models x 3 runs with logs."""
    gpu = GPUS[i % len(GPUS)]
    factor = 0.4 + (i % len(GPUS)) * 0.02 + (i % 7) * 0.01  # under every GPU's physical ceiling (verify)
    runs, logs, summary = [], {}, []
    for model, batch in SEED_BATCH.items():
        ips = round(SEED_2070[model] * factor, 2)
        for run in (1, 2, 3):
            name = "%s-bs%d-run%d.log" % (model, batch, run)
            text = log_text(model, batch, ips)
            logs[name] = LogEntry(text=text, sha256=bundles.sha256_text(text))
            runs.append(
                {
                    "model": model,
                    "batch_size": batch,
                    "run": run,
                    "status": "ok",
                    "images_per_sec": ips,
                    "exit_code": 0,
                    "duration_s": 60.0,
                    "started_at": "2026-11-30T10:00:00Z",
                    "num_gpus": 1,
                    "log": name,
                }
            )
        summary.append(
            {"model": model, "batch_size": batch, "runs_ok": 3, "runs_failed": 0, "mean": ips, "num_gpus": 1}
        )
    conditions = {
        "gpu": gpu,
        "gpus": [gpu],
        "vendor": bundles.vendor_of(gpu),
        "precision": "fp32",
        "xla": "no",
        "num_gpus": [1],
        "variable_update": "parameter_server",
        "data": "synthetic",
        "batch_sizes": dict(SEED_BATCH),
        "tensorflow_version": "1.12.0",
        "host": "<host>",
    }
    created = "2026-%02d-%02dT%02d:%02d:%02dZ" % (
        1 + i // 40000 % 12,
        1 + i // 1440 % 28,
        i // 60 % 24,
        i % 60,
        i // 10000 % 60,
    )
    plan = {
        "runs": 3,
        "until_ci": None,
        "max_runs": None,
        "not_started": [],
        "configurations": [{"model": m, "batch_size": b, "num_gpus": 1} for m, b in SEED_BATCH.items()],
    }
    return bundles.new_bundle(conditions, runs, summary, logs, created, plan=plan)


def make_bundles(folder, count):
    folder.mkdir(parents=True)
    for i in range(count):
        item = synthetic_bundle(i)
        sub = folder / "bundles" / item.to_dict()["conditions"]["vendor"] / bundles.slug(item.gpu)
        sub.mkdir(parents=True, exist_ok=True)
        (sub / bundles.file_name(item)).write_bytes(bundles.to_bytes(item))
    return folder


CPU_S = {}  # command -> CPU seconds (user + system) of its last run, the figure a busy machine does not inflate
SYS_S = {}  # command -> of which system time
PEAK_MB = {}  # command -> peak RSS of the largest process run so far, MB


def timed(args, env, cwd=None):
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *[str(a) for a in args]],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_S[args[0]] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    SYS_S[args[0]] = after.ru_stime - before.ru_stime  # the kernel's share: file creation, under load the most
    PEAK_MB[args[0]] = after.ru_maxrss / 1024  # the largest process yet (this command's if it is the largest)
    if proc.returncode != 0:
        raise SystemExit(
            "failed (%d): %s\n%s" % (proc.returncode, " ".join(map(str, args)), proc.stderr.decode()[-3000:])
        )
    return elapsed, proc


def make_repo(tmp, folder):
    """A bare repository whose one commit holds every bundle under bundles/<vendor>/<gpu-slug>/."""
    bare, work = tmp / "results.git", folder
    git_env = dict(
        os.environ,
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@example.invalid",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@example.invalid",
    )
    for args in (
        ["init", "-q", "--bare", str(bare)],
        ["-C", str(work), "init", "-q"],
        ["-C", str(work), "add", "-A"],
        ["-C", str(work), "commit", "-qm", "bundles"],
        ["-C", str(work), "push", "-q", str(bare), "HEAD:refs/heads/master"],
    ):
        subprocess.run(["git", *args], check=True, env=git_env)
    return bare


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundles", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-site", action="store_true", help="leave out `site library` (the longest figure)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-library-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), TFCNNWRAP_DATA=str(tmp / "data"))
    try:
        start = time.perf_counter()
        folder = make_bundles(tmp / "in", args.bundles)
        print(
            "made %d bundles in %.1f s (%.1f MB)"
            % (args.bundles, time.perf_counter() - start, sum(p.stat().st_size for p in folder.rglob("*.gz")) / 1e6)
        )
        figures = {"bundles": args.bundles}
        figures["import_s"], proc = timed(["import", folder], env)
        figures["import_cpu_s"], figures["import_sys_s"] = CPU_S["import"], SYS_S["import"]
        print(
            "import: %.1f s, CPU %.1f s (system %.1f s)  (%s)"
            % (figures["import_s"], CPU_S["import"], SYS_S["import"], proc.stderr.decode().strip().splitlines()[-1])
        )
        sweep = logged_sweep(tmp / "mine", values=dict(SEED_2070))
        timed(["compare", sweep, "--rank", "--source", "all", "--format", "json"], env)  # warm-up
        ranks, cpus = [], []
        for _ in range(args.repeat):
            ranks.append(timed(["compare", sweep, "--rank", "--source", "all", "--format", "json"], env)[0])
            cpus.append(CPU_S["compare"])
        figures["rank_s"], figures["rank_cpu_s"] = statistics.median(ranks), statistics.median(cpus)
        builtin = [
            timed(["compare", sweep, "--rank", "--format", "json", "--source", "builtin"], env)[0]
            for _ in range(args.repeat)
        ]
        figures["rank_builtin_s"], figures["rank_builtin_cpu_s"] = statistics.median(builtin), CPU_S["compare"]
        print(
            "compare --rank: median %.2f s (CPU %.2f s) of %s; --source builtin (no library read): %.2f s "
            "(CPU %.2f s)"
            % (
                figures["rank_s"],
                figures["rank_cpu_s"],
                ", ".join("%.2f" % t for t in ranks),
                figures["rank_builtin_s"],
                figures["rank_builtin_cpu_s"],
            )
        )
        bare = make_repo(tmp, folder)
        figures["first_pull_s"] = timed(["pull", bare], env)[0]
        pulls = [timed(["pull", bare], env)[0] for _ in range(args.repeat)]
        figures["pull_s"], figures["pull_cpu_s"] = statistics.median(pulls), CPU_S["pull"]
        print(
            "pull (first fetch %.2f s); up to date: median %.2f s (CPU %.2f s) of %s"
            % (figures["first_pull_s"], figures["pull_s"], figures["pull_cpu_s"], ", ".join("%.2f" % t for t in pulls))
        )
        if not args.no_site:
            figures["site_s"], proc = timed(["site", "library", "--out", tmp / "site"], env)
            figures["site_cpu_s"] = CPU_S["site"]
            figures["site_sys_s"], figures["site_peak_mb"] = SYS_S["site"], PEAK_MB["site"]
            print(
                "site library: %.1f s, CPU %.1f s (system %.1f s), peak RSS %.0f MB (%s)"
                % (
                    figures["site_s"],
                    figures["site_cpu_s"],
                    SYS_S["site"],
                    PEAK_MB["site"],
                    proc.stderr.decode().strip().splitlines()[-1][:90],
                )
            )
        for key, goal in GOALS_S.items():
            if key + "_s" not in figures:
                continue
            print(
                "%-7s %6.2f s (CPU %.2f s)  goal <= %g s  %s"
                % (
                    key,
                    figures[key + "_s"],
                    figures[key + "_cpu_s"],
                    goal,
                    "ok" if figures[key + "_s"] <= goal else "MISSED (wall clock)",
                )
            )
        print("load average while measuring: %.1f %.1f %.1f on %d CPUs" % (os.getloadavg() + (os.cpu_count(),)))
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    finally:
        if args.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(str(tmp), ignore_errors=True)


if __name__ == "__main__":
    main()
