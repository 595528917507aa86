"""How a comparison reads: the seed's cells (``203.99 (86.7%)``), the dagger and its footnotes, the
conditions line, and the table, Markdown, CSV and JSON forms of compare's results (compare.py computes)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple

from tfcnnwrap import render
from tfcnnwrap.present.linknote import link_cost_json, link_cost_lines, link_notes
from tfcnnwrap.prose import Wrapped
from tfcnnwrap.results.closest import tf_differs

if TYPE_CHECKING:
    from tfcnnwrap.results.comparison import AgainstReferences
    from tfcnnwrap.results.records import GeomeanCell

MARK = "\u2020"  # dagger: a reference measured under other conditions
GEOMEAN = "geomean"  # the model column of the geometric-mean row in every output form


def pct(ratio_pct: float) -> str:
    return "%.1f%%" % ratio_pct


def count_unit(sweep: Any) -> str:  # Any: a comparesweep.Sweep
    """What a sweep's counts count: GPUs, or on the CPU tf_cnn_benchmarks' towers on /cpu:0, /cpu:1, ..."""
    return "tower" if sweep.meta.on_cpu else "GPU"


def conditions_line(cond: Dict[str, Any], sep: str = " · ", unit: str = "GPU") -> str:
    """``fp32 · 1 GPU · parameter_server · synthetic data`` for a plan's conditions (``unit``: "tower" on
    the CPU)."""
    gpus = "%d %s%s" % (cond["num_gpus"], unit, "" if cond["num_gpus"] == 1 else "s")
    parts = [cond["precision"], gpus, cond["variable_update"], "%s data" % cond["data"]]
    return sep.join(parts + (["XLA"] if cond.get("xla") == "yes" else []))


def describe_condition(key: str, value: object) -> str:
    if key == "num_gpus":
        return "%s GPU%s" % (value, "" if value == 1 else "s")
    if key == "batch_size":
        return "batch size %s" % value
    if key == "data":
        return "%s data" % value
    if key == "precision":
        return str(value)
    if key == "xla":
        return "XLA %s" % ("on" if value == "yes" else "off")
    return "%s %s" % (key, value)


def cell_text(cell: Any) -> str:  # Any: a ReferenceCell; a found one has its published figure, unseen by mypy
    """The seed's cell: published images/sec, (measured / reference), a dagger under other conditions."""
    if not cell.found:
        return "n/a"
    text = cell.published
    if cell.ratio_pct is not None:
        text += " (%s)" % pct(cell.ratio_pct)
    return text if cell.comparable else text + MARK


def geomean_text(cell: GeomeanCell) -> str:
    if cell.ratio_pct is None:
        return "n/a"
    text = pct(cell.ratio_pct)
    return text + (" (%d of %d)" % (cell.count, cell.of) if cell.count < cell.of else "")


def footnotes(comparison: AgainstReferences) -> List[Any]:
    """One line per reason a figure is not comparable (its conditions against the sweep's), naming each
    reference it concerns with its models (references with the same models share one entry): a reason shared
    by seven references is one line, not seven."""
    reasons: Dict[Tuple[str, str], Dict[str, List[str]]] = {}
    for row in comparison.rows:
        for cell in row.cells:
            if cell.found and not cell.comparable:
                why = (
                    ", ".join(describe_condition(k, v["reference"]) for k, v in cell.differs.items()),
                    ", ".join(describe_condition(k, v["sweep"]) for k, v in cell.differs.items()),
                )
                reasons.setdefault(why, {}).setdefault(cell.name, []).append(row.model)
    lines = []
    for (theirs, ours), by_reference in reasons.items():
        same: Dict[Tuple[str, ...], List[str]] = {}
        for name, models in by_reference.items():
            same.setdefault(tuple(models), []).append(name)
        entries = ["%s (%s)" % (", ".join(names), ", ".join(models)) for models, names in same.items()]
        lines.append(
            "%s %s: measured at %s, this sweep at %s; not in the geometric mean."
            % (MARK, "; ".join(entries), theirs, ours)
        )
    return lines


# -- against references ----------------------------------------------------------------------------------

_CELL_KEYS = (
    "name",
    "id",
    "gpu_name",
    "images_per_sec",
    "published",
    "ratio_pct",
    "comparable",
    "differs",
    "conditions",
    "tf_version",
)


def against_json(comparison: AgainstReferences) -> Dict[str, Any]:
    """`--format json`: a row per configuration with its reference cells; the geometric mean per reference
    in ``geomean`` (never a model row); the sweep's conditions."""
    out = []
    for row in comparison.rows:
        refs = [dict({k: getattr(c, k) for k in _CELL_KEYS}, cell=cell_text(c)) for c in row.cells]
        out.append(
            {
                "model": row.model,
                "batch_size": row.batch_size,
                "num_gpus": row.num_gpus,
                "measured": row.measured,
                "runs_ok": row.runs_ok,
                "references": refs,
            }
        )
    geo = [
        {
            "name": g.name,
            "id": g.id,
            "gpu_name": g.gpu_name,
            "ratio_pct": g.ratio_pct,
            "count": g.count,
            "cell": geomean_text(g),
        }
        for g in comparison.geomean
    ]
    sweep = comparison.sweep
    return dict(
        rows=out,
        conditions=dict(comparison.conditions, gpu=sweep.gpu_label()),
        extra={
            "sweep": str(sweep.path),
            "strict": comparison.strict,
            "geomean": geo,
            "link_cost": link_cost_json(comparison.link_cost),
        },
    )


# Any: an AgainstReferences (typed, mypy would narrow the rows' dict values to the first row's types)
def against_csv_rows(comparison: Any) -> Tuple[List[Dict[str, Any]], List[str]]:
    columns = ["model", "batch_size", "measured"]
    for typed, _ in comparison.columns:
        columns += ["%s images_per_sec" % typed, "%s ratio_pct" % typed, "%s comparable" % typed]
    rows = []
    for row in comparison.rows:
        flat = {"model": row.model, "batch_size": row.batch_size, "measured": row.measured}
        for c in row.cells:
            flat.update(
                {
                    "%s images_per_sec" % c.name: c.images_per_sec,
                    "%s ratio_pct" % c.name: c.ratio_pct,
                    "%s comparable" % c.name: c.comparable,
                }
            )
        rows.append(flat)
    geo = {"model": GEOMEAN, "batch_size": None, "measured": None}
    for g in comparison.geomean:
        geo.update(
            {"%s images_per_sec" % g.name: None, "%s ratio_pct" % g.name: g.ratio_pct, "%s comparable" % g.name: None}
        )
    return rows + [geo], columns


def against_text_rows(
    comparison: AgainstReferences, short: bool = False
) -> Tuple[List[Dict[str, str]], List[Any]]:  # columns: (key, header) pairs
    columns = [("model", "model"), ("batch_size", "batch" if short else "batch size")]
    columns += [("num_gpus", count_unit(comparison.sweep) + "s")] if comparison.sweep.several_counts else []
    columns += [("measured", "measured")] + [("ref%d" % i, typed) for i, (typed, _) in enumerate(comparison.columns)]
    rows = []
    for row in comparison.rows:
        text = {
            "model": row.model,
            "batch_size": str(row.batch_size),
            "num_gpus": str(row.num_gpus),
            "measured": "no ok run" if row.measured is None else "%.2f" % row.measured,
        }
        text.update(("ref%d" % i, cell_text(c)) for i, c in enumerate(row.cells))
        rows.append(text)
    geo = {"model": GEOMEAN, "batch_size": "", "num_gpus": "", "measured": ""}
    geo.update(("ref%d" % i, geomean_text(g)) for i, g in enumerate(comparison.geomean))
    return rows + [geo], columns


def against_notes(comparison: AgainstReferences) -> List[str]:
    notes = [
        "Cells: reference images/sec (measured / reference). This sweep: %s."
        % conditions_line(comparison.conditions, unit=count_unit(comparison.sweep))
    ]
    if comparison.sweep.meta.on_cpu:
        notes.append("This sweep ran on the CPU; the references are GPUs.")
    notes += footnotes(comparison)
    notes += closest_notes(comparison) + tf_notes(comparison) + low_trust_notes(comparison.low_trust_left_out)
    notes += link_notes(comparison.sweep) + link_cost_lines(comparison.link_cost)
    notes += ["Source of %s: %s" % (", ".join(names), source) for source, names in comparison.sources]
    return notes


def closest_notes(comparison: AgainstReferences) -> List[Any]:
    """How a † figure was chosen, or what --strict left out."""
    if comparison.strict:
        return [
            "--strict: only figures under exactly this sweep's conditions (and its TensorFlow X.Y, where "
            "both are known); n/a where a reference has none."
        ]
    if any(c.found and not c.comparable for r in comparison.rows for c in r.cells):
        return [
            "%s: no published figure under exactly this sweep's conditions; the closest is shown (same "
            "precision, then GPU count, batch size, variable update, synthetic data, higher trust, newer "
            "TF: docs/usage.md); --strict leaves such figures out." % MARK
        ]
    return []


def low_trust_notes(count: int) -> List[Any]:
    """The line saying how many derived/partial figures a comparison left out, if any."""
    if not count:
        return []
    return [
        "%d low-trust figure%s (trust derived or partial) left out; --include-low-trust takes %s in."
        % (count, "" if count == 1 else "s", "it" if count == 1 else "them")
    ]


def tf_notes(comparison: AgainstReferences) -> List[Any]:
    """Which references' figures were measured with another TensorFlow X.Y than the sweep (kept: a version
    changes figures less than a condition does, and most sources give none)."""
    ours = comparison.sweep.meta.tensorflow_version
    seen: dict = {}
    for row in comparison.rows:
        for cell in row.cells:
            if cell.found and tf_differs(cell.tf_version, ours):
                seen.setdefault((cell.name, cell.tf_version), []).append(row.model)
    return [
        "TensorFlow: %s (%s) measured with TF %s, this sweep with TF %s; --strict leaves them out."
        % (name, ", ".join(models), version, ours)
        for (name, version), models in seen.items()
    ]


def render_against(comparison: AgainstReferences, fmt: str, stream: Optional[TextIO] = None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        render.emit(fmt=fmt, stream=stream, kind="compare", **against_json(comparison))
        return
    if fmt == "csv":
        rows, columns = against_csv_rows(comparison)
        render.emit(rows, "csv", columns=columns, stream=stream)
        return
    title = "%s against published references (images/sec)" % comparison.sweep.label()
    rows, columns = against_text_rows(comparison, short=(fmt != "markdown"))
    emit_text(rows, columns, title, against_notes(comparison), fmt, stream)


# -- tables ----------------------------------------------------------------------------------------------


def emit_text(
    rows: Sequence[Mapping[str, Optional[str]]],
    columns: Sequence[Any],
    title: Optional[str],
    notes: Sequence[str],
    fmt: str,
    stream: TextIO,
    before: Sequence[str] = (),
) -> None:
    # columns: (key, header[, priority]) tuples; Any, as the callers' variables held CSV column names first
    """The title, the ``before`` lines (a short list: a line indented by two spaces is an item), the table,
    then the notes."""
    if fmt == "markdown":
        if before:
            stream.write("### %s\n\n" % render.md_text(title or ""))
            stream.write(
                "".join(
                    "- %s\n" % render.md_text(line.strip())
                    if line.startswith("  ")
                    else "%s\n\n" % render.md_text(line)
                    for line in before
                )
                + "\n"
            )
            title = None
        render.emit(rows, "markdown", columns=columns, title=title, caption=render.paragraphs(notes), stream=stream)
    else:
        _print_table(rows, columns, title, notes, before)


def _print_table(
    rows: Sequence[Mapping[str, Optional[str]]],
    columns: Sequence[Tuple[Any, ...]],  # (key, header[, priority])
    title: Optional[str],
    notes: Sequence[str],
    before: Sequence[str] = (),
) -> None:
    """A rich table in which a model name never folds (``resnet152`` split in two reads badly). When the
    terminal is too narrow for the table at its widest, two-part cells such as ``203.99 (86.7%)`` go on two
    lines. Then the notes."""
    from tfcnnwrap.fit import GAP  # fit loads rich: only when a table is drawn

    out = render.console()
    for line in before:
        out.print(line, markup=False)

    def width(key: str, header: str) -> int:
        return max([len(str(r.get(key) or "")) for r in rows] + [len(header)])

    # the columns' widest cells and the gaps between them, as fit.FittedTable lays them out
    if sum(width(k, h) for k, h, *_ in columns) + GAP * (len(columns) - 1) > out.width:
        # the newline is ours, the figure's text shown first (a newline of its own would be shown, not obeyed)
        rows = [
            {
                k: (Wrapped(render.safe_text(v).replace(" (", "\n(", 1)) if isinstance(v, str) else v)
                for k, v in r.items()
            }
            for r in rows
        ]
    table = render.make_table(rows, columns, title)
    table.columns[0].no_wrap = True
    table.columns[0].min_width = width(*columns[0][:2])
    out.print(table)
    for line in notes:
        render.print_note(out, line)
