"""Rows of dicts out as a rich table, GitHub Markdown, CSV or JSON (the envelope of jsontext.py).

Every verb that prints rows goes through here, so the four formats look the same everywhere. JSON and CSV
carry raw values; table and Markdown format floats for people.
"""

import csv
import io
import math
import os
import re
import sys
from typing import NamedTuple, Optional

from tfcnnwrap.jsontext import csv_cell, dumps, envelope


class Col(NamedTuple):
    """A column of a table: its key in the rows, its header, and how it fits a narrow terminal.

    ``priority`` 0: always shown; the highest priorities drop out first when the terminal is too narrow for
    every column (a line under the table names them). ``wrap``: text that may wrap at its spaces (a list of
    failures); numbers, model names and GPU names never wrap. ``digits``: decimals of its floats in tables
    and Markdown (default: the table's).
    """

    key: str
    header: str
    priority: int = 0
    wrap: bool = False
    digits: Optional[int] = None


def _is_missing(value):
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def human(value, digits=2):
    """A cell for people: floats rounded, missing values blank, lists joined."""
    if _is_missing(value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%.*f" % (digits, value)
    if isinstance(value, (list, tuple)):
        return ", ".join(human(v, digits) for v in value)
    return str(value)


def to_json(obj):
    return dumps(obj, indent=2)


def columns_of(rows, columns=None):
    """``columns`` (keys, (key, header[, priority[, wrap]]) tuples or Cols) as Cols; every key of ``rows``
    in first-seen order when not given."""
    if columns:
        return [Col(c, c) if isinstance(c, str) else Col(*c) for c in columns]
    keys = []
    for row in rows:
        for key in row:
            if key not in keys:
                keys.append(key)
    return [Col(k, k) for k in keys]


_columns = columns_of


def _digits(column, default):
    return default if column.digits is None else column.digits


def to_markdown(rows, columns=None, digits=2):
    cols = _columns(rows, columns)
    # numbers right-aligned, as in the terminal's table
    rule = "|".join("---:" if _numeric(rows, c.key) else "---" for c in cols)
    out = ["| " + " | ".join(c.header for c in cols) + " |", "|" + rule + "|"]
    for row in rows:
        cells = [human(row.get(c.key), _digits(c, digits)).replace("|", "\\|") for c in cols]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def to_csv(rows, columns=None):
    cols = _columns(rows, columns)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in cols])
    for row in rows:
        writer.writerow([csv_cell(row.get(c.key)) for c in cols])
    return buf.getvalue()


# A figure already written as text: "203.99 (86.7%)", "+5.6%", "<0.001", "3/3", "1.09x", "175 W", "$699"
_FIGURE = re.compile(r"^[<>+\-\u2212$]?\d[\d.,]*(%|x| W)?(/\d+)?( \([^)]*\))?\u2020?$")
_NO_FIGURE = ("", "-", "n/a")


def _numeric(rows, key):
    """Whether a column holds figures (right-aligned, as numbers are): numbers, or text that writes one."""
    values = [r.get(key) for r in rows]
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return True
    texts = [v for v in values if isinstance(v, str) and v.strip() not in _NO_FIGURE]
    return bool(texts) and all(_FIGURE.match(v.strip()) for v in texts)


def make_table(rows, columns=None, title=None, digits=2, caption=None, hint=None):
    """A rich table of ``rows`` that fits the width it is printed at (``fit.FittedTable``): no cell ever
    folds, the highest-priority columns drop out first, a line names them. ``title``: text, or a list of
    parts kept whole and wrapped between them (a GPU name never splits)."""
    from tfcnnwrap.fit import HIDDEN_HINT, FittedTable

    cols = columns_of(rows, columns)
    cells = [[human(row.get(c.key), _digits(c, digits)) for c in cols] for row in rows]
    numeric = [_numeric(rows, c.key) for c in cols]
    return FittedTable(cols, cells, numeric, title=title, caption=caption, hint=hint or HIDDEN_HINT)


PIPE_WIDTH = 160


def console(stderr=False, **options):
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self):
            # `tfcnnwrap report | head`: the reader left. rich's default exits 1, which would read as
            # "some runs failed"; stop writing and exit 0 like other filters do.
            self.quiet = True
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, (sys.stderr if self.stderr else sys.stdout).fileno())
            except (OSError, ValueError):
                pass
            raise SystemExit(0)

    options.setdefault("highlight", False)
    options.setdefault("soft_wrap", False)
    con = _Console(stderr=stderr, **options)
    if not con.is_terminal and not os.environ.get("COLUMNS"):
        # Redirected to a file or a CI log: no terminal to fit, and rich's 80 columns would fold every table.
        con.width = PIPE_WIDTH
    return con


_URL = re.compile(r"https?://\S+")


def print_note(out, line):
    """Print a note on ``out`` wrapped at its width, except a URL too long for a line: that one gets a line
    of its own, unbroken (the terminal folds it without a newline, so a copied URL still works) and, on a
    terminal, an OSC 8 link."""
    parts, start = [], 0
    for match in _URL.finditer(line):
        url = match.group().rstrip(".,;:)]'\"")  # "(see https://...)": the bracket is the sentence's
        if len(url) > out.width:
            parts += [line[start:match.start()].rstrip(), url]
            start = match.start() + len(url)
    parts.append(line[start:].strip() if parts else line)
    for k, part in enumerate(parts):
        if not part:
            continue
        if k % 2:
            from rich.style import Style
            from rich.text import Text

            out.print(Text(part, style=Style(link=part)), soft_wrap=True)
        else:
            out.print(part, markup=False)


def emit(rows=(), fmt="table", columns=None, title=None, digits=2, caption=None, stream=None, kind=None,
         conditions=None, extra=None):
    """Write ``rows`` to stdout in ``fmt`` (table, markdown, csv, json or jsonl): the one format dispatcher.
    JSON is the envelope (``jsontext.envelope``) of ``kind`` with ``conditions`` and ``extra`` keys."""
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(to_json(envelope(kind, rows, conditions, **(extra or {}))) + "\n")
    elif fmt == "jsonl":
        for row in rows:
            stream.write(dumps(row) + "\n")
    elif fmt == "csv":
        stream.write(to_csv(rows, columns))
    elif fmt == "markdown":
        if title:
            stream.write("### %s\n\n" % (" · ".join(title) if isinstance(title, (list, tuple)) else title))
        stream.write(to_markdown(rows, columns, digits))
        if caption:
            stream.write("\n%s\n" % caption)
    else:
        console().print(make_table(rows, columns, title, digits, caption))
