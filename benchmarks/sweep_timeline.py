"""Where a sweep's wall time goes, from the kernel's own timestamps: the time to the first benchmark's exec, the
gaps between one benchmark's exit and the next one's exec, the time from the last exit to the sweep's, and how
long the benchmarks themselves ran (exec to exit). Low overhead: strace stops only at the two traced calls.

    FAKE_TFCNN_STEP_DELAY=0.2 strace -f --seccomp-bpf -ttt -qq -e trace=execve,exit_group -e signal=none \\
        -o /tmp/trace.txt python -m tfcnnwrap sweep --python TFENV/bin/python --vendor-dir VENDOR --device gpu \\
        --out /tmp/s
    python benchmarks/sweep_timeline.py /tmp/trace.txt TFENV/bin/python

The benchmarks are the execs of TFENV/bin/python with ``-u`` (the supervisor's exec names them too, so the
interpreter must be given). The same works for a loop that runs the commands directly.
"""

import argparse
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="strace -f -ttt output")
    ap.add_argument("python", help="the benchmarks' interpreter, as the sweep runs it")
    opts = ap.parse_args()
    prefix = 'execve("%s", ["%s", "-u"' % (opts.python, opts.python)
    starts, exits, first = [], {}, None
    with open(opts.trace, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            pid, stamp, rest = line.split(None, 2)
            at = float(stamp)
            first = at if first is None else first
            if rest.startswith(prefix) and rest.rstrip().endswith("= 0"):
                starts.append((at - first, pid))
            elif rest.startswith("exit_group("):
                exits[pid] = at - first
    end = max(exits.values())
    gaps = [starts[i + 1][0] - exits[starts[i][1]] for i in range(len(starts) - 1)]
    runs = [exits[pid] - at for at, pid in starts]
    print("to the first benchmark's exec: %.3f s" % starts[0][0])
    print(
        "between runs (exit to next exec): median %.1f ms, min %.1f ms, sum %.2f s over %d gaps"
        % (statistics.median(gaps) * 1000, min(gaps) * 1000, sum(gaps), len(gaps))
    )
    print("from the last benchmark's exit to the end: %.3f s" % (end - exits[starts[-1][1]]))
    print(
        "benchmarks, exec to exit: median %.3f s, sum %.2f s over %d; whole trace %.2f s"
        % (statistics.median(runs), sum(runs), len(runs), end)
    )


if __name__ == "__main__":
    main()
