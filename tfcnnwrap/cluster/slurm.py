"""Slurm: the allocation tfcnnwrap runs in, and job steps started in it with ``srun``.

tfcnnwrap never asks Slurm for nodes itself: the user gets an allocation (``salloc -N 2``, or an ``sbatch``
script) and runs tfcnnwrap inside it, as with any MPI program. Each benchmark is then one job step,
``srun --kill-on-bad-exit=1 ...``, so a task that dies takes its step down at once instead of leaving the
other tasks waiting for it forever. Task output goes to files named by srun's ``--output`` pattern (``%t`` is
the task id) in the sweep directory, which lies on the cluster's shared filesystem.

Standard library only; every Slurm command runs without a shell, arguments as argv elements.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.run import procs
from tfcnnwrap.run.procs import run_captured

QUERY_TIMEOUT_S = 60  # a slurmctld under load can take tens of seconds to answer
QUERY_TIMEOUT_ENV = "TFCNNWRAP_SLURM_QUERY_TIMEOUT_S"
CANCEL_GRACE_S = 30  # KillWait plus slurmstepd's clean-up, on a busy controller
_NAMES = itertools.count(1)

NOT_IN_ALLOCATION = (
    "not inside a Slurm allocation (SLURM_JOB_ID is not set): get one first, e.g. `salloc -N 2` and run "
    "tfcnnwrap in its shell, or put the tfcnnwrap line in an `sbatch` script (see docs/slurm.md)"
)


class Allocation(NamedTuple):
    job_id: str
    nodes: Tuple[str, ...]


def query_timeout_s(environ: Optional[Mapping[str, str]] = None) -> float:
    """How long a Slurm client command may take: TFCNNWRAP_SLURM_QUERY_TIMEOUT_S seconds (0.1 to 3600), else
    QUERY_TIMEOUT_S. A value that is no such number is a usage error, met at the first Slurm query (the
    allocation's, before anything runs)."""
    environ = os.environ if environ is None else environ
    text = environ.get(QUERY_TIMEOUT_ENV, "").strip()
    if not text:
        return QUERY_TIMEOUT_S
    try:
        value = float(text) if text.isascii() and "_" not in text else None
    except ValueError:
        value = None
    if value is None or not 0.1 <= value <= 3600:
        raise UsageError("%s must be a number of seconds from 0.1 to 3600, not %r" % (QUERY_TIMEOUT_ENV, text))
    return value


def run_slurm(argv: List[Union[str, Path]], what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client command; returns the CompletedProcess (text, undecodable bytes replaced: a node or
    job name in another encoding is no reason to stop a sweep). A missing command is a set-up error, and so is
    one that does not answer within ``query_timeout_s()``."""
    argv = [str(a) for a in argv]
    timeout = query_timeout_s()
    try:
        # In a process group of its own: at the timeout a wrapper script's children die with it.
        code, out, err = run_captured(argv, timeout)
    except FileNotFoundError:
        raise SetupError(
            "%s not found on PATH: run tfcnnwrap on a node of the Slurm cluster (or `module load slurm`)" % argv[0]
        ) from None
    if code is None:
        raise SetupError(
            "%s did not answer within %g s: is slurmctld up? (`sinfo`; a slow controller: raise %s)"
            % (what, timeout, QUERY_TIMEOUT_ENV)
        ) from None
    done = subprocess.CompletedProcess(argv, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if check and done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit status %d" % done.returncode])[-1]
        raise SetupError("%s failed: %s" % (what, last))
    return done


def warn_cleanup(why: str) -> None:
    """One warning line on stderr for a step clean-up that failed (a Slurm tool that hung, failed or could
    not run): it comes after the run and never decides it, so it is no error."""
    try:
        sys.stderr.write(
            "tfcnnwrap sweep: warning: could not release the run's Slurm steps (%s); the run is "
            "recorded from its logs; check `squeue --steps` before the next job\n" % why
        )
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # no stderr to warn on: the record is what matters


def cleanup_reason(exc: BaseException) -> str:
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__


def allocation(environ: Optional[Mapping[str, str]] = None) -> Allocation:
    """The Slurm job tfcnnwrap runs inside and its nodes' host names, in Slurm's order.

    Outside an allocation: UsageError (exit 2) saying how to get one.
    """
    environ = os.environ if environ is None else environ
    job_id = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")
    if not job_id:
        raise UsageError(NOT_IN_ALLOCATION)
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not nodelist:
        raise UsageError(
            "SLURM_JOB_ID is %s but SLURM_JOB_NODELIST is not set: run tfcnnwrap in the "
            "allocation's own shell or batch script, not with a hand-set SLURM_JOB_ID" % job_id
        )
    done = run_slurm(["scontrol", "show", "hostnames", nodelist], "scontrol show hostnames %s" % nodelist)
    nodes = tuple(line.strip() for line in done.stdout.splitlines() if line.strip())
    if not nodes:
        raise SetupError("scontrol show hostnames %s named no host" % nodelist)
    return Allocation(job_id, nodes)


def literal_pattern(path: Union[Path, str]) -> str:
    """``path`` (absolute) as the literal part of an srun ``--output`` pattern: each ``%`` doubled, so a
    sweep directory named ``runs%j`` or ``100%`` is not expanded by srun into another place. A backslash
    makes srun take the whole pattern literally (no ``%N``: every node would write one file): refused."""
    text = str(Path(path).absolute())
    if "\\" in text and os.sep != "\\":
        raise UsageError(
            "%s holds a backslash, which makes srun ignore its --output pattern (every node's log "
            "would be one file): give --out a path without one" % text
        )
    return text.replace("%", "%%")


def job_nodes(job_id: str, fallback: Sequence[str]) -> Tuple[str, ...]:
    """The nodes job ``job_id`` holds now, as slurmctld says. After a node failure in a job that survives it
    (``--no-kill``), the job goes on without that node while ``SLURM_JOB_NODELIST`` still names it, and a step
    asking for it is refused. ``fallback`` (the allocation's nodes) when Slurm does not say, with a warning
    when its tool hung or could not run: a slow controller is no reason to lose the run."""
    try:
        done = run_slurm(
            ["squeue", "--noheader", "--jobs=%s" % job_id, "--format=%N"], "squeue --jobs=%s" % job_id, check=False
        )
    except SetupError as exc:
        sys.stderr.write("tfcnnwrap sweep: warning: %s; the run uses the allocation's nodes\n" % exc.message)
        return tuple(fallback)
    nodelist = done.stdout.strip().splitlines()[0].strip() if done.returncode == 0 and done.stdout.strip() else ""
    if not nodelist:
        return tuple(fallback)
    expanded = run_slurm(
        ["scontrol", "show", "hostnames", nodelist], "scontrol show hostnames %s" % nodelist, check=False
    )
    nodes = tuple(line.strip() for line in expanded.stdout.splitlines() if line.strip())
    return nodes if expanded.returncode == 0 and nodes else tuple(fallback)


def is_plain_host(nodelist: str) -> bool:
    """Whether a Slurm node list is one host name, not a range (``n[1-3]``) or a list (``a,b``)."""
    return bool(nodelist) and not any(c in nodelist for c in "[],")


def srun_command(
    argv: Sequence[object],
    ntasks: int,
    job_name: str,
    job_id: Optional[str] = None,
    nodes: Optional[int] = None,
    ntasks_per_node: Optional[int] = None,
    output_pattern: Optional[str] = None,
    overlap: bool = False,
    no_kill: bool = False,
) -> List[str]:
    """The srun argv for one step (pure). stderr goes to the same file as stdout, as srun does by default.
    ``overlap``: the step may share CPUs with the job's other steps (``--overlap``); ``no_kill``: a node that
    fails ends only its own tasks, not the step (``--no-kill``; ``--kill-on-bad-exit`` then has no effect)."""
    if ntasks < 1:
        raise UsageError("a Slurm step needs at least one task (got %d)" % ntasks)
    cmd = ["srun", "--kill-on-bad-exit=1", "--job-name=%s" % job_name, "--ntasks=%d" % ntasks]
    if job_id is not None:
        cmd.append("--jobid=%s" % job_id)
    if nodes is not None:
        cmd.append("--nodes=%d" % nodes)
    if ntasks_per_node is not None:
        cmd.append("--ntasks-per-node=%d" % ntasks_per_node)
    if output_pattern is not None:
        cmd.append("--output=%s" % output_pattern)
    if overlap:
        cmd.append("--overlap")
    if no_kill:
        cmd.append("--no-kill")
    return cmd + ["--"] + [str(a) for a in argv]


def unique_step_name(prefix: str = "tfcnnwrap") -> str:
    """A step name no other step of this job carries, so the step can be found by name in ``squeue``."""
    return "%s-%d-%d" % (prefix, os.getpid(), next(_NAMES))


def find_step(job_id: str, job_name: str) -> Optional[str]:
    """The step id (``"0"`` of ``123.0``) of the running step named ``job_name`` in job ``job_id``, or None
    when there is none (not started yet, already ended, or the job itself is gone)."""
    done = run_slurm(
        ["squeue", "--noheader", "--steps", "--jobs=%s" % job_id, "--format=%i|%j"],
        "squeue --steps --jobs=%s" % job_id,
        check=False,
    )
    if done.returncode != 0:  # "Invalid job id specified": the job has ended
        return None
    for line in done.stdout.splitlines():
        step, _, name = line.strip().partition("|")
        job, _, step_id = step.partition(".")
        if name == job_name and job == str(job_id) and step_id:
            return step_id
    return None


def running_steps(job_id: str) -> List[str]:
    """Ids (``"123.0"``) of the steps running in job ``job_id``, the batch and extern steps left out."""
    done = run_slurm(
        ["squeue", "--noheader", "--steps", "--jobs=%s" % job_id, "--format=%i"],
        "squeue --steps --jobs=%s" % job_id,
        check=False,
    )
    if done.returncode != 0:
        return []
    steps = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return [s for s in steps if s.partition(".")[2] not in ("batch", "extern", "interactive")]


def cancel_step(job_id: str, step_id: str) -> bool:
    """``scancel JOB.STEP``: every task of the step gets SIGTERM, then SIGKILL after the cluster's KillWait.
    False when Slurm refused (the step had already ended)."""
    return (
        run_slurm(["scancel", "%s.%s" % (job_id, step_id)], "scancel %s.%s" % (job_id, step_id), check=False).returncode
        == 0
    )


def wait_until(done: Callable[[], bool], timeout: float) -> bool:
    """Ask ``done()`` at growing intervals (50 ms to 1 s) until it says True (then True) or ``timeout``
    seconds have passed (then False): for what Slurm offers nothing to block on (a step's release)."""
    deadline = time.monotonic() + timeout
    pause = 0.05
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    return True


class Step:
    """A running ``srun``: one job step of ``ntasks`` tasks, started by ``launch_step``."""

    def __init__(self, proc: subprocess.Popen[bytes], job_id: str, name: str, command: List[str]) -> None:
        self.proc = proc
        self.job_id = job_id
        self.name = name
        self.command = command

    def step_id(self) -> Optional[str]:
        return find_step(self.job_id, self.name)

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def wait(self, timeout: Optional[float] = None) -> int:
        """srun's exit status: 0 when every task exited 0; otherwise the first failure's."""
        return self.proc.wait(timeout=timeout)

    def wait_released(self, timeout: float = CANCEL_GRACE_S) -> bool:
        """After srun has exited, wait until the controller no longer lists the step: slurmstepd reports the
        step's end to slurmctld a moment after srun has seen its tasks end, and until then the step holds
        its CPUs (a next step would wait for them). True when released within ``timeout`` seconds.

        Slurm offers nothing to block on here, so this asks ``squeue`` at growing intervals (50 ms to 1 s).
        """
        self.proc.wait()
        return wait_until(lambda: self.step_id() is None, timeout)

    def cancel(self, grace_s: float = CANCEL_GRACE_S) -> int:
        """End the step: ``scancel`` it when Slurm knows it (the tasks on every node get the signal), then
        stop srun itself if it is still there (a step not yet started cannot be found by name)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        step_id = self.step_id()
        if step_id is not None and cancel_step(self.job_id, step_id):
            try:
                return self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        procs.kill_tree(self.proc)
        return self.proc.wait()


def _refuse_planted_links(output_pattern: str, ntasks: int) -> None:
    """slurmstepd opens ``--output`` files following links, which tfcnnwrap never does (see safefs): refuse a
    link planted where a task's file will be. Checked for ``%t`` patterns, the ones whose names are known."""
    if "%" not in output_pattern.replace("%t", ""):
        for task in range(ntasks):
            path = output_pattern.replace("%t", str(task))
            if safefs.is_link(path):
                raise safefs.LinkRefused(
                    "%s is a symbolic link; tfcnnwrap never writes through links: remove it" % path
                )


def launch_step(
    argv: Sequence,
    ntasks: int,
    nodes: Optional[int] = None,
    ntasks_per_node: Optional[int] = None,
    output_pattern: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    job_name: Optional[str] = None,
    srun_log: Optional[Path] = None,
    alloc: Optional[Allocation] = None,
    overlap: bool = False,
    no_kill: bool = False,
) -> Step:
    """Start ``argv`` as one Slurm job step of ``ntasks`` tasks in the current allocation; returns at once.

    ``output_pattern``: srun's ``--output`` (``logs/run-%t.log`` gives one file per task; stdout and stderr
    together). ``env``: variables added to tfcnnwrap's environment, which srun passes to every task.
    ``srun_log``: a file for srun's own messages (which task failed, cancellations); else they go to
    tfcnnwrap's stderr. srun runs in a process group of its own and dies with tfcnnwrap, taking the step down.
    """
    alloc = alloc or allocation()
    if output_pattern is not None:
        # slurmstepd opens the files on each node, in the step's working directory: make it unambiguous.
        output_pattern = str(Path(output_pattern).absolute())
        _refuse_planted_links(output_pattern, ntasks)
    name = job_name or unique_step_name()
    command = srun_command(argv, ntasks, name, alloc.job_id, nodes, ntasks_per_node, output_pattern, overlap, no_kill)
    child_env = dict(os.environ)
    child_env.update({str(k): str(v) for k, v in (env or {}).items()})
    log = safefs.open_append(srun_log) if srun_log is not None else None
    try:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=child_env, **procs.popen_group_kwargs()
        )
    except FileNotFoundError:
        raise SetupError("srun not found on PATH: run tfcnnwrap on a node of the Slurm cluster") from None
    finally:
        if log is not None:
            log.close()
    procs.bind_to_our_lifetime(proc)
    return Step(proc, alloc.job_id, name, command)


def fleet_hosts(hosts_dir: Union[Path, str]) -> List[Dict[str, Any]]:  # each a task's JSON record
    """The records fleet tasks left in ``hosts_dir``, by task id: ``{task, node, hostname, job_id, step_id}``."""
    records = []
    for path in sorted(Path(hosts_dir).glob("task-*.json")):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # a task that died before its record was complete: no host to report
    return sorted(records, key=lambda r: r.get("task", -1))


def host_record(environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Where this task runs, from the variables srun gives every task."""
    environ = os.environ if environ is None else environ
    task = int(environ.get("SLURM_PROCID", "0"))
    return {
        "task": task,
        "node": environ.get("SLURMD_NODENAME") or socket.gethostname(),
        "hostname": socket.gethostname(),
        "job_id": environ.get("SLURM_JOB_ID"),
        "step_id": environ.get("SLURM_STEP_ID"),
    }
