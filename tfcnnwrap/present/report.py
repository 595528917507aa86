"""The `report` verb and the end-of-sweep summary: statistics per configuration, failures by name.

The table shows what carries information (a GPU-count column only in a sweep of several counts, temperature
only when runs recorded telemetry) and fits the terminal: its title names the conditions every figure was
measured under, and on a narrow terminal std, min, max and median step aside first.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Optional, Union

from tfcnnwrap import render
from tfcnnwrap.present.outfile import written_to
from tfcnnwrap.prose import fill
from tfcnnwrap.render import Col, gpus_text, make_table
from tfcnnwrap.results import quality
from tfcnnwrap.results.aggregate import summary_columns, verdict
from tfcnnwrap.results.fleetreport import cluster_label, fleet_columns, with_fleet
from tfcnnwrap.results.scaling import TOWER, emit_scaling, is_scaling
from tfcnnwrap.results.store import load_sweep, newest_sweep
from tfcnnwrap.results.sweepconditions import conditions, plan_conditions

if TYPE_CHECKING:
    from rich.console import Console

    from tfcnnwrap.results.records import RunRecord, SummaryRow, SweepMeta
    from tfcnnwrap.results.store import SweepDir

# Priority 0 never drops; on a narrow terminal the highest priority drops first (equal ones together).
TABLE_COLUMNS = [
    Col("model", "model"),
    Col("host", "host"),
    Col("num_gpus", "GPUs"),
    Col("data", "data"),  # a sweep of both data kinds: synthetic or real
    Col("batch_size", "batch"),
    Col("runs_ok", "ok", 2),
    Col("runs_failed", "failed", 2),
    Col("mean", "mean img/s"),
    Col("vs_fleet_pct", "vs fleet %", 1),
    Col("vs_synthetic_pct", "vs synthetic %", 1),
    Col("std", "std", 8),
    Col("cv_pct", "CV %", 3),
    Col("ci95_pct", "CI95 ±%", 3),
    Col("min", "min", 9),
    Col("max", "max", 9),
    Col("median", "median", 10),
    Col("throttled_runs", "throttled", 5),
    Col("max_temp_c", "max °C", 5, digits=0),
    Col("flags", "flags", 4),  # quality.FLAGS; each one explained under the table
]
# No failures column: the failed count is in the table and each failed run, with its status, why and its
# log, is listed under it; the flags took its place (the table with every column fits 120 columns).
# Speed-up and efficiency have their own table (scaling.emit_scaling). Shown whatever their values; the
# others only when a row has one (num_gpus: when it differs).
ALWAYS = {"model", "batch_size", "runs_ok", "runs_failed", "mean", "std", "cv_pct", "min", "max", "median"}


def _carries_information(column: Col, rows: List[Dict[str, Any]]) -> bool:
    if column.key in ALWAYS:
        return True
    values = [row.get(column.key) for row in rows]
    if column.key == "num_gpus":
        return len(set(values)) > 1
    return any(v not in (None, "", (), []) for v in values)


def table_columns(rows: List[Dict[str, Any]], meta: Optional[SweepMeta] = None) -> List[Col]:
    """The columns worth a place for these rows (dicts); on a CPU sweep (``meta``) the count is of towers."""
    columns = [c for c in TABLE_COLUMNS if _carries_information(c, rows)]
    if meta is not None and meta.on_cpu:
        columns = [c._replace(header="towers") if c.key == "num_gpus" else c for c in columns]
    return columns


def _count_unit(meta: SweepMeta) -> str:
    """What a sweep's counts count: GPUs, or on the CPU tf_cnn_benchmarks' towers (as its title says)."""
    return TOWER if meta.on_cpu else "GPU"


def _gpu_count_text(counts: List[int]) -> str:
    if len(counts) == 1:
        return "%d GPU%s" % (counts[0], "" if counts[0] == 1 else "s")
    return "%s GPUs" % ", ".join(str(c) for c in counts)


def title_parts(sweep_path: Union[Path, str], meta: SweepMeta) -> List[str]:
    """What the figures were measured on and under, one part each (kept whole when the title wraps): the
    sweep, the GPU, precision, XLA, GPU count, variable update, data, TensorFlow and branch."""
    cond = plan_conditions(meta)
    gpu = meta.gpu_names() or None
    if meta.on_cpu:
        gpu = "CPU" + (" (%s)" % meta.environment["cpu_model"] if meta.environment.get("cpu_model") else "")
    parts = [str(sweep_path), gpu]
    if cond:
        # on the CPU a "GPU count" is tf_cnn_benchmarks' number of towers on /cpu:0, /cpu:1, ...
        several = len(cond["counts"]) > 1 or cond["counts"][0] > 1
        count = (
            _gpu_count_text(cond["counts"])
            if not meta.on_cpu
            else ("%s towers" % ", ".join(str(c) for c in cond["counts"]) if several else None)
        )
        parts += [
            cond["precision"],
            "XLA" if cond["xla"] == "yes" else "no XLA",
            count,
            cond["variable_update"],
            "%s data" % cond["data"].replace(",", " and "),
        ]
        if several:
            parts.append("batch per tower" if meta.on_cpu else "batch per GPU")
    parts += [
        "TF %s" % meta.tensorflow_version if meta.tensorflow_version else None,
        meta.upstream.branch,
        cluster_label(meta),
    ]
    return [p for p in parts if p]


def quality_lines(rows: List[SummaryRow], device: Optional[str] = None) -> List[Any]:
    """One line per problem a configuration's figures have (quality.problems, as fits the ``device``), named by
    configuration."""
    lines = []
    for row in rows:
        where = "%s bs=%d%s%s%s" % (
            row.model,
            row.batch_size,
            gpus_text(row.num_gpus),
            " %s data" % row.data if row.data else "",
            " on %s" % row.host if row.host else "",
        )
        lines += ["%s: %s" % (where, problem) for problem in quality.problems(verdict(row), device=device)]
    return lines


def input_cost_lines(rows: List[SummaryRow]) -> List[str]:
    """In a sweep of both data kinds, one line per configuration: its real-data mean against its synthetic one
    (aggregate.add_input_cost), with the 95 % interval of that change, or why there is none."""
    lines = []
    for row in rows:
        if row.data != "real" or row.vs_synthetic_pct is None:
            continue
        low, high = row.vs_synthetic_ci95_low, row.vs_synthetic_ci95_high
        if low is not None and high is not None:
            interval = "95%% CI %+.1f%% to %+.1f%%" % (low, high)
        else:
            interval = "no interval: it needs 2 ok runs of each kind and a synthetic mean clearly above 0"
        lines.append(
            "%s bs=%d%s: real data %+.1f%% against synthetic (%s)"
            % (row.model, row.batch_size, gpus_text(row.num_gpus), row.vs_synthetic_pct, interval)
        )
    return lines


def print_input_cost(console: Console, rows: List[SummaryRow]) -> None:
    """What the input path costs, under the table of a sweep of both data kinds."""
    lines = input_cost_lines(rows)
    if lines:
        console.print("the input path (images decoded on the host, copied to the device) costs:", highlight=False)
        for line in lines:  # wrapped as the things to check are: between words, later lines hanging under it
            for part in fill(line, console.width - 2).split("\n"):
                console.print("  " + part, markup=False, highlight=False, soft_wrap=True)


def print_quality(console: Console, rows: List[SummaryRow], device: Optional[str] = None) -> None:
    """The flags explained under the table, each with what to do."""
    lines = quality_lines(rows, device)
    if not lines:
        return
    console.print("[yellow]%d thing%s to check:[/]" % (len(lines), "" if len(lines) == 1 else "s"), highlight=False)
    for line in lines:  # wrapped between words under the heading, an item's later lines hanging under it
        for part in fill(line, console.width - 2).split("\n"):
            console.print("  " + part, markup=False, highlight=False, soft_wrap=True)


def describe(meta: SweepMeta) -> str:
    """One line naming what was measured: GPU, TensorFlow, branch, device."""
    parts = [
        meta.gpu_names() or ("CPU" if meta.device == "cpu" else None),
        "TF %s" % meta.tensorflow_version if meta.tensorflow_version else None,
        meta.upstream.branch,
        "device %s" % meta.device if meta.device else None,
        cluster_label(meta),
    ]
    return ", ".join(p for p in parts if p)


def failed_runs(runs: List[RunRecord]) -> List[Any]:
    return [r for r in runs if not r.ok]


FAILURE_CHARS = 200  # of a failure's text on its line; the log has it all


def next_compare(sweep_path: Path, meta: SweepMeta) -> Optional[str]:
    """The `compare` line that fits what the sweep ran on: against the published figure of the same GPU when
    it is a reference, else ranked among them; on the CPU ranked by the GPUs' closest figures (a CPU sweep's
    conditions are seldom published exactly), then its export to share it among CPU results."""
    # lazy: the sweep's last line only; report and list parse no references and start no process
    from tfcnnwrap.results.references import load_references
    from tfcnnwrap.run.procs import format_command

    base = ["python", "-m", "tfcnnwrap", "compare", str(sweep_path)]
    if meta.on_cpu:
        return "%s; %s" % (
            format_command(base + ["--rank", "--nearest"]),
            format_command(["python", "-m", "tfcnnwrap", "export", str(sweep_path)]),
        )
    names = [n.strip() for n in (meta.gpu_names() or "").split(",") if n.strip()]
    found = load_references().candidates(names[0]) if len(names) == 1 else []
    if len(found) == 1:
        return "%s; %s" % (format_command(base + ["--against", found[0].id]), format_command(base + ["--rank"]))
    return format_command(base + ["--rank"])


def _failure_lines(sweep: SweepDir, run: RunRecord) -> List[str]:
    """The run and why, then its log on a line of its own (a path is long; the run's name stays whole)."""
    from rich.markup import escape  # rich: only when something is drawn

    detail = (run.failure or "").strip()
    log = sweep.path / run.log if run.log and sweep.inside(run.log) else None
    cut = detail[:FAILURE_CHARS] + ("…" if len(detail) > FAILURE_CHARS else "")
    why = (" - " + escape(cut)) if detail else ""
    return [
        "  %s bs=%s%s%s run %s: [red]%s[/]%s"
        % (
            escape(run.model),
            run.batch_size,
            gpus_text(run.num_gpus),
            " %s data" % escape(run.data) if run.data else "",
            run.run,
            escape(str(run.status)),
            why,
        ),
        "    log: %s" % (escape(str(log)) if log else "(none)"),
    ]


def print_summary(
    console: Console, sweep: SweepDir, meta: SweepMeta, rows: List[SummaryRow], runs: List[RunRecord]
) -> None:
    """The rich summary a sweep ends with (also `report`'s table): SummaryRows, then each failed run."""
    rows = with_fleet(rows)
    dicts = [row.to_dict() for row in rows]
    columns = fleet_columns(rows, table_columns(dicts, meta))
    console.print(make_table(dicts, columns, title=title_parts(sweep.path, meta)))
    print_input_cost(console, rows)
    emit_scaling(rows, "table", console, _count_unit(meta))
    print_quality(console, rows, "cpu" if meta.on_cpu else "gpu")
    failures = failed_runs(runs)
    if failures:
        console.print(
            "[red]%d run%s did not give a result:[/]" % (len(failures), "" if len(failures) == 1 else "s"),
            highlight=False,
        )
        for run in sorted(failures, key=lambda r: (r.model, r.batch_size, r.run)):
            for line in _failure_lines(sweep, run):
                console.print(line, highlight=False, overflow="fold")


def _plot(sweep: SweepDir, meta: SweepMeta, runs: List[RunRecord], rows: List[SummaryRow], plot_path: str) -> None:
    """The per-run panels (steps, temperature, clock, power); in a sweep of several GPU counts FILE is the
    scaling chart and the per-run panels go beside it as FILE-runs.SUFFIX."""
    if not any(run.ok for run in runs):
        # an empty chart (and matplotlib's warning about its legend) would say less than this line
        sys.stderr.write(
            "tfcnnwrap report: nothing to plot: no run of this sweep has a result yet; %s not written\n" % plot_path
        )
        return
    # lazy: the charts' modules (and the comparison text and references they draw from) only for --plot,
    # so `list`, which reads conditions() here, and a plain report load none of them
    from tfcnnwrap.present.plotruns import plot_runs
    from tfcnnwrap.present.plotscaling import plot_scaling

    written = []
    runs_path = Path(plot_path)
    if is_scaling(rows):
        written.append(plot_scaling(rows, plot_path))
        runs_path = runs_path.with_name(runs_path.stem + "-runs" + runs_path.suffix)
    plot_runs(sweep, "%s (%s)" % (sweep.path, describe(meta)), runs, runs_path)
    written.append(runs_path)
    sys.stderr.write("tfcnnwrap report: wrote %s\n" % " and ".join(str(p) for p in written))


@dataclass(frozen=True)
class ReportArgs:
    """What `report` was asked (cli/report.py builds it; pages/reportpage.py reads it for --format html)."""

    sweep_dir: Optional[str]  # None: the newest sweep under the results directory
    format: Literal["table", "markdown", "csv", "json", "html"]
    out: Optional[str]  # None: standard output
    plot: Optional[str]  # checked by cli/parsing.plot_path


def cmd_report(args: ReportArgs) -> int:
    """Exit 0 whenever the sweep can be read, failed runs or not (they are in the table); 2 when it cannot."""
    out = args.out
    if out and args.format != "html":
        return written_to(out, lambda: cmd_report(replace(args, out=None)))
    plot_path = args.plot
    if plot_path:
        from tfcnnwrap.present.plot import require_matplotlib  # lazy: --plot only (see _plot)

        require_matplotlib()  # before any work: a missing extra is a usage error, not a late surprise
    # lazy: hashlib and the cache's reader are report's alone; `list` imports this module for conditions()
    from tfcnnwrap.results.summarycache import summarize_sweep

    path = Path(args.sweep_dir) if args.sweep_dir else newest_sweep()
    sweep, meta, runs = load_sweep(path)
    rows = summarize_sweep(sweep, runs, meta.plan_order)  # summary.json when current: no pandas import
    if plot_path:
        _plot(sweep, meta, runs, rows, plot_path)
    if args.format == "table":
        print_summary(render.console(), sweep, meta, rows, runs)
    else:
        _emit_report(sweep, meta, rows, args.format)
    _warn_throttled(runs)
    return 0


def _emit_report(sweep: SweepDir, meta: SweepMeta, rows: List[SummaryRow], fmt: str) -> None:
    """People read the table and Markdown; scripts read every column of the JSON and CSV."""
    rows = with_fleet(rows)
    dicts = [row.to_dict() for row in rows]
    columns = summary_columns(rows) if fmt in ("json", "csv") else table_columns(dicts, meta)
    lines = input_cost_lines(rows) + quality_lines(rows, "cpu" if meta.on_cpu else "gpu") if fmt == "markdown" else []
    render.emit(
        dicts,
        fmt,
        fleet_columns(rows, columns),
        title=title_parts(sweep.path, meta),
        caption=["- " + line for line in lines] or None,
        kind="report",
        conditions=conditions(meta),
        extra={"sweep": str(sweep.path)},
    )
    emit_scaling(rows, fmt, unit=_count_unit(meta))


def _warn_throttled(runs: List[RunRecord]) -> None:
    """The throttle warning the sweep ended with, on stderr as the sweep printed it."""
    warning = quality.throttle_warning(runs)
    if warning:
        err = render.console(stderr=True)
        text = "warning: " + warning
        # as the sweep's warnings: wrapped with its later lines indented on a terminal, one line elsewhere
        err.print(fill(text, err.width) if err.is_terminal else text, markup=False, highlight=False, soft_wrap=True)
