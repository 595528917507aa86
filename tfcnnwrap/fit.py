"""Tables that fit the terminal they are printed on, whatever its width.

A number, a model name or a GPU name split over two lines ("176." / "93", "resne" / "t50") reads wrong, so
cells never fold: the table is laid out at the width rich renders it at, and when every column at its
narrowest still does not fit, the least important columns (the highest ``priority``) drop out, with one line
naming them and how to see them. Should even the columns that never drop not fit, each row becomes a short
block of ``header value`` items that wrap between items, never inside one. Imported with rich, only by verbs
that print tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from rich import box
from rich.cells import cell_len
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tfcnnwrap.plaintable import GAP, HIDDEN_HINT, Column, Layout, cell_range, hidden_note, title_lines, title_words
from tfcnnwrap.plaintable import layout as fitted_layout
from tfcnnwrap.plaintable import wrap_parts as _wrap_parts

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions

__all__ = ["GAP", "HIDDEN_HINT", "FittedTable", "title_words", "wrap_parts"]


def _lines(text: str) -> List[str]:
    return str(text).split("\n")


def wrap_parts(parts: Iterable[str], width: int, sep: str = " · ") -> List[Any]:
    """Greedy lines of ``parts`` joined by ``sep`` (measured in terminal cells), a part never broken unless
    it alone is wider than ``width`` (a long path)."""
    return _wrap_parts(parts, width, sep, cell_len)


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
            low, high = cell_range(self.specs[i].header, True, cell_len)
            for row in self.cells:
                a, b = cell_range(row[i], not column.no_wrap, cell_len)
                low, high = max(low, a), max(high, b)
            low = max(low, column.min_width or 0)
            out.append((low, max(low, high)))
        return out

    def layout(self, width: int) -> Layout:
        """(kept column indices, their widths), or (None, None) when not even the fixed columns fit."""
        return fitted_layout(self._ranges(), [s.priority for s in self.specs], width)

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
        return Text("\n".join(title_lines(self.fit_title, width, cell_len)), style="bold", overflow="fold")

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
                yield Text(hidden_note(hidden, width, self.hint), style="dim")
        if self.fit_caption:
            yield Text(str(self.fit_caption))

    def __rich_measure__(self, console: Console, options: ConsoleOptions):
        keep, widths = self.layout(options.max_width)
        if keep is None:
            return Measurement(1, options.max_width)
        total = sum(widths) + GAP * (len(widths) - 1)  # type: ignore[arg-type]  # widths with keep
        return Measurement(total, total)
