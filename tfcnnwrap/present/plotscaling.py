"""The scaling chart of a sweep of several GPU counts: per model, images/sec against the GPU count with the
ideal-scaling line (one GPU's figure times the count), each point labelled with its efficiency; and one panel
of every model's efficiency, where the ideal is the same 100% line for all.

``scaling_panel(ax, rows)`` draws that efficiency panel on any matplotlib Axes (for report --plot in scaling
sweeps); ``plot_scaling(rows, path)`` writes the whole chart. ``rows`` are aggregate's SummaryRows (speedup and
efficiency_pct filled by aggregate.add_scaling) or their dicts. matplotlib is imported only here, with Agg.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from tfcnnwrap.errors import UsageError
from tfcnnwrap.present.plot import fit_title, require_matplotlib, save_figure

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.axes._axes import Axes
    from matplotlib.figure import Figure

    from tfcnnwrap.results.records import SummaryRow

IDEAL_STYLE: Dict[str, Any] = dict(color="#888888", linestyle="--", linewidth=1.0)
COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]


@dataclass(frozen=True)
class ScalingPoint:
    """What the chart reads of a row: a SummaryRow's fields, or a `report --format json` row's keys."""

    model: str
    batch_size: Optional[int]
    num_gpus: Optional[int]
    host: Optional[str]
    data: Optional[str]
    mean: Optional[float]
    speedup: Optional[float]
    efficiency_pct: Optional[float]


def _as_row(row: Union[SummaryRow, Dict[str, Any]]) -> ScalingPoint:
    """A SummaryRow, or a row dict (`report --format json`), as the point the chart draws."""
    if not isinstance(row, dict):
        return ScalingPoint(
            row.model, row.batch_size, row.num_gpus, row.host, row.data, row.mean, row.speedup, row.efficiency_pct
        )
    keys = ("batch_size", "num_gpus", "host", "data", "mean", "speedup", "efficiency_pct")
    return ScalingPoint(str(row.get("model")), *(row.get(k) for k in keys))


def _series(rows: Iterable[Union[SummaryRow, Dict[str, Any]]]) -> Dict[Tuple[str, Optional[str]], Any]:
    """{(model, host): [row, ...]} in plan order, each model's rows by GPU count (a sweep of both data kinds:
    the model named with its kind, one series each)."""
    series: dict = {}
    for row in map(_as_row, rows):
        if row.num_gpus is not None:
            model = "%s %s data" % (row.model, row.data) if row.data else row.model
            series.setdefault((model, row.host), []).append(row)
    return {key: sorted(members, key=lambda r: r.num_gpus) for key, members in series.items()}


def _label(key: Tuple[str, Optional[str]]) -> str:
    model, host = key
    return model + ("@" + host if host else "")


def _count_axis(ax: Axes, counts: Iterable[int]) -> None:
    """GPU counts on a linear axis from 0, so that ideal scaling is a straight line; ticked at the counts."""
    from matplotlib.ticker import FixedLocator  # matplotlib (the plot extra): only for --plot

    counts = sorted(set(counts))
    ax.xaxis.set_major_locator(FixedLocator(counts))
    ax.set_xlim(0, counts[-1] * 1.08 + 0.2)
    ax.set_xlabel("GPUs (batch size per GPU)")
    ax.grid(True, which="major", alpha=0.3)


def _efficiency_label(ax: Axes, x: float, y: float, efficiency: Optional[float], color: str) -> None:
    if efficiency is not None:
        ax.annotate(
            "%.0f%%" % efficiency,
            (x, y),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
            color=color,
        )


def scaling_panel(ax: Axes, rows: Iterable[Union[SummaryRow, Dict[str, Any]]]) -> Axes:
    """Every model's efficiency (speed-up over one GPU / count, %) against the GPU count, ideal scaling the
    dashed 100% line; shared by all models whatever their images/sec. A model without a 1-GPU mean has no
    speed-up: it is named in the title instead."""
    series = _series(rows)
    counts = sorted({r.num_gpus for members in series.values() for r in members})
    if not counts:
        ax.text(0.5, 0.5, "no GPU counts measured", ha="center", va="center", transform=ax.transAxes)
        return ax
    _count_axis(ax, counts)
    ax.axhline(100.0, label="ideal", **IDEAL_STYLE)
    missing, top = [], 100.0
    for index, (key, members) in enumerate(series.items()):
        points = [(r.num_gpus, r.efficiency_pct) for r in members if r.efficiency_pct is not None]
        if not points:
            missing.append(_label(key))
            continue
        top = max([top] + [p[1] for p in points])
        ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="o",
            color=COLORS[index % len(COLORS)],
            label=_label(key),
        )
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("efficiency % (speed-up / GPUs)")
    _fitted_title(ax, "Scaling efficiency" + ("; no 1-GPU runs: %s" % ", ".join(missing) if missing else ""))
    ax.legend(fontsize=8, loc="lower left")
    return ax


def _fitted_title(ax: Axes, text: str, fontsize: int = 10) -> None:
    """The panel's title wrapped between words to the panel's width (a long host name, many models)."""
    # our panels sit on a Figure, never a SubFigure (get_figure(root=True) is matplotlib >= 3.10 only)
    width_in = ax.get_position().width * ax.figure.get_figwidth()  # type: ignore[union-attr]
    ax.set_title(fit_title(text, width_in, fontsize, em=0.52), fontsize=fontsize)


# rows: SummaryRows whose num_gpus is set (_series keeps only those), which their Optional type cannot say
def model_panel(ax: Axes, rows: Sequence[Any], color: str = COLORS[0]) -> Axes:
    """One model's images/sec against the GPU count (``rows``: its rows by count), the ideal line from its
    1-GPU mean, each point labelled with its efficiency."""
    points = [(r.num_gpus, r.mean, r.efficiency_pct) for r in rows if r.mean is not None]
    _count_axis(ax, [r.num_gpus for r in rows])
    base = next((r.mean for r in rows if r.num_gpus == 1 and r.mean is not None), None)
    if base is not None:
        counts = sorted(r.num_gpus for r in rows)
        ax.plot(counts, [base * c for c in counts], label="ideal", **IDEAL_STYLE)
    if points:
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=color, label="measured")
        for x, y, efficiency in points:
            _efficiency_label(ax, x, y, efficiency, color)
    ax.set_ylim(
        bottom=0, top=max([p[1] for p in points] + [base * max(r.num_gpus for r in rows) if base else 0, 1.0]) * 1.15
    )
    ax.set_ylabel("images/sec")
    _fitted_title(
        ax, "%s, batch %d per GPU (labels: efficiency)" % (_label((rows[0].model, rows[0].host)), rows[0].batch_size)
    )
    ax.legend(fontsize=8, loc="upper left")
    return ax


def scaling_figure(rows: List[SummaryRow], title: str = "Scaling: images/sec and efficiency by GPU count") -> Figure:
    """A Figure: one model_panel per model, then the scaling_panel; two panels a row."""
    require_matplotlib()
    from matplotlib.figure import Figure  # matplotlib (the plot extra): only for --plot

    series = _series(rows)
    if not series:
        raise UsageError("the sweep has no rows with a GPU count to plot; run a sweep with --num-gpus 1,2,...")
    panels = len(series) + 1
    ncols = 2
    nrows = int(math.ceil(panels / float(ncols)))
    fig = Figure(figsize=(5.2 * ncols, 3.6 * nrows + 0.6), dpi=110, layout="constrained")
    fig.suptitle(title, fontsize=12, fontweight="bold")
    for index, members in enumerate(series.values()):
        model_panel(fig.add_subplot(nrows, ncols, index + 1), members, COLORS[index % len(COLORS)])
    scaling_panel(fig.add_subplot(nrows, ncols, panels), rows)
    return fig


def plot_scaling(rows: List[SummaryRow], path: Union[Path, str]) -> Union[Path, str]:
    """Write the scaling chart to ``path`` (its suffix picks the format), as compare --plot writes its own."""
    save_figure(scaling_figure(rows), path)
    return path
