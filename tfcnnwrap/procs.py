"""Child processes in a process group of their own, stopped as a whole tree, on POSIX and Windows alike."""

import os
import shlex
import signal
import subprocess
import sys

GRACE_S = 3.0  # between SIGTERM and SIGKILL of a process group


def _parent_death_signal():
    """Linux only: a function for the child to call between fork and exec so that it is killed when its
    parent dies, even by SIGKILL. Resolved here, in the parent, so the child runs no import or dlopen."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def die_with_parent():
        prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)

    return die_with_parent


_DIE_WITH_PARENT = _parent_death_signal()


def popen_group_kwargs():
    """Popen arguments: a new process group (Ctrl-C in the terminal reaches tfcnnwrap alone, which then
    stops the child's whole tree) and, on Linux, death with the parent."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    kwargs = {"start_new_session": True}
    if _DIE_WITH_PARENT is not None:
        kwargs["preexec_fn"] = _DIE_WITH_PARENT
    return kwargs


_WINDOWS_JOB = None


def _windows_kill_on_close_job():
    """A Windows job object whose processes are all killed when its last handle closes, which happens when
    tfcnnwrap exits or is killed: Windows' counterpart of the Linux parent-death signal. None if unavailable."""
    global _WINDOWS_JOB
    if _WINDOWS_JOB is not None:
        return _WINDOWS_JOB
    import ctypes
    from ctypes import wintypes

    class BasicLimits(ctypes.Structure):
        _fields_ = [
            ("PerProcessUserTimeLimit", ctypes.c_int64),
            ("PerJobUserTimeLimit", ctypes.c_int64),
            ("LimitFlags", wintypes.DWORD),
            ("MinimumWorkingSetSize", ctypes.c_size_t),
            ("MaximumWorkingSetSize", ctypes.c_size_t),
            ("ActiveProcessLimit", wintypes.DWORD),
            ("Affinity", ctypes.c_size_t),
            ("PriorityClass", wintypes.DWORD),
            ("SchedulingClass", wintypes.DWORD),
        ]

    class IoCounters(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in (
            "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
            "ReadTransferCount", "WriteTransferCount", "OtherTransferCount",
        )]

    class ExtendedLimits(ctypes.Structure):
        _fields_ = [
            ("BasicLimitInformation", BasicLimits),
            ("IoInfo", IoCounters),
            ("ProcessMemoryLimit", ctypes.c_size_t),
            ("JobMemoryLimit", ctypes.c_size_t),
            ("PeakProcessMemoryUsed", ctypes.c_size_t),
            ("PeakJobMemoryUsed", ctypes.c_size_t),
        ]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        return None
    limits = ExtendedLimits()
    limits.BasicLimitInformation.LimitFlags = 0x2000  # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    job_object_extended_limit_information = 9
    if not kernel32.SetInformationJobObject(
        job, job_object_extended_limit_information, ctypes.byref(limits), ctypes.sizeof(limits)
    ):
        kernel32.CloseHandle(job)
        return None
    _WINDOWS_JOB = (kernel32, job)
    return _WINDOWS_JOB


def bind_to_our_lifetime(proc):
    """Make ``proc`` (and what it starts) die with tfcnnwrap even if tfcnnwrap is killed. On Linux the
    parent-death signal set by ``popen_group_kwargs`` does it; on Windows a kill-on-close job object.
    Best effort: never raises."""
    if os.name != "nt":
        return
    try:
        found = _windows_kill_on_close_job()
        if found is not None:
            kernel32, job = found
            kernel32.AssignProcessToJobObject(job, int(proc._handle))
    except Exception:  # noqa: BLE001 - the run goes on without it; Ctrl-C and timeouts still stop the tree
        pass


def kill_tree(proc, grace_s=GRACE_S):
    """Stop ``proc`` and everything it started: SIGTERM to its group, SIGKILL after ``grace_s``
    (Windows: ``taskkill /T /F``)."""
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


def format_command(argv):
    """A command line a person can paste into this system's shell."""
    if os.name == "nt":
        return subprocess.list2cmdline([str(a) for a in argv])
    return shlex.join(str(a) for a in argv)


def pip_install_command(python, package):
    """``<python> -m pip install <package>``, quoted for this system's shell (paths may hold spaces)."""
    return format_command([python or "python", "-m", "pip", "install", package])
