"""The HTML pages: their sizes (KB) and the time `site` takes for 1,000 sweeps (issue 25).

Builds, in a temporary directory, sweeps in the contract's format (tests/sweepdata.py): the seed's five
models, 3 runs each, at figures scattered around the seed's 2070 numbers, on 10 GPU names, then times as a
user runs it (wall clock of the whole process, time.perf_counter around subprocess.run)

    python -m tfcnnwrap site SWEEPS_DIR --out SITE          (1,000 sweeps: --sweeps)

and measures the pages a user writes from the seed's figures:

    python -m tfcnnwrap report SEED --format html
    python -m tfcnnwrap compare SEED --against "1080-Ti,2080,2080-Ti,Vega 64,V100" --format html
    python -m tfcnnwrap compare SEED B C --format html       (A/B, two candidates)
    python -m tfcnnwrap compare SEED --rank --format html

Usage:
    python benchmarks/bench_site.py [--sweeps 1000] [--repeat 1] [--json FILE] [--keep]
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from sweepdata import SEED_BATCH, seed_runs, write_sweep  # noqa: E402

GPUS = [
    "GeForce RTX 2070",
    "GeForce RTX 2080",
    "GeForce RTX 2080 Ti",
    "GeForce GTX 1080 Ti",
    "Tesla V100",
    "Radeon RX Vega 64",
    "TITAN RTX",
    "Tesla T4",
    "A100-SXM4-40GB",
    "GeForce RTX 3090",
]


def _children_cpu():
    try:
        import resource
    except ImportError:  # Windows: wall clock only
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CPU = []  # CPU seconds (user + system) of each command, its worker processes included


def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cpu, started = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    elapsed = time.perf_counter() - started
    CPU.append(_children_cpu() - cpu)
    if proc.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(map(str, args)), proc.stderr.decode()))
    return elapsed, proc.stdout


def make_sweeps(root, count, seed=25):
    rng = random.Random(seed)
    for i in range(count):
        factor = 0.5 + (i % len(GPUS)) * 0.2
        values = {k: [round(v[0] * factor * rng.uniform(0.97, 1.03), 2) for _ in v] for k, v in seed_runs().items()}
        write_sweep(root / ("sweep-%04d" % i), values, gpus=[GPUS[i % len(GPUS)]])


def page_sizes(tmp):
    seed = write_sweep(tmp / "seed", seed_runs())
    b = write_sweep(tmp / "b", {k: [v[0] * 1.03] * 3 for k, v in seed_runs().items()})
    c = write_sweep(tmp / "c", {k: [v[0] * 0.98] * 3 for k, v in seed_runs().items()})
    pages = {
        "report": ["report", seed],
        "against": ["compare", seed, "--against", "1080-Ti,2080,2080-Ti,Vega 64,V100"],
        "ab (2 candidates)": ["compare", seed, b, c],
        "rank": ["compare", seed, "--rank"],
    }
    out = {}
    for name, args in pages.items():
        elapsed, html = cli(*args, "--format", "html")
        out[name] = {"kb": round(len(html) / 1024, 1), "s": round(elapsed, 2)}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-site-"))
    try:
        sizes = page_sizes(tmp)
        sweeps = tmp / "sweeps"
        sweeps.mkdir()
        make_sweeps(sweeps, args.sweeps)
        times, cpu = [], []
        for _ in range(args.repeat):
            shutil.rmtree(tmp / "site", ignore_errors=True)
            times.append(round(cli("site", sweeps, "--out", tmp / "site")[0], 2))
            cpu.append(round(CPU[-1], 2))
        site = tmp / "site"
        files = [p for p in site.rglob("*.html")]
        result = {
            "sweeps": args.sweeps,
            "runs": args.sweeps * 3 * len(SEED_BATCH),
            "site_s": times,
            "site_median_s": round(statistics.median(times), 2),
            "site_cpu_s": cpu,
            "pages": len(files),
            "site_mb": round(sum(p.stat().st_size for p in files) / 2**20, 1),
            "index_kb": round((site / "index.html").stat().st_size / 1024, 1),
            "gpu_page_kb_max": round(max(p.stat().st_size for p in (site / "gpu").glob("*.html")) / 1024, 1),
            "sweep_page_kb_median": round(
                statistics.median(p.stat().st_size for p in (site / "r").glob("*.html")) / 1024, 1
            ),
            "pages_from_the_seed": sizes,
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        }
        print(json.dumps(result, indent=2))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    finally:
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
