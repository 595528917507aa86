"""One benchmark run: a subprocess in its own process group, its output streamed to a log and a parser.

No shell, no polling: the parent blocks on the pipe, writes every byte to the log as it arrives and feeds
it to the parser. A run ends when its output ends; the pipe can outlive the benchmark (a child it started
keeps stdout open), so once the benchmark has exited its output gets ``OUTPUT_GRACE_S`` and then the whole
group is killed. A timer kills the tree at the timeout, whatever the tree does. A stop request (Ctrl-C,
SIGTERM: ``stopping.StopRequests``) terminates the tree; the run counts as interrupted unless the benchmark
had already finished on its own with a result.
"""

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

from tfcnnwrap import safefs
from tfcnnwrap.logparse import LogParser, ParsedLog, classify
from tfcnnwrap.procs import OUTPUT_GRACE_S, ProcessGroup

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


class Pump:
    """Copies the child's output to the log and the parser until the pipe closes."""

    def __init__(self, stream, log, parser, on_step, on_stage=None):
        self.stream = stream
        self.log = log
        self.parser = parser
        self.on_step = on_step
        # on_stage(stage): the run's stage (logparse.STAGES) each time the parser moves it on
        self.on_stage = on_stage
        self.stage = None
        self.log_bytes = 0
        self.reader = None

    def take(self, chunk, final=False):
        if chunk:
            self.log.write(chunk)
            self.log.flush()
            self.log_bytes += len(chunk)
        step = self.parser.feed_bytes(chunk, final=final)
        self.stage_changed()
        if step is not None and self.on_step is not None:
            self.on_step(step)

    def stage_changed(self):
        stage = getattr(self.parser, "stage", None)
        if self.on_stage is not None and stage != self.stage:
            self.stage = stage
            self.on_stage(stage)

    def run(self):
        while True:
            chunk = self.stream.read(READ_CHUNK)
            if not chunk:
                break
            self.take(chunk)

    def run_to_end(self):
        """Pump until the output ends; a KeyboardInterrupt still propagates (on Windows too)."""
        if os.name != "nt":
            self.run()
            return
        self.reader = threading.Thread(target=self.run, name="tfcnnwrap-pump", daemon=True)
        self.reader.start()
        while self.reader.is_alive():
            self.reader.join(WINDOWS_WAIT_SLICE_S)


def run_benchmark(
    argv: List[str],
    cwd,
    env: dict,
    log_path,
    timeout_s: Optional[float] = None,
    on_step: Optional[Callable] = None,
    stops=None,
    on_stage: Optional[Callable] = None,
) -> RunOutcome:
    """Run one benchmark command to the end (or the timeout, or a stop request) and classify it."""
    parser = LogParser()
    timed_out = threading.Event()
    started = time.monotonic()
    with safefs.create_replacing(log_path) as log, ProcessGroup(  # a planted link is replaced, never followed
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as group:
        pump = Pump(group.stdout, log, parser, on_step, on_stage)
        pump.stage_changed()  # "starting TensorFlow" from the moment the process runs
        output_ended = threading.Event()
        timer = _start_timer(group, timeout_s, timed_out)
        threading.Thread(target=_end_lingering_output, args=(group, output_ended), daemon=True).start()
        guard = stops.guard(group) if stops is not None else contextlib.nullcontext()
        try:
            with guard:
                try:
                    pump.run_to_end()
                finally:
                    output_ended.set()
                group.wait()
        finally:
            if timer is not None:
                timer.cancel()
        pump.take(b"", final=True)
    group.stdout.close()
    parsed = parser.result()
    # A benchmark that exited 0 with a total had finished before the stop reached it.
    finished = group.returncode == 0 and parsed.total_images_per_sec is not None
    interrupted = bool(getattr(guard, "fired", False)) and guard.leader_was_running and not finished
    status = classify(parsed, group.returncode, timed_out=timed_out.is_set(), interrupted=interrupted)
    return RunOutcome(
        status=status,
        exit_code=group.returncode,
        duration_s=time.monotonic() - started,
        parsed=parsed,
        interrupted=interrupted,
        log_bytes=pump.log_bytes,
    )


def _start_timer(group, timeout_s, timed_out):
    """At the timeout: a benchmark still running has timed out; the tree ends either way."""
    if not timeout_s:
        return None

    def expire():
        if not group.exited.is_set():
            timed_out.set()
        group.terminate()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    return timer


def _end_lingering_output(group, output_ended):
    """Once the benchmark has exited, what it left behind has OUTPUT_GRACE_S to close the output."""
    group.exited.wait()
    if not output_ended.wait(OUTPUT_GRACE_S):
        group.kill()
