"""``--out FILE`` of `report` and `compare`: the output written to a file instead of standard output, checked
before any work (not a directory, in a directory that exists) and written by atomic replace (a link at the
name is replaced, never written through: safefs)."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Callable, Optional

from tfcnnwrap import safefs
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.store import fs_error
from tfcnnwrap.safefs import refuse_special


def check_out(out: Optional[str]) -> Optional[Path]:
    """``--out FILE`` checked before any work: not a directory, in a directory that exists."""
    if not out:
        return None
    path = Path(out)
    if path.is_dir() and not path.is_symlink():
        raise UsageError("--out %s is a directory; give a file such as %s" % (out, path / "report.html"))
    if not path.parent.is_dir():
        raise UsageError("--out %s: the directory %s does not exist; create it first" % (out, path.parent))

    refuse_special(path)  # before any work, not after it
    return path


def emit(text: str, out: Optional[Path]) -> None:
    """The page to ``out`` (atomic replace; a link at the name is replaced, never written through) or to
    standard output."""
    if out is None:
        sys.stdout.write(text)
        return

    try:
        safefs.atomic_write(out, text)
    except OSError as exc:
        raise fs_error("write", out, exc) from None
    sys.stderr.write("tfcnnwrap: wrote %s\n" % out)


def written_to(out: str, produce: Callable[[], int]) -> int:
    """Run ``produce()`` (the verb, told to print) and write what it printed to ``out``."""
    path = check_out(out)
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = produce()
    emit(buffer.getvalue(), path)
    return code
