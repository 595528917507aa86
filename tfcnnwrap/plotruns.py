"""`report --plot FILE`: one row of panels per configuration, so a throttling card is seen at a glance.

Left: the images/sec of every step line of each run (from its log). Right, when the sweep sampled its GPU:
temperature, SM clock and power over the run's seconds (from its ``.gpu.csv``), one line per run in the
same colour as its step line. matplotlib (the `plot` extra) is imported only here, with the Agg canvas; the
file is written by ``plot._save`` (suffix picks the format, atomic, never into a missing directory).
"""

from datetime import datetime
from pathlib import Path

from tfcnnwrap import gpusamples, logparse
from tfcnnwrap.plot import _save, require_matplotlib

GPU_PANELS = (("temp_c", "temperature (°C)"), ("sm_clock_mhz", "SM clock (MHz)"), ("power_w", "power (W)"))
_STAMP = "%Y/%m/%d %H:%M:%S.%f"


def _seconds(samples):
    """Seconds since the first sample, from nvidia-smi's timestamps (else one per sample)."""
    try:
        stamps = [datetime.strptime(s["timestamp"], _STAMP) for s in samples]
    except (TypeError, ValueError):
        return list(range(len(samples)))
    return [(t - stamps[0]).total_seconds() for t in stamps]


def run_series(sweep, run):
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


def _configs(runs):
    by_config: dict = {}
    for run in runs:
        by_config.setdefault(run.config, []).append(run)
    return by_config


def _title(config, runs):
    model, batch_size, num_gpus, host = config
    title = "%s bs=%d" % (model, batch_size)
    if num_gpus and num_gpus > 1:
        title += " x%d GPUs" % num_gpus
    if host:
        title += " @ %s" % host
    throttled = sum(1 for r in runs if r.gpu is not None and r.gpu.throttled)
    return title + ("  (%d throttled)" % throttled if throttled else "")


def _mark_throttling(ax, seconds, samples):
    """Red crosses on the SM clock where the driver named a throttle reason (idle and sync bits aside)."""
    marked = [(t, s["sm_clock_mhz"]) for t, s in zip(seconds, samples)
              if s.get("reasons") and s.get("sm_clock_mhz") is not None
              and set(gpusamples.reason_names(int(s["reasons"]))) - gpusamples.BENIGN_REASONS]
    if marked:
        first = not any(c.get_label() == "throttle reason active" for c in ax.collections)
        ax.scatter([t for t, _ in marked], [v for _, v in marked], marker="x", color="#d62728", s=22, zorder=3,
                   label="throttle reason active" if first else "_nolegend_")
        ax.legend(fontsize=7, loc="lower left")


def _draw_config(axes, config, runs, series):
    from matplotlib import colormaps  # matplotlib (the plot extra): only for --plot

    colours = colormaps["tab10"]
    step_ax = axes[0]
    for i, (run, (steps, samples)) in enumerate(zip(runs, series)):
        colour = colours(i % 10)
        label = "run %d%s" % (run.run, "" if run.ok else " (%s)" % run.status)
        if steps:
            step_ax.plot([s for s, _ in steps], [v for _, v in steps], marker=".", color=colour, label=label)
        seconds = _seconds(samples)
        for ax, (key, _) in zip(axes[1:], GPU_PANELS):
            points = [(t, s[key]) for t, s in zip(seconds, samples) if s.get(key) is not None]
            if points:
                ax.plot([t for t, _ in points], [v for _, v in points], color=colour, linewidth=1.2)
        if len(axes) > 2:
            _mark_throttling(axes[2], seconds, samples)
    step_ax.set_title(_title(config, runs), fontsize=10, loc="left", fontweight="bold")
    step_ax.set_xlabel("step")
    step_ax.set_ylabel("images/sec")
    if step_ax.get_legend_handles_labels()[0]:  # runs whose logs are gone draw no line to name
        step_ax.legend(fontsize=7, loc="lower left")
    for ax, (_, label) in zip(axes[1:], GPU_PANELS):
        ax.set_xlabel("seconds into the run")
        ax.set_ylabel(label)
    for ax in axes:
        ax.grid(True, alpha=0.3)


def figure(sweep, title, runs):
    """The Figure: a row per configuration (plan order as given), 1 or 4 panels wide."""
    require_matplotlib()
    from matplotlib.figure import Figure  # matplotlib (the plot extra): only for --plot

    by_config = _configs(runs)
    series = {c: [run_series(sweep, r) for r in members] for c, members in by_config.items()}
    with_gpu = any(samples for rows in series.values() for _, samples in rows)
    ncols = 1 + (len(GPU_PANELS) if with_gpu else 0)
    nrows = max(1, len(by_config))
    fig = Figure(figsize=(4.2 * ncols + 0.6, 3.0 * nrows + 0.7), dpi=100, layout="constrained")
    fig.suptitle(title, fontsize=11, fontweight="bold")
    grid = fig.subplots(nrows, ncols, squeeze=False)
    for row, (config, members) in zip(grid, by_config.items()):
        _draw_config(list(row), config, members, series[config])
    if not by_config:
        grid[0][0].text(0.5, 0.5, "no runs", ha="center", va="center")
    return fig


def plot_runs(sweep, title, runs, path):
    _save(figure(sweep, title, runs), path)
