"""A sweep run as one distributed tf_cnn_benchmarks job (``sweep --cluster local|slurm --workers W --ps P``).

The job itself is ``localjob.run_plan``'s: every task a process whose output is piped into
``logs/<run>.<role><index>.log``, the figure the reporting task's total, a failing task failing the run.
The two backends differ only in how a task is started:

- ``local``: the upstream script directly, on free ports of this machine (``localjob.run_job``).
- ``slurm``: one ``srun --nodes=1 --ntasks=1 --nodelist=HOST --overlap`` step per task, running
  ``python -m tfcnnwrap.cli.node task --plan PLAN.json --index I`` on the node the plan gives it. The plan is written
  into the sweep directory (``cluster/<run>.plan.json``), which every node must see: a shared filesystem. The task's
  output comes back through srun's pipe, so logs, the live view and the verdict work as for ``local``. Stopping
  a task stops its srun, which signals the task on its node; any step still listed afterwards is ``scancel``-ed
  and the run waits until Slurm has released them all, so nothing stays allocated between runs.

Ports under Slurm: each host counts up from a base port (cluster.layout), the base picked per job from the Slurm job
id and the run's position, moved on until every port this node would use is free; a job whose task could not
bind is run once more with the next base.
"""

import os
import socket
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from tfcnnwrap import safefs
from tfcnnwrap.cluster import layout, localjob, slurm
from tfcnnwrap.cluster.layout import ClusterPlan, Task
from tfcnnwrap.cluster.localjob import JobOutcome, StopSignal
from tfcnnwrap.cluster.nodewatch import NodeWatch
from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.results.plan import RunSpec
from tfcnnwrap.results.records import RunRecord, Status
from tfcnnwrap.sweep import runlife
from tfcnnwrap.sweep.runlife import Display, SweepContext

SLURM_PORT_LOW = 30000
SLURM_PORT_SPAN = 20000
RELEASE_TIMEOUT_S = 60


class StopBridge:
    """What ``stopping.StopRequests.guard`` stops: Ctrl-C or SIGTERM sets the job's ``localjob.StopSignal``."""

    def __init__(self, on_terminate: Optional[Callable[[], None]] = None) -> None:
        self.signal = StopSignal()
        self.exited = threading.Event()
        self.on_terminate = on_terminate  # instead of setting the signal (a fleet step is cancelled)

    def terminate(self) -> None:
        if self.on_terminate is not None:
            self.on_terminate()
        else:
            self.signal.set()


def guarded(ctx: SweepContext, work: Callable[[StopSignal], JobOutcome]) -> JobOutcome:
    """``work(stop_signal)`` with the sweep's stop requests wired to it."""
    bridge = StopBridge()
    if ctx.stops is None:
        return work(bridge.signal)
    with ctx.stops.guard(bridge):
        try:
            return work(bridge.signal)
        finally:
            bridge.exited.set()


def run_job(ctx: SweepContext, display: Display, index: int, spec: RunSpec) -> Tuple[JobOutcome, RunRecord]:
    """One run as a distributed job: (outcome, record), the record as ``runlife.run_record`` writes it plus
    ``cluster`` (backend, mode, tasks) and ``log`` = the task that decided the run (the reporting one, or
    the one that failed)."""
    plan, sweep = ctx.plan, ctx.sweep
    argv, rel_log, run_name, log_dir = runlife.job_files(ctx, spec)
    started_at, sampler = runlife.start_run(ctx, display, index, spec)
    try:
        if plan.cluster == "slurm":
            outcome = guarded(ctx, lambda stop: _slurm_job(ctx, argv, log_dir, run_name, index, spec, display, stop))
        else:
            outcome = guarded(ctx, lambda stop: _local_job(ctx, argv, log_dir, run_name, spec, display, stop))
    except OSError as exc:
        raise runlife.run_failed(ctx, spec, exc) from None
    finally:
        telemetry_summary = sampler.stop() if sampler is not None else None
    rel = Path(os.path.relpath(str(outcome.log), str(sweep.path))).as_posix() if outcome.log else rel_log
    record = runlife.run_record(ctx, spec, outcome, argv, started_at, rel, telemetry_summary)
    if outcome.failure and outcome.status != Status.INTERRUPTED:
        record = replace(record, failure=outcome.failure)
    return outcome, replace(record, cluster=outcome.cluster)


def _common(ctx: SweepContext, display: Display, stop: StopSignal) -> Dict[str, Any]:  # Any: keyword arguments
    return {"timeout_s": ctx.plan.timeout_s, "on_step": display.step, "stop": stop, "relative_to": ctx.sweep.path}


def _local_job(
    ctx: SweepContext, argv: List[str], log_dir: Path, run_name: str, spec: RunSpec, display: Display, stop: StopSignal
) -> JobOutcome:
    plan = ctx.plan
    gpus = ctx.probe.gpus
    return localjob.run_job(
        argv,
        ctx.script.parent,
        ctx.env,
        log_dir,
        run_name,
        mode=plan.variable_update,
        workers=plan.job_workers(),
        ps=plan.ps,
        branch=ctx.branch,
        gpus_per_host=len(gpus) if ctx.device == "gpu" and gpus else None,
        gpus_per_worker=spec.num_gpus,
        **_common(ctx, display, stop),
    )


def check(ctx: SweepContext) -> None:
    """Before anything runs: the job is one this checkout's tf_cnn_benchmarks accepts, and (Slurm) we are
    inside an allocation. UsageError (exit 2) naming the fix otherwise."""
    plan = ctx.plan
    if not plan.cluster:
        return
    if not plan.fleet:
        layout.validate(plan.variable_update, plan.job_workers(), plan.ps, ctx.branch)
    if plan.cluster == "slurm":
        slurm.allocation()
        if plan.fleet:
            slurm.literal_pattern(ctx.sweep.path)  # refuses a path srun's --output could not hold


def task_argvs(ctx: SweepContext, argv: List[str]) -> List[Tuple[Dict[str, str], List[str]]]:
    """Every task's (environment it adds, command) of one job (``--dry-run``): on this machine from
    cluster.layout's base port (a real run takes free ports), under Slurm on the allocation's nodes."""
    plan = ctx.plan
    hosts: Tuple[str, ...] = ("localhost",)
    if plan.cluster == "slurm":
        hosts = slurm.allocation().nodes
    job = layout.build_plan(plan.variable_update, plan.job_workers(), plan.ps, hosts=hosts, branch=ctx.branch)
    return [(dict(task.env), job.argv_for(task, argv)) for task in job.tasks]


# -- Slurm ---------------------------------------------------------------------------------------------


def this_node() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _port_free(port: int) -> bool:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("", port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def slurm_plan(ctx: SweepContext, alloc: slurm.Allocation, index: int, attempt: int = 0) -> ClusterPlan:
    """The job's plan over the allocation's nodes, its ports counted up from a base picked per job."""
    plan = ctx.plan
    probe = layout.build_plan(plan.variable_update, plan.job_workers(), plan.ps, hosts=alloc.nodes, branch=ctx.branch)
    span = max(sum(1 for t in probe.tasks if t.host == h) for h in alloc.nodes)
    job = int("".join(c for c in alloc.job_id if c.isdigit()) or "0")
    here = this_node()
    for step in range(64):
        offset = (job * 131 + (index + attempt + step) * span) % (SLURM_PORT_SPAN - span)
        base = SLURM_PORT_LOW + offset
        candidate = layout.build_plan(
            plan.variable_update, plan.job_workers(), plan.ps, hosts=alloc.nodes, base_port=base, branch=ctx.branch
        )
        mine = [t.port for t in candidate.tasks if t.host in (here, "localhost")]
        if all(_port_free(p) for p in mine):
            return candidate
    return candidate


def _slurm_job(
    ctx: SweepContext,
    argv: List[str],
    log_dir: Path,
    run_name: str,
    index: int,
    spec: RunSpec,
    display: Display,
    stop: StopSignal,
) -> JobOutcome:
    alloc = slurm.allocation()
    # The nodes the job still holds: a node that failed earlier in a --no-kill job is left out of this run.
    alloc = alloc._replace(nodes=slurm.job_nodes(alloc.job_id, alloc.nodes))

    def attempt(number: int, timeout: Optional[float]) -> JobOutcome:
        return _slurm_attempt(
            ctx,
            alloc,
            slurm_plan(ctx, alloc, index, attempt=number),
            argv,
            log_dir,
            run_name,
            spec,
            display,
            stop,
            timeout,
        )

    return localjob.with_bind_retry(attempt, ctx.plan.timeout_s)


def _slurm_attempt(
    ctx: SweepContext,
    alloc: slurm.Allocation,
    job_plan: ClusterPlan,
    argv: List[str],
    log_dir: Path,
    run_name: str,
    spec: RunSpec,
    display: Display,
    stop: StopSignal,
    timeout_s: Optional[float],
) -> JobOutcome:
    plan_path = ctx.sweep.path / "cluster" / (run_name + ".plan.json")
    plan_path.parent.mkdir(parents=True, exist_ok=True)
    safefs.atomic_write(plan_path, job_plan.to_json())
    names: Dict[str, str] = {}

    def launcher(task: Task, _task_argv: List[str]) -> List[str]:
        names[task.name] = slurm.unique_step_name()
        index = job_plan.tasks.index(task)
        inner = [
            _tfcnnwrap_python(),
            "-m",
            "tfcnnwrap.cli.node",
            "task",
            "--plan",
            str(plan_path.resolve()),
            "--index",
            str(index),
            "--script",
            str(ctx.script.resolve()),
            "--python",
            ctx.python,
            "--",
        ]
        return srun_task_command(inner + list(argv[3:]), names[task.name], task.host, alloc.job_id)

    common = _common(ctx, display, stop)
    common["timeout_s"] = timeout_s
    try:
        return localjob.run_plan(
            job_plan,
            argv,
            ctx.script.parent,
            ctx.env,
            log_dir,
            run_name,
            launcher=launcher,
            backend="slurm",
            watch=NodeWatch(alloc.job_id),
            **common,
        )
    finally:
        # the run's outcome is already decided by its logs: a failing clean-up must not replace it
        release_steps_or_warn(alloc.job_id, names.values())


def _tfcnnwrap_python() -> str:
    """The interpreter running tfcnnwrap (the task entry point needs only the standard library and tfcnnwrap,
    which every node sees at the same path on the shared filesystem)."""
    return sys.executable


def srun_task_command(argv: List[str], name: str, host: str, job_id: str) -> List[str]:
    """``srun`` for one task of a job on ``host`` (pure). ``--overlap``: the job's tasks share the allocation's
    CPUs (a ps mostly waits); ``--kill-on-bad-exit``: a task that dies ends its step at once."""
    cmd = slurm.srun_command(argv, 1, name, job_id=job_id, nodes=1)
    cut = cmd.index("--")
    return cmd[:cut] + ["--nodelist=%s" % host, "--overlap", "--quiet"] + cmd[cut:]


def release_steps_or_warn(job_id: str, names: Iterable[str], timeout_s: float = RELEASE_TIMEOUT_S) -> bool:
    """``release_steps``, with a Slurm tool that fails, hangs past its timeout or cannot run reported as one
    warning line on stderr (False) instead of raised: clean-up comes after the run and never decides it."""
    try:
        released = release_steps(job_id, names, timeout_s)
    except (TfcnnwrapError, OSError) as exc:
        slurm.warn_cleanup(slurm.cleanup_reason(exc))
        return False
    if not released:
        slurm.warn_cleanup("Slurm still lists them after %.0f s" % timeout_s)
    return released


def release_steps(job_id: str, names: Iterable[str], timeout_s: float = RELEASE_TIMEOUT_S) -> bool:
    """``scancel`` every step of ``names`` Slurm still lists, then wait until it lists none of them: the next
    run starts on a clean allocation and the sweep ends with nothing running. Slurm offers nothing to block
    on here, so ``squeue`` is asked at growing intervals (50 ms to 1 s)."""
    names = list(names)
    for name in names:
        step = slurm.find_step(job_id, name)
        if step is not None:
            slurm.cancel_step(job_id, step)
    return slurm.wait_until(lambda: not _listed(job_id, names), timeout_s)


def _listed(job_id: str, names: List[str]) -> List[str]:
    """Which of the step ``names`` ``squeue`` still lists in job ``job_id`` (one query for all), leaving out a
    step whose node has failed and left the job (``--no-kill``): Slurm lists it until the whole job ends, and
    it holds nothing on the nodes the job still has."""
    done = slurm.run_slurm(
        ["squeue", "--noheader", "--steps", "--jobs=%s" % job_id, "--format=%j %N"],
        "squeue --steps --jobs=%s" % job_id,
        check=False,
    )
    if done.returncode != 0:
        return []
    listed = dict(line.strip().partition(" ")[::2] for line in done.stdout.splitlines() if line.strip())
    waiting = [n for n in names if n in listed]
    if waiting:
        held = set(slurm.job_nodes(job_id, ()))
        # Each step of a job is one task on one node (srun_task_command): its node list is one plain name.
        waiting = [n for n in waiting if not held or listed[n] in held or not slurm.is_plain_host(listed[n])]
    return waiting
