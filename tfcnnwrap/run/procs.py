"""Child processes in a process group of their own, stopped as a whole tree, on POSIX and Windows alike.

``ProcessGroup`` runs a command whose whole tree must end with it (benchmarks, probes). On POSIX the command
is started by a tiny supervisor (``_SUPERVISOR``, standard library only) that leads a new session and process
group: it forks and execs the command inside its group, reports the command's exit status on a pipe, and
kills the whole group with SIGKILL as soon as its stdin reaches end-of-file. tfcnnwrap holds the other end
of that stdin, so the group dies when tfcnnwrap finishes the run *or dies in any way*, SIGKILL included (the
kernel closes its descriptors); a parent-death signal would only cover the direct child. On Linux the
supervisor is also a child subreaper: a process that leaves the group (``setsid``) and is orphaned becomes its
child instead of init's, so before the group kill it ends every descendant it can find under /proc, in any
session. While a sweep runs, its commands' supervisors are forks of one ``SharedSupervisor`` (the same code,
already loaded) instead of an interpreter started per command; nothing else changes for them. On Windows the
command goes into a kill-on-close job object of its own, which covers the tree the same way.
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

# The supervisor's functions, shared by both ways of starting one. ``supervise`` runs in a session of its own:
# it forks and execs the command, reports on STATUS_FD "started <pid>\n" (its own pid: the group to signal) or
# "exec <errno>\n" (the command could not be executed), then "<returncode>\n" when it exits (negative: killed by
# that signal); STATUS_FD closes when the supervisor is gone. At end-of-file on LIFELINE it ends every descendant
# and its group. SIGTERM is caught (a SIGTERM to the group stops the command but leaves the supervisor to report
# it); exec restores the default for the command.
_SUPERVISOR_PARTS = r"""
import os, sys, _thread
import _signal as signal  # the C half: the signal module's enums import enum, a third of a bare start-up


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


def subreaper():
    # Linux: orphans of the tree become this process's children, not init's. _ctypes alone, not ctypes: a
    # third of the supervisor's start-up went into ctypes' Python half. Not inherited by a fork.
    if not sys.platform.startswith("linux"):
        return
    try:
        import _ctypes

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Libc:
            _handle = _ctypes.dlopen(None)

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = Int

        Function(("prctl", Libc()))(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def supervise(lifeline, status_fd, stdin_fd, argv, env):
    for fd in (lifeline, status_fd) + ((stdin_fd,) if stdin_fd is not None and stdin_fd > 2 else ()):
        os.set_inheritable(fd, False)
    null = os.open(os.devnull, os.O_RDWR)
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(null if stdin_fd is None else stdin_fd, 0)
        try:
            if env is None:
                os.execvp(argv[0], argv)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            os.write(err_w, str(exc.errno or 0).encode())
        os._exit(127)
    os.close(err_w)
    failed = os.read(err_r, 32)
    if failed:
        os.waitpid(pid, 0)
        os.write(status_fd, b"exec " + failed + b"\n")
        os._exit(0)
    os.write(status_fd, b"started %d\n" % os.getpid())
    os.dup2(null, 1)
    os.dup2(null, 2)
    subreaper()  # after the exec, off the command's start-up path; long before it can orphan a child

    def reap():
        status = os.waitpid(pid, 0)[1]
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        os.write(status_fd, b"%d\n" % code)

    _thread.start_new_thread(reap, ())
    while os.read(lifeline, 4096):
        pass
    end_descendants()
    os.killpg(0, signal.SIGKILL)
"""

# One command: ``python -I -S -c _SUPERVISOR STATUS_FD[,STDIN_FD] COMMAND...``, started in a new session with
# its stdin (the LIFELINE) a pipe that tfcnnwrap holds, its stdout and stderr the command's.
_SUPERVISOR = (
    _SUPERVISOR_PARTS
    + r"""
fds, argv = [int(fd) for fd in sys.argv[1].split(",")], sys.argv[2:]
signal.signal(signal.SIGTERM, lambda signum, frame: None)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked from the fork until now: see _spawning
supervise(0, fds[0], fds[1] if len(fds) > 1 else None, argv, None)
"""
)

# One for a whole sweep (``SharedSupervisor``): ``python -I -S -c _SHARED_SUPERVISOR SOCKET_FD``. Each request on
# the socket is a length (8 bytes) carrying the descriptors LIFELINE, STATUS_FD, STDOUT, STDERR[, STDIN] as
# SCM_RIGHTS, then marshal's (argv, cwd, env, has_stdin). It forks a child that takes a session of its own and
# becomes that command's supervisor, as ``_SUPERVISOR`` is: a fork of an interpreter already up instead of an
# interpreter's start per command. At end-of-file on the socket (tfcnnwrap closed it, or died) it ends every
# descendant: it is a subreaper too, so what a killed supervisor orphaned is still found.
_SHARED_SUPERVISOR = (
    _SUPERVISOR_PARTS
    + r"""
import _socket, marshal

sock = _socket.socket(fileno=int(sys.argv[1]))


def reap_children(signum, frame):
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def receive():
    # One request: (descriptors, fields), or None at end-of-file.
    data, ancillary, _, _ = sock.recvmsg(8, _socket.CMSG_SPACE(5 * 4))
    fds = []
    for level, kind, raw in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(raw[i : i + 4], sys.byteorder, signed=True) for i in range(0, len(raw) // 4 * 4, 4)]
    while data and len(data) < 8:
        more = sock.recv(8 - len(data))
        data = data + more if more else b""
    payload, size = b"", int.from_bytes(data, "big") if data else 0
    while data and len(payload) < size:
        chunk = sock.recv(min(size - len(payload), 1 << 20))
        if not chunk:
            data = b""
        payload += chunk
    if not data or len(fds) < 4:
        for fd in fds:
            os.close(fd)
        return None
    return fds, marshal.loads(payload)


def start(fds, argv, cwd, env, has_stdin):
    # In the forked child: a session of its own, the command's streams, then the supervisor's life.
    try:
        sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        os.dup2(fds[2], 1)
        os.dup2(fds[3], 2)
        os.close(fds[2])
        os.close(fds[3])
    except OSError as exc:
        os.write(fds[1], b"exec %d\n" % (exc.errno or 0))
        os._exit(0)
    try:
        os.chdir(cwd)
    except OSError as exc:
        os.write(fds[1], b"chdir %d\n" % (exc.errno or 0))
        os._exit(0)
    supervise(fds[0], fds[1], fds[4] if has_stdin else None, argv, env)


signal.signal(signal.SIGTERM, lambda signum, frame: None)
signal.signal(signal.SIGCHLD, reap_children)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked from the fork until now: see _spawning
subreaper()
while True:
    request = receive()
    if request is None:
        break
    fds, (argv, cwd, env, has_stdin) = request
    try:
        pid = os.fork()
    except OSError as exc:
        os.write(fds[1], b"exec %d\n" % (exc.errno or 0))
        pid = -1
    if pid == 0:
        start(fds, argv, cwd, env, has_stdin)
        os._exit(0)
    for fd in fds:
        os.close(fd)
end_descendants()
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
while True:  # every child reaped before we exit: their CPU time is counted up the tree, none left a zombie
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
"""
)


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


class SharedSupervisor:
    """One supervisor for every ``ProcessGroup`` started while it is open (a sweep's runs and queries): POSIX.

    Each command is then supervised by a fork of this one process (``_SHARED_SUPERVISOR``) instead of a new
    interpreter, with the same guarantees: its own session, the whole tree ended when its ``ProcessGroup`` is
    closed or tfcnnwrap dies in any way (the lifeline of each command and the socket to this one both reach
    end-of-file; this one is a subreaper too and ends every descendant it has left). ``start`` opens it (None on
    Windows, where job objects do this work, or when it cannot start: each command then gets its own supervisor);
    ``close`` ends it and waits for it.
    """

    _current: Optional[SharedSupervisor] = None

    def __init__(self) -> None:
        import socket  # lazy: only a sweep opens one

        self._socket_module = socket
        ours, theirs = socket.socketpair()
        try:
            with _spawning():
                self.process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _SHARED_SUPERVISOR, str(theirs.fileno())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    pass_fds=(theirs.fileno(),),
                )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._socket = ours
        self._lock = threading.Lock()

    @classmethod
    def start(cls) -> Optional[SharedSupervisor]:
        """Open one for the commands started from now on, unless one is open; None where there is none to open."""
        if os.name == "nt" or cls._current is not None:
            return None
        try:
            cls._current = cls()
        except OSError:
            return None
        return cls._current

    def request(self, fds: Sequence[int], fields: Tuple[Any, ...]) -> None:
        """Ask for one command; OSError when this supervisor is gone."""
        import marshal  # lazy: built in, only a shared supervisor's requests use it

        payload = marshal.dumps(fields)
        with self._lock:
            self._socket_module.send_fds(self._socket, [len(payload).to_bytes(8, "big")], list(fds))
            self._socket.sendall(payload)

    def close(self) -> None:
        """End it (and anything it still supervises) and wait for it; commands started later get their own."""
        if SharedSupervisor._current is self:
            SharedSupervisor._current = None
        with self._lock:
            self._socket.close()
        self.process.wait()


def _stream_fd(stream: Union[int, IO[bytes], None], default: int, made: List[int]) -> Tuple[int, Optional[int]]:
    """(the descriptor to hand a shared supervisor for ``stream``, our end of a pipe or None); what is opened
    here is added to ``made`` (closed once handed over)."""
    if stream == subprocess.PIPE:
        read_end, write_end = os.pipe()
        made.append(write_end)
        return write_end, read_end
    if stream == subprocess.DEVNULL:
        null = os.open(os.devnull, os.O_RDWR)
        made.append(null)
        return null, None
    if stream is None:
        return default, None
    return (stream if isinstance(stream, int) else stream.fileno()), None


class ProcessGroup:
    """``argv`` running in a process group of its own, with every process it starts.

    ``returncode`` is the command's own (not the supervisor's); ``exited`` is set once it is known.
    ``terminate`` stops the tree gently, ``kill`` at once, ``close`` ends whatever is left and must be called
    (use it as a context manager). Raises OSError like ``Popen`` when the command cannot be executed. On POSIX
    the supervisor is the open ``SharedSupervisor``'s fork, else a process of its own.
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
        self._gone = threading.Event()  # POSIX: the supervisor has ended (its tree with it)
        self._lifeline: Optional[IO[bytes]] = None  # POSIX: closing it ends the tree
        self.popen: Optional[subprocess.Popen[bytes]] = None  # the supervisor (POSIX) or the command (Windows)
        self.stdout: Optional[IO[bytes]] = None
        self.stderr: Optional[IO[bytes]] = None
        self._cwd = None if cwd is None else str(cwd)
        if os.name == "nt":
            self._start_windows(cwd, env, stdout, stderr)
            return
        shared = SharedSupervisor._current
        if shared is None or not self._start_shared(shared, cwd, env, stdout, stderr):
            self._start_posix(cwd, env, stdout, stderr)

    def _start_shared(
        self,
        shared: SharedSupervisor,
        cwd: Union[Path, str, None],
        env: Optional[Mapping[str, str]],
        stdout: Union[int, IO[bytes], None],
        stderr: Union[int, IO[bytes], None],
    ) -> bool:
        """Start through ``shared``; False (nothing started) when it is gone."""
        made: List[int] = []
        ours: List[int] = []
        try:
            life_r, life_w = os.pipe()
            ours.append(life_w)
            made.append(life_r)
            status_r, status_w = os.pipe()
            ours.append(status_r)
            made.append(status_w)
            out_fd, out_r = _stream_fd(stdout, 1, made)
            err_fd, err_r = (out_fd, None) if stderr == subprocess.STDOUT else _stream_fd(stderr, 2, made)
            ours += [fd for fd in (out_r, err_r) if fd is not None]
            fds = [life_r, status_w, out_fd, err_fd] + ([self._stdin_file.fileno()] if self._stdin_file else [])
            self._cwd = os.getcwd() if cwd is None else str(cwd)
            fields = (self.argv, self._cwd, dict(os.environ if env is None else env))
            shared.request(fds, fields + (self._stdin_file is not None,))
        except OSError:
            for fd in ours:
                os.close(fd)
            return False
        finally:
            for fd in made:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._lifeline = os.fdopen(life_w, "wb", buffering=0)
        self.stdout = os.fdopen(out_r, "rb", buffering=0) if out_r is not None else None
        self.stderr = os.fdopen(err_r, "rb", buffering=0) if err_r is not None else None
        self._await_start(os.fdopen(status_r, "rb", buffering=0))
        return True

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
        self._lifeline, self.stdout, self.stderr = self.popen.stdin, self.popen.stdout, self.popen.stderr
        self._await_start(os.fdopen(status_r, "rb", buffering=0))

    def _await_start(self, status: IO[bytes]) -> None:
        """The supervisor's first word: the command started (its reaper thread starts), or OSError."""
        first = status.readline().split()
        if first[:1] == [b"started"] and first[1:2] and first[1].isdigit():
            self.pid = int(first[1])
            threading.Thread(target=self._reap_posix, args=(status,), name="tfcnnwrap-reap", daemon=True).start()
            return
        status.close()
        self._release_supervisor()
        if self.popen is not None:
            self.popen.wait()
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        known = first[:1] in ([b"exec"], [b"chdir"]) and first[1:2] and first[1].isdigit()
        errno_ = int(first[1]) if known else 0
        # as Popen names it: the directory it could not enter, else the command
        filename = self._cwd if first[:1] == [b"chdir"] else self.argv[0]
        raise OSError(errno_, os.strerror(errno_) if errno_ else "the supervisor did not start", filename)

    def _reap_posix(self, status: IO[bytes]) -> None:
        code = status.readline().split()
        try:
            self.returncode = int(code[0])
        except (ValueError, IndexError):  # the supervisor died first: its own status is the best we know
            self.returncode = self.popen.wait() if self.popen is not None else -int(signal.SIGKILL)
        self.exited.set()
        status.read()  # end-of-file: the supervisor has ended, and its tree with it
        status.close()
        if self.popen is not None:
            self.popen.wait()
        self._gone.set()

    def _start_windows(
        self,
        cwd: Union[Path, str, None],
        env: Optional[Mapping[str, str]],
        stdout: Union[int, IO[bytes], None],
        stderr: Union[int, IO[bytes], None],
    ) -> None:
        self.popen = popen = subprocess.Popen(
            self.argv,
            cwd=None if cwd is None else str(cwd),
            env=env,
            stdin=subprocess.DEVNULL if self._stdin_file is None else self._stdin_file,
            stdout=stdout,
            stderr=stderr,
            bufsize=0,
            creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,  # type: ignore[attr-defined]  # Windows only
        )
        self.pid, self.stdout, self.stderr = popen.pid, popen.stdout, popen.stderr
        try:
            self._job = _new_windows_job()
            if self._job is not None:
                kernel32, job = self._job
                kernel32.AssignProcessToJobObject(job, int(popen._handle))  # type: ignore[attr-defined]  # Windows only
        except Exception:  # noqa: BLE001 - taskkill /T still stops the tree while its leader lives
            self._job = None
        threading.Thread(target=self._reap_windows, args=(popen,), name="tfcnnwrap-reap", daemon=True).start()

    def _reap_windows(self, popen: subprocess.Popen[bytes]) -> None:
        self.returncode = popen.wait()
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
        """Close the supervisor's lifeline: it ends every descendant (other sessions too), then its group."""
        with self._stdin_lock:
            try:
                if self._lifeline is not None:
                    self._lifeline.close()
            except OSError:
                pass

    def kill(self) -> None:
        """Every process of the tree, at once: the supervisor ends it, descendants that left the group
        included; SIGKILL to the group as well when the supervisor has not done so within ``GRACE_S``."""
        if os.name != "nt":
            self._release_supervisor()
            if not self._gone.wait(GRACE_S):
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
            if self.popen is not None:
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
            self._gone.wait()
        else:
            self.kill()
            if self._job is not None:
                self._job[0].CloseHandle(self._job[1])
                self._job = None
            if self.popen is not None:
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
