"""A table's layout (fit's rule, without rich), and tables and lines written to a pipe as rich writes them there.

rich costs a verb ~35 ms of its start (its import and its layout), more than `list` or `references` spend on
their own work (issue 39). On a pipe rich writes no styles, only text: each column's cells wrapped between
words (rich's own rule, ``_divide``), padded to the column's width and two spaces apart, a rule of ``─`` under
the header. ``table_text`` writes exactly that, and ``line_text`` a line of text as rich prints it; each answers
None wherever rich would do more than that (a character that is not one cell wide, a tab, a word wider than its
line, a table that does not fit: fit's stacked rows), and the caller prints through rich instead.
tests/test_plaintable.py holds both to rich's bytes.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Callable, Iterable, List, Optional, Protocol, Sequence, TextIO, Tuple, Union

from tfcnnwrap.prose import env_columns, fill

# Two spaces between columns, a rule under the header, no frame: the most columns in the fewest cells.
GAP = 2
HIDDEN_HINT = "widen the terminal or use --format csv/json"
PIPE_WIDTH = 160  # rich's 80 columns would fold every table in a file or a CI log
RULE = "\u2500"
# Characters one cell wide wherever rich measures them; any other makes the caller print through rich.
_ONE_CELL = re.compile("[ -~\u00a0\u00b0\u00b1\u00b5\u00b7\u00d7\u2013\u2014\u2026\u2192\u2264\u2265]*")
_WORD = re.compile(r"\s*\S+\s*")  # rich's word: leading spaces, the word, the spaces after it
_EMOJI = re.compile(r":\S*:")  # what rich's emoji codes could replace in a line of text (`:smile:`)

Layout = Union[Tuple[List[int], List[int]], Tuple[None, None]]


class Column(Protocol):
    """What a table lays out of each column (render.Col is one): fit reads these and nothing else."""

    @property
    def header(self) -> str: ...

    @property
    def priority(self) -> int: ...

    @property
    def wrap(self) -> bool: ...


def _lines(text: str) -> List[str]:
    return str(text).split("\n")


def cell_range(text: str, wrap: bool, measure: Callable[[str], int] = len) -> Tuple[int, int]:
    """(narrowest, widest) a cell can be drawn at without splitting a word; no-wrap cells are one width."""
    widest = max(measure(line) for line in _lines(text))
    if not wrap:
        return widest, widest
    words = [measure(w) for line in _lines(text) for w in line.split()]
    return max(words or [0]), widest


def layout(ranges: Sequence[Tuple[int, int]], priorities: Sequence[int], width: int) -> Layout:
    """(kept column indices, their widths) for columns that can be drawn between ``ranges`` (narrowest,
    widest), or (None, None) when not even the columns that never drop (priority 0) fit ``width``."""
    keep = list(range(len(ranges)))
    # Columns of one priority go together (min without max would read oddly), the highest first.
    levels = sorted({p for p in priorities if p > 0}, reverse=True)

    def narrowest() -> int:
        return sum(ranges[i][0] for i in keep) + GAP * (len(keep) - 1)

    while keep and narrowest() > width and levels:
        level = levels.pop(0)
        keep = [i for i in keep if priorities[i] != level]
    if not keep or narrowest() > width:
        return None, None
    widths = {i: ranges[i][0] for i in keep}
    spare = width - narrowest()
    # Columns grow towards their widest, the most important first.
    for i in sorted(keep, key=lambda i: (priorities[i], i)):
        grow = min(spare, ranges[i][1] - widths[i])
        widths[i] += grow
        spare -= grow
    return keep, [widths[i] for i in keep]


def wrap_parts(parts: Iterable[str], width: int, sep: str = " · ", measure: Callable[[str], int] = len) -> List[str]:
    """Greedy lines of ``parts`` joined by ``sep``, a part never broken unless it alone is wider than
    ``width`` (a long path)."""
    lines, line = [], ""
    for part in (p for p in parts if p):
        candidate = part if not line else line + sep + part
        if line and measure(candidate) > width:
            lines.append(line)
            line = part
        else:
            line = candidate
    if line:
        lines.append(line)
    return lines


def title_words(text: str) -> List[str]:
    """``text`` split at the spaces outside parentheses: ``(GeForce RTX 2070)`` stays one word."""
    words, depth, word = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == " " and depth <= 0:
            words.append(word)
            word = ""
        else:
            word += char
    return [w for w in words + [word] if w]


def title_lines(title: Union[str, Sequence[str]], width: int, measure: Callable[[str], int] = len) -> List[str]:
    """A table's title wrapped to ``width``: a list of parts between the parts, text between its words."""
    if isinstance(title, (list, tuple)):
        return wrap_parts(title, width, measure=measure)
    return wrap_parts(title_words(str(title)), width, sep=" ", measure=measure)


def hidden_note(hidden: Sequence[str], width: int, hint: str) -> str:
    """The line under a table that names the columns it left out."""
    # prose: wrapped between words, later lines indented, "60 columns" kept together
    return fill("%s hidden to fit %d columns: %s." % (", ".join(hidden), width, hint), width)


# -- on a pipe, without rich -------------------------------------------------------------------------------


def pipe_width(stream: TextIO) -> Optional[int]:
    """The width rich prints at on ``stream`` when that is no terminal and rich writes plain text there
    (render.console's rule: $COLUMNS, else PIPE_WIDTH); None where rich may do more (a terminal, FORCE_COLOR or
    TTY_COMPATIBLE, Windows' consoles and code pages, an encoding other than UTF-8, a notebook)."""
    environ = os.environ
    if os.name == "nt" or "IPython" in sys.modules or "FORCE_COLOR" in environ or "TTY_COMPATIBLE" in environ:
        return None
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        return None
    if not str(getattr(stream, "encoding", "") or "").lower().replace("-", "").startswith("utf8"):
        return None
    columns = env_columns()
    if columns is None:
        return PIPE_WIDTH
    return columns if environ["COLUMNS"] == str(columns) else None  # rich reads COLUMNS itself: the same digits


def _plain(text: str) -> bool:
    return _ONE_CELL.fullmatch(text) is not None


def _divide(text: str, width: int) -> Optional[List[str]]:
    """``text`` broken into lines as rich's ``divide_line`` breaks it (greedy, between its words), each line
    as rich keeps it (trailing spaces past the width dropped); None when a word is wider than ``width``."""
    breaks, offset = [], 0
    for match in _WORD.finditer(text):
        word = match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            return None  # rich folds it: not ours to draw
        elif offset and match.start():
            breaks.append(match.start())
            offset = len(word)
    lines = [text[a:b] for a, b in zip([0] + breaks, breaks + [len(text)])]
    kept = [line if len(line) <= width else line[:width] for line in lines]
    return None if any(k != line and line[width:].strip() for k, line in zip(kept, lines)) else kept


def _cell(text: str, width: int, wrap: bool, right: bool) -> Optional[List[str]]:
    """A cell's lines padded to its column's ``width`` as rich pads them (right-justified: its figures)."""
    if not _plain(text):
        return None
    lines = _divide(text, width) if wrap else [text] if len(text) <= width else None
    if lines is None:
        return None
    return [line.rstrip().rjust(width) if right else line.ljust(width) for line in lines]


def _rows(
    specs: Sequence[Column], header: bool, cells: Sequence[Sequence[str]], numeric: Sequence[bool], widths: List[int]
) -> Optional[List[str]]:
    out = []
    for row in cells:
        drawn = [_cell(t, w, header or s.wrap, right) for t, w, s, right in zip(row, widths, specs, numeric)]
        if any(lines is None for lines in drawn):
            return None
        height = max(len(lines) for lines in drawn if lines is not None)
        # rich aligns a header's cells at their foot, a row's at their top
        blank = [[" " * w] * (height - len(lines)) for lines, w in zip(drawn, widths) if lines is not None]
        filled = [pad + lines if header else lines + pad for lines, pad in zip(drawn, blank) if lines is not None]
        out += [(" " * GAP).join(parts) for parts in zip(*filled)]
    return out


def table_text(
    specs: Sequence[Column],
    cells: Sequence[Sequence[str]],
    numeric: Sequence[bool],
    title: Union[str, Sequence[str], None],
    caption: Optional[str],
    hint: str,
    width: int,
) -> Optional[str]:
    """What rich prints of fit.FittedTable(specs, cells, numeric, title, caption, hint) on a pipe ``width``
    columns wide, or None where rich would do more than pad words (see the module's docstring)."""
    lines = title_lines(title, width) if title else []
    ranges = [cell_range(s.header, True) for s in specs]
    for row in cells:
        found = (cell_range(text, s.wrap) for text, s in zip(row, specs))
        ranges = [(max(lo, a), max(hi, b)) for (lo, hi), (a, b) in zip(ranges, found)]
    keep, widths = layout([(lo, max(lo, hi)) for lo, hi in ranges], [s.priority for s in specs], width)
    if keep is None or widths is None or not cells:
        return None  # fit's stacked rows, or rich's own empty table: rich draws them
    kept = [specs[i] for i in keep]
    head = _rows(kept, True, [[s.header for s in kept]], [numeric[i] for i in keep], widths)
    body = _rows(kept, False, [[row[i] for i in keep] for row in cells], [numeric[i] for i in keep], widths)
    if head is None or body is None:
        return None
    hidden = [specs[i].header for i in range(len(specs)) if i not in keep]
    after = (hidden_note(hidden, width, hint).split("\n") if hidden else []) + (caption.split("\n") if caption else [])
    if any(len(line) > width or not _plain(line) for line in lines + after):
        return None  # rich folds a line too long, or measures a character otherwise
    lines += head + [RULE * (sum(widths) + GAP * (len(widths) - 1))] + body + after
    return "".join(line + "\n" for line in lines)


def line_text(text: str, width: int, whole: bool = False) -> Optional[str]:
    """What rich's ``print(text, markup=False)`` writes on a pipe ``width`` columns wide: wrapped between
    words (``whole``: with ``soft_wrap=True``, never wrapped), or None where rich would fold a word wider
    than the line or replace an emoji code."""
    if not _plain(text) or _EMOJI.search(text):
        return None
    lines = [text] if whole or len(text) <= width else _divide(text, width)
    return None if lines is None else "".join(line + "\n" for line in lines)
