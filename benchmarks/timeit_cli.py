"""Wall clock of a command run N times as a subprocess: min and median (docs/performance.md, section 7).

python benchmarks/timeit_cli.py -n 15 -- python -m tfcnnwrap report FLEET10
"""

import argparse
import os
import statistics

from bench_startup import wall  # run as a script: benchmarks/ is on sys.path


def timed(argv: list[str], n: int) -> tuple[float, float]:
    runs = [wall(argv, os.environ) for _ in range(n)]
    return min(runs), statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="how many runs (default 15)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    low, median = timed(command, args.n)
    print("min %.3f s  median %.3f s  (%d runs)" % (low, median, args.n))


if __name__ == "__main__":
    main()
