"""Setup figures (docs/performance.md, issue 7 item 4).

1. Bytes on disk of the checkout `setup` makes (depth 1, single branch) against a full `git clone` of the
   same upstream, a generated repo with real history. Goal: <= 1/8.
2. Wall time of re-running `setup` with the checkout in place. Goal: < 1 s, and no network: the upstream is
   deleted and git is taken off PATH before the re-runs, which must still succeed.

Optionally (--mirror PATH) the same byte counts for a real tensorflow/benchmarks mirror, with the seed's
manual clone (full history of one branch) for comparison.

usage: python benchmarks/bench_setup.py [--history 200] [--filler-kb 64] [--reruns 10] [--mirror PATH]
"""

import argparse
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

from conftest import build_fake_upstream, make_fake_tf_env  # noqa: E402 - the tests' generators


def tree_bytes(path):
    """Sum of file sizes under ``path`` (what Explorer's "Size" shows), and the part inside .git."""
    total = in_git = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            size = os.lstat(os.path.join(dirpath, name)).st_size
            total += size
            if ".git" in Path(dirpath).relative_to(path).parts:
                in_git += size
    return total, in_git


def tfcnnwrap(*args, cwd, env=None):
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", "setup", *map(str, args)],
        cwd=str(cwd),
        env=dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("setup failed (%d): %s" % (proc.returncode, proc.stderr.decode(errors="replace")))
    return wall, proc.stdout.decode(errors="replace")


def git(*args, cwd=None):
    subprocess.run(["git", *map(str, args)], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kib(n):
    return "%.1f KiB" % (n / 1024.0) if n < 10 * 1024 * 1024 else "%.1f MiB" % (n / 1024.0 / 1024.0)


def row(cells, widths):
    return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))


def print_table(title, header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print("\n" + title)
    print(row(header, widths))
    print(row(["-" * w for w in widths], widths))
    for r in rows:
        print(row(r, widths))


def python_startup(repeats):
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=200, help="commits on master (default 200)")
    parser.add_argument("--filler-kb", type=int, default=64, help="incompressible KiB rewritten per commit")
    parser.add_argument("--reruns", type=int, default=10, help="re-runs of setup to time (median)")
    parser.add_argument("--mirror", help="also measure a real tensorflow/benchmarks mirror (path)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-setup-"))
    try:
        started = time.perf_counter()
        upstream = build_fake_upstream(
            work / "upstream" / "benchmarks.git", history=args.history, filler_kb=args.filler_kb
        )
        build_s = time.perf_counter() - started

        project = work / "project"
        project.mkdir()
        first_s, _ = tfcnnwrap("--repo-url", upstream.path, "--tf-version", "1.12", cwd=project)
        shallow_total, shallow_git = tree_bytes(project / "vendor" / "benchmarks")
        full = work / "full"
        git("clone", "-q", upstream.url, full)  # file:// as setup uses: packed, no hard links
        full_total, full_git = tree_bytes(full)

        print_table(
            "Generated upstream: %d commits on master, %d KiB rewritten each, 11 compat branches (built in %.1f s)"
            % (args.history, args.filler_kb, build_s),
            ["clone", "bytes (all files)", ".git only", "ratio to full"],
            [
                [
                    "setup (depth 1, single branch)",
                    kib(shallow_total),
                    kib(shallow_git),
                    "1/%.0f" % (full_total / shallow_total),
                ],
                ["git clone (full)", kib(full_total), kib(full_git), "1"],
            ],
        )
        goal = shallow_total * 8 <= full_total
        print("goal <= 1/8: %s (%.4f)" % ("met" if goal else "MISSED", shallow_total / full_total))

        rerun_timings(args, work, project, upstream, first_s)

        if args.mirror:
            measure_mirror(Path(args.mirror).resolve(), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rerun_timings(args, work, project, upstream, first_s):
    """Setup re-run with the checkout in place, upstream deleted and git off PATH: no network, well under 1 s."""
    shutil.rmtree(upstream.path)  # no upstream to reach
    no_git = work / "empty-bin"
    no_git.mkdir()
    fake_tf = make_fake_tf_env(work / "tf112", "1.12.0", dist="tensorflow-gpu")
    walls, probed = [], []
    for _ in range(args.reruns):
        wall, out = tfcnnwrap(
            "--repo-url", upstream.path, "--tf-version", "1.12", cwd=project, env={"PATH": str(no_git)}
        )
        assert "Already set up" in out, out
        walls.append(wall)
        wall, out = tfcnnwrap("--repo-url", upstream.path, "--python", fake_tf, cwd=project, env={"PATH": str(no_git)})
        assert "Already set up" in out and "package metadata" in out, out
        probed.append(wall)
    base = python_startup(args.reruns)
    print_table(
        "Re-run with the checkout in place (upstream deleted, git not on PATH), median of %d" % args.reruns,
        ["what", "wall s", "max s"],
        [
            ["first setup (clone)", "%.3f" % first_s, ""],
            ["re-run, --tf-version 1.12", "%.3f" % statistics.median(walls), "%.3f" % max(walls)],
            [
                "re-run, --python (probe of TF 1.12 metadata)",
                "%.3f" % statistics.median(probed),
                "%.3f" % max(probed),
            ],
            ["python -c pass", "%.3f" % base, ""],
        ],
    )
    print("goal < 1 s: %s" % ("met" if max(walls + probed) < 1.0 else "MISSED (max %.3f s)" % max(walls + probed)))


def measure_mirror(mirror, work):
    project = work / "real"
    project.mkdir()
    wall, _ = tfcnnwrap("--repo-url", mirror, "--tf-version", "1.12", cwd=project)
    shallow_total, shallow_git = tree_bytes(project / "vendor" / "benchmarks")
    seed = work / "seed-clone"
    git("clone", "-q", "--single-branch", "--branch", "cnn_tf_v1.12_compatible", mirror.as_uri(), seed)
    seed_total, seed_git = tree_bytes(seed)
    full = work / "full-real"
    git("clone", "-q", mirror.as_uri(), full)
    full_total, full_git = tree_bytes(full)
    print_table(
        "Real mirror %s, TensorFlow 1.12 (setup took %.2f s wall)" % (mirror, wall),
        ["clone", "bytes (all files)", ".git only", "ratio to full"],
        [
            [
                "setup (depth 1, single branch)",
                kib(shallow_total),
                kib(shallow_git),
                "%.3f" % (shallow_total / full_total),
            ],
            [
                "seed's manual (--single-branch)",
                kib(seed_total),
                kib(seed_git),
                "%.3f" % (seed_total / full_total),
            ],
            ["git clone (full)", kib(full_total), kib(full_git), "1"],
        ],
    )


if __name__ == "__main__":
    main()
