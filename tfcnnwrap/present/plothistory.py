"""`compare BASELINE C1 C2 ... --plot FILE` with more than two sweeps: each configuration's images/sec over
the sweeps' dates, one panel and one line per configuration, the baseline's point marked.

A history reads along time, not in the order the sweeps were named, so the points are placed at each sweep's
start (sweep.json's ``created_at``). Each configuration has its own panel and scale (AlexNet's thousands
would flatten ResNet-152's tens), and a scale never narrower than a tenth of its figure, so that run-to-run
noise does not look like a trend. ``history_series`` computes what is drawn (tested without matplotlib);
matplotlib is imported only when the figure is drawn.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Tuple

from tfcnnwrap.errors import UsageError
from tfcnnwrap.present.plot import BASELINE_COLOR, CANDIDATE_COLOR, config_label, fit_title, save_figure

MIN_SPAN = 0.10  # of the panel's highest figure: the least a value axis spans
PANEL_SIZE = (5.0, 2.5)  # inches of one panel


@dataclass(frozen=True)
class Point:
    when: datetime
    value: float
    sweep: str
    baseline: bool


@dataclass
class Series:
    label: str
    points: List[Point] = field(default_factory=list)


def sweep_date(sweep: Any) -> datetime:
    """When ``sweep`` (comparesweep.Sweep) started, from its sweep.json; a UsageError naming it when unknown."""
    text = sweep.meta.created_at
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            "%s: its sweep.json records no start time (created_at %r), so it has no place on the "
            "plot's date axis; leave it out or drop --plot" % (sweep.path, text)
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def history_series(result: Any) -> List[Series]:
    """One series per configuration (in the order compare lists them), its points in date order (sweeps of
    the same time in the order given, the baseline first); a sweep without an ok run of it has no point."""
    comparisons = result.comparisons
    base = result.baseline
    several_counts = len({r.num_gpus for c in comparisons for r in c.rows}) > 1
    found: Dict[Tuple, Series] = {}
    order: Dict[Tuple, int] = {}
    for index, comparison in enumerate(comparisons):
        for row in comparison.rows:
            key = (row.model, row.batch_size, row.num_gpus, row.data)
            if key not in found:
                found[key] = Series(config_label(row, several_counts))
                if row.baseline is not None:
                    found[key].points.append(Point(sweep_date(base), row.baseline, base.name, True))
                    order[(key, base.name)] = -1
            if row.candidate is not None:
                candidate = comparison.candidate
                found[key].points.append(Point(sweep_date(candidate), row.candidate, candidate.name, False))
                order.setdefault((key, candidate.name), index)
    for key, series in found.items():
        rank = {p.sweep: order.get((key, p.sweep), 0) for p in series.points}
        series.points.sort(key=lambda p: (p.when, rank[p.sweep]))
    return [s for s in found.values() if s.points]


def _limits(values: List[float]) -> Tuple[float, float]:
    """The value axis: the figures with a margin, never narrower than MIN_SPAN of the highest."""
    low, high = min(values), max(values)
    span = max(high - low, MIN_SPAN * abs(high), 1e-9)
    middle = (low + high) / 2.0
    return middle - span * 0.6, middle + span * 0.6


def history_figure(result: Any) -> Any:
    """The matplotlib Figure: a panel per configuration, its line over the sweeps' dates, the baseline
    marked by a star, each point labelled with its figure."""
    series = history_series(result)
    if not series:
        raise UsageError("nothing to plot: none of the sweeps has an ok run yet")
    from matplotlib import dates as mdates  # matplotlib (the plot extra): only for --plot
    from matplotlib.figure import Figure  # matplotlib (the plot extra): only for --plot

    ncols = 1 if len(series) == 1 else 2
    nrows = int(math.ceil(len(series) / float(ncols)))
    width = PANEL_SIZE[0] * ncols
    fig = Figure(figsize=(width, PANEL_SIZE[1] * nrows + 1.3), dpi=110, layout="constrained")
    axes = list(fig.subplots(nrows, ncols, squeeze=False, sharex=True).flat)
    for ax, one in zip(axes, series):
        _draw_series(ax, one, mdates)
    for ax in axes[len(series) :]:  # no empty panel when the count is odd
        ax.remove()
    for ax in axes[: len(series)]:  # dates under every panel, the one above a removed panel's place too
        ax.tick_params(labelbottom=True)
    base = result.baseline
    names = [base.name] + [c.candidate.name for c in result.comparisons]
    fig.suptitle(
        fit_title("images/sec of %d sweeps over time (%s)" % (len(names), ", ".join(names)), width),
        fontsize=12,
        fontweight="bold",
    )
    fig.supxlabel(
        "each point: a sweep at its start (sweep.json's created_at); star: the baseline, %s; each "
        "panel has its own scale" % base.name,
        fontsize=8,
        color="#333333",
    )
    return fig


def _draw_series(ax: Any, one: Series, mdates: Any) -> None:
    whens = [p.when for p in one.points]
    values = [p.value for p in one.points]
    ax.plot(whens, values, marker="o", markersize=5, color=CANDIDATE_COLOR, linewidth=1.4, gid="history")
    marked = [p for p in one.points if p.baseline]
    ax.plot(
        [p.when for p in marked],
        [p.value for p in marked],
        linestyle="none",
        marker="*",
        markersize=15,
        color=BASELINE_COLOR,
        markeredgecolor="#222222",
        gid="baseline",
    )
    for point in one.points:
        ax.annotate(
            "%.2f" % point.value,
            (point.when, point.value),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=7.5,
        )
    ax.set_ylim(*_limits(values))
    ax.set_title(fit_title(one.label, PANEL_SIZE[0], 10.5), fontsize=10.5, loc="left")
    ax.set_ylabel("images/sec", fontsize=8.5)
    locator = mdates.AutoDateLocator(minticks=2, maxticks=6)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.tick_params(labelsize=8)
    ax.grid(color="#dddddd", linewidth=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def plot_history(result: Any, path: str) -> None:
    """Write ``history_figure(result)`` to ``path`` (its suffix picks the format)."""
    save_figure(history_figure(result), path)
