"""``sweep --cluster slurm --fleet``: the ordinary single-GPU sweep on every node of the allocation at once.

Design: one Slurm step per run, across every node (``srun --nodes=N --ntasks-per-node=1``, ``slurm.launch_step``):
each node runs the same benchmark at the same moment, so the hosts are compared under the same conditions, and
the sweep's loop, resume and summary stay the ordinary ones. Each task is ``python -m tfcnnwrap.cli.node fleet DIR CWD
-- ARGV`` (``run_task``): it records its node in ``DIR/task-<id>.json``, runs the benchmark, adds the exit code to the
record, and exits 0, so that one host running out of memory does not take the other hosts' runs down with it
(``--kill-on-bad-exit``). Each node's output goes straight into the sweep directory (srun's ``--output`` with
``%N``: ``logs/<run>.<node>.log``): a shared filesystem, as on every cluster. Every host's run is one record with
its ``host``; `report` shows one row per host and configuration with ``vs_fleet_pct`` (see fleetreport).
Ctrl-C and ``--timeout`` ``scancel`` the step; the next run starts once Slurm has released it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence, Tuple, Union

from tfcnnwrap import jsontext, safefs
from tfcnnwrap.clock import utc_now
from tfcnnwrap.cluster import nodewatch, slurm
from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.results.records import Status
from tfcnnwrap.run.logparse import ParsedLog, last_line, parse_file
from tfcnnwrap.run.runner import RunOutcome
from tfcnnwrap.run.runner import verdict as verdict_of
from tfcnnwrap.sweep import runlife
from tfcnnwrap.sweep.job import StopBridge

if TYPE_CHECKING:
    from types import FrameType

    from tfcnnwrap.results.plan import RunSpec
    from tfcnnwrap.results.records import RunRecord
    from tfcnnwrap.sweep.runlife import Display, SweepContext


@dataclass(frozen=True)
class HostRun:
    """One node's task of a fleet step, as it recorded itself (``fleet/<run>/task-<id>.json``): its node and
    its benchmark's exit code (None: the task died before it could say)."""

    node: Optional[str] = None
    exit_code: Optional[int] = None

    @classmethod
    def from_json(cls, data: object) -> "HostRun":
        found = data if isinstance(data, dict) else {}
        node, code = found.get("node"), found.get("exit_code")
        return cls(
            node if isinstance(node, str) and node else None,
            code if isinstance(code, int) and not isinstance(code, bool) else None,
        )


def run_fleet(ctx: SweepContext, display: Display, index: int, spec: RunSpec) -> Tuple[RunOutcome, RunRecord]:
    """One run on every node: records every host's record but the last, returns (outcome, last record)."""
    plan, sweep = ctx.plan, ctx.sweep
    argv, rel_log, run_name, log_dir = runlife.job_files(ctx, spec)
    hosts_dir = sweep.path / "fleet" / run_name
    hosts_dir.mkdir(parents=True, exist_ok=True)
    for old in hosts_dir.glob("task-*.json"):  # a resumed run: last attempt's hosts are not this one's
        old.unlink()
    display.run_started(
        index, spec.model, spec.batch_size, spec.run, plan.most_runs, plan.num_batches or 100, spec.num_gpus, spec.data
    )
    started_at = utc_now()
    alloc = slurm.allocation()
    # The nodes the job still holds: a node that failed in a --no-kill job is left out of the next runs.
    alloc = alloc._replace(nodes=slurm.job_nodes(alloc.job_id, alloc.nodes))
    wrapper = [
        sys.executable,
        "-m",
        "tfcnnwrap.cli.node",
        "fleet",
        str(hosts_dir.resolve()),
        str(ctx.script.parent.resolve()),
        "--",
    ] + argv
    # --no-kill: a node that fails ends its own host's run, not the other hosts' (Slurm would end the whole
    # step). --overlap: a step that lost a node stays listed, holding its CPUs, until the whole job ends; the
    # fleet's steps run one after another, so the next one shares them rather than wait for ever.
    step = slurm.launch_step(
        wrapper,
        ntasks=len(alloc.nodes),
        nodes=len(alloc.nodes),
        ntasks_per_node=1,
        output_pattern=slurm.literal_pattern(log_dir / run_name) + ".%N.log",
        env=ctx.env,
        srun_log=hosts_dir / "srun.log",
        alloc=alloc,
        overlap=True,
        no_kill=True,
    )
    verdict, duration = _wait(ctx, step, plan.timeout_s, hosts_dir / "srun.log")
    lost = nodewatch.node_failure_in(hosts_dir / "srun.log") if verdict != "interrupted" else None
    records = [
        _host_record(ctx, spec, argv, started_at, rel_log, HostRun.from_json(rec), verdict, duration, lost=lost)
        for rec in slurm.fleet_hosts(hosts_dir)
    ]
    if not records:
        why = last_line(hosts_dir / "srun.log") or "the fleet step started no task"
        records = [
            _host_record(
                ctx, spec, argv, started_at, rel_log, HostRun(exit_code=step.poll()), verdict, duration, failure=why
            )
        ]
    # The host that failed last: the run's line on screen and the sweep's verdict are the run's worst.
    records.sort(key=lambda pair: pair[1].status == Status.OK, reverse=True)
    for _outcome, record in records[:-1]:
        runlife.record(ctx, record)
    return records[-1]


def _wait(ctx: SweepContext, step: slurm.Step, timeout_s: Optional[float], srun_log: Path) -> Tuple[str, float]:
    """Wait for the step; cancel it on ``--timeout`` or a stop request. (verdict, seconds)."""
    started = time.monotonic()
    state = {"verdict": "done"}

    def stop(verdict: str) -> None:
        if state["verdict"] == "done":
            state["verdict"] = verdict
        step.cancel()

    bridge = StopBridge(lambda: threading.Thread(target=stop, args=("interrupted",), daemon=True).start())
    timer = threading.Timer(timeout_s, stop, ("timeout",)) if timeout_s else None
    try:
        if timer is not None:
            timer.daemon = True
            timer.start()
        if ctx.stops is not None:
            with ctx.stops.guard(bridge):
                step.wait()
        else:
            step.wait()
    finally:
        bridge.exited.set()
        if timer is not None:
            timer.cancel()
        _release(step, srun_log)
    return state["verdict"], time.monotonic() - started


def _release(step: slurm.Step, srun_log: Path) -> None:
    """Cancel the step if srun still runs, then wait until Slurm has let it go. A Slurm tool that hangs or
    fails here is a warning: the hosts' logs, not the clean-up, decide the run. A step that lost a node is
    not waited for: Slurm lists it until the whole job ends (its tasks on the other nodes are ended)."""
    try:
        if step.poll() is None:
            step.cancel()
        if nodewatch.node_failure_in(srun_log) is not None:
            step.wait()
        elif not step.wait_released():
            slurm.warn_cleanup("Slurm still lists the step after %d s" % slurm.CANCEL_GRACE_S)
    except (TfcnnwrapError, OSError) as exc:
        slurm.warn_cleanup(slurm.cleanup_reason(exc))


def _host_record(
    ctx: SweepContext,
    spec: RunSpec,
    argv: List[str],
    started_at: str,
    rel_log: str,
    host: HostRun,
    verdict: str,
    duration: float,
    failure: Optional[str] = None,
    lost: Optional[str] = None,
) -> Tuple[RunOutcome, RunRecord]:
    """One host's (outcome, record). ``lost``: the node srun reported failed in this run's step, which ended
    the step on every node: a host without a result failed on it (``crashed``, its failure naming the node)."""
    node = host.node
    rel = rel_log if node is None else "%s.%s.log" % (rel_log[: -len(".log")], node)
    path = ctx.sweep.path / rel
    parsed = parse_file(path) if path.is_file() else ParsedLog()
    exit_code = host.exit_code
    # As a single run: a host whose log holds its total and then hung until --timeout keeps the figure.
    status, hung = verdict_of(parsed, exit_code, verdict == "timeout", verdict == "interrupted")
    if lost and status != Status.OK:
        status = Status.CRASHED
        failure = "node_failure: %s (%s: srun: Node failure on %s)" % (
            lost,
            "this node" if node == lost else "the step ended with it",
            lost,
        )
    outcome = RunOutcome(
        status=status,
        exit_code=exit_code,
        duration_s=duration,
        parsed=parsed,
        interrupted=verdict == "interrupted",
        log_bytes=path.stat().st_size if path.is_file() else 0,
        hung_after_total=hung,
    )
    record = runlife.run_record(ctx, spec, outcome, argv, started_at, rel, None)
    record = replace(record, host=node)
    if failure and status != Status.OK:
        record = replace(record, failure=failure)
    return outcome, record


# -- the per-node task --------------------------------------------------------------------------------


def run_task(
    hosts_dir: Union[Path, str], cwd: Union[Path, str], argv: Sequence[str], environ: Optional[Mapping[str, str]] = None
) -> int:
    """Record this node, run ``argv`` in ``cwd`` (signals forwarded), record its exit code; returns 0."""
    record = slurm.host_record(environ)
    path = Path(hosts_dir) / ("task-%d.json" % record["task"])
    safefs.atomic_write(path, jsontext.dumps(record) + "\n")
    sys.stdout.flush()
    try:
        child = subprocess.Popen(argv, cwd=str(cwd))
    except OSError as exc:
        sys.stderr.write("tfcnnwrap.cli.node fleet: cannot run %s: %s\n" % (argv[0], exc))
        record["exit_code"] = 127
    else:

        def forward(signum: int, frame: Optional[FrameType]) -> None:
            child.send_signal(signum)

        for name in ("SIGTERM", "SIGINT", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, forward)
        record["exit_code"] = child.wait()
    safefs.atomic_write(path, jsontext.dumps(record) + "\n")
    return 0
