"""One benchmark run: a subprocess in its own process group, its output streamed to a log and a parser.

No shell, no polling: the parent blocks on the pipe, writes every byte to the log as it arrives and feeds
it to the parser. A timer thread kills the process tree at the timeout; Ctrl-C (or SIGTERM, which the sweep
turns into KeyboardInterrupt) kills it too and the run is reported as interrupted.
"""

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

from tfcnnwrap import safefs
from tfcnnwrap.logparse import LogParser, ParsedLog, classify
from tfcnnwrap.procs import bind_to_our_lifetime, kill_tree, popen_group_kwargs

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


class _Pump:
    """Copies the child's output to the log and the parser until the pipe closes."""

    def __init__(self, proc, log, parser, on_step):
        self.proc = proc
        self.log = log
        self.parser = parser
        self.on_step = on_step
        self.log_bytes = 0
        self.reader = None

    def take(self, chunk, final=False):
        if chunk:
            self.log.write(chunk)
            self.log.flush()
            self.log_bytes += len(chunk)
        step = self.parser.feed_bytes(chunk, final=final)
        if step is not None and self.on_step is not None:
            self.on_step(step)

    def run(self):
        while True:
            chunk = self.proc.stdout.read(READ_CHUNK)
            if not chunk:
                break
            self.take(chunk)

    def run_to_end(self):
        """Pump until the child closes its output; Ctrl-C propagates (on Windows too)."""
        if os.name != "nt":
            self.run()
            return
        self.reader = threading.Thread(target=self.run, name="tfcnnwrap-pump", daemon=True)
        self.reader.start()
        while self.reader.is_alive():
            self.reader.join(WINDOWS_WAIT_SLICE_S)

    def drain(self):
        """After the child was killed: take what it still had in the pipe, up to the end."""
        if self.reader is not None:
            self.reader.join()
        else:
            self.run()


def run_benchmark(
    argv: List[str],
    cwd,
    env: dict,
    log_path,
    timeout_s: Optional[float] = None,
    on_step: Optional[Callable] = None,
) -> RunOutcome:
    """Run one benchmark command to the end (or the timeout, or Ctrl-C) and classify it."""
    parser = LogParser()
    timed_out = threading.Event()
    interrupted = False
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
        **popen_group_kwargs(),
    )
    bind_to_our_lifetime(proc)

    def expire():
        if proc.poll() is None:  # not a run that finished just as the timer fired
            timed_out.set()
            kill_tree(proc)

    timer = None
    if timeout_s:
        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()

    try:
        with safefs.create_replacing(log_path) as log:  # a planted link is replaced, never followed
            pump = _Pump(proc, log, parser, on_step)
            try:
                pump.run_to_end()
                proc.wait()
            except KeyboardInterrupt:
                interrupted = True
                kill_tree(proc)
                pump.drain()
                proc.wait()
            pump.take(b"", final=True)
    finally:
        if timer is not None:
            timer.cancel()
        if proc.poll() is None:
            kill_tree(proc, grace_s=0.5)
            proc.wait()
        proc.stdout.close()
    parsed = parser.result()
    status = classify(parsed, proc.returncode, timed_out=timed_out.is_set(), interrupted=interrupted)
    return RunOutcome(
        status=status,
        exit_code=proc.returncode,
        duration_s=time.monotonic() - started,
        parsed=parsed,
        interrupted=interrupted,
        log_bytes=pump.log_bytes,
    )
