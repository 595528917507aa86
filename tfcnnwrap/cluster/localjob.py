"""The local cluster backend: one benchmark run as one distributed tf_cnn_benchmarks job on this machine.

Every task of a ``cluster.layout.ClusterPlan`` is the upstream script in a process group of its own (``procs``),
its merged output copied byte for byte to ``logs/<run>.<role><index>.log`` and fed to a ``LogParser`` by a
thread blocking on its pipe. The calling thread blocks on one queue that those threads, the timeout timer and
a ``StopSignal`` post to: nothing polls. The job's figure is the reporting task's ``total images/sec``
(worker 0, or the controller under distributed_all_reduce), which is already the cluster's total. When the
reporting tasks end, the tasks that never exit by themselves (ps; workers under distributed_all_reduce) are
stopped; a task that ends badly before that fails the job with its own reason, and every other task is
stopped. TensorFlow needs its ports named up front: free ones are found by binding port 0, which races with
other programs, so a job whose task could not bind is run once more on new ports.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.cluster.layout import ClusterPlan, Task, build_plan
from tfcnnwrap.run.logparse import LogParser, ParsedLog, classify, good_total, last_line
from tfcnnwrap.run.procs import ProcessGroup
from tfcnnwrap.run.runner import WINDOWS_WAIT_SLICE_S, Pump, RunOutcome, watch_output
from tfcnnwrap.run.runner import verdict as verdict_of

if TYPE_CHECKING:
    from tfcnnwrap.cluster.nodewatch import NodeWatch

LOCAL_HOST = "localhost"
# After the reporting tasks end, the other workers of a ps job (which finish together with worker 0 when
# training is synchronous) get this long to end by themselves before they are stopped.
FINISH_GRACE_S = 10.0
BIND_FAILURES = (b"Could not start gRPC server", b"Address already in use", b"Failed to bind")
BIND_SCAN_BYTES = 1 << 20


class StopSignal(threading.Event):
    """An interrupt event for running jobs: a ``threading.Event`` whose ``set()`` (from any thread) also
    wakes every job waiting on it at once, so that no job has to poll it; every task of those jobs stops."""

    def __init__(self):
        super().__init__()
        self._listeners_lock = threading.Lock()
        self._listeners = []

    def set(self) -> None:
        super().set()
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def _listen(self, listener: Callable) -> None:
        with self._listeners_lock:
            self._listeners.append(listener)
        if self.is_set():
            listener()

    def _forget(self, listener: Callable) -> None:
        with self._listeners_lock:
            if listener in self._listeners:
                self._listeners.remove(listener)


@dataclass
class JobOutcome(RunOutcome):
    """A ``runner.RunOutcome`` plus the contract's ``cluster`` record field. ``parsed`` is the log of the
    task that decided the status (the reporting task, or the task that failed); ``log`` is that task's log."""

    cluster: dict = field(default_factory=dict)
    log: Optional[Path] = None
    failed_task: Optional[str] = None
    failure: Optional[str] = None
    attempts: int = 1

    @property
    def images_per_sec(self) -> Optional[float]:
        return self.parsed.total_images_per_sec if self.status == "ok" else None


def free_ports(count: int) -> List[int]:
    """``count`` distinct ports free right now on every interface (all held open until all are picked).
    Another program may take one before TensorFlow binds it: run_job retries once if so."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def local_plan(
    mode: str = "parameter_server",
    workers: int = 1,
    ps: Optional[int] = None,
    branch: Optional[str] = None,
    all_reduce_spec: Optional[str] = None,
    gpus_per_host: Optional[int] = None,
    gpus_per_worker: int = 1,
) -> ClusterPlan:
    """A plan on this machine on free ports (UsageError for a job tf_cnn_benchmarks would refuse)."""
    probe = build_plan(mode, workers, ps, hosts=(LOCAL_HOST,), branch=branch, all_reduce_spec=all_reduce_spec)
    return build_plan(
        mode,
        workers,
        ps,
        hosts=(LOCAL_HOST,),
        ports=free_ports(len(probe.tasks)),
        branch=branch,
        all_reduce_spec=all_reduce_spec,
        gpus_per_host=gpus_per_host,
        gpus_per_worker=gpus_per_worker,
    )


def run_job(
    base_argv: Sequence[str],
    cwd: Union[Path, str],
    env: Mapping[str, str],
    log_dir: Union[Path, str],
    run_name: str,
    mode: str = "parameter_server",
    workers: int = 1,
    ps: Optional[int] = None,
    branch: Optional[str] = None,
    all_reduce_spec: Optional[str] = None,
    gpus_per_host: Optional[int] = None,
    gpus_per_worker: int = 1,
    timeout_s: Optional[float] = None,
    on_step: Optional[Callable] = None,
    stop: Optional[StopSignal] = None,
    relative_to: Optional[Path] = None,
) -> JobOutcome:
    """Run ``base_argv`` ([python, -u, script, flags...]) as one local distributed job and classify it.

    Logs: ``log_dir/<run_name>.<role><index>.log``; the ``cluster`` field names them relative to
    ``relative_to`` (the sweep directory) when given. ``on_step(step)`` is called on this thread for each
    step line of the reporting task. ``stop``: a StopSignal; Ctrl-C works too. Both give ``interrupted``.
    """

    def attempt(number: int, timeout: float) -> JobOutcome:  # fresh free ports each time
        plan = local_plan(mode, workers, ps, branch, all_reduce_spec, gpus_per_host, gpus_per_worker)
        return run_plan(plan, base_argv, cwd, env, log_dir, run_name, timeout, on_step, stop, relative_to)

    return with_bind_retry(attempt, timeout_s)


def with_bind_retry(attempt: Callable, timeout_s: Optional[float]) -> JobOutcome:
    """``attempt(number, timeout_s)`` once, and once more (number 1, within what is left of the timeout)
    when a task could not bind its port: another process took it between the plan and the bind."""
    started = time.monotonic()
    outcome = attempt(0, timeout_s)
    if outcome.failed_task and _bind_failed(outcome.log):
        left = None if not timeout_s else max(1.0, timeout_s - (time.monotonic() - started))
        outcome = attempt(1, left)
        outcome.attempts = 2
    outcome.duration_s = time.monotonic() - started
    return outcome


def _bind_failed(log_path: Path) -> bool:
    try:
        with open(str(log_path), "rb") as fh:
            head = fh.read(BIND_SCAN_BYTES)
    except (OSError, TypeError):
        return False
    return any(marker in head for marker in BIND_FAILURES)


class _TaskRun:
    """One task's process, log and parser; its pump thread posts ("step", ...) and ("ended", self)."""

    def __init__(self, task: Task, log_path: Path, events: queue.SimpleQueue) -> None:
        self.task = task
        self.log_path = log_path
        self.events = events
        self.parser = LogParser()
        self.parsed: Optional[ParsedLog] = None
        self.proc: Any = None  # set by start()/open_log()
        self.argv: Any = None  # set by start()/open_log()
        self.log: Any = None  # set by start()/open_log()
        self.log_bytes = 0
        self.stopped = False
        self.ended = False  # its end has been taken from the queue
        self.lost: Optional[str] = None  # why its node is gone ("node_failure: n3"), from the job's watch
        self.thread: Any = None  # set by start()/open_log()

    def open_log(self) -> None:
        self.log = safefs.create_replacing(self.log_path)

    def start(self, argv: Sequence[str], cwd: Union[Path, str], env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        self.proc = ProcessGroup(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.thread = threading.Thread(target=self._pump, name="tfcnnwrap-" + self.task.name, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        on_step = (lambda step: self.events.put(("step", step))) if self.task.reports else None
        pump = Pump(self.proc.stdout, self.log, self.parser, on_step)
        watch_output(self.proc, pump)  # a single run's ending: a child holding the pipe cannot hang the job
        try:
            pump.run()
            self.parser.feed_bytes(b"", final=True)
        finally:
            self.log_bytes = pump.log_bytes
            self.proc.stdout.close()
            self.parsed = self.parser.result()
            self.log.close()
            self.proc.wait()
            self.events.put(("ended", self))

    @property
    def running(self) -> bool:
        return self.proc is not None and not self.proc.exited.is_set()

    @property
    def exit_code(self) -> Optional[int]:
        return None if self.proc is None else self.proc.returncode

    def status(self) -> str:
        return classify(self.parsed or ParsedLog(), self.exit_code)


class _Job:
    def __init__(
        self,
        plan: ClusterPlan,
        log_dir: Union[Path, str],
        run_name: str,
        on_step: Optional[Callable],
        launcher: Optional[Callable] = None,
        backend: str = "local",
        watch: Optional[NodeWatch] = None,
    ) -> None:
        self.plan = plan
        self.watch = watch
        self.launcher = launcher
        self.backend = backend
        # SimpleQueue: put() is reentrant, so a StopSignal may be set from a signal handler.
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.on_step = on_step
        self.runs = [_TaskRun(t, Path(log_dir) / ("%s.%s.log" % (run_name, t.name)), self.events) for t in plan.tasks]
        self.failed: Optional[_TaskRun] = None
        self.grace_timer: Optional[threading.Timer] = None

    def start(self, base_argv: Sequence[str], cwd: Union[Path, str], env: Mapping[str, str]) -> None:
        for run in self.runs:  # every log first: a refused log path starts no process at all
            run.open_log()
        for run in self.runs:
            task_env = dict(env)
            task_env["PYTHONUNBUFFERED"] = "1"
            task_env.update(run.task.env)
            argv = self.plan.argv_for(run.task, base_argv)
            if self.launcher is not None:
                argv = list(self.launcher(run.task, argv))
            run.start(argv, cwd, task_env)

    def post(self, kind: str) -> None:
        self.events.put((kind, None))

    def _next(self) -> Tuple[str, Any]:  # the payload: a Step, a _TaskRun or None, as the kind says
        if os.name != "nt":
            return self.events.get()
        while True:
            try:
                return self.events.get(timeout=WINDOWS_WAIT_SLICE_S)
            except queue.Empty:
                continue

    def wait(self) -> str:
        """Block until the job is decided: "done", "failed", "timeout" or "interrupted"."""
        reporters = {id(r) for r in self.runs if r.task.reports}
        try:
            while True:
                kind, payload = self._next()
                if kind == "step":
                    if self.on_step is not None:
                        self.on_step(payload)
                elif kind in ("timeout", "interrupted"):
                    return kind
                elif kind == "grace":
                    return "done"
                elif kind == "ended":
                    verdict = self._ended(payload, reporters)
                    if verdict:
                        return verdict
        except KeyboardInterrupt:
            return "interrupted"

    def _ended(self, run: _TaskRun, reporters: Set[int]) -> Optional[str]:
        run.ended = True
        if self.watch is not None:
            run.lost = self.watch.ended(run.task, run.log_path)
            if run.lost:  # srun exits 0 after a node failure: the task is gone, whatever its code says
                self.failed = run
                return "interrupted" if self.watch.allocation_ending() else "failed"
        if run.task.reports:
            reporters.discard(id(run))
            if run.exit_code != 0:
                self.failed = run  # decided: the reporting task failed; the others need no grace
                return "failed"
        elif run.task.stop_at_end or run.exit_code != 0:
            self.failed = run  # a ps never ends by itself; a worker ending badly stalls the others
            return "failed"
        if reporters:
            return None
        # Not ``running``: a task that has exited but whose end is still queued may have failed.
        finishing = [r for r in self.runs if not r.ended and not r.task.stop_at_end]
        if not finishing:
            return "done"
        if self.grace_timer is None:
            self.grace_timer = threading.Timer(FINISH_GRACE_S, self.post, ("grace",))
            self.grace_timer.daemon = True
            self.grace_timer.start()
        return None

    def check_nodes(self, verdict: str) -> str:
        """Before the tasks still running are stopped: any of them whose node no longer answers fails the
        job, even when the reporting task has printed a total (it counted a worker that is gone)."""
        if self.watch is None or verdict not in ("done", "timeout"):
            return verdict  # "failed" has its reason; a task Slurm is stopping would look lost
        running = {r.task.name: r for r in self.runs if r.running and not r.ended}
        lost = self.watch.unreachable([r.task for r in running.values()], silent_only=verdict == "timeout")
        for name, reason in lost.items():
            running[name].lost = reason
        if lost and verdict != "timeout":
            self.failed = next(r for r in self.runs if r.lost)
            return "failed"
        return verdict

    def stop_all(self) -> None:
        """Stop every task still running, all at once (each ``kill_tree`` waits out its own grace)."""
        if self.grace_timer is not None:
            self.grace_timer.cancel()
        killers = []
        for run in self.runs:
            if run.running:
                run.stopped = True
                killer = threading.Thread(target=run.proc.terminate, daemon=True)
                killer.start()
                killers.append(killer)
        for killer in killers:
            killer.join()
        for run in self.runs:
            if run.thread is not None:
                run.thread.join()  # bounded: end_lingering_output lets a held pipe go
                run.proc.close()  # and what the task left running, in any session
            elif run.log is not None:
                run.log.close()


def run_plan(
    plan: ClusterPlan,
    base_argv: Sequence[str],
    cwd: Union[Path, str],
    env: Mapping[str, str],
    log_dir: Union[Path, str],
    run_name: str,
    timeout_s: Optional[float] = None,
    on_step: Optional[Callable] = None,
    stop: Optional[StopSignal] = None,
    relative_to: Optional[Path] = None,
    launcher: Optional[Callable] = None,
    backend: str = "local",
    watch: Optional[NodeWatch] = None,
) -> JobOutcome:
    """Run every task of ``plan`` (its ports fixed) once; see run_job.

    ``launcher(task, argv) -> argv`` starts a task some other way, e.g. ``["srun", "--nodes=1", "--ntasks=1",
    "-w", task.host, *argv]`` for a task on another node: its output still comes back through the pipe and
    stopping the launcher's process group stops the task. ``backend`` names it in the ``cluster`` field.
    ``watch``: a ``nodewatch.NodeWatch`` (tasks on other nodes): a task whose node failed fails the job."""
    job = _Job(plan, log_dir, run_name, on_step, launcher, backend, watch)
    started = time.monotonic()
    timer = None
    listener = lambda: job.post("interrupted")  # noqa: E731 - identity needed to unregister it
    verdict = "interrupted"
    try:
        if stop is not None:
            stop._listen(listener)
        if timeout_s:
            timer = threading.Timer(timeout_s, job.post, ("timeout",))
            timer.daemon = True
            timer.start()
        job.start(base_argv, cwd, env)
        verdict = job.check_nodes(job.wait())
    finally:
        if timer is not None:
            timer.cancel()
        if stop is not None:
            stop._forget(listener)
        job.stop_all()
    return _outcome(job, verdict, time.monotonic() - started, relative_to)


def _outcome(job: _Job, verdict: str, duration_s: float, relative_to: Optional[Path]) -> JobOutcome:
    reporter = next(r for r in job.runs if r.task.reports)
    decider = job.failed or reporter
    hung = False
    if verdict in ("timeout", "interrupted"):
        status, hung = _stopped_status(reporter, verdict)
        verdict = "done" if status == "ok" else verdict
    else:
        status = decider.status()
        if decider is job.failed and status in ("ok", "no_result"):
            status = "crashed"  # a ps (or a blocked worker) that ends by itself has broken the job
    failure = None
    lost = [r.lost for r in job.runs if r.lost]
    if lost and verdict != "interrupted":
        if status != "timeout":
            status = "crashed"
        failure = ("timeout: " if status == "timeout" else "") + "; ".join(lost)
    elif job.failed is not None:
        reason = (
            (job.failed.parsed or ParsedLog()).failure_message
            or last_line(job.failed.log_path)
            or ("exited with code %s" % job.failed.exit_code)
        )
        failure = "%s: %s" % (job.failed.task.name, reason)
    return JobOutcome(
        status=status,
        exit_code=decider.exit_code,
        duration_s=duration_s,
        parsed=decider.parsed or ParsedLog(),
        interrupted=verdict == "interrupted",
        log_bytes=sum(r.log_bytes for r in job.runs),
        cluster=_cluster_field(job, relative_to),
        log=decider.log_path,
        failed_task=job.failed.task.name if job.failed else None,
        failure=failure,
        hung_after_total=hung,
    )


def _stopped_status(reporter: _TaskRun, verdict: str) -> Tuple[str, bool]:
    """(status, hung_after_total) of a job stopped by its timeout or a stop request, as for a single run: a
    reporting task that had exited 0 with its total finished the job (the others were in their finish
    grace); one whose log holds the total but still ran at the timeout keeps the figure, marked hung."""
    parsed = reporter.parsed or ParsedLog()
    if not reporter.stopped and reporter.exit_code == 0 and good_total(parsed.total_images_per_sec):
        return "ok", False
    if verdict == "timeout":
        return verdict_of(parsed, reporter.exit_code, timed_out=True)
    return verdict, False


def _cluster_field(job: _Job, relative_to: Optional[Path]) -> dict:
    tasks = []
    for run in job.runs:
        log = run.log_path
        if relative_to is not None:
            log = Path(os.path.relpath(str(log), str(relative_to)))
        parsed = run.parsed or ParsedLog()
        tasks.append(
            {
                "role": run.task.role,
                "index": run.task.index,
                "host": run.task.host,
                "port": run.task.port,
                "reports": run.task.reports,
                "pid": run.proc.pid if run.proc else None,
                "exit_code": run.exit_code,
                "stopped": run.stopped,
                "status": "stopped" if run.stopped else run.status(),
                "log": log.as_posix(),
                "images_per_sec": parsed.total_images_per_sec,
                "command": [str(a) for a in run.argv or ()],
                "env": dict(run.task.env),
                "lost": run.lost,
            }
        )
    return {
        "backend": job.backend,
        "mode": job.plan.mode,
        "all_reduce_spec": job.plan.all_reduce_spec,
        "workers": job.plan.workers,
        "ps": len(job.plan.by_role("ps")),
        "tasks": tasks,
    }
