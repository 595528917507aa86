"""Creating and replacing files without following links.

Whoever can prepare a sweep or vendor directory could plant a symbolic link where tfcnnwrap writes
(``logs/x.log -> ~/.bashrc``). Every file tfcnnwrap writes goes through here: new files are created with
``O_CREAT | O_EXCL`` (which never follows a link, on POSIX and on Windows, whose ``CREATE_NEW`` fails on any
existing name) plus ``O_NOFOLLOW`` where the OS has it; replacing a file removes the name first (``unlink``
removes a link, never its target) or renames a fresh file over it (``rename`` replaces the link itself).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, List, Optional, Tuple, Union

from tfcnnwrap.errors import UsageError

if TYPE_CHECKING:
    from io import BufferedRandom

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation at the OS layer
_NOINHERIT = getattr(os, "O_NOINHERIT", 0)  # Windows: as tempfile.mkstemp, no child inherits the handle


class LinkRefused(UsageError):
    """A planted link where tfcnnwrap writes: exit 2, the message names the path to remove."""


def _refuse_link(path: Union[Path, str]) -> LinkRefused:
    return LinkRefused("%s is a symbolic link; tfcnnwrap never writes through links: remove it" % path)


def is_link(path: Union[Path, str]) -> bool:
    try:
        return Path(path).is_symlink()
    except OSError:
        return False


def create_new(path: Path, binary: bool = True) -> IO[Any]:
    """Open a new file for writing; fails (FileExistsError) when anything, a link included, has the name."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o666)
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")


def create_replacing(path: Path) -> IO[bytes]:
    """Open ``path`` for writing from empty, replacing a file (or a planted link, never its target)."""
    try:
        return create_new(path)
    except FileExistsError:
        if Path(path).is_dir() and not is_link(path):
            raise
        os.unlink(str(path))
        return create_new(path)


def open_append(path: Path) -> IO[bytes]:
    """Open ``path`` for appending (created if missing); a link there is refused, not followed."""
    if is_link(path):  # Windows has no O_NOFOLLOW; elsewhere this just gives the clearer message
        raise _refuse_link(path)
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _BINARY, 0o666)
    except OSError as exc:
        if is_link(path):
            raise _refuse_link(path) from None
        raise exc
    return os.fdopen(fd, "ab")


def open_existing_rw(path: Path) -> BufferedRandom:
    """Open ``path`` read-write (created if missing) for locking; a link there is refused."""
    if is_link(path):
        raise _refuse_link(path)
    try:
        fd = os.open(str(path), os.O_RDWR | os.O_CREAT | _NOFOLLOW | _BINARY, 0o666)
    except OSError:
        if is_link(path):
            raise _refuse_link(path) from None
        raise
    return os.fdopen(fd, "r+b")


def refuse_special(path: Path) -> None:
    """UsageError when ``path`` is a device, FIFO or socket: renaming over it would replace the node itself
    (as root, ``--out /dev/null`` turned the device into a regular file)."""
    try:
        mode = os.lstat(str(path)).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise UsageError("%s is a device, FIFO or socket, not a file; give the name of a file to write" % path)


def atomic_write(path: Path, data: Union[bytes, str], fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` (bytes or str) all at once: a reader sees the old file or the new one.

    The temporary file beside it is made with ``O_EXCL | O_NOFOLLOW`` under a random name, so no planted
    ``*.tmp`` link can redirect the write; ``os.replace`` then renames over the name itself, which must not be
    a device, FIFO or socket. The name is chosen before the file is made, so a Ctrl-C at any point, even as the
    file is created, removes it: no hidden temporary file stays behind.
    """
    path = Path(path)
    refuse_special(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp, fd = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        # a temporary file is made 0600; give the file the mode an ordinary open() would have.
        _umask_mode(tmp)
        os.replace(tmp, str(path))
    except BaseException:
        _unlink_quietly(tmp)
        raise


_TEMP_TRIES = 100


def _new_temp(path: Path) -> Tuple[str, int]:
    """(name, fd) of a new hidden file beside ``path``. An interruption after the file exists but before its
    descriptor is ours (a signal as ``os.open`` returns) removes the file by its name, known beforehand."""
    for _ in range(_TEMP_TRIES):
        # secrets.token_hex's own bytes, without its import (random, hmac, base64: ~3 ms of every verb's start)
        tmp = str(path.parent / (".%s.%s.tmp" % (path.name, os.urandom(6).hex())))
        try:
            return tmp, os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY | _NOINHERIT, 0o600)
        except FileExistsError:
            continue  # another file has this random name: never ours to remove
        except BaseException:
            _unlink_quietly(tmp)  # our O_EXCL open may have made it before the interruption
            raise
    raise FileExistsError(errno.EEXIST, "no free temporary name beside %s" % path)


def _unlink_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


_UMASK: list = []


def _umask_mode(path: str) -> None:
    if os.name == "nt":
        return
    if not _UMASK:  # read once: os.umask can only be read by setting it
        mask = os.umask(0o22)
        os.umask(mask)
        _UMASK.append(mask)
    os.chmod(path, 0o666 & ~_UMASK[0])


def link_leading_outside(root: Path, names: Union[List[str], Tuple[str, ...]] = ()) -> Optional[Path]:
    """The first of ``root``'s own entries ``names`` (or ``root`` itself) that is a link leading out of
    ``root``'s real location, or None. A sweep or vendor directory with such parts is refused."""
    root = Path(root)
    try:
        real_root = root.resolve()
    except OSError:
        return None
    for name in names:
        part = root / name
        if is_link(part):
            try:
                part.resolve().relative_to(real_root)
            except (ValueError, OSError):
                return part
    return None


def refuse_links_outside(root: Path, names: Union[List[str], Tuple[str, ...]], what: str) -> None:
    """UsageError naming the link when one of ``root``'s parts ``names`` leads out of it."""
    bad = link_leading_outside(root, names)
    if bad is not None:
        raise LinkRefused(
            "%s is a symbolic link leading out of the %s %s; tfcnnwrap never writes through links: remove it"
            % (bad, what, root)
        )
