"""Sweep overhead: 15 runs through `tfcnnwrap sweep` against the same 15 commands run directly in a loop.

The stand-in benchmark (tests/fake/tf_cnn_benchmarks.py) prints a step line every ~0.2 s for ~2 s, like a
real run at display_every=10. Variants alternate A B A B so drift hits both alike. Reported per variant:
wall time, CPU of the process tree (getrusage of children, user+sys); and per pair the wall ratio A/B and
A's extra CPU over B. Goals (issue 7): wall ratio <= 1.02, extra CPU <= 1 s for the whole sweep.

    python benchmarks/bench_sweep_overhead.py --pairs 3
    python benchmarks/bench_sweep_overhead.py --pairs 3 --against /tmp/main-export   # that code's sweep too

``--nvidia-smi`` puts the stand-in nvidia-smi (tests/fake) on the sweeps' PATH, so that they sample GPU telemetry
as on a GPU machine (the direct loop samples nothing): what telemetry costs the harness, the stand-in's own
start-up (a Python script's, where a real nvidia-smi pays its driver library's) included.

``--against DIR`` adds a third variant per round: the sweep of the tfcnnwrap checkout (or `git archive`
export) at DIR, run right before this checkout's, so that a change is compared with its base in the same run
on the same (possibly loaded) machine. The load average is printed before and after.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import make_fake_tf_env, make_vendor  # noqa: E402

SEED = [("resnet50", 64), ("resnet152", 32), ("inception3", 64), ("vgg16", 64), ("alexnet", 512)]


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(fn):
    cpu0, wall0 = children_cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - wall0, children_cpu() - cpu0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--step-delay", type=float, default=0.2)
    ap.add_argument("--against", type=Path, help="another tfcnnwrap checkout whose sweep runs in each pair too")
    ap.add_argument("--nvidia-smi", action="store_true", help="the sweeps sample the stand-in nvidia-smi")
    opts = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-overhead-"))
    vendor = make_vendor(work / "vendor")
    python = str(make_fake_tf_env(work / "tfenv", "1.12.0", "tensorflow-gpu"))
    script_dir = vendor / "benchmarks" / "scripts" / "tf_cnn_benchmarks"
    env = dict(os.environ, FAKE_TFCNN_STEP_DELAY=str(opts.step_delay), PYTHONUNBUFFERED="1")

    def by_hand(tag):
        logs = work / ("hand-%s" % tag)
        logs.mkdir()
        for model, bs in SEED:
            for run in (1, 2, 3):
                argv = [
                    python,
                    "-u",
                    "tf_cnn_benchmarks.py",
                    "--model=%s" % model,
                    "--batch_size=%d" % bs,
                    "--num_gpus=1",
                    "--variable_update=parameter_server",
                ]
                with open(logs / ("%s-%d.log" % (model, run)), "wb") as log:
                    subprocess.run(argv, cwd=script_dir, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)

    # the stand-in samples once a second as a real nvidia-smi does (FAKE_NVSMI_TICK)
    smi = {"PATH": str(ROOT / "tests" / "fake") + os.pathsep + env["PATH"], "FAKE_NVSMI_TICK": "1"}
    smi = smi if opts.nvidia_smi else {}

    def wrapped(tag, root=ROOT):
        out = work / ("sweep-%s" % tag)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tfcnnwrap",
                "sweep",
                "--python",
                python,
                "--vendor-dir",
                str(vendor),
                "--device",
                "gpu",
                "--out",
                str(out),
            ],
            cwd=work,
            env=dict(env, PYTHONPATH=str(root), **smi),
            stdout=subprocess.DEVNULL,
            check=True,
        )

    print("load average before: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    rows, others = [], []
    for i in range(opts.pairs):
        if opts.against is not None:
            o_wall, o_cpu = timed(lambda i=i: wrapped("against-%d" % i, opts.against.resolve()))
        a_wall, a_cpu = timed(lambda i=i: wrapped(i))
        b_wall, b_cpu = timed(lambda i=i: by_hand(i))
        rows.append((a_wall, b_wall, a_cpu, b_cpu))
        print(
            "pair %d: sweep %.2f s (cpu %.2f s)  by hand %.2f s (cpu %.2f s)  wall ratio %.4f  extra cpu %.2f s"
            % (i + 1, a_wall, a_cpu, b_wall, b_cpu, a_wall / b_wall, a_cpu - b_cpu),
            flush=True,
        )
        if opts.against is not None:
            others.append((o_wall / b_wall, o_cpu - b_cpu))
            print(
                "        --against: sweep %.2f s (cpu %.2f s)  wall ratio %.4f  extra cpu %.2f s"
                % (o_wall, o_cpu, o_wall / b_wall, o_cpu - b_cpu),
                flush=True,
            )
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    ratios = [a / b for a, b, _, _ in rows]
    extra = [ac - bc for _, _, ac, bc in rows]
    print()
    print("| figure | median | min | max |")
    print("|---|---|---|---|")
    spread = (statistics.median, min, max)
    print("| sweep wall (s) | %.2f | %.2f | %.2f |" % tuple(f([r[0] for r in rows]) for f in spread))
    print("| by-hand wall (s) | %.2f | %.2f | %.2f |" % tuple(f([r[1] for r in rows]) for f in spread))
    print("| wall ratio sweep/by hand | %.4f | %.4f | %.4f |" % (statistics.median(ratios), min(ratios), max(ratios)))
    print("| sweep CPU (s) | %.2f | %.2f | %.2f |" % tuple(f([r[2] for r in rows]) for f in spread))
    print("| by-hand CPU (s) | %.2f | %.2f | %.2f |" % tuple(f([r[3] for r in rows]) for f in spread))
    print("| wrapper's extra CPU (s) | %.2f | %.2f | %.2f |" % (statistics.median(extra), min(extra), max(extra)))
    if others:
        o_ratios, o_extra = [r for r, _ in others], [e for _, e in others]
        print(
            "| --against: wall ratio | %.4f | %.4f | %.4f |"
            % (statistics.median(o_ratios), min(o_ratios), max(o_ratios))
        )
        print(
            "| --against: extra CPU (s) | %.2f | %.2f | %.2f |"
            % (statistics.median(o_extra), min(o_extra), max(o_extra))
        )


if __name__ == "__main__":
    main()
