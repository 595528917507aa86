"""An OS file lock, shared or exclusive, released by the kernel when its holder dies.

Sweeps hold their sweep directory's lock exclusively and the vendor checkout's lock shared (many sweeps may
read one checkout); `setup` holds the vendor lock exclusively, so it cannot swap a checkout under a running
sweep. POSIX: ``flock``. Windows: ``LockFileEx`` on the first byte (shared or exclusive, fail immediately).
The lock file is opened without following links (``safefs``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tfcnnwrap import safefs
from tfcnnwrap.errors import TfcnnwrapError

if TYPE_CHECKING:
    import ctypes
    from io import BufferedRandom
    from typing import Optional, Union


class LockBusy(TfcnnwrapError):
    """Another tfcnnwrap holds the lock: exit 2, nothing done."""


def _lock_posix(fh: BufferedRandom, shared: bool) -> None:
    import fcntl  # POSIX only

    fcntl.flock(fh.fileno(), (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)


def _overlapped() -> ctypes.Structure:
    import ctypes  # Windows only
    from ctypes import wintypes  # Windows only

    class OVERLAPPED(ctypes.Structure):
        _fields_ = [
            ("Internal", ctypes.c_void_p),
            ("InternalHigh", ctypes.c_void_p),
            ("Offset", wintypes.DWORD),
            ("OffsetHigh", wintypes.DWORD),
            ("hEvent", wintypes.HANDLE),
        ]

    return OVERLAPPED()


def _lock_windows(fh: BufferedRandom, shared: bool) -> None:
    import ctypes  # Windows only
    import msvcrt  # Windows only

    LOCKFILE_FAIL_IMMEDIATELY, LOCKFILE_EXCLUSIVE_LOCK = 0x1, 0x2
    flags = LOCKFILE_FAIL_IMMEDIATELY | (0 if shared else LOCKFILE_EXCLUSIVE_LOCK)
    handle = msvcrt.get_osfhandle(fh.fileno())  # type: ignore[attr-defined]  # Windows only
    overlapped = _overlapped()
    if not ctypes.windll.kernel32.LockFileEx(handle, flags, 0, 1, 0, ctypes.byref(overlapped)):  # type: ignore[attr-defined]  # Windows only
        raise OSError("LockFileEx failed")


def _unlock_windows(fh: BufferedRandom) -> None:
    import ctypes  # Windows only
    import msvcrt  # Windows only

    handle = msvcrt.get_osfhandle(fh.fileno())  # type: ignore[attr-defined]  # Windows only
    ctypes.windll.kernel32.UnlockFileEx(handle, 0, 1, 0, ctypes.byref(_overlapped()))  # type: ignore[attr-defined]  # Windows only


def held_by(path: Union[Path, str]) -> Optional[int]:
    """Who holds the lock at ``path`` exclusively right now: the pid its holder wrote (0 when it wrote none),
    or None when nobody does (or there is no lock file). Asks for a shared lock and lets go at once, so a
    reader (`list`) learns it without a lock of its own; opened read-only, a link not followed."""
    try:
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            (_lock_windows if os.name == "nt" else _lock_posix)(fh, True)  # type: ignore[arg-type]  # read-only
        except OSError:
            text = fh.read(32).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else 0
        if os.name == "nt":
            _unlock_windows(fh)  # type: ignore[arg-type]  # read-only
    return None  # closing the file let go of the shared lock


def held_elsewhere(path: Union[Path, str]) -> bool:
    """Whether another open of ``path`` holds its lock exclusively (a sweep still writing); see held_by."""
    return held_by(path) is not None


class FileLock:
    """``acquire()`` raises LockBusy (exit 2, ``busy_message``) when another process holds it."""

    def __init__(self, path: Union[Path, str], busy_message: Optional[str] = None, shared: bool = False):
        self.path = Path(path)
        self.shared = shared
        self.busy_message = busy_message or (
            "%s is in use by another tfcnnwrap sweep; wait for it to finish or stop it first" % self.path.parent
        )
        self.fh: Optional[BufferedRandom] = None

    @property
    def held(self) -> bool:
        return self.fh is not None

    def acquire(self) -> FileLock:
        fh = safefs.open_existing_rw(self.path)
        try:
            (_lock_windows if os.name == "nt" else _lock_posix)(fh, self.shared)
        except OSError:
            fh.close()
            raise LockBusy(self.busy_message) from None
        self.fh = fh
        if not self.shared:  # who holds it, for a person looking; a shared lock has many holders
            try:
                fh.seek(0)
                fh.truncate()
                fh.write(str(os.getpid()).encode())
                fh.flush()
            except OSError:
                pass
        return self

    def release(self) -> None:
        if self.fh is None:
            return
        if os.name == "nt":
            try:
                _unlock_windows(self.fh)
            except OSError:
                pass
        self.fh.close()
        self.fh = None

    def __enter__(self):
        if not self.held:
            self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
