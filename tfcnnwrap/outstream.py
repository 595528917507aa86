"""Standard output that may be closed (``>&-``), full (``> /dev/full``) or cut off (``| head -1``).

What a verb writes to disk is what matters; what it prints is a view. So stdout is wrapped once, before any
verb runs (``guard_stdout``): the first write that fails says so in one line on stderr, later output is
dropped (the descriptor is pointed at the null device, so nothing fails again, not even at interpreter exit),
and the verb goes on. A sweep keeps running and recording, and exits with its own status; every other verb
exits 2 (``exit_code``), since the output it exists for was lost. A reader that left (``| head -1``, EPIPE)
is no failure: it took what it wanted, as git, ls and grep know; the output ends quietly, nothing on stderr,
and the verb keeps its own exit status. A standard descriptor that is not open at
all is given the null device first: a file tfcnnwrap opens later must never land on descriptor 1 or 2.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Optional, TextIO

EXIT_OUTPUT_LOST = 2
# Verbs whose work is on disk whatever stdout does: they keep their own exit status when stdout fails.
KEEPS_STATUS = ("sweep",)


class GuardedStream(io.TextIOBase):
    """A text stream that never raises on write or flush: the first failure is reported once and the rest
    of the output is dropped."""

    def __init__(self, stream: TextIO, verb: str, lost: Optional[str] = None) -> None:
        super().__init__()
        self._stream = stream
        self._verb = verb or "tfcnnwrap"
        self.lost: Optional[str] = None
        self.reader_left = False  # EPIPE: the reader took what it wanted; no failure to report
        if lost:
            self._lose(lost)

    def _lose(self, why: str, reader_left: bool = False) -> None:
        if self.lost is not None:
            return
        self.lost = why
        self.reader_left = reader_left
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        if reader_left:
            return
        going_on = (
            "the sweep goes on and records every run" if self._verb in KEEPS_STATUS else ("nothing more is printed")
        )
        try:
            sys.stderr.write("tfcnnwrap %s: standard output cannot be written (%s): %s\n" % (self._verb, why, going_on))
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text: str) -> int:
        if self.lost is None:
            try:
                self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._lose(_why(exc), isinstance(exc, BrokenPipeError))
        return len(text)

    def flush(self) -> None:
        if getattr(self._stream, "closed", False):
            return  # its owner closed the stream it wrapped (an embedding caller, the interpreter's exit): no output
        if self.lost is None:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._lose(_why(exc), isinstance(exc, BrokenPipeError))

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return self.lost is None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only here: the guarded stream's own
        return getattr(self._stream, "encoding", "utf-8")

    @property
    def errors(self) -> Optional[str]:  # type: ignore[override]  # read-only here: the guarded stream's own
        return getattr(self._stream, "errors", "replace")

    @property
    def line_buffering(self) -> bool:
        return getattr(self._stream, "line_buffering", False)


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__


def _occupy_closed_descriptors() -> bool:
    """The null device on every standard descriptor that is not open; True when stdout was not."""
    closed_stdout = False
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one, or a lower one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            closed_stdout = closed_stdout or fd == 1
    return closed_stdout


def guard_stdout(verb: str) -> GuardedStream:
    """Replace ``sys.stdout`` with a GuardedStream for ``verb`` (and ``sys.stderr`` with a text stream when
    it was closed); returns it."""
    closed = _occupy_closed_descriptors() or sys.stdout is None
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
    stream = sys.stdout
    if stream is None:
        stream = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    if isinstance(stream, GuardedStream):
        return stream
    guarded = GuardedStream(stream, verb, "it is closed" if closed else None)
    sys.stdout = guarded
    return guarded


def exit_code(verb: str, code: int, guarded: Optional[GuardedStream]) -> int:
    """The verb's exit code once stdout failed: a sweep keeps its own, and so does any verb whose reader left
    (EPIPE); the others exit 2. Flushes first, so
    that a failure found only there (a full disk) still counts."""
    if guarded is not None:
        guarded.flush()
    if guarded is None or guarded.lost is None or guarded.reader_left or verb in KEEPS_STATUS:
        return code
    return EXIT_OUTPUT_LOST
