"""rich's LiveRender, made to erase its last frame whole after the terminal got narrower.

Most terminals (VTE, Konsole, iTerm2, kitty, Windows Terminal, tmux) reflow a line that no longer fits onto
the rows below it, so a frame drawn at 120 columns takes more rows at 60 than it was drawn in. rich moves
the cursor up by the rows it drew, which left the top of the old frame on screen: a torn bar line. This
render keeps each line's width and, when the terminal is now narrower than the frame was drawn at, counts
the rows those lines take at the new width. (A terminal that cuts lines instead of reflowing them, xterm,
then loses as many rows above the view from the screen as the reflow would have added: the finished runs'
lines are still in the sweep's summary and runs.jsonl.)

Imported only when the live view starts (rich is heavy).
"""

from __future__ import annotations

from math import ceil
from typing import TYPE_CHECKING, List, Optional

from rich.control import Control
from rich.live_render import LiveRender
from rich.segment import ControlType, Segment

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


class ReflowRender(LiveRender):
    """A LiveRender whose cursor moves count the rows its last frame takes at the terminal's width now."""

    def __init__(self, console: Console, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # LiveRender's own arguments
        self.console = console
        self.widths: List[int] = []  # each line's width in the last frame
        self.drawn_at: Optional[int] = None  # the width the last frame was drawn at

    def rows(self) -> int:
        """The rows the last frame takes now: its lines, or more where a narrower terminal wrapped them."""
        height = self._shape[1] if self._shape is not None else 0
        now = self.console.width
        if self.drawn_at is None or now >= self.drawn_at or len(self.widths) != height or now <= 0:
            return height
        return sum(max(1, ceil(width / float(now))) for width in self.widths)

    def position_cursor(self) -> Control:
        if self._shape is None:
            return Control()
        up = ((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)) * (self.rows() - 1)
        return Control(ControlType.CARRIAGE_RETURN, (ControlType.ERASE_IN_LINE, 2), *up)

    def restore_cursor(self) -> Control:
        if self._shape is None:
            return Control()
        up = ((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)) * self.rows()
        return Control(ControlType.CARRIAGE_RETURN, *up)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = [0]
        for segment in super().__rich_console__(console, options):
            if isinstance(segment, Segment):  # LiveRender yields nothing else
                if segment.text == "\n" and not segment.control:  # rich's Segment.line() between lines
                    widths.append(0)
                else:
                    widths[-1] += segment.cell_length
            yield segment
        self.widths, self.drawn_at = widths, options.max_width
