"""The `report` verb and the end-of-sweep summary: statistics per model and batch size, failures by name."""

from pathlib import Path

from tfcnnwrap.aggregate import SUMMARY_COLUMNS, summarize
from tfcnnwrap.store import gpu_names, load_sweep, newest_sweep, plan_order

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
    upstream = meta.get("upstream") or {}
    parts = [
        gpu_names(meta) or ("CPU" if meta.get("device") == "cpu" else None),
        "TF %s" % meta.get("tensorflow_version") if meta.get("tensorflow_version") else None,
        upstream.get("branch"),
        "device %s" % meta.get("device") if meta.get("device") else None,
    ]
    return ", ".join(p for p in parts if p)


def failed_runs(runs):
    return [r for r in runs if r.get("status") != "ok"]


def print_summary(console, sweep, meta, rows, runs):
    """The rich summary a sweep ends with (also `report`'s table)."""
    from tfcnnwrap.render import make_table

    console.print(make_table(rows, TABLE_COLUMNS, title="%s  (%s)" % (sweep.path, describe(meta))))
    failures = failed_runs(runs)
    if failures:
        console.print("[red]%d run(s) did not give a result:[/]" % len(failures), highlight=False)
        from rich.markup import escape

        for r in sorted(failures, key=lambda r: (str(r.get("model")), r.get("batch_size") or 0, r.get("run") or 0)):
            detail = (r.get("failure") or "").strip()
            log = sweep.inside(r.get("log")) if r.get("log") else None
            console.print(
                "  %s bs=%s run %s: [red]%s[/]%s  log: %s"
                % (
                    escape(str(r.get("model"))),
                    r.get("batch_size"),
                    r.get("run"),
                    escape(str(r.get("status"))),
                    (" - " + escape(detail[:200])) if detail else "",
                    escape(str(log)) if log else "(none)",
                ),
                highlight=False,
            )


def cmd_report(args):
    from tfcnnwrap import render

    path = Path(args.sweep_dir) if args.sweep_dir else newest_sweep()
    sweep, meta, runs = load_sweep(path)
    rows = summarize(runs, plan_order(meta))
    if args.format == "table":
        print_summary(render.console(), sweep, meta, rows, runs)
    else:
        render.emit(rows, args.format, SUMMARY_COLUMNS, title="%s (%s)" % (sweep.path, describe(meta)))
    return 0
