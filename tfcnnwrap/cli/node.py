"""What a node of a distributed job or a fleet runs, one entry point for both (not a verb of ``tfcnnwrap``):

- ``python -m tfcnnwrap.cli.node task --plan PLAN.json --script tf_cnn_benchmarks.py [--python PY] [--index N]
  [-- flags]``: one task of a distributed job (cluster/task.py), what ``sweep --cluster slurm`` srun-s;
- ``python -m tfcnnwrap.cli.node fleet HOSTS_DIR CWD -- ARGV...``: one node's run of a fleet sweep
  (sweep/fleet.py ``run_task``), what ``sweep --cluster slurm --fleet`` srun-s.

Its flags become typed values here; a task starts in tens of milliseconds, so each stage is imported when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False  # as cli/parsing.py: a task's start-up does without typing
if TYPE_CHECKING:
    from typing import List, Optional


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tfcnnwrap.cli.node", description=__doc__.split("\n\n")[0])
    kinds = parser.add_subparsers(dest="kind", metavar="task|fleet")
    kinds.required = True
    p = kinds.add_parser(
        "task", help="one task of a distributed job: picks its task from the plan, execs the benchmark"
    )
    p.add_argument("--plan", required=True, help="the cluster plan (JSON, ClusterPlan.to_json)")
    p.add_argument("--script", required=True, help="path of tf_cnn_benchmarks.py")
    p.add_argument("--python", default=sys.executable, help="the interpreter with TensorFlow")
    p.add_argument("--index", type=int, help="this task's position in the plan (default: $SLURM_PROCID)")
    p.add_argument("flags", nargs="*", help="the run's tf_cnn_benchmarks flags, after --")
    p = kinds.add_parser("fleet", help="one node's run of a fleet sweep: records its node and the exit code, exits 0")
    p.add_argument("hosts_dir", metavar="HOSTS_DIR", help="where the node records itself (task-<id>.json)")
    p.add_argument("cwd", metavar="CWD", help="the directory the benchmark runs in")
    p.add_argument("argv", nargs="+", metavar="ARGV", help="the benchmark's command, after --")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.kind == "task":
        from tfcnnwrap.cluster.task import TaskArgs, run  # start-up: only the task's own stage

        return run(TaskArgs(str(args.plan), str(args.script), str(args.python), args.index, tuple(args.flags)))
    from tfcnnwrap.sweep.fleet import run_task  # start-up: as above

    return run_task(args.hosts_dir, args.cwd, list(args.argv), os.environ)


if __name__ == "__main__":
    sys.exit(main())
