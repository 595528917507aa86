"""`--format html`: one self-contained page (no CDN, no external font, script or style; works with
JavaScript off) for `report` and every view of `compare`, built from the same row objects as
`--format json`, with Jinja2 templates (tfcnnwrap/templates) that also draw the inline SVG charts
(geometry: svgcharts). Autoescaping is on: GPU names, notes and paths come from other people's files.

Numbers are written as text by one rule (`num`): integers whole, other numbers with two decimals (below
0.01: three significant digits), so every number of the JSON is in the page's tables.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple
from urllib.parse import quote

from tfcnnwrap import __version__
from tfcnnwrap.errors import UsageError
from tfcnnwrap.pages import svgcharts
from tfcnnwrap.present.outfile import check_out, emit  # noqa: F401 - the pages' writers (comparepage)
from tfcnnwrap.present.plotruns import run_series, seconds_label
from tfcnnwrap.present.report import (
    ReportArgs,
    input_cost_lines,
    quality_lines,
    table_columns,
    title_parts,
)
from tfcnnwrap.render import safe_text
from tfcnnwrap.results.aggregate import summarize
from tfcnnwrap.results.fleetreport import with_fleet
from tfcnnwrap.results.store import load_sweep, newest_sweep
from tfcnnwrap.results.sweepconditions import plan_conditions

if TYPE_CHECKING:
    from jinja2.environment import Environment

    from tfcnnwrap.results.records import RunRecord, SweepMeta
    from tfcnnwrap.results.store import SweepDir

_ENV: list = []


def environment() -> Environment:
    """The Jinja2 environment (imported here, not at start-up: `--help` and other formats never need it)."""
    if not _ENV:
        import jinja2  # Jinja2: only an html page needs it, never --help or the other formats

        # finalize: every value a page shows passes render.safe_text before it is HTML-escaped, so a name from
        # a bundle cannot reverse the text after it (U+202E) or hide a control character; Markup is ours
        env = jinja2.Environment(
            loader=jinja2.PackageLoader("tfcnnwrap", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            finalize=_shown,
        )
        env.filters["num"] = num
        _ENV.append(env)
    return _ENV[0]


def _shown(value: Any) -> Any:
    import markupsafe  # Jinja2's own dependency: only an html page needs it

    return safe_text(value) if isinstance(value, str) and not isinstance(value, markupsafe.Markup) else value


def render(template: str, **context: Any) -> str:
    context.setdefault("version", __version__)
    return environment().get_template(template).render(**context)


def num(value: Any) -> str:
    """A number as the page writes it (the module's rule); None and non-finite as a dash."""
    if value is None:
        return "\u2013"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "\u2013"
        if value != 0 and abs(value) < 0.01:
            return "%.3g" % value
        return "%.2f" % value
    if isinstance(value, (list, tuple)):
        return ", ".join(num(v) for v in value)
    if isinstance(value, dict):
        return "; ".join("%s: %s" % (k, num(v)) for k, v in value.items())
    return str(value)


def pct(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "\u2013"
    text = num(float(value))
    return ("+" + text if signed and value > 0 else text) + "%"


def cell(text: Any, cls: str = "", href: Optional[str] = None, title: Optional[str] = None) -> dict:
    return {"text": text if isinstance(text, str) else num(text), "cls": cls, "href": href, "title": title}


def numcell(value: Any) -> dict:
    return cell(num(value), "n" if isinstance(value, (int, float)) and not isinstance(value, bool) else "")


@dataclass
class Table:
    """A real <table>: a caption, header cells, rows of cells (dicts from `cell`)."""

    caption: str
    headers: List[str]
    rows: List[List[dict]] = field(default_factory=list)
    row_classes: List[str] = field(default_factory=list)
    # on a narrow screen each row becomes a card of labelled cells (no sideways scrolling for the figures)
    cards: bool = False


# -- a sweep's (or a bundle's) results -----------------------------------------------------------------------


@dataclass
class ResultView:
    """What a results page shows of one sweep or bundle (report rows as `--format json` has them)."""

    label: str
    gpu: str
    parts: List[str]  # the conditions, one part each
    rows: List[dict]
    runs: List[Any]  # RunRecords
    environment: List[tuple]  # (what, text)
    created_at: str = ""
    conditions: dict = field(default_factory=dict)  # precision, xla, variable_update, data as text
    # run.key -> (steps, gpu samples) and -> its log's link; plain data, so a view crosses processes
    series: dict = field(default_factory=dict)
    log_links: dict = field(default_factory=dict)
    count_unit: str = "GPU"  # on the CPU tf_cnn_benchmarks counts towers, as the report's title says
    advice: List[str] = field(default_factory=list)  # each flag with what to do, as the terminal says it
    input_cost: List[str] = field(default_factory=list)  # a sweep of both data kinds: report's lines under its table

    @property
    def count_header(self) -> str:
        return self.count_unit + "s"

    def log_link(self, run: RunRecord) -> dict:
        return self.log_links.get(run.key) or {"state": "none", "text": "no log recorded"}


# Labels and units of the recorded environment's keys (envinfo.Environment); others read as their key does.
_ENV_LABELS = {
    "ram_bytes": "RAM",
    "cpu_model": "CPU",
    "cpu_logical_cores": "CPU threads",
    "cpu_physical_cores": "CPU cores",
    "gpus": "GPUs TensorFlow saw",
    "nvidia_driver": "NVIDIA driver",
    "captured_at": "recorded",
    "target_python": "Python (target)",
    "nvidia_smi_gpus": "GPUs nvidia-smi saw",
}


def environment_items(meta: SweepMeta) -> List[tuple]:
    """The environment a sweep recorded as (label, text) rows: units on sizes, lists as lists, a nested record
    one row per field; nothing twice (the upstream URL is the checkout's)."""
    items: List[Tuple[str, object]] = [
        ("tfcnnwrap", meta.tfcnnwrap_version),
        ("created", meta.created_at),
        ("device", meta.device),
        ("TensorFlow", meta.tensorflow_version),
        ("upstream", meta.upstream.url),
        ("branch", meta.upstream.branch),
        ("commit", meta.upstream.commit),
    ]
    seen = {what for what, value in items if value}
    for key, value in sorted((meta.environment or {}).items()):
        label = _ENV_LABELS.get(str(key), str(key).replace("_", " "))
        if label in seen:
            continue
        if isinstance(value, dict):
            items += [("%s %s" % (label, str(k).replace("_", " ")), v) for k, v in sorted(value.items())]
        else:
            items.append((label, _gib(value) if key == "ram_bytes" else value))
    return [(what, text_of(value)) for what, value in items if value not in (None, "", [], {})]


def _gib(value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return "%.1f GiB" % (value / 2**30)
    return value


def text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(text_of(v) for v in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return num(value)


def sweep_view(path: Path, out_dir: Optional[Path], root: Optional[Path] = None) -> ResultView:
    """A sweep directory's view for a page in ``out_dir``; its logs are linked when they sit under ``root``
    (default: ``out_dir``), the folder that is served or opened with the page."""
    sweep, meta, runs = load_sweep(Path(path))
    summary = with_fleet(summarize(runs, meta.plan_order))
    rows = [r.to_dict() for r in summary]
    cond = plan_conditions(meta) or {}
    conditions = {
        k: "not recorded" if cond.get(k) in (None, "") else str(cond[k])
        for k in ("precision", "variable_update", "data")
    }
    conditions["xla"] = "XLA" if cond.get("xla") in (True, "yes", "on", "true") else "no XLA"
    return ResultView(
        label=str(path),
        gpu=meta.gpu_names() or ("CPU" if meta.on_cpu else "GPU not recorded"),
        parts=title_parts(path, meta)[1:],
        rows=rows,
        runs=runs,
        conditions=conditions,
        environment=environment_items(meta),
        created_at=meta.created_at or "",
        series={run.key: run_series(sweep, run) for run in runs},
        log_links={run.key: sweep_log_link(sweep, run, out_dir, root) for run in runs},
        count_unit="tower" if meta.on_cpu else "GPU",
        advice=quality_lines(summary),
        input_cost=input_cost_lines(summary),
    )


def sweep_log_link(sweep: SweepDir, run: RunRecord, out_dir: Optional[Path], root: Optional[Path] = None) -> dict:
    """A run's log: a relative link when the file sits under the page's folder, ``missing`` when the record
    names a file that is not there, the path as text otherwise (never a link that leads nowhere)."""
    if not run.log:
        return {"state": "none", "text": "no log recorded"}
    log = sweep.inside(run.log)
    if log is None:
        return {"state": "missing", "text": "outside the sweep: not shown"}
    if not log.is_file():
        return {"state": "missing", "text": "missing: %s" % run.log}
    if out_dir is not None:
        try:
            log.relative_to((root or out_dir).resolve())
        except ValueError:
            return {"state": "text", "text": str(log)}
        rel = Path(os.path.relpath(str(log), str(out_dir.resolve())))
        return {"state": "ok", "text": run.log, "href": quote(rel.as_posix())}
    return {"state": "text", "text": str(log)}


# -- report ------------------------------------------------------------------------------------------------


def flag_texts(row: dict) -> List[str]:
    """The quality flags a row carries (``flags`` as the report sets them; older rows: their own fields,
    read as they are); a throttle names its reasons."""
    flags = row.get("flags")
    out = []
    if isinstance(flags, (list, tuple)):
        out = [f if isinstance(f, str) else num(f) for f in flags]
    elif isinstance(flags, dict):
        out = [k if v is True else "%s: %s" % (k, num(v)) for k, v in flags.items() if v]
    elif flags is None:
        if row.get("outlier_runs"):
            out.append("outlier runs %s" % num(row["outlier_runs"]))
        if row.get("ci95_wide"):
            out.append("wide CI")
        if row.get("drifting_runs"):
            out.append("drift (%s runs)" % num(row["drifting_runs"]))
        if row.get("throttled_runs"):
            out.append("throttled (%s runs)" % num(row["throttled_runs"]))
    reasons = row.get("throttle_reasons")
    if reasons and any(f.startswith("throttl") for f in out):
        out = [f + ": " + num(reasons) if f.startswith("throttl") else f for f in out]
    return out


def summary_tables(rows: List[dict], caption: str, count_header: str = "GPUs") -> Tuple[Table, Table]:
    """(main, more): the report's own columns with its headers (those a terminal shows, flags last), and every
    other column of the JSON rows that holds a value somewhere, behind a disclosure on the page."""
    core = [c for c in table_columns(rows) if c.key != "flags"]
    names = {c.key: count_header if c.key == "num_gpus" else c.header for c in core}
    main = Table(caption, [names[c.key] for c in core] + ["flags"], cards=True)
    for row in rows:
        flags = flag_texts(row)
        main.rows.append(
            [numcell(row.get(c.key)) for c in core]
            + [cell(", ".join(flags) if flags else "none", "flag" if flags else "muted")]
        )
        main.row_classes.append("flagged" if flags else "")
    keys: List[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys and k not in names and k != "flags"]
    keys = [k for k in keys if any(r.get(k) not in (None, "", [], {}) for r in rows)]
    more = Table(
        "Every other column of report --format json",
        ["model", "batch"] + [k.replace("_", " ") for k in keys],
        cards=True,
    )
    for row in rows:
        more.rows.append(
            [cell(str(row.get("model"))), numcell(row.get("batch_size"))] + [numcell(row.get(k)) for k in keys]
        )
        more.row_classes.append("")
    return main, more


def config_label(row: object, count_header: str = "GPUs") -> str:
    get = row.get if isinstance(row, dict) else (lambda k: getattr(row, k, None))
    text = "%s bs%s" % (get("model"), get("batch_size"))
    if (get("num_gpus") or 1) > 1:
        text += " \u00d7%s %s" % (get("num_gpus"), count_header)
    if get("data"):
        text += " %s data" % get("data")
    if get("host"):
        text += " @ %s" % get("host")
    return text


def means_charts(rows: List[dict], count_header: str = "GPUs") -> List[svgcharts.BarChart]:
    """One chart per model with two or more configurations, each on its own scale (a model's figure is not
    drawn against another's); a model with one configuration is a row of the table, not a one-bar chart."""
    by_model: Dict[str, List[dict]] = {}
    for r in rows:
        if isinstance(r.get("mean"), (int, float)):
            by_model.setdefault(str(r.get("model")), []).append(r)
    charts = []
    for model, model_rows in by_model.items():
        if len(model_rows) < 2:
            continue
        bars = [
            svgcharts.Bar(
                config_label(r, count_header), r["mean"], num(r["mean"]), r.get("min"), r.get("max"), "measured"
            )
            for r in model_rows
        ]
        desc = "; ".join(
            "%s: %s images/sec (min %s, max %s)" % (b.label, b.text, num(b.low), num(b.high)) for b in bars
        )
        charts.append(
            svgcharts.bar_chart(
                "%s: mean images/sec per configuration (whiskers: min to max of the ok runs)" % model,
                bars,
                axis="images/sec",
                desc=desc,
            )
        )
    return charts


def scaling_chart(rows: List[dict], unit: str = "GPU") -> Optional[svgcharts.LineChart]:
    """images/sec against GPU (or tower) count per model, with the ideal (one's figure times the count)
    dashed."""
    by_model: dict = {}
    for r in rows:
        if isinstance(r.get("mean"), (int, float)) and r.get("num_gpus"):
            by_model.setdefault(r["model"], []).append((r["num_gpus"], r["mean"]))
    if len({n for pts in by_model.values() for n, _ in pts}) < 2:
        return None
    series: list = []
    for model, pts in by_model.items():
        pts.sort()
        one = dict(pts).get(1)
        series.append((model, pts, "solid"))
        if one:
            series.append(("%s ideal" % model, [(n, one * n) for n, _ in pts], "dashed"))
    desc = "; ".join(
        "%s: %s" % (m, ", ".join("%d %s%s %s" % (n, unit, "" if n == 1 else "s", num(v)) for n, v in p))
        for m, p, s in series
        if s == "solid"
    )
    return svgcharts.line_chart(
        "Scaling: images/sec against %s count (dashed: ideal)" % unit,
        series,
        xlabel=unit + "s",
        ylabel="images/sec",
        desc=desc,
    )


def runs_table(view: ResultView) -> Table:
    table = Table(
        "Every run, with its log",
        [
            "model",
            "batch",
            view.count_header,
            "run",
            "status",
            "images/sec",
            "seconds",
            "started",
            "max \u00b0C",
            "throttled",
            "log",
        ],
    )
    order: dict = {}
    for run in view.runs:
        order.setdefault(config_label(run, view.count_header), len(order))
    for run in sorted(view.runs, key=lambda r: (order[config_label(r, view.count_header)], r.run)):
        gpu = run.gpu
        link = view.log_link(run)
        log = cell(link["text"], "log-" + link["state"], href=link.get("href"))
        table.rows.append(
            [
                cell(run.model),
                numcell(run.batch_size),
                numcell(run.num_gpus),
                numcell(run.run),
                cell(str(run.status.value if hasattr(run.status, "value") else run.status)),
                numcell(run.images_per_sec),
                numcell(run.duration_s),
                cell(run.started_at or ""),
                numcell(gpu.max_temp_c if gpu else None),
                cell("" if gpu is None or gpu.throttled is None else num(gpu.throttled)),
                log,
            ]
        )
        table.row_classes.append("" if run.ok else "failed")
    return table


GPU_PANELS = (("temp_c", "temperature", "\u00b0C"), ("sm_clock_mhz", "SM clock", "MHz"), ("power_w", "power", "W"))


def run_charts(view: ResultView, limit: int = 24) -> List[Any]:
    """Per configuration: each run's step rate over its steps, then the GPU's temperature, clock and power
    over the run's seconds (when it sampled them); at most ``limit`` configurations."""
    if not view.series:
        return []
    by_config: dict = {}
    for run in view.runs:
        by_config.setdefault(config_label(run, view.count_header), []).append(run)
    charts = []
    for label, runs in list(by_config.items())[:limit]:
        series: list = [(run, view.series.get(run.key) or ([], [])) for run in sorted(runs, key=lambda r: r.run)]
        steps = [("run %d" % run.run, [(float(s), float(v)) for s, v in st], "solid") for run, (st, _) in series]
        chart = svgcharts.line_chart(
            "%s: images/sec of every step, per run" % label,
            steps,
            xlabel="step",
            ylabel="images/sec",
            desc=_series_desc(steps, "images/sec"),
        )
        charts += [chart] if chart else []
        for key, name, unit in GPU_PANELS:
            lines = []
            for run, (_, samples) in series:
                secs = seconds_label(samples)
                lines.append(
                    (
                        "run %d" % run.run,
                        [
                            (float(t), float(s[key]))
                            for t, s in zip(secs, samples)
                            if isinstance(s.get(key), (int, float))
                        ],
                        "solid",
                    )
                )
            chart = svgcharts.line_chart(
                "%s: GPU %s (%s) over seconds into the run" % (label, name, unit),
                lines,
                xlabel="seconds",
                ylabel=unit,
                desc=_series_desc(lines, unit),
            )
            charts += [chart] if chart else []
    return charts


def _series_desc(series: List[Tuple[str, List[Any], str]], unit: str) -> str:
    parts = []
    for name, pts, _ in series:
        if pts:
            ys = [y for _, y in pts]
            parts.append("%s: %d points from %s to %s %s" % (name, len(pts), num(min(ys)), num(max(ys)), unit))
    return "; ".join(parts)


def report_context(view: ResultView, runs_detail: bool = True) -> dict:
    """What the report template (and a site's result page) shows of one sweep or bundle."""
    scaling = scaling_chart(view.rows, view.count_unit)
    charts = means_charts(view.rows, view.count_header) + ([scaling] if scaling else [])
    flagged = [(config_label(r, view.count_header), flag_texts(r)) for r in view.rows if flag_texts(r)]
    summary, more = summary_tables(view.rows, "images/sec per configuration (ok runs)", view.count_header)
    return {
        "view": view,
        "summary": summary,
        "more": more,
        "charts": charts,
        "run_charts": run_charts(view) if runs_detail else [],
        "runs": runs_table(view),
        "flagged": flagged,
        "failed": sum(1 for r in view.runs if not r.ok),
    }


def report_page(sweep_dir: Path, out: Optional[Path]) -> str:
    view = sweep_view(sweep_dir, out.parent if out is not None else None)
    return render("report.html.j2", title="%s \u2014 tf_cnn_benchmarks report" % view.gpu, **report_context(view))


def cmd_report_html(args: ReportArgs) -> int:
    """`report --format html [--out FILE]`."""
    if args.plot:
        raise UsageError("--plot goes with --format table, markdown, csv or json; the HTML page draws its own charts")
    out = check_out(args.out)
    path = Path(args.sweep_dir) if args.sweep_dir else newest_sweep()
    emit(report_page(path, out), out)
    return 0
