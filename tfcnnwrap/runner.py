"""One benchmark run: a subprocess in its own process group, its output streamed to a log and a parser.

No shell, no polling: the parent blocks on the pipe, writes every byte to the log as it arrives and feeds
whole lines to the parser. A timer thread kills the process tree at the timeout; Ctrl-C (or SIGTERM, which
the sweep turns into KeyboardInterrupt) kills it too and the run is reported as interrupted.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

from tfcnnwrap.logparse import LogParser, ParsedLog, classify

READ_CHUNK = 64 * 1024
GRACE_S = 3.0  # between SIGTERM and SIGKILL of the process group


@dataclass
class RunOutcome:
    status: str
    exit_code: Optional[int]
    duration_s: float
    parsed: ParsedLog
    timed_out: bool = False
    interrupted: bool = False
    log_bytes: int = 0
    pid: Optional[int] = None


def _linux_parent_death_signal():
    """In the child, before exec: die with the parent even if the parent is SIGKILLed (Linux only)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; the process group kill still covers normal exits
        pass


def _child_setup_posix():
    os.setsid()
    if sys.platform.startswith("linux"):
        _linux_parent_death_signal()


def popen_group_kwargs():
    """Popen arguments that put the child in a process group of its own."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"preexec_fn": _child_setup_posix}


def kill_tree(proc, grace_s=GRACE_S):
    """Stop ``proc`` and everything it started: SIGTERM to the group, SIGKILL after ``grace_s``."""
    if os.name == "nt":
        subprocess.run(
            ["taskkill", "/T", "/F", "/PID", str(proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        try:
            proc.kill()
        except OSError:
            pass
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:
        # Also reaps stragglers that outlived the leader (a data-loader child, say).
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
    state = {"timed_out": False}
    interrupted = False
    log_bytes = 0
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

    def expire():
        state["timed_out"] = True
        kill_tree(proc)

    timer = None
    if timeout_s:
        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()

    def feed(chunk, final=False):
        step = parser.feed_bytes(chunk, final=final)
        if step is not None and on_step is not None:
            on_step(step)

    try:
        with open(log_path, "wb") as log:
            try:
                while True:
                    chunk = proc.stdout.read(READ_CHUNK)
                    if not chunk:
                        break
                    log.write(chunk)
                    log.flush()
                    log_bytes += len(chunk)
                    feed(chunk)
                feed(b"", final=True)
                proc.wait()
            except KeyboardInterrupt:
                interrupted = True
                kill_tree(proc)
                # Keep what the dying process still had in the pipe.
                rest = proc.stdout.read()
                if rest:
                    log.write(rest)
                    log_bytes += len(rest)
                    parser.feed_bytes(rest)
                parser.feed_bytes(b"", final=True)
                proc.wait()
    finally:
        if timer is not None:
            timer.cancel()
        if proc.poll() is None:
            kill_tree(proc, grace_s=0.5)
            proc.wait()
        proc.stdout.close()
    duration = time.monotonic() - started
    parsed = parser.result()
    exit_code = proc.returncode
    status = classify(parsed, exit_code, timed_out=state["timed_out"], interrupted=interrupted)
    return RunOutcome(
        status=status,
        exit_code=exit_code,
        duration_s=duration,
        parsed=parsed,
        timed_out=state["timed_out"],
        interrupted=interrupted,
        log_bytes=log_bytes,
        pid=proc.pid,
    )
