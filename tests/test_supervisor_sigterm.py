"""A SIGTERM that reaches a command's supervisor while it starts (issue 26: Slurm ending a job after a node failure
sends SIGTERM to every process of the job at once, and the sweep was starting an ``squeue`` right then: its
supervisor died of it before it could start squeue, and the sweep ended with "could not run: the supervisor did
not start: squeue" instead of recording the run ``interrupted``). The supervisor must outlive such a SIGTERM and
run its command as if nothing had happened."""

import os
import signal
import subprocess
import sys

import pytest

from tfcnnwrap.run import procs

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and signal masks")


@POSIX
def test_a_sigterm_to_a_supervisor_that_is_starting_does_not_stop_its_command(monkeypatch):
    real_popen = subprocess.Popen
    hit = []

    def popen_then_sigterm(*args, **kwargs):
        # What Slurm's job kill does: the process has just been forked and exec'd, its interpreter is starting.
        proc = real_popen(*args, **kwargs)
        os.kill(proc.pid, signal.SIGTERM)
        hit.append(proc.pid)
        return proc

    monkeypatch.setattr(subprocess, "Popen", popen_then_sigterm)
    code, out, err = procs.run_captured([sys.executable, "-c", "print('answered')"], timeout=60)
    assert hit and (code, out.strip(), err) == (0, b"answered", b"")


@POSIX
def test_the_command_itself_gets_sigterm_as_usual_and_the_caller_keeps_its_mask():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    with procs.ProcessGroup(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"], stdout=subprocess.PIPE
    ) as group:
        assert group.stdout.readline() == b"up\n"
        os.kill(group.pid, signal.SIGTERM)  # the supervisor ignores it ...
        group.terminate()  # ... and a SIGTERM to the group stops the command, not blocked there
        assert group.exited.wait(30) and group.returncode == -signal.SIGTERM
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before
