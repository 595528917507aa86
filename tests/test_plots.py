"""The plots people want (issue 22.11), checked on the matplotlib Figure objects (artists, colours, axis limits),
not on pixels. TFCNNWRAP_KEEP_PLOTS=DIR keeps a PNG of each to look at."""

import os
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.container import ErrorbarContainer
from sweepdata import write_sweep

from tfcnnwrap import plot
from tfcnnwrap.compareab import sweep_vs_sweeps

KEEP = os.environ.get("TFCNNWRAP_KEEP_PLOTS")


def keep(fig, name):
    if KEEP:
        plot._save(fig, Path(KEEP) / name)


@pytest.fixture
def ab(tmp_path):
    """resnet50 0.2 % faster (significant: tight runs), vgg16 3 % slower (significant), alexnet noise."""
    base = write_sweep(tmp_path / "before", {("resnet50", 64): [176.00, 176.02, 175.98],
                                             ("vgg16", 64): [110.2, 110.3, 110.1],
                                             ("alexnet", 512): [2250.0, 2270.0, 2240.0]})
    cand = write_sweep(tmp_path / "after", {("resnet50", 64): [176.35, 176.37, 176.33],
                                            ("vgg16", 64): [106.9, 107.0, 106.8],
                                            ("alexnet", 512): [2262.0, 2235.0, 2258.0]})
    return sweep_vs_sweeps(base, [cand])


def change_axes(fig):
    return next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("change against baseline"))


def bars_by_label(ax):
    labels = [t.get_text() for t in ax.get_yticklabels()]
    positions = list(ax.get_yticks())
    by_pos = {round(p.get_y() + p.get_height() / 2): p for p in ax.patches}
    return {label: by_pos[round(pos)] for label, pos in zip(labels, positions)}


def test_ab_change_is_coloured_by_direction_with_whiskers_and_an_axis_that_shows_0_2_percent(ab):
    fig = plot.ab_figure(ab)
    keep(fig, "ab.png")
    ax = change_axes(fig)
    bars = bars_by_label(ax)
    faster, slower = bars["resnet50, batch size 64"], bars["vgg16, batch size 64"]
    assert faster.get_width() == pytest.approx(0.2, abs=0.01)
    assert to_hex(faster.get_facecolor()) == plot.FASTER
    assert to_hex(slower.get_facecolor()) == plot.SLOWER
    noise = bars["alexnet, batch size 512"]
    assert to_hex(noise.get_facecolor()) in (plot.FASTER_PALE, plot.SLOWER_PALE)  # not significant
    # The axis is scaled to the changes, not to a fixed percent: a 0.2 % bar is a visible share of it.
    low, high = ax.get_xlim()
    assert low == pytest.approx(-high)
    assert 0.2 / (high - low) > 0.02
    assert high >= 3.0  # and the -3 % change with its whisker fits
    # One whisker per configuration: the 95 % interval of the change, around the bar's end.
    whiskers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(whiskers) == 3
    rows = {r.model: r for r in ab.comparisons[0].rows}
    segments = [seg for c in whiskers for seg in c.lines[2][0].get_segments()]
    spans = sorted((round(s[0][0], 3), round(s[1][0], 3)) for s in segments)
    expected = sorted((round(r.change_ci95_low, 3), round(r.change_ci95_high, 3)) for r in rows.values())
    assert spans == expected
    # Tick labels read as signed percentages.
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert any(text.startswith("+") and text.endswith("%") for text in labels), labels


def test_ab_with_a_tiny_change_only_zooms_to_half_a_percent(tmp_path):
    base = write_sweep(tmp_path / "b", {("resnet50", 64): [176.00, 176.02, 175.98]})
    cand = write_sweep(tmp_path / "c", {("resnet50", 64): [176.35, 176.37, 176.33]})
    ax = change_axes(plot.ab_figure(sweep_vs_sweeps(base, [cand])))
    low, high = ax.get_xlim()
    assert 0.5 <= high <= 1.0 and low == pytest.approx(-high)
