"""The `report` verb and the end-of-sweep summary: statistics per model and batch size, failures by name."""

from pathlib import Path

from tfcnnwrap.aggregate import SUMMARY_COLUMNS, summarize
from tfcnnwrap.records import RunRecord, SweepMeta
from tfcnnwrap.store import load_sweep, newest_sweep

TABLE_COLUMNS = [
    ("model", "model"),
    ("batch_size", "batch"),
    ("runs_ok", "ok"),
    ("runs_failed", "failed"),
    ("mean", "mean img/s"),
    ("std", "std"),
    ("cv_pct", "CV %"),
    ("min", "min"),
    ("max", "max"),
    ("median", "median"),
    ("failures", "failures"),
]


def describe(meta):
    """One line naming what was measured: GPU, TensorFlow, branch, device."""
    meta = SweepMeta.coerce(meta)
    parts = [
        meta.gpu_names() or ("CPU" if meta.device == "cpu" else None),
        "TF %s" % meta.tensorflow_version if meta.tensorflow_version else None,
        meta.upstream.branch,
        "device %s" % meta.device if meta.device else None,
    ]
    return ", ".join(p for p in parts if p)


def failed_runs(runs):
    return [r for r in runs if not r.ok]


def _failure_line(sweep, run):
    from rich.markup import escape

    detail = (run.failure or "").strip()
    log = sweep.inside(run.log) if run.log else None
    return "  %s bs=%s run %s: [red]%s[/]%s  log: %s" % (
        escape(run.model), run.batch_size, run.run, escape(str(run.status)),
        (" - " + escape(detail[:200])) if detail else "", escape(str(log)) if log else "(none)")


def print_summary(console, sweep, meta, rows, runs):
    """The rich summary a sweep ends with (also `report`'s table): SummaryRows, then each failed run."""
    from tfcnnwrap.render import make_table

    title = "%s  (%s)" % (sweep.path, describe(meta))
    console.print(make_table([row.to_dict() for row in rows], TABLE_COLUMNS, title=title))
    failures = failed_runs([RunRecord.coerce(r) for r in runs])
    if failures:
        console.print("[red]%d run(s) did not give a result:[/]" % len(failures), highlight=False)
        for run in sorted(failures, key=lambda r: (r.model, r.batch_size, r.run)):
            console.print(_failure_line(sweep, run), highlight=False)


def _plot(sweep, meta, runs, plot_path):
    import sys

    from tfcnnwrap.plotruns import plot_runs

    plot_runs(sweep, "%s (%s)" % (sweep.path, describe(meta)), runs, plot_path)
    sys.stderr.write("tfcnnwrap report: wrote %s\n" % plot_path)


def cmd_report(args):
    from tfcnnwrap import render

    plot_path = getattr(args, "plot", None)
    if plot_path:
        from tfcnnwrap.plot import require_matplotlib

        require_matplotlib()  # before any work: a missing extra is a usage error, not a late surprise
    path = Path(args.sweep_dir) if args.sweep_dir else newest_sweep()
    sweep, meta, runs = load_sweep(path)
    rows = summarize(runs, meta.plan_order)
    if plot_path:
        _plot(sweep, meta, runs, plot_path)
    if args.format == "table":
        print_summary(render.console(), sweep, meta, rows, runs)
        return 0
    # People read the table and Markdown; scripts read every column of the JSON and CSV.
    columns = SUMMARY_COLUMNS if args.format in ("json", "csv") else [c for c, _ in TABLE_COLUMNS]
    render.emit([row.to_dict() for row in rows], args.format, columns,
                title="%s (%s)" % (sweep.path, describe(meta)))
    return 0
