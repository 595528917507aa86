"""The geometry of the HTML pages' charts (pure): where each bar, whisker, line and label goes in an SVG
view box. The templates (templates/_charts.html.j2) draw the shapes; no plotting library is needed, so the
base install builds every page. Every chart carries its title and a text alternative (``desc``) that says
what it shows in words; its numbers are also in the page's tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

WIDTH = 480  # view-box units; the SVG scales to its box (width: 100%, at most 30rem: one unit a pixel)
LABEL_W = 2  # the plot's left edge: each bar's label sits on its own line(s) above it, whole, never cut
VALUE_W = 66  # room right of the plot for the value text
LABEL_CHARS = 52  # a label line's characters at the charts' 15-unit type across WIDTH
LABEL_LINE_H = 17
BAR_H = 18
GAP = 10
TOP = 10
AXIS_H = 26


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # the value as the page writes it
    low: Optional[float] = None  # whisker (a CI, min..max); None: no whisker
    high: Optional[float] = None
    kind: str = "plain"  # css class: plain, measured, up, down, flat, ref


@dataclass
class BarChart:
    title: str
    desc: str
    height: int
    bars: List[dict] = field(default_factory=list)
    ticks: List[dict] = field(default_factory=list)
    rule: Optional[dict] = None  # a reference line (100 %, 0 %)
    axis: str = ""
    width: int = WIDTH
    label_x: int = LABEL_W


def _nice_step(span: float, count: int = 4) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``count`` ticks over ``span``."""
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for mult in (1, 2, 5, 10):
        if raw <= mult * power:
            return mult * power
    return 10 * power


def _ticks(low: float, high: float, scale: Callable, fmt: Callable) -> List[Dict[str, Any]]:
    step = _nice_step(high - low)
    first = math.ceil(low / step) * step
    out, value = [], first
    while value <= high + step * 1e-9:
        out.append({"x": round(scale(value), 2), "text": fmt(value)})
        value += step
    return out


def _tick_text(value: float) -> str:
    return ("%d" % round(value)) if abs(value - round(value)) < 1e-9 else ("%g" % value)


def _label_lines(label: str) -> List[str]:
    """A bar's label whole, wrapped between words to the chart's width (a long word is broken, never cut)."""
    import textwrap  # only a page with a chart needs it

    return textwrap.wrap(label, LABEL_CHARS, break_on_hyphens=False) or [""]


def bar_chart(
    title: str, bars: Sequence[Bar], axis: str = "", rule: Optional[Tuple[float, str]] = None, desc: str = ""
) -> BarChart:
    """Horizontal bars from 0 (negative values go left of it), whiskers where a bar has them, and a vertical
    ``rule`` (value, label) such as the 100 % line; the domain takes in 0, every value, whisker and rule."""
    points = [0.0] + [b.value for b in bars] + [v for b in bars for v in (b.low, b.high) if v is not None]
    if rule is not None:
        points.append(rule[0])
    low, high = min(points), max(points)
    if high - low <= 0:
        high = low + 1.0
    pad = (high - low) * 0.04
    low, high = (low - pad if low < 0 else low), high + pad
    plot_w = WIDTH - LABEL_W - VALUE_W

    def scale(v: float) -> float:
        return LABEL_W + (v - low) / (high - low) * plot_w

    labels = [_label_lines(b.label) for b in bars]
    plot_h = sum(len(lines) * LABEL_LINE_H + BAR_H + GAP for lines in labels)
    chart = BarChart(title=title, desc=desc or title, height=TOP + plot_h + AXIS_H, axis=axis)
    zero = scale(0.0)
    y = TOP
    for b, lines in zip(bars, labels):
        label_lines = [{"text": text, "y": y + (i + 1) * LABEL_LINE_H - 4} for i, text in enumerate(lines)]
        y += len(lines) * LABEL_LINE_H
        x0, x1 = sorted((zero, scale(b.value)))
        whisker = None
        if b.low is not None and b.high is not None:
            whisker = {"x1": round(scale(b.low), 2), "x2": round(scale(b.high), 2), "y": y + BAR_H / 2}
        end = max(x1, whisker["x2"] if whisker else x1)
        chart.bars.append(
            {
                "label": b.label,
                "lines": label_lines,
                "text": b.text,
                "kind": b.kind,
                "y": y,
                "h": BAR_H,
                "x": round(x0, 2),
                "w": round(max(x1 - x0, 0.5), 2),
                "whisker": whisker,
                "text_x": round(min(end + 4, WIDTH - 2), 2),
                "label_y": y + BAR_H / 2,
            }
        )
        y += BAR_H + GAP
    chart.ticks = [dict(t, y=TOP + plot_h) for t in _ticks(low, high, scale, _tick_text)]
    if rule is not None:
        chart.rule = {"x": round(scale(rule[0]), 2), "label": rule[1], "y1": TOP - 4, "y2": TOP + plot_h}
    return chart


@dataclass
class LineChart:
    title: str
    desc: str
    height: int
    series: List[dict] = field(default_factory=list)
    xticks: List[dict] = field(default_factory=list)
    yticks: List[dict] = field(default_factory=list)
    xlabel: str = ""
    ylabel: str = ""
    width: int = WIDTH
    plot: dict = field(default_factory=dict)


LINE_LEFT, LINE_RIGHT, LINE_TOP, LINE_H = 48, 12, 12, 130


def line_chart(
    title: str,
    series: Sequence[Tuple[str, Sequence[Tuple[float, float]], str]],
    xlabel: str = "",
    ylabel: str = "",
    desc: str = "",
) -> Optional[LineChart]:
    """Lines (name, [(x, y)], style: solid or dashed) on shared axes; None when no series has a point."""
    points = [p for _, pts, _ in series for p in pts]
    if not points:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(ys), max(ys)
    if x_hi - x_lo <= 0:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    if y_hi - y_lo <= 0:
        y_lo, y_hi = y_lo - 1, y_hi + 1
    pad = (y_hi - y_lo) * 0.08
    y_lo, y_hi = y_lo - pad, y_hi + pad
    plot_w = WIDTH - LINE_LEFT - LINE_RIGHT

    def sx(v: float) -> float:
        return LINE_LEFT + (v - x_lo) / (x_hi - x_lo) * plot_w

    def sy(v: float) -> float:
        return LINE_TOP + (1 - (v - y_lo) / (y_hi - y_lo)) * LINE_H

    chart = LineChart(title=title, desc=desc or title, height=LINE_TOP + LINE_H + 40, xlabel=xlabel, ylabel=ylabel)
    chart.plot = {"x": LINE_LEFT, "y": LINE_TOP, "w": plot_w, "h": LINE_H}
    for i, (name, pts, style) in enumerate(series):
        if not pts:
            continue
        coords = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts)
        last = pts[-1]
        chart.series.append(
            {
                "name": name,
                "points": coords,
                "style": style,
                "colour": i % 6,
                "single": len(pts) == 1,
                "cx": round(sx(last[0]), 1),
                "cy": round(sy(last[1]), 1),
            }
        )
    chart.xticks = [dict(t, y=LINE_TOP + LINE_H) for t in _ticks(x_lo, x_hi, sx, _tick_text)]
    chart.yticks = [{"y": round(sy(v), 2), "text": _tick_text(v)} for v in _tick_values(y_lo, y_hi)]
    return chart


def _tick_values(low: float, high: float) -> List[float]:
    step = _nice_step(high - low)
    value, out = math.ceil(low / step) * step, []
    while value <= high + step * 1e-9:
        out.append(value)
        value += step
    return out
