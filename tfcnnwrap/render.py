"""Rows of dicts out as a rich table, GitHub Markdown, CSV or JSON (the envelope of jsontext.py).

Every verb that prints rows goes through here, so the four formats look the same everywhere. JSON and CSV
carry raw values; table and Markdown format floats for people.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import sys
from typing import TYPE_CHECKING, Any, List, Mapping, NamedTuple, NoReturn, Optional, Sequence, TextIO, Tuple, Union

from tfcnnwrap.jsontext import csv_cell, dumps, envelope
from tfcnnwrap.plaintable import HIDDEN_HINT, PIPE_WIDTH, line_text, pipe_width, table_text
from tfcnnwrap.prose import Wrapped, env_columns, safe_text, terminal_width

if TYPE_CHECKING:
    from rich.console import Console

    from tfcnnwrap.fit import FittedTable


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


# The columns a table is given: keys, (key, header[, priority[, wrap]]) tuples or Cols (columns_of).
Columns = Sequence[Union[str, Col, Tuple[Union[str, int, bool], ...]]]

HUMAN_FIXED_LIMIT = 1e15  # floats this large are shown in scientific notation

# What a spreadsheet reads as a formula when a cell starts with it (OWASP's list): `=cmd|' /C calc'!A0`.
CSV_FORMULA_START = "=+-@\t\r"


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def csv_safe(value: Union[float, str]) -> Union[float, str]:
    """A CSV cell a spreadsheet shows as text: a string starting with ``= + - @``, tab or CR gets a leading
    ``'`` (what spreadsheets themselves do), unless it is a number such as ``-6.6``; control characters are
    shown as in `safe_text`. Other values pass unchanged. `references._unguard` reads it back."""
    if not isinstance(value, str):
        return value
    value = safe_text(value)
    if value[:1] and value[0] in CSV_FORMULA_START and not _is_number(value):
        return "'" + value
    return value


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def human(value: Any, digits: int = 2) -> str:
    """A cell for people: floats rounded, missing values blank, lists joined."""
    if _is_missing(value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= HUMAN_FIXED_LIMIT:  # 1.7e308 in fixed point is 309 digits no one reads
            return "%.*e" % (digits, value)
        return "%.*f" % (digits, value)
    if isinstance(value, (list, tuple)):
        return ", ".join(human(v, digits) for v in value)
    return value if isinstance(value, Wrapped) else safe_text(str(value))


def to_json(obj: Any) -> str:  # any JSON value
    return dumps(obj, indent=2)


def columns_of(rows: Sequence[Mapping[str, Any]], columns: Optional[Columns] = None) -> List[Col]:
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


def _digits(column: Col, default: int) -> int:
    return default if column.digits is None else column.digits


# What Markdown would read as markup in text we did not write (GitHub's flavour, CommonMark's rules): raw HTML
# (`<` before a tag's or comment's first character), an entity (`&` before a name or `#`), a link, an image or
# a link definition (`]` before `(`, `[` or `:`: no other `]` ends one), code spans (a backtick of its own),
# emphasis and strikethrough (`*`, `~`, `_` at a word's edge), a table cell's end (`|`), and the backslash that
# would escape our escapes. `<0.001`, `parameter_server` and `['--use_fp16']` hold none of these and print as
# they are.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*~|]|\](?=[(\[:])|<(?=[A-Za-z/!?])|&(?=[A-Za-z#])|(?<![^\W_])_|_(?![^\W_])")
_BLOCK_START = re.compile(r"^(|\d+)((?<=\d)[.)]|(?<!\d)[>+\-=])")
# a command of ours in backticks (`compare --against NAME`) stays a code span: nothing in one is markup
_CODE_SPAN = re.compile(r"(`[^`]+`)")


def md_text(text: str, cell: bool = False) -> str:
    """``text`` as Markdown that shows it and does nothing else: one line (``safe_text``), every character
    Markdown would interpret escaped with a backslash. The one escape of every Markdown cell, header, title
    and note. Outside a table's ``cell`` a code span of single backticks is kept: a note's commands
    (`compare --against NAME`) are ours, and nothing inside a code span is markup."""
    escape = lambda part: _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), part)  # noqa: E731
    if cell:
        return escape(safe_text(text))
    # a line of its own: what starts it may start a block (a quote, a list, a heading, an underline, code)
    parts = _CODE_SPAN.split(safe_text(text).lstrip(" "))
    line = "".join(part if k % 2 else escape(part).replace("#", "\\#") for k, part in enumerate(parts))
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line)


def md_lines(lines: Union[str, Sequence[str]]) -> str:
    """Lines of Markdown text (a caption, notes), each through ``md_text``; a newline inside one is shown, and
    a line starting ``- `` stays an item of a list."""
    return "\n".join(
        "- " + md_text(line[2:]) if line.startswith("- ") else md_text(line)
        for line in ([lines] if isinstance(lines, str) else lines)
    )


def to_markdown(rows: Sequence[Mapping[str, Any]], columns: Optional[Columns] = None, digits: int = 2) -> str:
    cols = _columns(rows, columns)
    # numbers right-aligned, as in the terminal's table
    rule = "|".join("---:" if _numeric(rows, c.key) else "---" for c in cols)
    out = ["| " + " | ".join(md_text(c.header, cell=True) for c in cols) + " |", "|" + rule + "|"]
    for row in rows:
        cells = [md_text(human(row.get(c.key), _digits(c, digits)), cell=True) for c in cols]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Optional[Columns] = None) -> str:
    cols = _columns(rows, columns)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in cols])
    for row in rows:
        writer.writerow([csv_safe(csv_cell(row.get(c.key))) for c in cols])
    return buf.getvalue()


# A figure already written as text: "203.99 (86.7%)", "+5.6%", "<0.001", "3/3", "1.09x", "175 W", "$699"
_FIGURE = re.compile(r"^[<>+\-\u2212$]?\d[\d.,]*(%|x| W)?(/\d+)?( \([^)]*\))?\u2020?$")
_NO_FIGURE = ("", "-", "n/a")


def _numeric(rows: Sequence[Mapping[str, Any]], key: str) -> bool:
    """Whether a column holds figures (right-aligned, as numbers are): numbers, or text that writes one."""
    values = [r.get(key) for r in rows]
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return True
    texts = [v for v in values if isinstance(v, str) and v.strip() not in _NO_FIGURE]
    return bool(texts) and all(_FIGURE.match(v.strip()) for v in texts)


TableParts = Tuple[List["Col"], List[List[str]], List[bool], Union[str, List[str], None], Optional[str]]


def _table_parts(
    rows: Sequence[Mapping[str, Any]],
    columns: Optional[Columns],
    title: Union[str, List[str], Tuple[str, ...], None],
    digits: int,
    caption: Union[str, Sequence[str], None],
) -> TableParts:
    """(columns, cells as text, which columns hold figures, title, caption): what a table draws."""
    cols = columns_of(rows, columns)
    cells = [[human(row.get(c.key), _digits(c, digits)) for c in cols] for row in rows]
    numeric = [_numeric(rows, c.key) for c in cols]
    if title is not None:
        title = [safe_text(t) for t in title] if isinstance(title, (list, tuple)) else safe_text(title)
    lines = [caption] if isinstance(caption, str) else list(caption or ())
    return cols, cells, numeric, title, "\n".join(map(safe_text, lines)) or None


def make_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Optional[Columns] = None,
    title: Union[str, List[str], Tuple[str, ...], None] = None,
    digits: int = 2,
    caption: Union[str, Sequence[str], None] = None,
    hint: Optional[str] = None,
) -> FittedTable:
    """A rich table of ``rows`` that fits the width it is printed at (``fit.FittedTable``): no cell ever
    folds, the highest-priority columns drop out first, a line names them. ``title``: text, or a list of
    parts kept whole and wrapped between them (a GPU name never splits)."""
    from tfcnnwrap.fit import FittedTable  # fit loads rich: only when a table is drawn

    cols, cells, numeric, title, caption = _table_parts(rows, columns, title, digits, caption)
    return FittedTable(cols, cells, numeric, title=title, caption=caption, hint=hint or HIDDEN_HINT)


def print_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Optional[Columns] = None,
    title: Union[str, List[str], Tuple[str, ...], None] = None,
    digits: int = 2,
    caption: Union[str, Sequence[str], None] = None,
) -> None:
    """``make_table``'s table on stdout; on a pipe written as rich writes it there, without loading rich
    (plaintable: `list` and `references` answer at once), wherever that text is the same."""
    width = pipe_width(sys.stdout)
    if width is not None:
        parts = _table_parts(rows, columns, title, digits, caption)
        text = table_text(*parts, hint=HIDDEN_HINT, width=width)
        if text is not None:
            sys.stdout.write(text)
            return
    console().print(make_table(rows, columns, title, digits, caption))


def paragraphs(notes: Sequence[str]) -> List[str]:
    """``notes`` as a caption's lines, a blank line between two."""
    lines: List[str] = []
    for note in notes:
        lines += ["", note] if lines else [note]
    return lines


def console(stderr: bool = False, **options: Any) -> Console:
    from rich.console import Console  # rich: only when something is drawn

    class _Console(Console):
        def on_broken_pipe(self) -> NoReturn:
            # `tfcnnwrap report | head`: the reader left. rich's default exits 1, which would read as
            # "some runs failed"; stop writing and exit 0 like other filters do.
            self.quiet = True
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, (sys.stderr if self.stderr else sys.stdout).fileno())
            except (OSError, ValueError):
                pass
            raise SystemExit(0)

        def print(self, *objects, **kwargs) -> None:
            # a line of text may carry a name from someone's file: show its control characters and newlines
            # (prose.fill's lines were shown one by one and keep the newlines it put between them)
            super().print(
                *(safe_text(o) if isinstance(o, str) and not isinstance(o, Wrapped) else o for o in objects), **kwargs
            )

    options.setdefault("highlight", False)
    options.setdefault("soft_wrap", False)
    con = _Console(stderr=stderr, **options)
    if options.get("width") is None and env_columns() is None:
        if not con.is_terminal:
            # Redirected to a file or a CI log: no terminal to fit, and rich's 80 columns would fold every table.
            con.width = PIPE_WIDTH
        elif "COLUMNS" in os.environ:
            # rich takes any COLUMNS of digits literally, and at 0 prints nothing: one that is no width (0, 3)
            # is read as an unset one here as on a pipe, and the terminal's own width (prose's rule) is used.
            con.width = terminal_width(con.file)
    return con


_URL = re.compile(r"https?://\S+")


def note_parts(line: str, width: int) -> List[Tuple[str, bool]]:
    """``line`` (shown by ``safe_text``) as print_note prints it: [(text, whole)], ``whole`` for a URL too
    long for a line, which gets a line of its own."""
    line = safe_text(line)
    parts, start = [], 0
    for match in _URL.finditer(line):
        url = match.group().rstrip(".,;:)]'\"")  # "(see https://...)": the bracket is the sentence's
        if len(url) > width:
            parts += [line[start : match.start()].rstrip(), url]
            start = match.start() + len(url)
    parts.append(line[start:].strip() if parts else line)
    return [(part, k % 2 == 1) for k, part in enumerate(parts) if part]


def print_note(out: Console, line: str) -> None:
    """Print a note on ``out`` wrapped at its width, except a URL too long for a line: that one gets a line
    of its own, unbroken (the terminal folds it without a newline, so a copied URL still works) and, on a
    terminal, an OSC 8 link."""
    for part, whole in note_parts(line, out.width):
        if whole:
            from rich.style import Style  # rich: only when something is drawn
            from rich.text import Text  # rich: only when something is drawn

            out.print(Text(part, style=Style(link=part)), soft_wrap=True)
        else:
            out.print(part, markup=False)


def print_notes(lines: Sequence[str]) -> None:
    """``print_note`` of each line on stdout; on a pipe as plain text where rich would write the same, so that
    a verb whose table was plain loads no rich for its notes either."""
    width = pipe_width(sys.stdout)
    if width is not None:
        texts = [line_text(part, width, whole) for line in lines for part, whole in note_parts(line, width)]
        plain = [text for text in texts if text is not None]
        if len(plain) == len(texts):
            sys.stdout.write("".join(plain))
            return
    out = console()
    for line in lines:
        print_note(out, line)


def print_line(text: str, whole: bool = False) -> None:
    """``console().print(text, markup=False)`` (``whole``: never wrapped, a command to paste), plain on a pipe
    where rich would write the same."""
    width = pipe_width(sys.stdout)
    plain = line_text(safe_text(text), width, whole) if width is not None else None
    if plain is not None:
        sys.stdout.write(plain)
    else:
        console().print(text, markup=False, soft_wrap=whole)


def emit(
    rows: Sequence[Mapping[str, Any]] = (),
    fmt: str = "table",
    columns: Optional[Columns] = None,
    title: Union[str, List[str], Tuple[str, ...], None] = None,
    digits: int = 2,
    caption: Union[str, Sequence[str], None] = None,
    stream: Optional[TextIO] = None,
    kind: Optional[str] = None,
    conditions: Optional[Mapping[str, Any]] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> None:
    """Write ``rows`` to stdout in ``fmt`` (table, markdown, csv, json or jsonl): the one format dispatcher.
    JSON is the envelope (``jsontext.envelope``) of ``kind`` with ``conditions`` and ``extra`` keys.
    ``caption``: a line, or lines (``paragraphs(notes)`` puts a blank line between notes)."""
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(to_json(envelope(kind, rows, conditions, **(extra or {}))) + "\n")  # type: ignore[arg-type]
    elif fmt == "jsonl":
        for row in rows:
            stream.write(dumps(row) + "\n")
    elif fmt == "csv":
        stream.write(to_csv(rows, columns))
    elif fmt == "markdown":
        if title:
            title = " · ".join(title) if isinstance(title, (list, tuple)) else title
            stream.write("### %s\n\n" % md_text(title))
        stream.write(to_markdown(rows, columns, digits))
        if caption:
            stream.write("\n%s\n" % md_lines(caption))
    else:
        print_table(rows, columns, title, digits, caption)


def gpus_text(num_gpus: Optional[int]) -> str:
    """' gpus=N' past one GPU: in a sweep over GPU counts the runs of one model differ by nothing else."""
    return " gpus=%d" % num_gpus if num_gpus and num_gpus > 1 else ""
