"""The `references` verb: the built-in (and the user's) published figures, filtered by GPU and model.

The table is a summary per GPU that fits an 80-column terminal; with ``--gpu`` it lists that GPU's rows.
CSV carries every row in the data's own columns, so it reads back with ``--references FILE``; JSON carries
every row per GPU with its launch price and board power.
"""

from tfcnnwrap import render
from tfcnnwrap.errors import UsageError
from tfcnnwrap.references import COLUMNS, load_references

SHORT_UPDATE = {"parameter_server": "ps", "replicated": "repl", "independent": "indep",
                "distributed_replicated": "dist-repl", "distributed_all_reduce": "dist-ar"}


def _distinct(values):
    out = []
    for v in values:
        if v not in ("", None) and v not in out:
            out.append(v)
    return out


def _fact_text(value, unit):
    """``$1,499`` / ``350 W``; ``unpublished`` as such; ``-`` for a figure not verified yet."""
    if isinstance(value, float):
        return ("$%s" if unit == "$" else "%s W") % format(value, ",.0f")
    return "unpublished" if value == "unpublished" else "-"


def select(references, gpu_name=None, model=None):
    """[(gpu, [its results])] after the --gpu and --model filters; UsageError when nothing is left."""
    gpus = [references.resolve(gpu_name)] if gpu_name else list(references)
    out = []
    for gpu in gpus:
        results = [r for r in gpu.results if not model or r.model == model]
        if results:
            out.append((gpu, results))
    if not out:
        models = sorted({r.model for g in gpus for r in g.results})
        raise UsageError("no reference row for model %r%s; models there: %s"
                         % (model, " on %s" % gpus[0].id if gpu_name else "", ", ".join(models)))
    return out


def summary_rows(selected):
    """One row per GPU: how many figures, which models, precisions and GPU counts, price and power."""
    rows = []
    for gpu, results in selected:
        counts = ",".join(map(str, sorted(_distinct(r.num_gpus for r in results))))
        if len(counts) > 9:  # 1,2,4,8,16,32,64 would not fit 80 columns
            numbers = [int(n) for n in counts.split(",")]
            counts = "%d-%d" % (numbers[0], numbers[-1])
        rows.append({
            "id": gpu.id,
            "name": gpu.name,
            "rows": len(results),
            "models": len(_distinct(r.model for r in results)),
            "precision": "/".join(sorted(_distinct(r.precision for r in results), reverse=True)),
            "gpus": counts,
            "price": _fact_text(gpu.facts.price_usd, "$"),
            "power": _fact_text(gpu.facts.power_w, "W"),
        })
    return rows


# No name column: the names would not fit 80 columns; `--gpu`, markdown-free JSON and CSV carry them.
SUMMARY_COLUMNS = [("id", "id"), ("rows", "rows"), ("precision", "precision"),
                   ("gpus", "GPU counts"), ("price", "launch"), ("power", "power")]
# No TF column: it would not fit 80 columns; each numbered source line says its TensorFlow version.
DETAIL_COLUMNS = [("model", "model"), ("batch_size", "batch"), ("images_per_sec", "img/s"),
                  ("precision", "prec"), ("num_gpus", "GPUs"), ("update", "update"), ("data", "data"),
                  ("xla", "XLA"), ("source", "src")]


def detail_rows(selected):
    """Every figure of the selection, with a number into the source lines printed under the table."""
    rows, sources = [], []
    for _, results in selected:
        for r in results:
            line = "(TF %s) %s" % (r.tf_version, r.source) if r.tf_version else r.source
            if line not in sources:
                sources.append(line)
            rows.append({
                "model": r.model, "batch_size": r.batch_size, "images_per_sec": r.display,
                "precision": r.precision, "num_gpus": r.num_gpus,
                "update": SHORT_UPDATE.get(r.variable_update, r.variable_update) or "-",
                "data": {"synthetic": "syn"}.get(r.data, r.data) or "-", "xla": r.xla or "-",
                "source": "[%d]" % (sources.index(line) + 1),
            })
    return rows, sources


def detail_json(selected):
    out = []
    for gpu, results in selected:
        facts = gpu.facts
        out.append({
            "id": gpu.id, "name": gpu.name, "aliases": list(gpu.aliases), "vendor": gpu.vendor,
            "origin": gpu.origin, "sources": _distinct(r.source for r in results),
            "launch_price_usd": facts.price_usd, "price_source": facts.price_source or None,
            "board_power_w": facts.power_w, "power_source": facts.power_source or None,
            "results": [
                {"model": r.model, "batch_size": r.batch_size, "images_per_sec": r.images_per_sec,
                 "precision": r.precision, "num_gpus": r.num_gpus, "variable_update": r.variable_update or None,
                 "data": r.data or None, "xla": r.xla or None, "tf_version": r.tf_version or None,
                 "source": r.source, "notes": r.notes or None}
                for r in results
            ],
        })
    return out


def flat_rows(selected):
    """Every row, in the CSV's own columns (a template for --references)."""
    rows = []
    for gpu, results in selected:
        for r in results:
            row = {"gpu_id": gpu.id, "gpu_name": gpu.name, "aliases": ";".join(gpu.aliases), "vendor": gpu.vendor}
            row.update({k: getattr(r, k) for k in COLUMNS[4:]})
            row["images_per_sec"] = r.display
            rows.append(row)
    return rows


def _print_lines(fmt, rows, columns, title, lines):
    if fmt == "markdown":
        render.emit(rows, fmt, columns=columns, title=title, caption="\n\n".join(lines))
        return
    render.emit(rows, fmt, columns=columns, title=title)
    out = render.console()
    for line in lines:
        render.print_note(out, line)


def cmd_references(args):
    references = load_references(getattr(args, "references", None))
    gpu_name, model = getattr(args, "gpu", None), getattr(args, "model", None)
    selected = select(references, gpu_name, model)
    fmt = getattr(args, "format", "table") or "table"
    if fmt == "json":
        render.emit(detail_json(selected), fmt, kind="references",
                    conditions={"gpu": gpu_name or None, "model": model or None})
    elif fmt == "csv":
        render.emit(flat_rows(selected), "csv", columns=COLUMNS)
    elif gpu_name:
        gpu = selected[0][0]
        rows, sources = detail_rows(selected)
        title = "%s: %s (tf_cnn_benchmarks, images/sec)" % (gpu.id, gpu.full_name)
        facts = "Launch price: %s; board power: %s." % (_fact_text(gpu.facts.price_usd, "$"),
                                                        _fact_text(gpu.facts.power_w, "W"))
        notes = ["update: ps = parameter_server, repl = replicated; images/sec in total over the GPUs.", facts]
        _print_lines(fmt, rows, DETAIL_COLUMNS, title, notes + ["[%d] %s" % (i + 1, s)
                                                               for i, s in enumerate(sources)])
    else:
        rows = summary_rows(selected)
        total = sum(r["rows"] for r in rows)
        notes = [
            "%d figures on %d GPUs. launch: the maker's announced price; power: board power; '-': not "
            "verified yet." % (total, len(rows)),
            ("`--gpu NAME` lists a GPU's figures and sources; `--format json` names every GPU; `--format csv` "
             "gives every row (a template for --references FILE)."),
            "Compare: tfcnnwrap compare SWEEP_DIR --against NAME[,NAME...]",
        ]
        _print_lines(fmt, rows, SUMMARY_COLUMNS, "Reference GPUs (tf_cnn_benchmarks)", notes)
    return 0
