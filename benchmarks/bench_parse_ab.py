"""`tfcnnwrap parse` of one corpus by two checkouts of tfcnnwrap, alternated A B B A ..., one process each
(TFCNNWRAP_PARSE_JOBS=1): the CPU seconds of the child are what a shared, loaded machine measures best.

    python benchmarks/bench_parse_ab.py --before OLD_CHECKOUT [--after .] [--runs 15] [--logs 2000] [--corpus DIR]

The corpus is benchmarks/make_log_corpus.py's (written once into --corpus, kept for the next call).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_log_corpus import make_corpus  # noqa: E402


def timed(tree, corpus):
    """(wall seconds, CPU seconds of the child) of one `parse CORPUS --format jsonl`."""
    env = dict(os.environ, PYTHONPATH=str(tree), TFCNNWRAP_PARSE_JOBS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", "parse", str(corpus), "--format", "jsonl"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="the checkout to compare against")
    p.add_argument("--after", default=str(HERE.parent), help="the checkout measured (default: this one)")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--logs", type=int, default=2000)
    p.add_argument("--corpus", default=str(Path(tempfile.gettempdir()) / "tfcnnwrap-parse-ab-corpus"))
    args = p.parse_args(argv)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        make_corpus(corpus, args.logs)
    trees = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    for tree in trees.values():
        timed(tree, corpus)  # warm the page cache and both trees' bytecode
    results = {name: [] for name in trees}
    for i in range(args.runs):
        for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
            results[name].append(timed(trees[name], corpus))
    cpu = {name: statistics.median(r[1] for r in rows) for name, rows in results.items()}
    for name, rows in results.items():
        print(
            "%-6s median wall %.3f s, median CPU %.3f s, best CPU %.3f s (n=%d)"
            % (name, statistics.median(r[0] for r in rows), cpu[name], min(r[1] for r in rows), len(rows))
        )
    print("after / before, median CPU: %.3f" % (cpu["after"] / cpu["before"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
