"""Parsing speed and memory of `tfcnnwrap parse` (issue 7, item 3). POSIX only (grep, getrusage).

1. Writes a corpus of realistic tf_cnn_benchmarks logs (benchmarks/make_log_corpus.py: >= 2,000 logs,
   >= 50 MB, TF noise, step lines, failures) to a temporary directory.
2. Times `python -m tfcnnwrap parse DIR --format jsonl > /dev/null` against
   `grep -rc '^total images/sec' DIR > /dev/null`, alternated A B A B, --runs times each, after one untimed
   run of each (warm page cache). Goal: median of the per-pair ratios <= 3. Also times parse with a single
   process (TFCNNWRAP_PARSE_JOBS=1) and the fixed cost of `python -m tfcnnwrap parse ONE_SMALL_LOG`.
3. Writes one log of --big-mb MiB and reports the peak RSS of `parse BIG.log` (getrusage of the child, in a
   fresh wrapper process) next to that of a small log: memory must stay flat.

    python benchmarks/bench_parse.py [--logs 2000] [--runs 7] [--big-mb 1024] [--keep DIR] [--json FILE]
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from make_log_corpus import make_big_log, make_corpus  # noqa: E402

GOAL_RATIO = 3.0
MIN_CORPUS_BYTES = 50_000_000

PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(peak * (1 if sys.platform == 'darwin' else 1024))\n"
)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [e.get("PYTHONPATH")] if p])
    return e


def timed(cmd, environ):
    """(wall seconds, CPU seconds of the child) of one run, stdout thrown away."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environ)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit("%s failed (%d): %s" % (" ".join(map(str, cmd)), proc.returncode, proc.stderr.decode()))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def peak_rss(cmd, environ):
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *map(str, cmd)], stdout=subprocess.PIPE, env=environ, check=True
    ).stdout
    return int(out.decode().strip())


def corpus_size(directory):
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())


def _timings(corpus, args, environ, expected, figures):
    """parse must find what the corpus holds; then parse (parallel and serial) and grep, alternated."""
    parse = [sys.executable, "-m", "tfcnnwrap", "parse", str(corpus), "--format", "jsonl"]
    grep = ["grep", "-rc", "^total images/sec", str(corpus)]
    serial_env = dict(environ, TFCNNWRAP_PARSE_JOBS="1")

    # what parse finds must be what was written
    out = subprocess.run(parse, stdout=subprocess.PIPE, env=environ).stdout.decode()
    found = {}
    for line in out.splitlines():
        status = json.loads(line)["status"]
        found[status] = found.get(status, 0) + 1
    if found != expected:
        raise SystemExit("parse found %s, the corpus holds %s" % (found, expected))
    timed(grep, environ)
    timed(parse, serial_env)

    results = {"parse": [], "parse_serial": [], "grep": []}
    for _ in range(args.runs):
        results["parse"].append(timed(parse, environ))
        results["grep"].append(timed(grep, environ))
        results["parse_serial"].append(timed(parse, serial_env))
    ratios = [a[0] / b[0] for a, b in zip(results["parse"], results["grep"])]
    serial_ratios = [a[0] / b[0] for a, b in zip(results["parse_serial"], results["grep"])]
    one_log = next(corpus.rglob("*.log"))
    fixed = [
        timed([sys.executable, "-m", "tfcnnwrap", "parse", str(one_log), "--format", "jsonl"], environ)
        for _ in range(args.runs)
    ]
    bare = [timed([sys.executable, "-c", "pass"], environ) for _ in range(args.runs)]

    def med(rows, i=0):
        return statistics.median(r[i] for r in rows)

    figures.update(
        runs=args.runs,
        parse_wall_s=round(med(results["parse"]), 4),
        parse_cpu_s=round(med(results["parse"], 1), 4),
        parse_serial_wall_s=round(med(results["parse_serial"]), 4),
        parse_serial_cpu_s=round(med(results["parse_serial"], 1), 4),
        grep_wall_s=round(med(results["grep"]), 4),
        grep_cpu_s=round(med(results["grep"], 1), 4),
        median_ratio=round(statistics.median(ratios), 2),
        median_ratio_serial=round(statistics.median(serial_ratios), 2),
        one_small_log_wall_s=round(med(fixed), 4),
        python_c_pass_wall_s=round(med(bare), 4),
        goal_ratio=GOAL_RATIO,
    )
    _print_table(figures)
    return one_log


def _print_table(figures):
    print("\n| command | median wall s | median CPU s | ratio to grep |")
    print("|---|---|---|---|")
    print("| `grep -rc '^total images/sec' DIR` | %.3f | %.3f | 1 |" % (figures["grep_wall_s"], figures["grep_cpu_s"]))
    print(
        "| `python -m tfcnnwrap parse DIR --format jsonl` | %.3f | %.3f | %.2f |"
        % (figures["parse_wall_s"], figures["parse_cpu_s"], figures["median_ratio"])
    )
    print(
        "| same, TFCNNWRAP_PARSE_JOBS=1 | %.3f | %.3f | %.2f |"
        % (figures["parse_serial_wall_s"], figures["parse_serial_cpu_s"], figures["median_ratio_serial"])
    )
    print("| `python -m tfcnnwrap parse ONE_SMALL.log` (fixed cost) | %.3f | | |" % figures["one_small_log_wall_s"])
    print("| `python -c pass` | %.3f | | |" % figures["python_c_pass_wall_s"])
    print(
        "\nmedian ratio parse/grep: %.2f (goal <= %.0f): %s"
        % (figures["median_ratio"], GOAL_RATIO, "met" if figures["median_ratio"] <= GOAL_RATIO else "MISSED")
    )


def _big_log(work, args, one_log, environ, figures):
    """Peak memory of parse on one big log against one small log."""
    big = work / "big.log"
    big_size = make_big_log(big, args.big_mb)
    small_peak = peak_rss([sys.executable, "-m", "tfcnnwrap", "parse", str(one_log), "--format", "json"], environ)
    started = time.perf_counter()
    big_peak = peak_rss([sys.executable, "-m", "tfcnnwrap", "parse", str(big), "--format", "json"], environ)
    big_wall = time.perf_counter() - started
    big.unlink()
    figures.update(
        big_log_mb=round(big_size / 1e6, 1),
        big_log_peak_rss_mb=round(big_peak / 1e6, 1),
        small_log_peak_rss_mb=round(small_peak / 1e6, 1),
        big_log_wall_s=round(big_wall, 2),
    )
    print(
        "\nmemory: parse of one %.0f MB log peaks at %.1f MB RSS (one small log: %.1f MB), %.1f s"
        % (big_size / 1e6, big_peak / 1e6, small_peak / 1e6, big_wall)
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logs", type=int, default=2000)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--big-mb", type=int, default=1024, help="size of the one big log (0: skip)")
    p.add_argument("--keep", metavar="DIR", help="write the corpus here and keep it")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)
    if not shutil.which("grep"):
        raise SystemExit("needs grep (POSIX)")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tfcnnwrap-bench-parse-"))
    corpus = work / "corpus"
    environ = env()
    figures = {
        "machine": "%s, %s, %d CPUs, Python %s"
        % (platform.platform(), platform.processor() or "?", os.cpu_count() or 0, platform.python_version())
    }
    try:
        if corpus.exists():
            shutil.rmtree(corpus)
        size, expected = make_corpus(corpus, args.logs)
        size = corpus_size(corpus)
        if size < MIN_CORPUS_BYTES:
            raise SystemExit("corpus is only %.1f MB; raise --logs" % (size / 1e6))
        figures.update(logs=args.logs, corpus_mb=round(size / 1e6, 1), expected_statuses=expected)
        print("corpus: %d logs, %.1f MB, expected statuses %s" % (args.logs, size / 1e6, expected))

        one_log = _timings(corpus, args, environ, expected, figures)
        if args.big_mb:
            _big_log(work, args, one_log, environ, figures)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
