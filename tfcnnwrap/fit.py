"""Tables that fit the terminal they are printed on, whatever its width.

A number, a model name or a GPU name split over two lines ("176." / "93", "resne" / "t50") reads wrong, so
cells never fold: the table is laid out at the width rich renders it at, and when every column at its
narrowest still does not fit, the least important columns (the highest ``priority``) drop out, with one line
naming them and how to see them. Should even the columns that never drop not fit, each row becomes a short
block of ``header value`` items that wrap between items, never inside one. Imported with rich, only by verbs
that print tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Protocol, Sequence, Tuple, Union

from rich import box
from rich.cells import cell_len
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tfcnnwrap.prose import fill

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions


class Column(Protocol):
    """What a table lays out of each column (render.Col is one): fit reads these and nothing else."""

    @property
    def header(self) -> str: ...

    @property
    def priority(self) -> int: ...

    @property
    def wrap(self) -> bool: ...


# Two spaces between columns, a rule under the header, no frame: the most columns in the fewest cells.
GAP = 2
HIDDEN_HINT = "widen the terminal or use --format csv/json"


def _lines(text: str) -> List[str]:
    return str(text).split("\n")


def _cell_range(text: str, wrap: bool) -> Tuple[int, ...]:
    """(narrowest, widest) a cell can be drawn at without splitting a word; no-wrap cells are one width."""
    widest = max(cell_len(line) for line in _lines(text))
    if not wrap:
        return widest, widest
    words = [cell_len(w) for line in _lines(text) for w in line.split()]
    return max(words or [0]), widest


def wrap_parts(parts: Iterable[str], width: int, sep: str = " · ") -> List[Any]:
    """Greedy lines of ``parts`` joined by ``sep``, a part never broken unless it alone is wider than
    ``width`` (a long path)."""
    lines, line = [], ""
    for part in (p for p in parts if p):
        candidate = part if not line else line + sep + part
        if line and cell_len(candidate) > width:
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


class FittedTable(Table):
    """A rich Table (its columns may still be tweaked: ``no_wrap``, ``min_width``) that chooses at render
    time which columns it can show at the width it is given."""

    def __init__(
        self,
        specs: Iterable[Column],
        cells: Iterable[Sequence[str]],
        numeric: Iterable[bool],
        title: Union[str, Sequence[str], None] = None,
        caption: Optional[str] = None,
        hint: str = HIDDEN_HINT,
    ):
        super().__init__(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            header_style="bold",
            show_lines=False,
        )
        self.specs = list(specs)
        self.cells: List[List[str]] = []
        self.fit_title = title
        self.fit_caption = caption
        self.hint = hint
        for spec, is_number in zip(self.specs, numeric):
            self.add_column(
                Text(spec.header, no_wrap=False),
                justify="right" if is_number else "left",
                no_wrap=not spec.wrap,
                overflow="fold",
            )
        for row in cells:
            self.add_row(*row)

    def add_row(self, *renderables, **options) -> None:
        """A row of text cells (as make_table gives them); kept as text, which is what the layout measures."""
        self.cells.append(
            [r.plain if isinstance(r, Text) else "" if r is None else str(r) for r in renderables]
            + [""] * (len(self.specs) - len(renderables))
        )
        super().add_row(*renderables, **options)

    # -- layout -----------------------------------------------------------------------------------------

    def _ranges(self) -> List[Tuple[int, int]]:
        out = []
        for i, column in enumerate(self.columns):
            header_words = [cell_len(w) for w in self.specs[i].header.split()] or [0]
            low, high = max(header_words), cell_len(self.specs[i].header)
            for row in self.cells:
                a, b = _cell_range(row[i], not column.no_wrap)
                low, high = max(low, a), max(high, b)
            low = max(low, column.min_width or 0)
            out.append((low, max(low, high)))
        return out

    def layout(self, width: int) -> Union[Tuple[List[int], List[int]], Tuple[None, None]]:
        """(kept column indices, their widths), or (None, None) when not even the fixed columns fit."""
        ranges = self._ranges()
        keep = list(range(len(self.specs)))
        # Columns of one priority go together (min without max would read oddly), the highest first.
        levels = sorted({s.priority for s in self.specs if s.priority > 0}, reverse=True)

        def narrowest() -> int:
            return sum(ranges[i][0] for i in keep) + GAP * (len(keep) - 1)

        while keep and narrowest() > width and levels:
            level = levels.pop(0)
            keep = [i for i in keep if self.specs[i].priority != level]
        if not keep or narrowest() > width:
            return None, None
        widths = {i: ranges[i][0] for i in keep}
        spare = width - narrowest()
        # Wrappable columns grow towards their widest, the most important first.
        for i in sorted(keep, key=lambda i: (self.specs[i].priority, i)):
            grow = min(spare, ranges[i][1] - widths[i])
            widths[i] += grow
            spare -= grow
        return keep, [widths[i] for i in keep]

    def _inner(self, keep: List[int], widths: Sequence[int]) -> Table:
        inner = Table(
            box=self.box,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            header_style=self.header_style,
            show_lines=False,
        )
        for i, w in zip(keep, widths):
            column = self.columns[i]
            inner.add_column(
                column.header, justify=column.justify, no_wrap=column.no_wrap, overflow=column.overflow, width=w
            )
        for row in self.cells:
            inner.add_row(*[Text(str(row[i])) for i in keep])
        return inner

    def _stacked(self, width: int) -> Iterator[Text]:
        """Each row as its first cell, then ``header value`` items wrapped between items."""
        for row in self.cells:
            yield Text(" ".join(_lines(row[0])), style="bold", overflow="fold")
            items = [
                "%s %s" % (spec.header, " ".join(_lines(cell))) if spec.header else cell
                for spec, cell in zip(self.specs[1:], row[1:])
                if str(cell).strip()
            ]
            for line in wrap_parts(items, max(width - 2, 1), sep="  "):
                yield Text("  " + line, overflow="fold")

    # -- rendering --------------------------------------------------------------------------------------

    def _title(self, width: int) -> Optional[Text]:
        if not self.fit_title:
            return None
        if isinstance(self.fit_title, (list, tuple)):
            return Text("\n".join(wrap_parts(self.fit_title, width)), style="bold", overflow="fold")
        return Text(
            "\n".join(wrap_parts(title_words(str(self.fit_title)), width, sep=" ")), style="bold", overflow="fold"
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Union[Table, Text]]:
        width = options.max_width
        title = self._title(width)
        if title is not None:
            yield title
        keep, widths = self.layout(width)
        if keep is None:
            yield from self._stacked(width)
        else:
            yield self._inner(keep, widths)  # type: ignore[arg-type]  # widths with keep
            hidden = [self.specs[i].header for i in range(len(self.specs)) if i not in keep]
            if hidden:
                # prose: wrapped between words, later lines indented, "60 columns" kept together
                note = "%s hidden to fit %d columns: %s." % (", ".join(hidden), width, self.hint)
                yield Text(fill(note, width), style="dim")
        if self.fit_caption:
            yield Text(str(self.fit_caption))

    def __rich_measure__(self, console: Console, options: ConsoleOptions):
        keep, widths = self.layout(options.max_width)
        if keep is None:
            return Measurement(1, options.max_width)
        total = sum(widths) + GAP * (len(widths) - 1)  # type: ignore[arg-type]  # widths with keep
        return Measurement(total, total)
