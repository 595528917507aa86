"""Child processes in a process group of their own, stopped as a whole tree, on POSIX and Windows alike.

``ProcessGroup`` runs a command whose whole tree must end with it (benchmarks, probes). On POSIX the command
is started by a tiny supervisor (``_SUPERVISOR``, standard library only) that leads a new session and process
group: it forks and execs the command inside its group, reports the command's exit status on a pipe, and
kills the whole group with SIGKILL as soon as its stdin reaches end-of-file. tfcnnwrap holds the other end
of that stdin, so the group dies when tfcnnwrap finishes the run *or dies in any way*, SIGKILL included (the
kernel closes its descriptors); a parent-death signal would only cover the direct child. On Linux the
supervisor is also a child subreaper: a process that leaves the group (``setsid``) and is orphaned becomes its
child instead of init's, so before the group kill it ends every descendant it can find under /proc, in any
session. On Windows the command goes into a kill-on-close job object of its own, which covers the tree the
same way.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    ContextManager,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

if TYPE_CHECKING:
    import ctypes
    from pathlib import Path

GRACE_S = 3.0  # between SIGTERM and SIGKILL of a process group
# Once a command has exited, how long what it started may keep its output open before the group is killed.
OUTPUT_GRACE_S = 2.0

# Runs as ``python -I -S -c _SUPERVISOR STATUS_FD[,STDIN_FD] COMMAND...`` in the new session (the command's stdin:
# STDIN_FD where given, else /dev/null). Protocol on STATUS_FD:
# "started\n" or "exec <errno>\n" (the command could not be executed), then "<returncode>\n" when it
# exits (negative: killed by that signal). SIGTERM is caught (so that a SIGTERM to the group stops the
# command but leaves the supervisor to report it); exec restores the default for the command.
_SUPERVISOR = r"""
import os, sys, _thread
import _signal as signal  # the C half: the signal module's enums import enum, a third of a bare start-up
fds, argv = [int(fd) for fd in sys.argv[1].split(",")], sys.argv[2:]
status_fd = fds[0]
signal.signal(signal.SIGTERM, lambda signum, frame: None)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked from the fork until now: see _spawning


def descendants():
    # Every live process below this one, from /proc's parent links (Linux; elsewhere: none found).
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def childless():
    # True when no thread of this process has a child (Linux's children lists, far cheaper than reading
    # every process's stat on a busy host); False when there is one or the kernel has no such lists.
    try:
        for task in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/children" % task, "rb") as fh:
                if fh.read().strip():
                    return False
    except OSError:
        return False
    return True


def end_descendants():
    # SIGKILL to every descendant, in whatever session; rounds until a scan finds none not yet killed.
    # Every descendant that lives has a live ancestor among our children (an orphan becomes our child: we
    # are its subreaper), so no child means nothing to scan for: the usual end of a run.
    if childless():
        return
    killed = set()
    for _ in range(100):
        fresh = descendants() - killed
        if not fresh:
            return
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        killed |= fresh
os.set_inheritable(status_fd, False)
null = os.open(os.devnull, os.O_RDWR)
err_r, err_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(fds[1] if len(fds) > 1 else null, 0)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(err_w, str(exc.errno or 0).encode())
    os._exit(127)
os.close(err_w)
failed = os.read(err_r, 32)
if failed:
    os.waitpid(pid, 0)
    os.write(status_fd, b"exec " + failed + b"\n")
    os._exit(0)
os.write(status_fd, b"started\n")
os.dup2(null, 1)
os.dup2(null, 2)
if sys.platform.startswith("linux"):
    # After the exec, off the command's start-up path; long before it can orphan a child of its own.
    # _ctypes alone, not ctypes: a third of the supervisor's start-up went into ctypes' Python half.
    try:
        import _ctypes

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Libc:
            _handle = _ctypes.dlopen(None)

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = Int

        Function(("prctl", Libc()))(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the tree stay ours
    except Exception:
        pass


def reap():
    status = os.waitpid(pid, 0)[1]
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    os.write(status_fd, b"%d\n" % code)
    os.close(status_fd)


_thread.start_new_thread(reap, ())
while os.read(0, 4096):
    pass
end_descendants()
os.killpg(0, signal.SIGKILL)
"""


def _parent_death_signal() -> Optional[Callable[[], None]]:
    """Linux only: a function for the child to call between fork and exec so that it is killed when its
    parent dies, even by SIGKILL. Resolved here, in the parent, so the child runs no import or dlopen."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # Windows only

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def die_with_parent() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)

    return die_with_parent


_DIE_WITH_PARENT = _parent_death_signal()


def popen_group_kwargs() -> Dict[str, Any]:
    """Popen arguments: a new process group (Ctrl-C in the terminal reaches tfcnnwrap alone, which then
    stops the child's whole tree) and, on Linux, death with the parent."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]  # Windows only
    kwargs: Dict[str, Any] = {"start_new_session": True}
    if _DIE_WITH_PARENT is not None:
        kwargs["preexec_fn"] = _DIE_WITH_PARENT
    return kwargs


_WINDOWS_JOB = None


def _windows_kill_on_close_job() -> Optional[Tuple[ctypes.CDLL, int]]:
    """The job object shared by ``bind_to_our_lifetime``'s processes (see ``_new_windows_job``)."""
    global _WINDOWS_JOB
    if _WINDOWS_JOB is None:
        _WINDOWS_JOB = _new_windows_job()
    return _WINDOWS_JOB


def _new_windows_job() -> Optional[Tuple[ctypes.CDLL, int]]:
    """A Windows job object whose processes are all killed when its last handle closes, which happens when
    tfcnnwrap exits or is killed: Windows' counterpart of the Linux parent-death signal. None if unavailable."""
    import ctypes  # Windows only
    from ctypes import wintypes  # Windows only

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
        _fields_ = [
            (name, ctypes.c_uint64)
            for name in (
                "ReadOperationCount",
                "WriteOperationCount",
                "OtherOperationCount",
                "ReadTransferCount",
                "WriteTransferCount",
                "OtherTransferCount",
            )
        ]

    class ExtendedLimits(ctypes.Structure):
        _fields_ = [
            ("BasicLimitInformation", BasicLimits),
            ("IoInfo", IoCounters),
            ("ProcessMemoryLimit", ctypes.c_size_t),
            ("JobMemoryLimit", ctypes.c_size_t),
            ("PeakProcessMemoryUsed", ctypes.c_size_t),
            ("PeakJobMemoryUsed", ctypes.c_size_t),
        ]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # Windows only
    kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    # Handles are pointer-sized: without argtypes ctypes would pass them as C ints.
    kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
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
    return kernel32, job


def bind_to_our_lifetime(proc: subprocess.Popen[bytes]) -> None:
    """Make ``proc`` (and what it starts) die with tfcnnwrap even if tfcnnwrap is killed. On Linux the
    parent-death signal set by ``popen_group_kwargs`` does it; on Windows a kill-on-close job object.
    Best effort: never raises."""
    if os.name != "nt":
        return
    try:
        found = _windows_kill_on_close_job()
        if found is not None:
            kernel32, job = found
            kernel32.AssignProcessToJobObject(job, int(proc._handle))  # type: ignore[attr-defined]  # Windows only
    except Exception:  # noqa: BLE001 - the run goes on without it; Ctrl-C and timeouts still stop the tree
        pass


def kill_tree(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
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


@contextlib.contextmanager
def _spawning() -> Iterator[None]:
    """SIGTERM blocked in this thread while the supervisor is forked; the child inherits the mask, and the
    supervisor unblocks it once its own handler is in place. A batch system that ends a job sends SIGTERM to
    every process of it at once (Slurm's job kill, systemd's control-group stop), a supervisor just forked
    included: with the default action still in place it died before it could start its command (the sweep
    then failed on an ``squeue`` it was asking right as Slurm ended the job). A SIGTERM for tfcnnwrap itself
    goes to another thread meanwhile, or waits the few milliseconds of the fork."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:
        yield
        return
    before = mask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, before)


class ProcessGroup:
    """``argv`` running in a process group of its own, with every process it starts.

    ``returncode`` is the command's own (not the supervisor's); ``exited`` is set once it is known.
    ``terminate`` stops the tree gently, ``kill`` at once, ``close`` ends whatever is left and must be called
    (use it as a context manager). Raises OSError like ``Popen`` when the command cannot be executed.
    """

    def __init__(
        self,
        argv: Sequence[Union[str, Path]],
        cwd: Union[Path, str, None] = None,
        env: Optional[Mapping[str, str]] = None,
        stdout: Union[int, IO[bytes], None] = None,
        stderr: Union[int, IO[bytes], None] = None,
        stdin: Optional[IO[bytes]] = None,
    ):
        """``stdin``: a file (with a descriptor) the command reads as its standard input; default none."""
        self.argv = [str(a) for a in argv]
        self._stdin_file = stdin
        self.exited = threading.Event()
        self.returncode: Optional[int] = None
        self._job: Optional[Tuple[ctypes.CDLL, int]] = None
        self._stdin_lock = threading.Lock()
        if os.name == "nt":
            self._start_windows(cwd, env, stdout, stderr)
        else:
            self._start_posix(cwd, env, stdout, stderr)
        self.pid = self.popen.pid
        self.stdout = self.popen.stdout
        self.stderr = self.popen.stderr

    def _start_posix(
        self,
        cwd: Union[Path, str, None],
        env: Optional[Mapping[str, str]],
        stdout: Union[int, IO[bytes], None],
        stderr: Union[int, IO[bytes], None],
    ) -> None:
        status_r, status_w = os.pipe()
        fds = (status_w,) + ((self._stdin_file.fileno(),) if self._stdin_file is not None else ())
        try:
            with _spawning():
                self.popen = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _SUPERVISOR, ",".join(str(fd) for fd in fds)] + self.argv,
                    cwd=None if cwd is None else str(cwd),
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=stdout,
                    stderr=stderr,
                    bufsize=0,
                    start_new_session=True,
                    pass_fds=fds,
                )
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        self._status = os.fdopen(status_r, "rb", buffering=0)
        first = self._status.readline().split()
        if first[:1] != [b"started"]:
            self._status.close()
            self.popen.stdin.close()  # type: ignore[union-attr]  # a pipe: stdin=PIPE
            self.popen.wait()
            for stream in (self.popen.stdout, self.popen.stderr):
                if stream is not None:
                    stream.close()
            errno_ = int(first[1]) if first[:1] == [b"exec"] and first[1:2] and first[1].isdigit() else 0
            raise OSError(errno_, os.strerror(errno_) if errno_ else "the supervisor did not start", self.argv[0])
        threading.Thread(target=self._reap_posix, name="tfcnnwrap-reap", daemon=True).start()

    def _reap_posix(self) -> None:
        data = self._status.read()
        self._status.close()
        try:
            self.returncode = int(data.split()[0])
        except (ValueError, IndexError):  # the supervisor died first: its own status is the best we know
            self.returncode = self.popen.wait()
        self.exited.set()

    def _start_windows(
        self,
        cwd: Union[Path, str, None],
        env: Optional[Mapping[str, str]],
        stdout: Union[int, IO[bytes], None],
        stderr: Union[int, IO[bytes], None],
    ) -> None:
        self.popen = subprocess.Popen(
            self.argv,
            cwd=None if cwd is None else str(cwd),
            env=env,
            stdin=subprocess.DEVNULL if self._stdin_file is None else self._stdin_file,
            stdout=stdout,
            stderr=stderr,
            bufsize=0,
            creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,  # type: ignore[attr-defined]  # Windows only
        )
        try:
            self._job = _new_windows_job()
            if self._job is not None:
                kernel32, job = self._job
                kernel32.AssignProcessToJobObject(job, int(self.popen._handle))  # type: ignore[attr-defined]  # Windows only
        except Exception:  # noqa: BLE001 - taskkill /T still stops the tree while its leader lives
            self._job = None
        threading.Thread(target=self._reap_windows, name="tfcnnwrap-reap", daemon=True).start()

    def _reap_windows(self) -> None:
        self.returncode = self.popen.wait()
        self.exited.set()

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """The command's exit code, or None if it is still running after ``timeout`` seconds."""
        self.exited.wait(timeout)
        return self.returncode

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _release_supervisor(self) -> None:
        """Close the supervisor's stdin: it ends every descendant (other sessions too), then its group."""
        with self._stdin_lock:
            try:
                if self.popen.stdin is not None:
                    self.popen.stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        """Every process of the tree, at once: the supervisor ends it, descendants that left the group
        included; SIGKILL to the group as well when the supervisor has not done so within ``GRACE_S``."""
        if os.name != "nt":
            self._release_supervisor()
            try:
                self.popen.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
            return
        if self._job is not None:
            kernel32, job = self._job
            kernel32.TerminateJobObject(job, 1)
        else:
            subprocess.run(
                ["taskkill", "/T", "/F", "/PID", str(self.pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        try:
            self.popen.kill()
        except OSError:
            pass

    def terminate(self, grace_s: float = GRACE_S) -> None:
        """SIGTERM to the group, SIGKILL once the command has exited or after ``grace_s`` (Windows: kill)."""
        if os.name != "nt":
            self._signal_group(signal.SIGTERM)
            self.exited.wait(grace_s)
        self.kill()

    def close(self) -> None:
        """End what is left of the tree and reap it."""
        if os.name != "nt":
            self._release_supervisor()  # the supervisor kills its tree at end-of-file
        else:
            self.kill()
            if self._job is not None:
                self._job[0].CloseHandle(self._job[1])
                self._job = None
        self.popen.wait()
        self.exited.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_captured(
    argv: Sequence[Union[str, Path]],
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    cwd: Union[Path, str, None] = None,
    guard: Optional[Callable[[ProcessGroup], ContextManager[object]]] = None,
    stdin: Optional[bytes] = None,
) -> Tuple[Optional[int], bytes, bytes]:
    """Run ``argv`` in a ``ProcessGroup``, collecting stdout and stderr apart.

    Returns (returncode or None when it timed out, stdout bytes, stderr bytes). A command that outlives
    ``timeout`` is killed with its whole tree; one that exits but leaves children holding its output gets
    ``OUTPUT_GRACE_S`` for them to finish, then they are killed. ``guard(group)``: a context manager held
    while the command runs (``StopRequests.guard``: a stop request ends the wait at once). ``stdin``: bytes the
    command reads as its standard input (from an unnamed temporary file: never a pipe it could block on).
    """
    with contextlib.ExitStack() as stack:
        source = None
        if stdin is not None:
            import tempfile  # lazy: only a command given input needs it

            source = stack.enter_context(tempfile.TemporaryFile())
            source.write(stdin)
            source.seek(0)
        return _run_collected(argv, timeout, env, cwd, guard, source)


def _run_collected(
    argv: Sequence[Union[str, Path]],
    timeout: float,
    env: Optional[Mapping[str, str]],
    cwd: Union[Path, str, None],
    guard: Optional[Callable[[ProcessGroup], ContextManager[object]]],
    stdin: Optional[IO[bytes]],
) -> Tuple[Optional[int], bytes, bytes]:
    with ProcessGroup(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin) as group:
        readers = [_Collector(group.stdout), _Collector(group.stderr)]
        with guard(group) if guard is not None else contextlib.nullcontext():
            returncode = group.wait(timeout)
        if returncode is None:
            group.kill()
        elif not all(r.done.wait(OUTPUT_GRACE_S) for r in readers):
            group.kill()
    for reader in readers:
        # Bounded: a process that left the group (setsid) may hold the pipe for ever; its reader is let go.
        if reader.done.wait(OUTPUT_GRACE_S):
            reader.stream.close()
    return returncode, b"".join(readers[0].chunks), b"".join(readers[1].chunks)


class _Collector:
    """Reads a stream to its end in a thread of its own."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.chunks: List[bytes] = []
        self.done = threading.Event()
        threading.Thread(target=self._run, name="tfcnnwrap-collect", daemon=True).start()

    def _run(self) -> None:
        try:
            while True:
                chunk = self.stream.read(65536)
                if not chunk:
                    break
                self.chunks.append(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self.done.set()


def format_command(argv: Sequence[str]) -> str:
    """A command line a person can paste into this system's shell."""
    if os.name == "nt":
        return subprocess.list2cmdline([str(a) for a in argv])
    return shlex.join(str(a) for a in argv)


def pip_install_command(python: Optional[str], package: str) -> str:
    """``<python> -m pip install <package>``, quoted for this system's shell (paths may hold spaces)."""
    return format_command([python or "python", "-m", "pip", "install", package])
