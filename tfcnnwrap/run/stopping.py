"""Ctrl-C and SIGTERM (SIGBREAK, SIGHUP) during a sweep: a request to stop, never an exception.

A Python signal handler runs between any two bytecodes of the main thread, inside ``Popen``'s fork
machinery too; one that raises there can be swallowed and the sweep runs on. So the handler only records
the signal. The C-level handler also writes the signal's number to a wakeup socket (``signal.set_wakeup_fd``);
a watcher thread blocked on that socket stops the running benchmark's process group at once, whatever the
main thread is doing. The sweep's loop checks ``requested`` between runs.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from types import FrameType
    from typing import Optional

SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGBREAK", "SIGHUP")


class Stoppable(Protocol):
    """What a stop request ends: a process group, a one-shot query's tree, a distributed job's bridge."""

    @property
    def exited(self) -> threading.Event: ...

    def terminate(self) -> None: ...


class StopRequests:
    """Install with ``install()``, undo with ``restore()``; ``guard(group)`` around each running group."""

    def __init__(self):
        self.signum = None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._current = None
        self._previous = {}
        self._old_wakeup = None
        self._sockets: Any = None  # (reader, writer) while installed
        self._watcher: Any = None
        self._numbers = set()

    @property
    def requested(self) -> bool:
        return self.signum is not None or self._event.is_set()

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self.signum = signum  # nothing else: this may run anywhere in the main thread

    def install(self) -> StopRequests:
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            self._old_wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main thread: signals are not ours to handle
            reader.close()
            writer.close()
            return self
        self._sockets = (reader, writer)
        for name in SIGNAL_NAMES:
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
                self._numbers.add(int(sig))
            except (ValueError, OSError):
                pass
        self._watcher = threading.Thread(target=self._watch, name="tfcnnwrap-signals", daemon=True)
        self._watcher.start()
        return self

    def _watch(self) -> None:
        reader = self._sockets[0]
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return
            if any(byte in self._numbers for byte in data):
                self._event.set()
                with self._lock:
                    guard = self._current
                if guard is not None:
                    guard.fire()

    def restore(self) -> None:
        if self._sockets is None:
            return
        try:
            signal.set_wakeup_fd(self._old_wakeup if self._old_wakeup is not None else -1)
        except (ValueError, OSError):
            pass
        for sig, handler in self._previous.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):
                pass
        reader, writer = self._sockets
        writer.close()  # the watcher reads end-of-file and returns
        self._watcher.join()
        reader.close()
        self._sockets = None

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds or until a stop is requested (a pause Ctrl-C can end at once);
        True when one was."""
        self._event.wait(timeout)
        return self.requested

    def guard(self, group: Stoppable) -> "_Guard":
        """A context manager: while it is open, a stop request terminates ``group``'s tree."""
        return _Guard(self, group)


class _Guard:
    def __init__(self, stops: StopRequests, group: Stoppable) -> None:
        self.stops = stops
        self.group = group
        self.fired = False
        self.leader_was_running = False
        self._lock = threading.Lock()

    def __enter__(self) -> "_Guard":
        with self.stops._lock:
            self.stops._current = self
        if self.stops.requested:  # a stop that came in before the group was registered
            self.fire()
        return self

    def __exit__(self, *exc):
        with self.stops._lock:
            self.stops._current = None

    def fire(self) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = True
            self.leader_was_running = not self.group.exited.is_set()
        self.group.terminate()
