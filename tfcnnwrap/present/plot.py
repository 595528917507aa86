"""`compare --plot FILE.png`: one panel per model, a bar per GPU, each bar labelled with its figure.

AlexNet's thousands of images/sec would flatten ResNet-152's tens on a shared axis, so every model gets its
own panel and scale. The measured bar stands out; a reference taken under other conditions is hatched and
daggered like its table cell. matplotlib (the `plot` extra) is imported only here, with the Agg canvas.
"""

from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from tfcnnwrap.errors import UsageError
from tfcnnwrap.present.comparetext import MARK, cell_text, conditions_line, count_unit, geomean_text
from tfcnnwrap.safefs import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes._axes import Axes
    from matplotlib.figure import Figure

    from tfcnnwrap.results.comparison import ABResult, AgainstReferences, SweepComparison


MEASURED_COLOR = "#d95f02"
REFERENCE_COLOR = "#7570b3"
BASELINE_COLOR = "#999999"
CANDIDATE_COLOR = "#1b9e77"


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib: pip install tfcnnwrap[plot] (or pip install matplotlib), or drop --plot"
        ) from None


PANEL_W = 4.6  # inches of a bar panel, its labels aside


def fit_title(title: str, width_in: float, fontsize: float = 12, em: float = 0.62) -> str:
    """``title`` wrapped between words to ``width_in`` inches; ``em``: the average glyph width in ems (~0.62
    for bold DejaVu Sans, ~0.52 for regular)."""
    chars = max(20, int(width_in * 72.0 / (fontsize * em)))
    return "\n".join(textwrap.wrap(title, chars, break_on_hyphens=False)) or title


def new_figure(panels: Sequence[Dict[str, Any]], title: str, footnotes: Sequence[str] = ()) -> Figure:
    """A Figure with one horizontal-bar panel per entry of ``panels``.

    A panel is {"title", "bars": [{"label", "value", "text", "color", "hatch"}], "xlabel", "line"}; bars are
    drawn top down; ``line`` draws a dashed vertical line there (100 for percentages).
    """
    require_matplotlib()
    from matplotlib.figure import Figure  # matplotlib (the plot extra): only for --plot

    ncols = 1 if len(panels) == 1 else 2
    nrows = int(math.ceil(len(panels) / float(ncols)))
    longest = max(len(b["label"]) for p in panels for b in p["bars"])
    label_w = 0.075 * longest + 0.3
    axes_w, gap = PANEL_W, 0.35
    most_bars = max(len(p["bars"]) for p in panels)
    axes_h = 0.36 * most_bars + 0.2
    width = ncols * (label_w + axes_w) + (ncols - 1) * gap + 0.2
    title = fit_title(title, width - 0.2)
    head, foot, vgap = 0.55 + 0.22 * (title.count("\n") + 1), 0.25 + 0.17 * len(footnotes), 0.95
    height = head + nrows * axes_h + (nrows - 1) * vgap + 0.5 + foot
    fig = Figure(figsize=(width, height), dpi=110)
    grid = fig.add_gridspec(
        nrows,
        ncols,
        left=label_w / width,
        right=1.0 - 0.2 / width,
        top=1.0 - head / height,
        bottom=(foot + 0.5) / height,
        wspace=(label_w + gap) / axes_w,
        hspace=vgap / axes_h,
    )
    fig.suptitle(title, fontsize=12, fontweight="bold", y=1.0 - 0.25 / height, va="top")
    for index, panel in enumerate(panels):
        _draw_panel(fig.add_subplot(grid[index // ncols, index % ncols]), panel)
    if footnotes:
        fig.text(0.1 / width, 0.1 / height, "\n".join(footnotes), fontsize=8, va="bottom", ha="left", color="#333333")
    return fig


def _limits(panel: Dict[str, Any], values: List[float]) -> Tuple[float, ...]:
    """(low, high) of a panel's value axis: from 0 for images/sec; for a change, symmetric around 0 and at
    least +-0.5 %, so that a 0.2 % change is a bar of its own and its whiskers fit."""
    ends = values + [e for b in panel["bars"] if b.get("err") for e in b["err"]]
    if panel.get("percent"):
        half = max([abs(v) for v in ends] + [0.5]) * 1.45
        return -half, half
    peak = max(ends + [panel.get("line") or 0.0, 1.0])
    low = min(ends + [0.0])
    span = peak - low
    return (low - span * 0.4 if low < 0 else 0), peak + span * 0.4


def _draw_panel(ax: Axes, panel: Dict[str, Any]) -> None:
    """One panel: its bars top down, each with its label at its end (beyond its whisker, if any)."""
    bars = panel["bars"]
    positions = list(range(len(bars)))[::-1]
    values = [b["value"] if b["value"] is not None else 0.0 for b in bars]
    drawn = ax.barh(
        positions, values, color=[b["color"] for b in bars], edgecolor="#333333", linewidth=0.6, height=0.72
    )
    for bar, spec in zip(drawn, bars):
        if spec.get("hatch"):
            bar.set_hatch(spec["hatch"])
            bar.set_alpha(0.55)
    low, high = _limits(panel, values)
    gap = (high - low) * 0.012
    for pos, spec, value in zip(positions, bars, values):
        err = spec.get("err")
        if err:
            ax.errorbar(
                [value],
                [pos],
                xerr=[[value - err[0]], [err[1] - value]],
                fmt="none",
                ecolor="#222222",
                elinewidth=1.0,
                capsize=3,
                gid="ci95",
            )
        if value < 0:
            ax.text(min([value] + list(err or ())) - gap, pos, spec["text"], va="center", ha="right", fontsize=8.5)
        else:
            ax.text(max([value] + list(err or ())) + gap, pos, spec["text"], va="center", ha="left", fontsize=8.5)
    if panel.get("line") is not None:
        ax.axvline(panel["line"], color="#555555", linestyle="--", linewidth=0.8)
    if panel.get("percent"):
        from matplotlib.ticker import FuncFormatter  # matplotlib (the plot extra): only for --plot

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "%+.1f%%" % v if abs(v) > 1e-9 else "0"))
    ax.set_yticks(positions)
    ax.set_yticklabels([b["label"] for b in bars], fontsize=9)
    ax.set_ylim(-0.6, len(bars) - 0.4)
    ax.set_xlim(low, high)
    ax.set_title(fit_title(panel["title"], PANEL_W, 10.5), fontsize=10.5, loc="left")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(panel.get("xlabel", "images/sec"), fontsize=8.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def save_figure(fig: Figure, path: Union[Path, str]) -> None:
    """Render ``fig`` in the format its suffix names and put it at ``path`` at once, never through a link.

    The CLI checks the path first (cli/parsing.plot_path); this refuses the same cases for other callers, because
    matplotlib would add ``.png`` to a name without a suffix and the old code created missing directories.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if path.is_dir() or not fmt:
        raise UsageError("cannot write the plot %s: give a file name such as compare.png or compare.svg" % path)
    if not path.parent.is_dir():
        raise UsageError(
            "cannot write the plot %s: the directory %s does not exist; create it first" % (path, path.parent)
        )
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt)
    except ValueError as exc:
        raise UsageError("cannot write the plot %s (%s); give a FILE.png or FILE.svg" % (path, exc)) from None
    try:
        atomic_write(path, buf.getvalue(), fsync=False)
    except OSError as exc:
        raise UsageError("cannot write the plot %s (%s); choose another path" % (path, exc.strerror)) from None


def plot_against(comparison: AgainstReferences, path: str) -> None:
    """Measured against each reference, per model, and the geometric means (compare.AgainstReferences)."""
    panels: list = []
    for row in comparison.rows:
        if row.measured is None:
            continue
        bars = [{"label": "measured", "value": row.measured, "text": "%.2f" % row.measured, "color": MEASURED_COLOR}]
        for cell in row.cells:
            if cell.images_per_sec is None:
                continue
            bars.append(
                {
                    "label": cell.name + ("" if cell.comparable else " " + MARK),
                    "value": cell.images_per_sec,
                    "text": cell_text(cell),
                    "color": REFERENCE_COLOR,
                    "hatch": None if cell.comparable else "///",
                }
            )
        panels.append({"title": "%s, batch size %s" % (row.model, row.batch_size), "bars": bars})
    if not panels:
        sweep = comparison.sweep
        raise UsageError(
            "nothing to plot: "
            + (sweep.no_ok_run() if sweep.kind else "the sweep has no ok run yet; run or resume it first")
        )
    geo_bars = [
        {"label": g.name, "value": g.ratio_pct, "text": geomean_text(g), "color": MEASURED_COLOR}
        for g in comparison.geomean
        if g.ratio_pct is not None
    ]
    if geo_bars:
        panels.append(
            {
                "title": "geometric mean over the models",
                "bars": geo_bars,
                "line": 100.0,
                "xlabel": "measured / reference, % (dashed: 100%)",
            }
        )
    footnotes = ["Bars: images/sec; labels: reference (measured / reference), as in the table."]
    if any(c.comparable is False for r in comparison.rows for c in r.cells):
        footnotes.append(
            "%s hatched: measured under other conditions than this sweep (see the table's notes); "
            "not in the geometric mean." % MARK
        )
    footnotes.append(
        "This sweep: tf_cnn_benchmarks, %s."
        % conditions_line(comparison.conditions, ", ", count_unit(comparison.sweep))
    )
    sweep = comparison.sweep
    title = "%s (measured) against published references" % (sweep.gpu_label() or sweep.name)
    save_figure(new_figure(panels, title, footnotes), path)


# A change reads by its direction: green faster, red slower; pale when the t-test does not call it significant
# (or cannot: one run a side, or a geometric mean).
FASTER, SLOWER = "#1a9850", "#d73027"
FASTER_PALE, SLOWER_PALE = "#a6d96a", "#fdae61"


def change_color(change_pct: float, significant: Optional[bool]) -> str:
    if change_pct >= 0:
        return FASTER if significant else FASTER_PALE
    return SLOWER if significant else SLOWER_PALE


def _change_bar(
    label: str, change_pct: float, significant: Optional[bool], ci: Optional[Tuple[Optional[float], ...]] = None
) -> Dict[str, Any]:
    """A change bar; ``ci``: (low, high) of its 95 % interval, drawn as whiskers."""
    err = ci if ci is not None and None not in ci else None
    return {
        "label": label,
        "value": change_pct,
        "color": change_color(change_pct, significant),
        "err": err,
        "text": "%+.1f%%%s" % (change_pct, "*" if significant else ""),
    }


CANDIDATE_COLORS = (CANDIDATE_COLOR, "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")


def config_label(row: Any, several_counts: bool) -> str:  # Any: a ChangeRow, num_gpus set when several_counts
    gpus = ", %d GPUs" % row.num_gpus if several_counts else ""
    data = ", %s data" % row.data if row.data else ""  # sweeps of both data kinds: a kind is a configuration
    return "%s, batch size %s%s%s" % (row.model, row.batch_size, gpus, data)


def plot_ab(result: Union[ABResult, SweepComparison], path: Union[Path, str]) -> None:
    """Write ``ab_figure(result)`` to ``path``."""
    save_figure(ab_figure(result), path)


def _baseline_bar(name: str, value: Optional[float]) -> Dict[str, Any]:
    text = "%.2f" % value if value is not None else "no ok run"
    return {"label": name, "value": value, "color": BASELINE_COLOR, "text": text}


def ab_figure(result: Any) -> Figure:  # Any: an ABResult, or a SweepComparison read as one (getattr)
    """Baseline against each candidate per configuration, and each change (compare.ab.ABResult; a single
    compare.ab.SweepComparison is read as one candidate)."""
    comparisons = getattr(result, "comparisons", None) or (result,)
    base = comparisons[0].baseline
    several = len(comparisons) > 1
    several_counts = len({r.num_gpus for c in comparisons for r in c.rows}) > 1
    panels: list = []
    change_bars: list = []
    by_config: dict = {}
    for index, comparison in enumerate(comparisons):
        color = CANDIDATE_COLORS[index % len(CANDIDATE_COLORS)]
        for row in comparison.rows:
            key = (row.model, row.batch_size, row.num_gpus, row.data)
            bars = by_config.setdefault(key, [_baseline_bar(base.name, row.baseline)])
            change = ""
            if row.change_pct is not None:
                label = config_label(row, several_counts) + (" " + comparison.candidate.name if several else "")
                change_bars.append(
                    _change_bar(label, row.change_pct, row.significant, (row.change_ci95_low, row.change_ci95_high))
                )
                change = " (%+.1f%%%s)" % (row.change_pct, "*" if row.significant else "")
            bars.append(
                {
                    "label": comparison.candidate.name,
                    "value": row.candidate,
                    "color": color,
                    "text": ("%.2f" % row.candidate if row.candidate is not None else "no ok run") + change,
                }
            )
        if comparison.geomean_change_pct is not None:
            label = "geometric mean" + (" " + comparison.candidate.name if several else "")
            change_bars.append(_change_bar(label, comparison.geomean_change_pct, None))
    rows = {(r.model, r.batch_size, r.num_gpus, r.data): r for c in comparisons for r in c.rows}
    for key, bars in by_config.items():
        panels.append({"title": config_label(rows[key], several_counts), "bars": bars})
    if not panels:
        raise UsageError("nothing to plot: neither sweep has a model yet")
    if change_bars:
        panels.append(
            {
                "title": "change against the baseline",
                "bars": change_bars,
                "line": 0.0,
                "percent": True,
                "xlabel": "change, % (whiskers: 95% CI; * significant)",
            }
        )
    names = ", ".join(c.candidate.label() for c in comparisons)
    title = "%s %s against baseline %s" % ("candidates" if several else "candidate", names, base.label())
    footnotes = [
        "Significant (*): Welch's t-test at 95%; needs 2 or more ok runs on each side. Green: faster, "
        "red: slower; pale: not significant."
    ]
    return new_figure(panels, title, footnotes)
