"""One task of a distributed job, what ``srun`` runs on each node: ``python -m tfcnnwrap.cli.node task --plan
PLAN.json --script tf_cnn_benchmarks.py [--python PY] [--index N] [-- base flags]`` (cli/node.py reads those
flags into a ``TaskArgs``).

It picks its task from the plan by ``--index`` or ``SLURM_PROCID`` (the plan lists tasks in that order),
adds the plan's distributed flags to the base flags and replaces itself with tf_cnn_benchmarks (``execve`` on
POSIX, so signals and the exit code are the benchmark's own; on Windows a child whose exit code it returns).
Standard library only and nothing heavy imported: it starts in tens of milliseconds.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from tfcnnwrap.cluster.layout import ClusterPlan, Task
from tfcnnwrap.errors import EXIT_USAGE, TfcnnwrapError, UsageError

PROG = "tfcnnwrap.cli.node task"  # how its messages begin


@dataclass(frozen=True)
class TaskArgs:
    """What one task is told: the cluster plan's file, tf_cnn_benchmarks.py, the interpreter with TensorFlow,
    its index in the plan (None: $SLURM_PROCID) and the run's tf_cnn_benchmarks flags."""

    plan: str
    script: str
    python: str
    index: Optional[int] = None
    flags: Tuple[str, ...] = ()


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def resolve(args: TaskArgs, environ: Mapping[str, str]) -> Tuple[List[str], Dict[str, str], Path, Task]:
    """(argv, env, cwd) of this task's tf_cnn_benchmarks; UsageError naming the fix."""
    try:
        plan = ClusterPlan.from_json(Path(args.plan).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(
            "cannot read the cluster plan %s (%s): pass --plan PLAN.json" % (args.plan, exc.strerror)
        ) from None
    index = args.index
    if index is None:
        procid = environ.get("SLURM_PROCID")
        if procid is None or not procid.isdigit():
            raise UsageError("no task index: pass --index N, or run under srun (which sets SLURM_PROCID)")
        index = int(procid)
    if not 0 <= index < len(plan.tasks):
        raise UsageError(
            "task %d is not in the plan, which has %d tasks: run srun with --ntasks=%d"
            % (index, len(plan.tasks), len(plan.tasks))
        )
    task = plan.tasks[index]
    script = Path(args.script).resolve()
    if not script.is_file():
        raise UsageError("%s does not exist: pass --script PATH/tf_cnn_benchmarks.py" % args.script)
    python = args.python if os.path.isabs(args.python) else shutil.which(args.python)
    if not python:
        raise UsageError("%s is not an interpreter on PATH: pass --python /path/to/python" % args.python)
    argv = plan.argv_for(task, [python, "-u", script.name] + list(args.flags))
    env = dict(environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(task.env)
    return argv, env, script.parent, task


def _warn_if_elsewhere(task: Task) -> None:
    """srun placed this task on another node than the plan says: TensorFlow will not find it there."""
    here = socket.gethostname()
    if task.host in LOCAL_NAMES or task.host in (here, here.split(".")[0]) or task.host[0].isdigit():
        return
    sys.stderr.write(
        "%s: warning: %s runs on %s, but the plan puts it on %s (give srun the plan's "
        "hostfile with --distribution=arbitrary)\n" % (PROG, task.name, here, task.host)
    )


def run(args: TaskArgs) -> int:
    """Become this task's tf_cnn_benchmarks (POSIX: never returns unless it cannot), else its exit code."""
    try:
        argv, env, cwd, task = resolve(args, os.environ)
    except TfcnnwrapError as exc:
        sys.stderr.write("%s: %s\n" % (PROG, exc.message))
        return exc.exit_code
    _warn_if_elsewhere(task)
    if os.name == "nt":
        return subprocess.call(argv, cwd=str(cwd), env=env)
    os.chdir(str(cwd))
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        sys.stderr.write("%s: cannot run %s (%s): pass --python /path/to/python\n" % (PROG, argv[0], exc))
        return EXIT_USAGE
