"""The tests' one way to ask whether a process still runs, or to wait until it has ended (issue 21.4).

Standard library only, so a script the tests run elsewhere (inside a Slurm allocation) can import it too.
Linux waits on a pidfd (the kernel says when the process ends: no sleeping, no polling); elsewhere the
process is asked again at growing intervals until the deadline.
"""

import os
import select
import sys
import time

_FIRST_LOOK_S = 0.005
_LONGEST_LOOK_S = 0.2


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended now; a zombie (ended, not yet reaped by its parent) has."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it runs, as another user
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return sys.platform.startswith("linux")  # Linux: gone since kill(); elsewhere no /proc to ask


def wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    """True once ``pid`` has ended, waiting at most ``timeout_s`` (0: ask once); False if it still runs then."""
    if _ended(pid):
        return True
    if timeout_s <= 0:
        return False
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return True
        try:
            select.select([fd], [], [], timeout_s)  # readable once the process has ended
        finally:
            os.close(fd)
        return _ended(pid)
    deadline = time.monotonic() + timeout_s
    look = _FIRST_LOOK_S
    while not _ended(pid):  # no pidfd here (macOS, Windows): ask again, less often, until the deadline
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(look, left))
        look = min(look * 2, _LONGEST_LOOK_S)
    return True


def pid_alive(pid: int, wait_s: float = 0.0) -> bool:
    """Whether ``pid`` still runs; ``wait_s``: first give a process just signalled that long to finish dying
    (a kill takes effect a moment after kill())."""
    return not wait_gone(pid, wait_s)
