"""One benchmark run: a subprocess in its own process group, its output streamed to a log and a parser.

No shell, no polling: the parent blocks on the pipe, writes every byte to the log as it arrives and feeds
it to the parser. A run ends when its output ends; the pipe can outlive the benchmark (a child it started
keeps stdout open), so once the benchmark has exited its output gets ``OUTPUT_GRACE_S``, then the whole
tree is killed (descendants in other sessions too, see ``procs``) and, ``OUTPUT_GRACE_S`` later, the pipe is
let go whatever still holds it (``end_lingering_output``, which cluster tasks share). A timer kills the tree at
the timeout, whatever the tree does; a run whose log already holds its total keeps it (``hung_after_total``).
A stop request (Ctrl-C, SIGTERM: ``stopping.StopRequests``) terminates the tree; the run counts as interrupted
unless the benchmark had already finished on its own with a result.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Callable, List, Optional, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.run.logparse import LogParser, ParsedLog, classify, good_total
from tfcnnwrap.run.procs import OUTPUT_GRACE_S, ProcessGroup

if TYPE_CHECKING:
    from pathlib import Path

    from tfcnnwrap.run.logparse import Step
    from tfcnnwrap.run.stopping import StopRequests

READ_CHUNK = 64 * 1024
# Windows cannot interrupt a blocking pipe read with Ctrl-C: there the pipe is read by a thread and the main
# thread waits on it in slices this long, so that Ctrl-C is seen at once.
WINDOWS_WAIT_SLICE_S = 0.25


@dataclass
class RunOutcome:
    status: str
    exit_code: Optional[int]
    duration_s: float
    parsed: ParsedLog
    interrupted: bool = False
    log_bytes: int = 0
    hung_after_total: bool = False  # its log gave the total, then it hung until --timeout: the figure is kept


class Pump:
    """Copies the child's output to the log and the parser until the pipe closes, or until ``let_go`` (from
    any thread) says to stop waiting for whatever still holds it."""

    def __init__(
        self,
        stream: IO[bytes],
        log: IO[bytes],
        parser: LogParser,
        on_step: Optional[Callable[[Step], object]],
        on_stage: Optional[Callable[[str], object]] = None,
    ):
        self.stream = stream
        self.log = log
        self.parser = parser
        self.on_step = on_step
        # on_stage(stage): the run's stage (logparse.STAGES) each time the parser moves it on
        self.on_stage = on_stage
        self.stage = None
        self.log_bytes = 0
        self.reader: Optional[threading.Thread] = None
        self.ended = threading.Event()  # the output ended, or was let go
        self.abandoned = False  # let go before its end: something outside our reach held the pipe
        # POSIX: the reader blocks in poll() on the pipe and this wake-up pipe, so let_go ends the read at once.
        # The lock keeps let_go from writing to the wake-up pipe's descriptor number once the reader closed it.
        self._polled = hasattr(select, "poll")
        self._wake = os.pipe() if self._polled else None
        self._wake_lock = threading.Lock()

    def take(self, chunk: bytes, final: bool = False) -> None:
        if chunk:
            self.log.write(chunk)
            self.log.flush()
            self.log_bytes += len(chunk)
        step = self.parser.feed_bytes(chunk, final=final)
        self.stage_changed()
        if step is not None and self.on_step is not None:
            self.on_step(step)

    def stage_changed(self) -> None:
        stage = getattr(self.parser, "stage", None)
        if self.on_stage is not None and stage != self.stage:
            self.stage = stage
            self.on_stage(stage)

    def let_go(self) -> None:
        """Stop reading now, whoever still holds the pipe open."""
        with self._wake_lock:
            self.abandoned = not self.ended.is_set()
            if self._wake is not None:
                os.write(self._wake[1], b"x")
        self.ended.set()  # Windows: run_to_end stops waiting for its reader thread

    def run(self) -> None:
        try:
            if not self._polled:
                self._read_plain()
            else:
                self._read_polled()
        except (OSError, ValueError):
            if not self.abandoned:  # a reader let go (Windows) finds its pipe and log closed under it
                raise
        finally:
            self.ended.set()

    def _read_plain(self) -> None:
        while not self.abandoned:
            chunk = self.stream.read(READ_CHUNK)
            if not chunk:
                break
            self.take(chunk)

    def _read_polled(self) -> None:
        assert self._wake is not None  # made in __init__ whenever reading is polled
        fd, wake = self.stream.fileno(), self._wake[0]
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(wake, select.POLLIN)
        try:
            while True:
                if any(ready == wake for ready, _ in poller.poll()):
                    return
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    return
                self.take(chunk)
        finally:
            with self._wake_lock:
                for end in self._wake or ():
                    os.close(end)
                self._wake = None

    def run_to_end(self) -> None:
        """Pump until the output ends; a KeyboardInterrupt still propagates (on Windows too)."""
        if os.name != "nt":
            self.run()
            return
        self.reader = threading.Thread(target=self.run, name="tfcnnwrap-pump", daemon=True)
        self.reader.start()
        while not self.ended.is_set():
            self.ended.wait(WINDOWS_WAIT_SLICE_S)


def end_lingering_output(group: ProcessGroup, pump: Pump) -> None:
    """The one ending of every benchmark process (a single run, each task of a cluster job): once the command
    has exited, what it left behind has OUTPUT_GRACE_S to close the output; then the whole tree is ended (the
    supervisor reaches descendants in other sessions too) and, OUTPUT_GRACE_S later, the output is let go
    whatever still holds it, so the reader never blocks for ever."""
    group.exited.wait()
    if pump.ended.wait(OUTPUT_GRACE_S):
        return
    group.kill()
    if not pump.ended.wait(OUTPUT_GRACE_S):
        pump.let_go()


def watch_output(group: ProcessGroup, pump: Pump) -> None:
    """Start ``end_lingering_output`` for ``group`` and ``pump`` in a thread of its own."""
    threading.Thread(target=end_lingering_output, args=(group, pump), name="tfcnnwrap-linger", daemon=True).start()


def run_benchmark(
    argv: List[str],
    cwd: Union[Path, str],
    env: dict,
    log_path: Path,
    timeout_s: Optional[float] = None,
    on_step: Optional[Callable] = None,
    stops: Optional[StopRequests] = None,
    on_stage: Optional[Callable] = None,
) -> RunOutcome:
    """Run one benchmark command to the end (or the timeout, or a stop request) and classify it."""
    parser = LogParser()
    timed_out = threading.Event()
    started = time.monotonic()
    with (
        safefs.create_replacing(log_path) as log,
        ProcessGroup(  # a planted link is replaced, never followed
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        ) as group,
    ):
        pump = Pump(group.stdout, log, parser, on_step, on_stage)
        pump.stage_changed()  # "starting TensorFlow" from the moment the process runs
        timer = _start_timer(group, timeout_s, timed_out)
        watch_output(group, pump)
        guard = stops.guard(group) if stops is not None else contextlib.nullcontext()
        try:
            with guard:
                try:
                    pump.run_to_end()
                finally:
                    pump.ended.set()
                group.wait()
        finally:
            if timer is not None:
                timer.cancel()
        pump.take(b"", final=True)
    group.stdout.close()
    parsed = parser.result()
    # A benchmark that exited 0 with a total had finished before the stop reached it.
    finished = group.returncode == 0 and parsed.total_images_per_sec is not None
    interrupted = bool(getattr(guard, "fired", False)) and getattr(guard, "leader_was_running", False) and not finished
    status, hung = verdict(parsed, group.returncode, timed_out.is_set(), interrupted)
    return RunOutcome(
        status=status,
        exit_code=group.returncode,
        duration_s=time.monotonic() - started,
        parsed=parsed,
        interrupted=interrupted,
        log_bytes=pump.log_bytes,
        hung_after_total=hung,
    )


def verdict(
    parsed: ParsedLog, exit_code: Optional[int], timed_out: bool, interrupted: bool = False
) -> Tuple[str, bool]:
    """(status, hung_after_total) of a run, single or a cluster job's reporting task: one killed at
    --timeout after its log gave the total has finished its measurement, so it keeps the figure (ok)."""
    if timed_out and not interrupted and good_total(parsed.total_images_per_sec):
        return "ok", True
    return classify(parsed, exit_code, timed_out=timed_out, interrupted=interrupted), False


def _start_timer(
    group: ProcessGroup, timeout_s: Optional[float], timed_out: threading.Event
) -> Optional[threading.Timer]:
    """At the timeout: a benchmark still running has timed out; the tree ends either way."""
    if not timeout_s:
        return None

    def expire() -> None:
        if not group.exited.is_set():
            timed_out.set()
        group.terminate()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    return timer
