"""Lines that are not tables -- errors, warnings, the --fail-on-regression message -- wrapped between words to
the terminal's width, a number never split from its unit (``82 °C``, ``175 W``, ``5 min``).

On a terminal only: a pipe, a file or a CI log gets each message as the one line it is (scripts and tests
read it whole; "one line naming the fix" stays one line there). Standard library only (textwrap).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from typing import IO, List, Optional

NBSP = "\u00a0"
# a number, a space, a unit or unit-like word: joined while wrapping, so that no line ends in "82" and the
# next starts with "°C"
_UNIT = re.compile(
    r"(?<=\d) (?=(?:°C|°F|%|W|MHz|GHz|MiB|GiB|KiB|MB|GB|KB|GB/s|s|ms|min|h|images/sec|"
    r"runs?|GPUs?|columns?)(?![\w/]))"
)
# a command quoted in backticks (`python -m pip install tf-keras`): broken, a copy of it would not run
_QUOTED_COMMAND = re.compile(r"`[^`\n]+`")
CONTINUATION = "  "
# What text from a file or another person must never do on its way out, in any format: drive a terminal (C0
# controls, ESC, DEL, C1), start a line of its own (newline, CR, tab, NEL, U+2028/9) or turn what follows
# around (the bidi marks and overrides: U+061C, U+200E/F, U+202A-E, U+2066-9).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def safe_text(text: str) -> str:
    """``text`` as one line that shows, never obeys, what a file or another person put in it: each character
    of ``_UNSAFE`` as its escape (``ESC`` -> ``\\x1b``, a newline -> ``\\x0a``, U+202E -> ``\\u202e``).
    Every table cell, title, note, Markdown, CSV cell, finding and error passes here (render, cli, pages):
    a name from a bundle cannot move the cursor, forge a row of its own or reverse what follows it."""
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def join_units(text: str) -> str:
    """``text`` with a non-breaking space between each number and its unit, and inside each command quoted
    in backticks."""
    return _QUOTED_COMMAND.sub(lambda m: whole(m.group()), _UNIT.sub(NBSP, text))


def whole(text: str) -> str:
    """``text`` (a command, a path) kept on one line by ``fill``: a line of its own when it does not fit
    after the words before it, folded by the terminal only when it is wider than the terminal."""
    return text.replace(" ", NBSP)


def fill_row(label: str, value: str, width: int, label_width: int = 11) -> List[str]:
    """``  label      value`` wrapped between words at ``width``, the continuation lines aligned under the
    value (``value`` may hold ``whole`` parts)."""
    first = "  %-*s" % (label_width, label)
    lines = textwrap.wrap(
        join_units(value),
        max(20, int(width)),
        initial_indent=first,
        subsequent_indent=" " * len(first),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(NBSP, " ") for line in lines] or [first.rstrip()]


class Wrapped(str):
    """Lines already shown by ``safe_text``, the newlines between them ours (``fill``'s, a table cell split in
    two). A console and a table cell take them as they are; any other text shows its newlines (render)."""


def fill(text: str, width: int, indent: str = CONTINUATION) -> Wrapped:
    """``text`` wrapped between words to ``width`` columns (later lines indented by ``indent``), never inside
    a word, a path, a hyphenated flag or a number and its unit; a word longer than the width has its own
    line. ``text`` is one message: a newline in it (a name's) is shown as ``safe_text`` shows it."""
    wrapped = textwrap.wrap(
        join_units(safe_text(text)),
        max(20, int(width)),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [""]
    return Wrapped("\n".join(line.replace(NBSP, " ") for line in wrapped))


MIN_COLUMNS = 20  # narrower than this, no table can show a column: such a COLUMNS is a mistake, not a width


def env_columns() -> Optional[int]:
    """$COLUMNS as a width, or None when it is unset, not a number or under MIN_COLUMNS."""
    raw = os.environ.get("COLUMNS", "").strip()
    if not raw.isascii() or not raw.isdigit():
        return None
    value = int(raw)
    return value if value >= MIN_COLUMNS else None


def terminal_width(stream: IO[str]) -> int:
    """The width to fit on the terminal ``stream`` writes to, the one rule of every table and line: COLUMNS
    when it is a width, else the terminal's own, else 80 (a terminal that does not say: a pty of 0 x 0)."""
    columns = env_columns()
    if columns is not None:
        return columns
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 0
    return width or 80


def write(text: str, stream: Optional[IO[str]] = None) -> None:
    """``text`` (one message) and a newline to ``stream`` (stderr): wrapped when it is a terminal."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    stream.write((fill(text, terminal_width(stream)) if tty else safe_text(text)) + "\n")


MOST_CANDIDATES = 8  # an error names at most this many candidates: a line, not a page


def some_of(names: List[str], most: int = MOST_CANDIDATES) -> str:
    """``a, b, c`` -- or the first ``most`` of ``names`` and how many more (``a, ..., h and 33 more``), so an
    error that lists candidates stays a line; the caller says where to see them all."""
    if len(names) <= most:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:most]), len(names) - most)
