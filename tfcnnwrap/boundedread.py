"""Read a file another person gave us whole, within a size and a time bound.

``--references /dev/zero`` would otherwise be read until memory ran out, and a FIFO nobody writes to would
block the verb for ever. A regular file is read up to the bound; a device or socket is refused at once; a pipe
(``<(cat refs.csv)``, a FIFO) is read as long as it sends something, and given up on when it goes quiet or runs
past the total deadline. Opened without blocking, so opening a FIFO without a writer returns at once (and it
then reads as empty).
"""

from __future__ import annotations

import os
import select
import stat
import time
from typing import TYPE_CHECKING, List, Optional, Union

from tfcnnwrap.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

IDLE_S = 10.0  # a pipe that sends nothing for this long is given up on
TOTAL_S = 60.0  # and one still sending after this long


def _open(path: Union[Path, str], what: str) -> int:
    shown = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        raise UsageError("%s does not exist; give the path of %s" % (shown, what)) from None
    except IsADirectoryError:
        raise UsageError("%s is a directory; give the path of %s" % (shown, what)) from None
    except PermissionError:
        raise UsageError("%s cannot be read (permission denied); give the path of %s" % (shown, what)) from None
    except OSError as exc:
        raise UsageError("%s cannot be opened (%s); give the path of %s" % (shown, exc.strerror or exc, what)) from None


def _too_big(path: Union[Path, str], limit: int, what: str) -> UsageError:
    size = "%d MiB" % (limit // (1024 * 1024)) if limit >= 1024 * 1024 else "%d KiB" % (limit // 1024)
    return UsageError("%s is larger than %s, too large for %s; give a smaller file" % (path, size, what))


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _read_regular(fd: int, path: Union[Path, str], limit: int, what: str) -> bytes:
    chunks: List[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise _too_big(path, limit, what)
        chunks.append(chunk)


def _read_pipe(fd: int, path: Union[Path, str], limit: int, what: str, idle_s: float, total_s: float) -> bytes:
    """A pipe's bytes until it ends; UsageError when it goes quiet for ``idle_s`` or lasts past ``total_s``."""
    chunks: List[bytes] = []
    size = 0
    deadline = time.monotonic() + total_s
    while True:
        wait = min(idle_s, deadline - time.monotonic())
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise UsageError(
                "%s sent no end of file within %.0f s (a pipe or FIFO nothing is writing to?); "
                "give a file, or a pipe that ends" % (path, idle_s if wait > 0 else total_s)
            )
        try:
            chunk = os.read(fd, 1024 * 1024)
        except BlockingIOError:
            continue
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise _too_big(path, limit, what)
        chunks.append(chunk)


def read_bounded(
    path: Union[Path, str], limit: int, what: str, idle_s: float = IDLE_S, total_s: float = TOTAL_S
) -> bytes:
    """The bytes of ``path`` (at most ``limit``); UsageError naming the fix for a device, a directory, a file
    over ``limit``, or a pipe that does not end. ``what`` names the expected file in messages."""
    fd = _open(path, what)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UsageError("%s is a directory; give the path of %s" % (path, what))
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise UsageError("%s is a device, not a file; give the path of %s" % (path, what))
        if stat.S_ISFIFO(mode) and os.name != "nt":
            return _read_pipe(fd, path, limit, what, idle_s, total_s)
        return _read_regular(fd, path, limit, what)
    finally:
        os.close(fd)


def read_regular(path: Union[Path, str], limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); UsageError naming the fix for anything else.
    For a file that is only ever a file (a config file): a FIFO, a device or a socket is refused without one
    read, so nothing on the other end can make the caller wait or fill its memory."""
    fd = _open(path, what)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UsageError("%s is %s, not a regular file; give the path of %s" % (path, _kind(mode), what))
        return _read_regular(fd, path, limit, what)
    finally:
        os.close(fd)


def read_own_file(path: Union[Path, str], limit: int) -> Optional[bytes]:
    """The bytes of a file tfcnnwrap wrote for itself (a cache: summary.json, the parsed references), or None
    for anything it should not trust to be that: missing, a link, not a regular file, over ``limit``."""
    try:
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks: List[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > limit:  # grown since fstat
                return None
    except OSError:
        return None
    finally:
        os.close(fd)
