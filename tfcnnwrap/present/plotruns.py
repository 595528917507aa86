"""`report --plot FILE`: a whole-sweep timeline, then one row of panels per configuration, so heat soak and a
throttling card are seen at a glance.

Top: every ok run's images/sec as a percentage of its configuration's median, at the minute the run ran, with
the GPU's temperature on a second axis: heat soak is the temperature climbing while later runs fall. Below,
per configuration, on one time axis (seconds into the run): the images/sec of every step line of each run
(from its log; the steps are placed back from the end of the run's busy samples, or from the run's end, by
their own durations) and, when the sweep sampled its GPU, temperature, SM clock and power (from its
``.gpu.csv``), one line per run in the same colour as its step line. A y-axis never spans less than a
fixed share of its median (MIN_SPAN), so the noise of a steady run stays flat; a panel with nothing to show
is left out; the title is wrapped to the figure's width. matplotlib (the `plot` extra) is imported only
here, with the Agg canvas; the file is written by ``plot.save_figure`` (suffix picks the format, atomic, never
into a missing directory).
"""

from __future__ import annotations

import statistics
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from tfcnnwrap.present.plot import fit_title, require_matplotlib, save_figure
from tfcnnwrap.run import gpusamples, logparse

if TYPE_CHECKING:
    from matplotlib.axes._axes import Axes
    from matplotlib.figure import Figure

    from tfcnnwrap.results.records import RunRecord
    from tfcnnwrap.results.store import SweepDir

GPU_PANELS = (("temp_c", "temperature (°C)"), ("sm_clock_mhz", "SM clock (MHz)"), ("power_w", "power (W)"))
# The least a y-axis spans, as a share of its median (temperature: in °C): a 0.5 % wobble of a steady run must
# not fill a panel the way a 10 % throttle does.
MIN_SPAN = {"images_per_sec": 0.10, "temp_c": 20.0, "sm_clock_mhz": 0.15, "power_w": 0.30, "pct": 10.0}
_STAMP = "%Y/%m/%d %H:%M:%S.%f"


def seconds_label(samples: List[Any]) -> List[Any]:
    """Seconds since the first sample, from nvidia-smi's timestamps (else one per sample)."""
    try:
        stamps = [datetime.strptime(s["timestamp"], _STAMP) for s in samples]
    except (TypeError, ValueError):
        return list(range(len(samples)))
    return [(t - stamps[0]).total_seconds() for t in stamps]


def run_series(sweep: SweepDir, run: RunRecord) -> Tuple[List[Any], ...]:
    """(steps [(step, images/sec)], gpu samples of the busiest GPU) of one run; empty where files are gone."""
    steps, samples = [], []
    log = sweep.inside(run.log) if run.log else None
    if log is not None and log.is_file():
        steps = logparse.step_points_file(log)
    gpu = run.gpu
    if gpu is not None and gpu.samples_file and run.log:
        path = sweep.inside(str(Path(run.log).parent / gpu.samples_file))
        if path is not None and path.is_file():
            parsed, _ = gpusamples.parse_lines(path.read_text(encoding="utf-8", errors="replace").splitlines())
            index = (run.telemetry or {}).get("gpu_index")
            samples = [s for s in parsed if index is None or s["index"] == index]
    return steps, samples


Config = Tuple[str, int, Optional[int], Optional[str], Optional[str]]  # RunRecord.config


def _configs(runs: List[RunRecord]) -> Dict[Config, Any]:
    by_config: dict = {}
    for run in runs:
        by_config.setdefault(run.config, []).append(run)
    return by_config


def _config_name(config: Config) -> str:
    """A configuration as its panel and the whole sweep's legend name it (a kind, a GPU count, a host each
    make one of their own)."""
    model, batch_size, num_gpus, host, data = config
    title = "%s bs=%d" % (model, batch_size)
    if num_gpus and num_gpus > 1:
        title += " x%d GPUs" % num_gpus
    if data:
        title += " %s data" % data
    if host:
        title += " @ %s" % host
    return title


def _title(config: Config, runs: List[RunRecord]) -> str:
    throttled = sum(1 for r in runs if r.gpu is not None and r.gpu.throttled)
    return _config_name(config) + ("  (%d throttled)" % throttled if throttled else "")


def _mark_throttling(ax: Axes, seconds: List[Any], samples: List[Any]) -> None:
    """Red crosses on the SM clock where the driver named a throttle reason (idle and sync bits aside)."""
    marked = [
        (t, s["sm_clock_mhz"])
        for t, s in zip(seconds, samples)
        if s.get("reasons")
        and s.get("sm_clock_mhz") is not None
        and set(gpusamples.reason_names(int(s["reasons"]))) - gpusamples.BENIGN_REASONS
    ]
    if marked:
        first = not any(c.get_label() == "throttle reason active" for c in ax.collections)
        ax.scatter(
            [t for t, _ in marked],
            [v for _, v in marked],
            marker="x",
            color="#d62728",
            s=22,
            zorder=3,
            label="throttle reason active" if first else "_nolegend_",
        )
        ax.legend(fontsize=7, loc="lower left")


def calm_ylim(ax: Axes, values: List[Any], key: str) -> None:
    """Y limits around ``values`` spanning at least MIN_SPAN[key] (of their median, or in units for °C)."""
    values = [v for v in values if v is not None]
    if not values:
        return
    low, high = min(values), max(values)
    floor = MIN_SPAN[key] if key in ("temp_c", "pct") else MIN_SPAN[key] * abs(statistics.median(values))
    span = max(high - low, floor) * 1.1 or 1.0
    middle = (low + high) / 2.0
    ax.set_ylim(middle - span / 2.0, middle + span / 2.0)


def step_seconds(steps: List[Tuple[int, float]], images_per_step: int, end: float) -> List[float]:
    """Seconds into the run of each (step, images/sec) point: each logged interval took (steps since the
    last line x images per step) / its rate; the last step ends at ``end``."""
    times, clock, previous = [], 0.0, 0
    for step, rate in steps:
        clock += (step - previous) * images_per_step / rate if rate > 0 else 0.0
        previous = step
        times.append(clock)
    return [t - clock + end for t in times]


def _run_end(run: RunRecord, seconds: List[Any], samples: List[Any]) -> float:
    """When the run's timed steps ended: its last busy sample, else its duration."""
    busy = [t for t, s in zip(seconds, samples) if (s.get("util_pct") or 0) >= gpusamples.BUSY_UTIL_PCT]
    return busy[-1] if busy else (run.duration_s or 0.0)


def _draw_config(axes: List[Axes], config: Config, runs: List[RunRecord], series: List[Tuple[List[Any], ...]]) -> None:
    from matplotlib import colormaps  # matplotlib (the plot extra): only for --plot

    colours = colormaps["tab10"]
    step_ax = axes[0]
    drawn: Dict[str, list] = {key: [] for key, _ in GPU_PANELS}
    rates = []
    for i, (run, (steps, samples)) in enumerate(zip(runs, series)):
        colour = colours(i % 10)
        seconds = seconds_label(samples)
        if steps:
            per_step = config[1] * (config[2] or 1)
            at = step_seconds(steps, per_step, _run_end(run, seconds, samples))
            step_ax.plot(
                at,
                [v for _, v in steps],
                marker=".",
                color=colour,
                label="run %d%s" % (run.run, "" if run.ok else " (%s)" % run.status),
            )
            rates += [v for _, v in steps]
        for ax, (key, _) in zip(axes[1:], GPU_PANELS):
            points = [(t, s[key]) for t, s in zip(seconds, samples) if s.get(key) is not None]
            if points:
                ax.plot([t for t, _ in points], [v for _, v in points], color=colour, linewidth=1.2)
                drawn[key] += [v for _, v in points]
        if len(axes) > 2:
            _mark_throttling(axes[2], seconds, samples)
    step_ax.set_title(_title(config, runs), fontsize=10, loc="left", fontweight="bold")
    step_ax.set_ylabel("images/sec")
    if rates:
        if step_ax.get_legend_handles_labels()[0]:  # runs whose logs are gone draw no line to name
            step_ax.legend(fontsize=7, loc="lower left")
        calm_ylim(step_ax, rates, "images_per_sec")
    else:
        step_ax.text(0.5, 0.5, "no step lines in the logs", ha="center", va="center", transform=step_ax.transAxes)
    for ax, (key, label) in zip(axes[1:], GPU_PANELS):
        ax.set_ylabel(label)
        calm_ylim(ax, drawn[key], key)
    _share_time_axis([ax for ax in axes[:1] + [a for a, (k, _) in zip(axes[1:], GPU_PANELS) if drawn[k]]])
    for ax, (key, _) in zip(axes[1:], GPU_PANELS):
        if not drawn[key]:
            ax.remove()  # this configuration has no such samples: no empty panel


def _share_time_axis(axes: List[Axes]) -> None:
    """One time axis for the configuration: the same limits and label on each of its panels."""
    spans = [ax.get_xlim() for ax in axes if ax.lines]
    for ax in axes:
        if spans:
            ax.set_xlim(min([0.0] + [s[0] for s in spans]), max(s[1] for s in spans))
        ax.set_xlabel("seconds into the run")
        ax.grid(True, alpha=0.3)


def _started(run: RunRecord) -> Optional[datetime]:
    if run.started_at is None:
        return None
    try:
        return datetime.strptime(run.started_at, "%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError):
        return None


def draw_timeline(ax: Axes, runs: List[RunRecord], series_of: Callable) -> bool:
    """The whole sweep: each ok run's images/sec as % of its configuration's median at the minute it ran
    (middle of the run), one line per configuration, and the GPU's temperature on a second axis."""
    starts: Dict[int, datetime] = {id(r): t for r in runs if (t := _started(r)) is not None}
    known = list(starts.values())
    if not known:
        return False
    origin = min(known)
    pcts, temps = [], []
    for config, members in _configs(runs).items():
        ok = [r for r in members if r.value is not None and id(r) in starts]
        if not ok:
            continue
        median = statistics.median(r.value for r in ok)
        xs = [((starts[id(r)] - origin).total_seconds() + (r.duration_s or 0.0) / 2.0) / 60.0 for r in ok]
        ys = [r.value / median * 100.0 for r in ok]
        ax.plot(xs, ys, marker="o", linewidth=1.0, label=_config_name(config))
        pcts += ys
        for r in members:
            steps_samples = series_of(r)
            samples = steps_samples[1] if steps_samples else []
            offset = (starts[id(r)] - origin).total_seconds() if id(r) in starts else None
            if samples and offset is not None:
                temps += [
                    ((offset + t) / 60.0, s["temp_c"])
                    for t, s in zip(seconds_label(samples), samples)
                    if s.get("temp_c") is not None
                ]
            elif r.gpu is not None and r.gpu.max_temp_c is not None and offset is not None:
                temps.append(((offset + (r.duration_s or 0.0)) / 60.0, r.gpu.max_temp_c))
    ax.set_title(
        "whole sweep: images/sec of each run against its configuration's median",
        fontsize=10,
        loc="left",
        fontweight="bold",
    )
    ax.set_xlabel("minutes since the first run started")
    ax.set_ylabel("% of median")
    ax.axhline(100.0, color="#888888", linestyle="--", linewidth=0.8)
    calm_ylim(ax, pcts + [100.0], "pct")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower left", ncol=3)
    if temps:
        temp_ax = ax.twinx()
        temps.sort()
        temp_ax.plot([t for t, _ in temps], [c for _, c in temps], color="#d62728", linewidth=0.9, alpha=0.7)
        temp_ax.set_ylabel("temperature (°C)", color="#d62728")
        calm_ylim(temp_ax, [c for _, c in temps], "temp_c")
    return True


def figure(sweep: SweepDir, title: str, runs: List[RunRecord]) -> Figure:
    """The Figure: the whole-sweep timeline, then a row per configuration (plan order as given), 1 or 4
    panels wide."""
    require_matplotlib()
    from matplotlib.figure import Figure  # matplotlib (the plot extra): only for --plot

    by_config = _configs(runs)
    series = {c: [run_series(sweep, r) for r in members] for c, members in by_config.items()}
    by_run = {id(r): pair for c, members in by_config.items() for r, pair in zip(members, series[c])}
    with_gpu = any(samples for rows in series.values() for _, samples in rows)
    ncols = 1 + (len(GPU_PANELS) if with_gpu else 0)
    nrows = max(1, len(by_config)) + 1
    width = 4.2 * ncols + 0.6
    fig = Figure(figsize=(width, 3.0 * nrows + 0.7), dpi=100, layout="constrained")
    fig.suptitle(fit_title(title, width), fontsize=11, fontweight="bold")
    grid = fig.add_gridspec(nrows, ncols)
    top = fig.add_subplot(grid[0, :])
    if not draw_timeline(top, runs, lambda r: by_run.get(id(r))):
        top.remove()
    for index, (config, members) in enumerate(by_config.items(), 1):
        axes = [fig.add_subplot(grid[index, col]) for col in range(ncols)]
        _draw_config(axes, config, members, series[config])
    if not by_config:
        fig.add_subplot(grid[1, 0]).text(0.5, 0.5, "no runs", ha="center", va="center")
    return fig


def plot_runs(sweep: SweepDir, title: str, runs: List[RunRecord], path: Path) -> None:
    save_figure(figure(sweep, title, runs), path)
