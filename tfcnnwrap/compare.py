"""`compare`: a sweep against published references, or one sweep against another.

Against references each cell reads like the seed's table, ``203.99 (86.7%)``: the reference's images/sec as
published and measured / reference. A reference figure taken under other conditions (batch size, precision,
GPU count, variable update, data) is marked with a dagger, explained in a footnote and left out of the
geometric mean. Sweep against sweep: change per model and a Welch t-test at 95%.
"""

import math
from pathlib import Path

from tfcnnwrap import render
from tfcnnwrap.aggregate import ok_values, summarize
from tfcnnwrap.errors import UsageError
from tfcnnwrap.store import gpu_names, load_sweep, plan_order

MARK = "\u2020"  # dagger: a reference measured under other conditions
ALPHA = 0.05
GEOMEAN = "geomean"


# -- reading a sweep -------------------------------------------------------------------------------------


class Sweep:
    """A sweep directory read for comparison: its plan, its rows per model and batch size, its ok values."""

    def __init__(self, path):
        self.dir, self.meta, self.runs = load_sweep(path)
        self.path = Path(path)
        self.rows = measured_rows(self.meta, self.runs)
        self.values = ok_values(self.runs)

    @property
    def name(self):
        return self.path.resolve().name or str(self.path)

    @property
    def plan(self):
        return self.meta.get("plan") or {}

    def gpu_label(self):
        return gpu_names(self.meta) or None

    def label(self):
        gpu = self.gpu_label()
        return "%s (%s)" % (self.name, gpu) if gpu else self.name

    def conditions(self, batch_size=None):
        return sweep_conditions(self.plan, batch_size)


def measured_rows(meta, runs):
    """Summary rows in plan order; a planned pair without runs yet is kept with no mean."""
    order = [tuple(k) for k in plan_order(meta)]
    summary = {(r["model"], r["batch_size"]): r for r in summarize(runs, order)}
    rows = []
    for key in order:
        if key in summary:
            rows.append(summary.pop(key))
        elif key[0] is not None and key[1] is not None:
            rows.append({"model": key[0], "batch_size": key[1], "runs_ok": 0, "runs_failed": 0, "mean": None,
                         "std": None})
    rows.extend(summary.values())
    return rows


def _flag_value(extra_args, flag):
    """The value of ``--flag=V`` / ``--flag V`` / bare ``--flag`` in a tf_cnn_benchmarks argv, else None."""
    args = [str(a) for a in extra_args or []]
    for i, arg in enumerate(args):
        if arg == "--" + flag:
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                return args[i + 1]
            return "true"
        if arg.startswith("--%s=" % flag):
            return arg.split("=", 1)[1]
    return None


def _truthy(value):
    return str(value).strip().lower() in ("1", "true", "yes", "t", "y")


def sweep_conditions(plan, batch_size=None):
    """The conditions a sweep measured under, in the reference CSV's terms."""
    extra = plan.get("extra_args") or []
    flag = _flag_value(extra, "use_fp16")
    fp16 = flag is not None and _truthy(flag)
    num_gpus = plan.get("num_gpus") or 1
    variable_update = plan.get("variable_update") or "parameter_server"
    try:
        num_gpus = int(num_gpus)
    except (TypeError, ValueError):
        num_gpus = 1
    return {
        "batch_size": batch_size,
        "precision": "fp16" if fp16 else "fp32",
        "num_gpus": num_gpus,
        "variable_update": str(variable_update),
        "data": "real" if _flag_value(extra, "data_dir") else "synthetic",
    }


def conditions_line(cond):
    return " · ".join(
        [
            cond["precision"],
            "%d GPU%s" % (cond["num_gpus"], "" if cond["num_gpus"] == 1 else "s"),
            cond["variable_update"],
            "%s data" % cond["data"],
        ]
    )


def geometric_mean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _pct(ratio_pct):
    return "%.1f%%" % ratio_pct


# -- against references ----------------------------------------------------------------------------------


def _describe(key, value):
    if key == "num_gpus":
        return "%s GPU%s" % (value, "" if value == 1 else "s")
    if key == "batch_size":
        return "batch size %s" % value
    if key == "data":
        return "%s data" % value
    if key == "precision":
        return str(value)
    return "%s %s" % (key, value)


def against_references(sweep_path, against, references_csv=None):
    """The comparison as a dict: sweep, columns, rows (with a last geomean row), footnotes, sources."""
    from tfcnnwrap.references import load_references

    references = load_references(references_csv)
    columns = references.resolve_list(against)
    sweep = Sweep(sweep_path)
    rows = []
    footnotes = {}  # (reference, its conditions, the sweep's) -> models
    ratios = {i: [] for i in range(len(columns))}
    for measured in sweep.rows:
        model, batch_size, mean = measured["model"], measured["batch_size"], measured.get("mean")
        wanted = sweep.conditions(batch_size)
        cells = []
        for i, (typed, gpu) in enumerate(columns):
            result, differs = gpu.best_result(model, wanted)
            cell = {"name": typed, "id": gpu.id, "gpu_name": gpu.name, "images_per_sec": None,
                    "published": None, "ratio_pct": None, "comparable": None, "differs": {},
                    "conditions": None, "text": "n/a"}
            if result is not None:
                ratio = mean / result.images_per_sec * 100.0 if mean is not None else None
                comparable = not differs
                cell.update(
                    images_per_sec=result.images_per_sec,
                    published=result.display,
                    ratio_pct=ratio,
                    comparable=comparable,
                    differs={k: {"reference": getattr(result, k), "sweep": wanted[k]} for k in differs},
                    conditions=result.conditions(),
                )
                text = result.display
                if ratio is not None:
                    text += " (%s)" % _pct(ratio)
                if not comparable:
                    text += MARK
                    why = (typed,
                           ", ".join(_describe(k, getattr(result, k)) for k in differs),
                           ", ".join(_describe(k, wanted[k]) for k in differs))
                    footnotes.setdefault(why, []).append(model)
                elif ratio is not None:
                    ratios[i].append(ratio / 100.0)
                cell["text"] = text
            cells.append(cell)
        rows.append({"model": model, "batch_size": batch_size, "measured": mean,
                     "runs_ok": measured.get("runs_ok"), "references": cells})
    measured_count = sum(1 for r in rows if r["measured"] is not None)
    geo_cells = []
    for i, (typed, gpu) in enumerate(columns):
        g = geometric_mean(ratios[i])
        text = "n/a"
        if g is not None:
            text = _pct(g * 100.0)
            if len(ratios[i]) < measured_count:
                text += " (%d of %d)" % (len(ratios[i]), measured_count)
        geo_cells.append({"name": typed, "id": gpu.id, "gpu_name": gpu.name,
                          "ratio_pct": g * 100.0 if g is not None else None, "count": len(ratios[i]),
                          "text": text})
    rows.append({"model": GEOMEAN, "batch_size": None, "measured": None, "runs_ok": None,
                 "references": geo_cells})
    sources = []
    source_names = {}
    for typed, gpu in columns:
        for source in gpu.sources() or [gpu.origin]:
            if source not in sources:
                sources.append(source)
            source_names.setdefault(source, [])
            if typed not in source_names[source]:
                source_names[source].append(typed)
    return {
        "sweep": sweep,
        "columns": columns,
        "rows": rows,
        "footnotes": [
            "%s %s (%s): measured at %s, this sweep at %s; not in the geometric mean."
            % (MARK, typed, ", ".join(models), theirs, ours)
            for (typed, theirs, ours), models in footnotes.items()
        ],
        "sources": ["Source of %s: %s" % (", ".join(source_names[s]), s) for s in sources],
        "conditions": sweep.conditions(),
    }


def _against_json(comparison):
    out = []
    for row in comparison["rows"]:
        refs = []
        for cell in row["references"]:
            item = dict(cell)
            item.pop("text", None)
            item["cell"] = cell["text"]
            refs.append(item)
        out.append(dict(row, references=refs))
    return out


def _against_csv_rows(comparison):
    columns = ["model", "batch_size", "measured"]
    for typed, _ in comparison["columns"]:
        columns += ["%s images_per_sec" % typed, "%s ratio_pct" % typed, "%s comparable" % typed]
    rows = []
    for row in comparison["rows"]:
        flat = {"model": row["model"], "batch_size": row["batch_size"], "measured": row["measured"]}
        for cell in row["references"]:
            flat["%s images_per_sec" % cell["name"]] = cell.get("images_per_sec")
            flat["%s ratio_pct" % cell["name"]] = cell.get("ratio_pct")
            flat["%s comparable" % cell["name"]] = cell.get("comparable")
        rows.append(flat)
    return rows, columns


def _against_text_rows(comparison, short=False):
    columns = [("model", "model"), ("batch_size", "batch" if short else "batch size"), ("measured", "measured")]
    for i, (typed, _) in enumerate(comparison["columns"]):
        columns.append(("ref%d" % i, typed))
    rows = []
    for row in comparison["rows"]:
        text = {
            "model": row["model"],
            "batch_size": "" if row["batch_size"] is None else str(row["batch_size"]),
            "measured": "" if row["measured"] is None else "%.2f" % row["measured"],
        }
        if row["model"] != GEOMEAN and row["measured"] is None:
            text["measured"] = "no ok run"
        for i, cell in enumerate(row["references"]):
            text["ref%d" % i] = cell["text"]
        rows.append(text)
    return rows, columns


def render_against(comparison, fmt, stream=None):
    import sys

    stream = stream or sys.stdout
    if fmt == "json":
        render.emit(_against_json(comparison), "json", stream=stream)
        return
    if fmt == "csv":
        rows, columns = _against_csv_rows(comparison)
        render.emit(rows, "csv", columns=columns, stream=stream)
        return
    sweep = comparison["sweep"]
    title = "%s against published references (images/sec)" % sweep.label()
    notes = [
        "Cells: reference images/sec (measured / reference). This sweep: %s."
        % conditions_line(comparison["conditions"])
    ]
    if sweep.meta.get("device") == "cpu" or sweep.plan.get("device") == "cpu":
        notes.append("This sweep ran on the CPU; the references are GPUs.")
    notes += comparison["footnotes"]
    notes += comparison["sources"]
    rows, columns = _against_text_rows(comparison, short=(fmt != "markdown"))
    if fmt == "markdown":
        render.emit(rows, "markdown", columns=columns, title=title, caption="\n\n".join(notes), stream=stream)
        return
    _print_table(rows, columns, title, notes)


# -- sweep against sweep ---------------------------------------------------------------------------------


def welch(baseline, candidate):
    """(p_value, significant) of Welch's two-sample t-test; (None, None) with fewer than 2 runs a side.

    The same test as ``scipy.stats.ttest_ind(candidate, baseline, equal_var=False)``, computed from the
    Welch-Satterthwaite degrees of freedom and scipy.special's Student t distribution: importing
    scipy.stats alone costs a second, four times the rest of `compare`.
    """
    nb, nc = len(baseline), len(candidate)
    if nb < 2 or nc < 2:
        return None, None
    mb, mc = sum(baseline) / nb, sum(candidate) / nc
    vb = sum((x - mb) ** 2 for x in baseline) / (nb - 1) / nb
    vc = sum((x - mc) ** 2 for x in candidate) / (nc - 1) / nc
    if vb + vc == 0.0:
        # Neither side has any spread: t is undefined, and any difference is certain.
        p = 0.0 if mb != mc else 1.0
        return p, p < ALPHA
    from scipy.special import stdtr

    t = (mc - mb) / math.sqrt(vb + vc)
    df = (vb + vc) ** 2 / (vb ** 2 / (nb - 1) + vc ** 2 / (nc - 1))
    p = float(min(1.0, 2.0 * stdtr(df, -abs(t))))
    return p, p < ALPHA


def _plan_differences(a, b):
    keys = ["device", "num_gpus", "variable_update", "use_fp16", "num_batches", "num_warmup_batches", "quick",
            "extra_args"]
    out = []
    for key in keys:
        va, vb = a.plan.get(key), b.plan.get(key)
        if va != vb:
            out.append("%s %s vs %s" % (key, va, vb))
    return out


def sweep_vs_sweep(baseline_path, candidate_path):
    baseline, candidate = Sweep(baseline_path), Sweep(candidate_path)
    base_rows = {(r["model"], r["batch_size"]): r for r in baseline.rows}
    cand_rows = {(r["model"], r["batch_size"]): r for r in candidate.rows}
    keys = list(base_rows) + [k for k in cand_rows if k not in base_rows]
    rows = []
    changes = []
    for key in keys:
        b, c = base_rows.get(key) or {}, cand_rows.get(key) or {}
        b_mean, c_mean = b.get("mean"), c.get("mean")
        change = (c_mean / b_mean - 1.0) * 100.0 if b_mean and c_mean is not None else None
        p_value, significant = welch(baseline.values.get(key, []), candidate.values.get(key, []))
        if change is not None:
            changes.append(c_mean / b_mean)
        rows.append(
            {
                "model": key[0],
                "batch_size": key[1],
                "baseline": b_mean,
                "candidate": c_mean,
                "change_pct": change,
                "significant": significant,
                "p_value": p_value,
                "baseline_runs": b.get("runs_ok") if b else None,
                "candidate_runs": c.get("runs_ok") if c else None,
                "baseline_std": b.get("std"),
                "candidate_std": c.get("std"),
            }
        )
    g = geometric_mean(changes)
    rows.append(
        {
            "model": GEOMEAN,
            "batch_size": None,
            "baseline": None,
            "candidate": None,
            "change_pct": (g - 1.0) * 100.0 if g is not None else None,
            "significant": None,
            "p_value": None,
            "baseline_runs": None,
            "candidate_runs": None,
            "baseline_std": None,
            "candidate_std": None,
            "pairs": len(changes),
        }
    )
    return {"baseline": baseline, "candidate": candidate, "rows": rows,
            "differences": _plan_differences(baseline, candidate)}


AB_COLUMNS = ["model", "batch_size", "baseline", "candidate", "change_pct", "significant", "p_value",
              "baseline_runs", "candidate_runs", "baseline_std", "candidate_std"]


def _significance_text(row):
    if row["model"] == GEOMEAN:
        return ""
    if row["significant"] is None:
        return "n/a"
    return "yes" if row["significant"] else "no"


def _p_text(p):
    if p is None:
        return ""
    return "<0.001" if p < 0.001 else "%.3f" % p


def _ab_text_rows(result, short=False):
    rows = []
    for row in result["rows"]:
        runs = ""
        if row["model"] != GEOMEAN:
            runs = "%s/%s" % (
                "-" if row["baseline_runs"] is None else row["baseline_runs"],
                "-" if row["candidate_runs"] is None else row["candidate_runs"],
            )
        rows.append(
            {
                "model": row["model"],
                "batch_size": "" if row["batch_size"] is None else str(row["batch_size"]),
                "baseline": "" if row["baseline"] is None else "%.2f" % row["baseline"],
                "candidate": "" if row["candidate"] is None else "%.2f" % row["candidate"],
                "change": "" if row["change_pct"] is None else "%+.1f%%" % row["change_pct"],
                "significant": _significance_text(row),
                "p": _p_text(row["p_value"]),
                "runs": runs,
            }
        )
    if short:
        headers = ["model", "batch", "baseline", "candidate", "change", "signif", "p", "runs"]
    else:
        headers = ["model", "batch size", "baseline", "candidate", "change", "significant", "p-value",
                   "ok runs (b/c)"]
    keys = ["model", "batch_size", "baseline", "candidate", "change", "significant", "p", "runs"]
    return rows, list(zip(keys, headers))


def render_ab(result, fmt, stream=None):
    import sys

    stream = stream or sys.stdout
    if fmt == "json":
        render.emit(result["rows"], "json", stream=stream)
        return
    if fmt == "csv":
        render.emit(result["rows"], "csv", columns=AB_COLUMNS + ["pairs"], stream=stream)
        return
    title = "candidate %s against baseline %s, images/sec" % (
        result["candidate"].label(), result["baseline"].label())
    notes = [
        "change = candidate / baseline - 1. Significant: Welch's t-test (unequal variances) at 95%, "
        "n/a when a side has fewer than 2 ok runs."
    ]
    if result["differences"]:
        notes.append("Note: the sweeps' plans differ: %s." % "; ".join(result["differences"]))
    rows, columns = _ab_text_rows(result, short=(fmt != "markdown"))
    if fmt == "markdown":
        render.emit(rows, "markdown", columns=columns, title=title, caption="\n\n".join(notes), stream=stream)
        return
    _print_table(rows, columns, title, notes)


def _print_table(rows, columns, title, notes):
    """A rich table in which a model name never folds (``resnet152`` split in two reads badly). When the
    terminal is too narrow, two-part cells such as ``203.99 (86.7%)`` go on two lines. Then the notes."""
    out = render.console()

    def width(key, header):
        return max([len(str(r.get(key) or "")) for r in rows] + [len(header)])

    if sum(width(k, h) + 3 for k, h in columns) + 1 > out.width:
        rows = [{k: (v.replace(" (", "\n(", 1) if isinstance(v, str) else v) for k, v in r.items()}
                for r in rows]
    table = render.make_table(rows, columns, title)
    table.columns[0].no_wrap = True
    table.columns[0].min_width = width(*columns[0])
    out.print(table)
    for line in notes:
        out.print(line, markup=False)


# -- the verb --------------------------------------------------------------------------------------------


def _check_args(args):
    dirs = list(getattr(args, "dirs", None) or [])
    against = getattr(args, "against", None)
    if len(dirs) > 2:
        raise UsageError(
            "compare takes one sweep (with --against) or two sweeps (baseline, candidate), not %d" % len(dirs)
        )
    if len(dirs) == 1 and not against:
        raise UsageError(
            "comparing one sweep needs --against NAME[,NAME...] (see `tfcnnwrap references`), "
            "or give two sweep directories to compare them"
        )
    if len(dirs) == 2 and against is not None:
        raise UsageError(
            "--against compares one sweep with references; drop it to compare two sweeps, or give one sweep"
        )
    if len(dirs) == 2 and getattr(args, "references", None):
        raise UsageError("--references only goes with --against; drop it to compare two sweeps")
    return dirs, against


def cmd_compare(args):
    import sys

    dirs, against = _check_args(args)
    fmt = getattr(args, "format", None) or "table"
    plot_path = getattr(args, "plot", None)
    if plot_path:
        from tfcnnwrap.plot import require_matplotlib

        require_matplotlib()
    if against is not None:
        result = against_references(dirs[0], against, getattr(args, "references", None))
        render_against(result, fmt)
        if plot_path:
            from tfcnnwrap.plot import plot_against

            plot_against(result, plot_path)
    else:
        result = sweep_vs_sweep(dirs[0], dirs[1])
        render_ab(result, fmt)
        if plot_path:
            from tfcnnwrap.plot import plot_ab

            plot_ab(result, plot_path)
    if plot_path:
        sys.stderr.write("tfcnnwrap compare: wrote %s\n" % plot_path)
    return 0
