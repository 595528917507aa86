"""The plots people want (issue 22.11), checked on the matplotlib Figure objects (artists, colours, axis limits),
not on pixels. TFCNNWRAP_KEEP_PLOTS=DIR keeps a PNG of each to look at."""

import os
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.container import ErrorbarContainer
from sweepdata import write_both_kinds, write_sweep

from tfcnnwrap.compare.ab import sweep_vs_sweeps
from tfcnnwrap.present import plot

# every test here draws figures with matplotlib: seconds in process, so out of the everyday loop
pytestmark = pytest.mark.slow
KEEP = os.environ.get("TFCNNWRAP_KEEP_PLOTS")


def keep(fig, name):
    if KEEP:
        plot.save_figure(fig, Path(KEEP) / name)


@pytest.fixture
def ab(tmp_path):
    """resnet50 0.2 % faster (significant: tight runs), vgg16 3 % slower (significant), alexnet noise."""
    base = write_sweep(
        tmp_path / "before",
        {
            ("resnet50", 64): [176.00, 176.02, 175.98],
            ("vgg16", 64): [110.2, 110.3, 110.1],
            ("alexnet", 512): [2250.0, 2270.0, 2240.0],
        },
    )
    cand = write_sweep(
        tmp_path / "after",
        {
            ("resnet50", 64): [176.35, 176.37, 176.33],
            ("vgg16", 64): [106.9, 107.0, 106.8],
            ("alexnet", 512): [2262.0, 2235.0, 2258.0],
        },
    )
    return sweep_vs_sweeps(base, [cand])


def change_axes(fig):
    return next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("change against the baseline"))


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


def test_ab_of_sweeps_of_both_data_kinds_gives_each_kind_its_panel_and_change(tmp_path):
    figures = {("resnet50", 64): {"synthetic": [200.0, 202.0], "real": [150.0, 151.0]}}
    base = write_both_kinds(tmp_path / "a", figures)
    cand = write_both_kinds(tmp_path / "b", {("resnet50", 64): {"synthetic": [210.0, 211.0], "real": [140.0, 141.0]}})
    fig = plot.ab_figure(sweep_vs_sweeps(base, [cand]))
    panels = {ax.get_title(loc="left"): ax for ax in fig.axes}
    synthetic, real = panels["resnet50, batch size 64, synthetic data"], panels["resnet50, batch size 64, real data"]
    assert sorted(p.get_width() for p in synthetic.patches) == [201.0, 210.5]  # the baseline's and candidate's
    assert sorted(p.get_width() for p in real.patches) == [140.5, 150.5]
    changes = bars_by_label(change_axes(fig))
    assert set(changes) == {
        "resnet50, batch size 64, synthetic data",
        "resnet50, batch size 64, real data",
        "geometric mean",
    }
    assert (
        changes["resnet50, batch size 64, real data"].get_width()
        < 0
        < changes["resnet50, batch size 64, synthetic data"].get_width()
    )


def test_history_of_sweeps_of_both_data_kinds_draws_each_kind_its_series(tmp_path):
    from tfcnnwrap.present import plothistory

    sweeps = [
        write_both_kinds(tmp_path / name, {("resnet50", 64): {"synthetic": [s, s + 1], "real": [r, r + 1]}})
        for name, s, r in (("a", 200.0, 150.0), ("b", 204.0, 148.0), ("c", 206.0, 146.0))
    ]
    series = plothistory.history_series(sweep_vs_sweeps(sweeps[0], sweeps[1:]))
    assert {s.label: [p.value for p in s.points] for s in series} == {
        "resnet50, batch size 64, synthetic data": [200.5, 204.5, 206.5],
        "resnet50, batch size 64, real data": [150.5, 148.5, 146.5],
    }


# -- report --plot: the runs -------------------------------------------------------------------------------

SOAK = [176.1, 170.8, 165.9]  # resnet50's runs falling as the card heats up (issue 22's example)


def steps_log(rate, wobble_pct=0.3, count=10):
    """A tf_cnn_benchmarks log: step lines every 10 steps at ``rate`` +- ``wobble_pct`` %."""
    lines = ["Step\tImg/sec\ttotal_loss"]
    for k in range(1, count + 1):
        wobble = (wobble_pct / 100.0) * (1 if k % 2 else -1)
        lines.append("%d\timages/sec: %.2f +/- 0.0 (jitter = 0.0)\t7.5" % (k * 10, rate * (1 + wobble)))
    lines.append("total images/sec: %.2f" % rate)
    return "\n".join(lines) + "\n"


def samples_csv(run, seconds=50):
    """Legacy-field nvidia-smi samples: idle 3 s, busy, idle 2 s; hotter in every later run."""
    rows = []
    for t in range(seconds):
        busy = 3 <= t < seconds - 2
        temp = 62 + 8 * (run - 1) + (t * 0.1 if busy else 0)
        rows.append(
            "2026/11/30 10:%02d:%02d.000, 0, %.0f, %d, %.1f, %d, 7000"
            % (run, t, temp, 1800 - 40 * (run - 1) if busy else 300, 170.0 if busy else 20.0, 99 if busy else 0)
        )
    return "\n".join(rows) + "\n"


@pytest.fixture
def soaked(tmp_path):
    """resnet50 sampled and heat-soaking over 3 runs; alexnet unsampled (its GPU panels would be empty)."""
    import json

    path = write_sweep(
        tmp_path / "a-sweep-directory-with-a-rather-long-name-2026-11-30T10-15-00Z",
        {("resnet50", 64): SOAK, ("alexnet", 512): [2258.9, 2259.4, 2258.1]},
    )
    records = [json.loads(line) for line in (path / "runs.jsonl").read_text().splitlines()]
    for record in records:
        log = path / record["log"]
        log.write_text(steps_log(record["images_per_sec"]), encoding="utf-8")
        if record["model"] == "resnet50":
            name = log.name.replace(".log", ".gpu.csv")
            (log.parent / name).write_text(samples_csv(record["run"]), encoding="utf-8")
            record["telemetry"] = {
                "samples": 50,
                "max_temp_c": 62 + 8 * (record["run"] - 1) + 3.5,
                "samples_file": name,
                "throttled": False,
                "throttle_reasons": [],
            }
    (path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def runs_figure(path):
    from tfcnnwrap.present.plotruns import figure
    from tfcnnwrap.results.store import load_sweep

    sweep, meta, runs = load_sweep(path)
    return figure(sweep, "%s (GeForce RTX 2070, TensorFlow 1.12.0, fp32, synthetic data)" % path, runs)


def by_title(fig, start):
    return [ax for ax in fig.axes if ax.get_title(loc="left").startswith(start)]


def test_runs_plot_puts_steps_and_gpu_readings_on_one_time_axis(soaked):
    fig = runs_figure(soaked)
    keep(fig, "runs.png")
    step_ax = by_title(fig, "resnet50 bs=64")[0]
    row = [
        ax
        for ax in fig.axes
        if ax.get_subplotspec() is not None and ax.get_subplotspec().rowspan == step_ax.get_subplotspec().rowspan
    ]
    assert len(row) == 4  # steps, temperature, SM clock, power
    assert {ax.get_xlabel() for ax in row} == {"seconds into the run"}
    assert len({ax.get_xlim() for ax in row}) == 1
    # The steps sit inside the busy samples, ending where the card went idle (48 s), not at step 100.
    ends = [max(line.get_xdata()) for line in step_ax.lines]
    assert ends == [pytest.approx(47.0)] * 3
    assert all(min(line.get_xdata()) > 3.0 for line in step_ax.lines)


def test_runs_plot_does_not_magnify_noise_and_has_no_empty_panels(soaked):
    fig = runs_figure(soaked)
    for ax in by_title(fig, "resnet50") + by_title(fig, "alexnet"):
        low, high = ax.get_ylim()
        data = [y for line in ax.lines for y in line.get_ydata()]
        middle = sorted(data)[len(data) // 2]
        assert (high - low) >= 0.10 * middle  # a 0.3 % wobble stays a wobble
    for ax in fig.axes:
        assert ax.lines or ax.collections or ax.patches or ax.texts, ax.get_ylabel()
    alexnet = by_title(fig, "alexnet bs=512")[0]
    assert [
        ax
        for ax in fig.axes
        if ax.get_subplotspec() is not None
        and ax is not alexnet
        and ax.get_subplotspec().rowspan == alexnet.get_subplotspec().rowspan
    ] == []  # no GPU panels


def test_whole_sweep_timeline_shows_heat_soak(soaked):
    fig = runs_figure(soaked)
    timeline = by_title(fig, "whole sweep")[0]
    resnet = next(line for line in timeline.lines if line.get_label() == "resnet50 bs=64")
    ys = list(resnet.get_ydata())
    assert ys == sorted(ys, reverse=True) and ys[0] - ys[-1] > 5  # falling run after run, in % of the median
    low, high = timeline.get_ylim()
    assert low <= min(ys) and high >= max(ys) and high - low >= 10
    temp_ax = next(
        ax
        for ax in fig.axes
        if ax.get_ylabel() == "temperature (°C)" and ax is not timeline and ax.bbox.bounds == timeline.bbox.bounds
    )
    temps = list(temp_ax.lines[0].get_ydata())
    assert temps[-1] > temps[0] + 15  # the card heated up across the sweep


def test_whole_sweep_timeline_names_each_data_kind_as_its_panel_does(tmp_path):
    both = write_both_kinds(
        tmp_path / "both", {("resnet50", 64): {"synthetic": [200.0, 202.0], "real": [150.0, 151.0]}}
    )
    fig = runs_figure(both)
    timeline = by_title(fig, "whole sweep")[0]
    assert sorted(line.get_label() for line in timeline.lines if not line.get_label().startswith("_")) == [
        "resnet50 bs=64 real data",
        "resnet50 bs=64 synthetic data",
    ]
    assert by_title(fig, "resnet50 bs=64 real data") and by_title(fig, "resnet50 bs=64 synthetic data")


def test_runs_plot_title_fits_the_figure(soaked):
    fig = runs_figure(soaked)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    title = fig._suptitle
    assert "\n" in title.get_text()
    box = title.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width


def test_ab_title_with_long_sweep_names_fits_its_one_panel_figure(tmp_path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    long = "results-of-the-firmware-update-on-the-lab-workstation-2026-11-30T10-15-00Z"
    base = write_sweep(tmp_path / ("before-" + long), {("resnet50", 64): [176.0, 176.1]})
    cand = write_sweep(tmp_path / ("after-" + long), {("resnet50", 64): [176.4, 176.5]})
    fig = plot.ab_figure(sweep_vs_sweeps(base, [cand]))
    keep(fig, "ab-long.png")
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    box = fig._suptitle.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert box.y1 <= fig.bbox.height
    top_of_panels = max(ax.get_window_extent(renderer).y1 for ax in fig.axes)
    assert box.y0 > top_of_panels  # the wrapped title does not run into the panels' titles
    for ax in fig.axes:
        panel_title = ax.title if ax.title.get_text() else ax._left_title
        assert panel_title.get_window_extent(renderer).x1 <= fig.bbox.width, panel_title.get_text()


def test_scaling_panel_titles_wrap_to_their_panel():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from tfcnnwrap.present.plotscaling import scaling_figure
    from tfcnnwrap.results.records import SummaryRow

    models = ["resnet50", "resnet152", "inception3", "inception4", "vgg16", "alexnet", "googlenet", "mobilenet"]
    rows = [
        SummaryRow(
            model="resnet50",
            batch_size=64,
            num_gpus=n,
            mean=176.9 * n * 0.95,
            runs_ok=3,
            speedup=0.95 * n,
            efficiency_pct=95.0 if n > 1 else 100.0,
            scaling=True,
        )
        for n in (1, 2)
    ]
    rows += [SummaryRow(model=m, batch_size=64, num_gpus=2, mean=100.0, runs_ok=3, scaling=True) for m in models[1:]]
    fig = scaling_figure(rows)
    keep(fig, "scaling.png")
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    efficiency = next(ax for ax in fig.axes if ax.get_title().startswith("Scaling efficiency"))
    assert "\n" in efficiency.get_title()
    for ax in fig.axes:
        box = ax.title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, ax.get_title()
