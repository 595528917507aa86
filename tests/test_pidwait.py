"""tests/pidwait.py, the tests' one pid helper: a deadline, and no sleeping where the kernel can say."""

import os
import subprocess
import sys
import time

import pytest
from pidwait import pid_alive, wait_gone

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and zombies are POSIX's")


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


@POSIX
def test_a_running_process_is_alive_until_its_deadline_then_gone_once_killed():
    child = _sleeper()
    try:
        started = time.monotonic()
        assert not wait_gone(child.pid, 0.3) and pid_alive(child.pid)
        assert time.monotonic() - started >= 0.3  # it waited out its deadline, no more
        child.kill()
        started = time.monotonic()
        # not reaped yet: a zombie has ended
        assert wait_gone(child.pid, 10) and not pid_alive(child.pid)
        assert time.monotonic() - started < 5
    finally:
        child.kill()
        child.wait()
    assert wait_gone(child.pid, 0) and not pid_alive(child.pid, wait_s=1)  # reaped: no such process
