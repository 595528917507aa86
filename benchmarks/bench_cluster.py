"""Local cluster overhead: time from starting a distributed job to its first step line, through
``tfcnnwrap.cluster.localjob.run_job`` against the same tasks started by hand (subprocess, same argv, env and cwd).

Pairs alternate A B / B A so that drift hits both alike. Goal (issue 16): the median paired difference is
within 1 s. Needs a real TensorFlow and a tensorflow/benchmarks checkout; 1 worker + 1 ps by default, since a
second worker waits a fixed 30 s in TensorFlow before it starts (the first step of worker 0 waits with it).

    python benchmarks/bench_cluster.py --python /work/tfvenv/bin/python --checkout /tmp/benchmarks --pairs 3
    python benchmarks/bench_cluster.py ... --check          # one 2-worker 1-ps job: figure = worker 0's log

Prints one JSON object (per pair: seconds to the first step both ways, and the difference).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tfcnnwrap.cluster import cluster  # noqa: E402
from tfcnnwrap.run.logparse import LogParser  # noqa: E402
from tfcnnwrap.run.procs import kill_tree, popen_group_kwargs  # noqa: E402

STEP = re.compile(rb"^\d+\s+images/sec:", re.M)


def base_argv(python, model, batches):
    return [
        python,
        "-u",
        "tf_cnn_benchmarks.py",
        "--model=%s" % model,
        "--batch_size=8",
        "--num_batches=%d" % batches,
        "--num_warmup_batches=2",
        "--device=cpu",
        "--data_format=NHWC",
    ]


def with_tfcnnwrap(opts, argv, env, cwd, logs):
    first = []
    started = time.perf_counter()
    outcome = cluster.run_job(
        argv,
        cwd,
        env,
        logs,
        "bench",
        mode=opts.mode,
        workers=opts.workers,
        ps=opts.ps,
        timeout_s=600,
        on_step=lambda s: first or first.append(time.perf_counter() - started),
    )
    if outcome.status != "ok":
        raise SystemExit("tfcnnwrap job failed: %s %s" % (outcome.status, outcome.failure))
    return first[0], time.perf_counter() - started, outcome


def by_hand(opts, argv, env, cwd):
    """The same tasks started directly: Popen each, read worker 0 until its first step line."""
    plan = cluster.local_plan(opts.mode, opts.workers, opts.ps)
    env = dict(env, PYTHONUNBUFFERED="1")
    started = time.perf_counter()
    procs = []
    try:
        for task in plan.tasks:
            out = subprocess.PIPE if task.reports else subprocess.DEVNULL
            procs.append(
                subprocess.Popen(
                    plan.argv_for(task, argv),
                    cwd=str(cwd),
                    env=dict(env, **dict(task.env)),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    bufsize=0,
                    **popen_group_kwargs(),
                )
            )
        reporter = procs[[t.reports for t in plan.tasks].index(True)]
        seen, first = b"", None
        while True:
            chunk = reporter.stdout.read(65536)
            if not chunk:
                break
            seen += chunk
            if first is None and STEP.search(seen):
                first = time.perf_counter() - started
        reporter.wait()
        return first, time.perf_counter() - started
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_tree(proc)
            if proc.stdout:
                proc.stdout.close()


def overhead(opts, argv, env, cwd, work):
    pairs = []
    for i in range(opts.pairs):
        logs = work / ("pair%d" % i)
        logs.mkdir()
        order = ("tfcnnwrap", "hand") if i % 2 == 0 else ("hand", "tfcnnwrap")
        got = {}
        for variant in order:
            if variant == "tfcnnwrap":
                got[variant] = with_tfcnnwrap(opts, argv, env, cwd, logs)[:2]
            else:
                got[variant] = by_hand(opts, argv, env, cwd)
        pairs.append(
            {
                "order": list(order),
                "tfcnnwrap_first_step_s": round(got["tfcnnwrap"][0], 3),
                "hand_first_step_s": round(got["hand"][0], 3),
                "diff_s": round(got["tfcnnwrap"][0] - got["hand"][0], 3),
                "tfcnnwrap_total_s": round(got["tfcnnwrap"][1], 3),
                "hand_total_s": round(got["hand"][1], 3),
            }
        )
    median = statistics.median(p["diff_s"] for p in pairs)
    return {
        "mode": opts.mode,
        "workers": opts.workers,
        "ps": opts.ps,
        "pairs": pairs,
        "median_diff_s": round(median, 3),
        "within_1s": abs(median) <= 1.0,
    }


def check(opts, argv, env, cwd, work):
    """One job (2 workers, 1 ps by default): the recorded figure must be the reporting task's own total
    (worker 0's; the controller's under distributed_all_reduce)."""
    logs = work / "check"
    logs.mkdir()
    first, total_s, outcome = with_tfcnnwrap(opts, argv, env, cwd, logs)
    reporter = next(t for t in outcome.cluster["tasks"] if t["reports"])
    parser = LogParser()
    parser.feed_bytes(Path(reporter["log"]).read_bytes(), final=True)
    return {
        "mode": opts.mode,
        "workers": opts.workers,
        "ps": opts.ps,
        "status": outcome.status,
        "reporting_task": "%s%d" % (reporter["role"], reporter["index"]),
        "images_per_sec": outcome.images_per_sec,
        "reporting_log_total": parser.result().total_images_per_sec,
        "equal": outcome.images_per_sec == parser.result().total_images_per_sec,
        "first_step_s": round(first, 3),
        "duration_s": round(total_s, 3),
        "cluster": outcome.cluster,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="/work/tfvenv/bin/python")
    ap.add_argument("--checkout", required=True, help="a tensorflow/benchmarks checkout (master for TF 2.x)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--model", default="trivial")
    ap.add_argument("--num-batches", type=int, default=20)
    ap.add_argument("--mode", default="parameter_server")
    ap.add_argument("--workers", type=int)
    ap.add_argument("--ps", type=int)
    ap.add_argument("--check", action="store_true")
    opts = ap.parse_args()
    if opts.workers is None:
        opts.workers = 2 if opts.check else 1
    if opts.ps is None and opts.mode in ("parameter_server", "distributed_replicated"):
        opts.ps = 1
    cwd = Path(opts.checkout) / "scripts" / "tf_cnn_benchmarks"
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", PYTHONUNBUFFERED="1")
    argv = base_argv(opts.python, opts.model, opts.num_batches)
    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-cluster-"))
    result = check(opts, argv, env, cwd, work) if opts.check else overhead(opts, argv, env, cwd, work)
    result["work"] = str(work)
    print(json.dumps(result, indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
