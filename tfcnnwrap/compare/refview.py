"""The `references` verb: the built-in (and the user's) published figures, filtered by GPU and model.

The table is a summary per GPU that fits an 80-column terminal; with ``--gpu`` it lists that GPU's rows.
CSV carries every row in the data's own columns, so it reads back with ``--references FILE``; JSON carries
every row per GPU with its launch price and board power.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from tfcnnwrap import render
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.references import COLUMNS, TRUST_LEVELS, Result, load_references

if TYPE_CHECKING:
    from tfcnnwrap.results.references import ReferenceGPU, ReferenceSet

_T = TypeVar("_T")
# What select gives: each GPU with its results after the filters.
Selection = Sequence[Tuple["ReferenceGPU", Sequence[Result]]]

SHORT_UPDATE = {
    "parameter_server": "ps",
    "replicated": "repl",
    "independent": "indep",
    "distributed_replicated": "dist-repl",
    "distributed_all_reduce": "dist-ar",
}


def _distinct(values: Iterable[_T]) -> List[_T]:
    out = []
    for v in values:
        if v not in ("", None) and v not in out:
            out.append(v)
    return out


def _fact_text(value: object, unit: str) -> str:
    """``$1,499`` / ``350 W``; ``unpublished`` as such; ``-`` for a figure not verified yet."""
    if isinstance(value, float):
        return ("$%s" if unit == "$" else "%s W") % format(value, ",.0f")
    return "unpublished" if value == "unpublished" else "-"


def select(
    references: ReferenceSet, gpu_name: Optional[str] = None, model: Optional[str] = None
) -> List[Tuple[ReferenceGPU, List[Result]]]:
    """[(gpu, [its results])] after the --gpu and --model filters; UsageError when nothing is left."""
    gpus = [references.resolve(gpu_name)] if gpu_name else list(references)
    out = []
    for gpu in gpus:
        results = [r for r in gpu.results if not model or r.model == model]
        if results:
            out.append((gpu, results))
    if not out:
        models = sorted({r.model for g in gpus for r in g.results})
        raise UsageError(
            "no reference row for model %r%s; models there: %s"
            % (model, " on %s" % gpus[0].id if gpu_name else "", ", ".join(models))
        )
    return out


Cell = Union[str, int, float, None]  # one cell of a table or CSV row


@dataclass(frozen=True)
class GpuSummary:
    """One GPU of the summary table: how many figures, of which models, precisions and GPU counts; its launch
    price, board power and the trust levels of its figures, as the table shows them."""

    id: str
    name: str
    rows: int
    models: int
    precision: str
    gpus: str
    price: str
    power: str
    trust: str

    def cells(self) -> Dict[str, Cell]:
        return asdict(self)


def summary_rows(selected: Selection) -> List[GpuSummary]:
    """One row per GPU: how many figures, which models, precisions and GPU counts, price and power."""
    rows = []
    for gpu, results in selected:
        counts = ",".join(map(str, sorted(_distinct(r.num_gpus for r in results))))
        if len(counts) > 9:  # 1,2,4,8,16,32,64 would not fit 80 columns
            numbers = [int(n) for n in counts.split(",")]
            counts = "%d-%d" % (numbers[0], numbers[-1])
        rows.append(
            GpuSummary(
                id=gpu.id,
                name=gpu.name,
                rows=len(results),
                models=len(_distinct(r.model for r in results)),
                precision="/".join(sorted(_distinct(r.precision for r in results), reverse=True)),
                gpus=counts,
                price=_fact_text(gpu.facts.price_usd, "$"),
                power=_fact_text(gpu.facts.power_w, "W"),
                trust=",".join(t for t in TRUST_LEVELS if any(r.trust == t for r in results)) or "-",
            )
        )
    return rows


# The name beside the id (issue 23); at a narrow width the columns of lowest priority drop out first.
SUMMARY_COLUMNS = [
    ("id", "id"),
    ("name", "GPU"),
    ("rows", "rows", 1),
    ("precision", "precision", 2),
    ("gpus", "GPU counts", 4),
    ("price", "launch", 5),
    ("power", "power", 5),
    ("trust", "trust", 3),
]
# No TF column: it would not fit 80 columns; each numbered source line says its TensorFlow version.
DETAIL_COLUMNS = [
    ("model", "model"),
    ("batch_size", "batch"),
    ("images_per_sec", "img/s"),
    ("precision", "prec"),
    ("num_gpus", "GPUs"),
    ("update", "update", 2),
    ("data", "data", 3),
    ("xla", "XLA", 3),
    ("source", "src"),
    ("trust", "trust", 1),
    ("spread", "spread", 1),
]
_GROUP_KEYS = ("model", "precision", "num_gpus", "batch_size", "variable_update", "data", "xla")


def _sort_key(r: Result) -> Tuple[Any, ...]:
    """Model, precision, GPU count, batch size, data (synthetic first), then the rest of the conditions."""
    return (r.model, r.precision, r.num_gpus, r.batch_size, r.data != "synthetic", r.data, r.variable_update, r.xla)


def _spread(group: Sequence[Result]) -> str:
    """``3 figures, +8.7%``: how many sources a configuration has and how far the highest lies above the
    lowest (the figures themselves are the group's rows)."""
    values = [r.images_per_sec for r in group]
    return "%d figures, +%.1f%%" % (len(group), (max(values) / min(values) - 1.0) * 100.0)


def grouped(results: Iterable[Result]) -> List[List[Result]]:
    """[[results with identical conditions]] in `_sort_key` order (a group: one configuration's sources)."""
    groups: List[List[Result]] = []
    for r in sorted(results, key=_sort_key):
        key = tuple(getattr(r, k) for k in _GROUP_KEYS)
        if groups and tuple(getattr(groups[-1][0], k) for k in _GROUP_KEYS) == key:
            groups[-1].append(r)
        else:
            groups.append([r])
    return groups


@dataclass(frozen=True)
class ListedFigure:
    """One figure of a GPU's list (``--gpu``): its result, whether it opens its group of identical conditions
    (only the first shows them, and the group's spread), and its number into the source lines."""

    result: Result
    first: bool
    source: int  # 1-based, into the numbered source lines under the table
    spread: str = ""  # the group's, on its first row

    def cells(self) -> Dict[str, Cell]:
        r, same = self.result, not self.first
        return {
            "model": "" if same else r.model,
            "batch_size": "" if same else r.batch_size,
            "images_per_sec": r.display,
            "precision": "" if same else r.precision,
            "num_gpus": "" if same else r.num_gpus,
            "update": "" if same else (SHORT_UPDATE.get(r.variable_update, r.variable_update) or "-"),
            "data": "" if same else ({"synthetic": "syn"}.get(r.data, r.data) or "-"),
            "xla": "" if same else (r.xla or "-"),
            "source": "[%d]" % self.source,
            "trust": r.trust or "-",
            "spread": self.spread,
        }


def detail_rows(selected: Selection) -> Tuple[List[ListedFigure], List[str]]:
    """Every figure of the selection, sorted and grouped by conditions (a group's later rows leave the
    conditions blank; its first carries the spread), with a number into the source lines under the table."""
    rows, sources = [], []
    for _, results in selected:
        for group in grouped(results):
            for i, r in enumerate(group):
                line = "(TF %s) %s" % (r.tf_version, r.source) if r.tf_version else r.source
                if line not in sources:
                    sources.append(line)
                spread = _spread(group) if len(group) > 1 and i == 0 else ""
                rows.append(ListedFigure(r, first=i == 0, source=sources.index(line) + 1, spread=spread))
    return rows, sources


def detail_json(selected: List[Tuple[ReferenceGPU, List[Result]]]) -> List[Dict[str, Any]]:
    out = []
    for gpu, results in selected:
        facts = gpu.facts
        out.append(
            {
                "id": gpu.id,
                "name": gpu.name,
                "aliases": list(gpu.aliases),
                "vendor": gpu.vendor,
                "origin": gpu.origin,
                "sources": _distinct(r.source for r in results),
                "launch_price_usd": facts.price_usd,
                "price_source": facts.price_source or None,
                "board_power_w": facts.power_w,
                "power_source": facts.power_source or None,
                "results": [
                    {
                        "model": r.model,
                        "batch_size": r.batch_size,
                        "images_per_sec": r.images_per_sec,
                        "precision": r.precision,
                        "num_gpus": r.num_gpus,
                        "variable_update": r.variable_update or None,
                        "data": r.data or None,
                        "xla": r.xla or None,
                        "tf_version": r.tf_version or None,
                        "source": r.source,
                        "notes": r.notes or None,
                        "trust": r.trust or None,
                    }
                    for r in results
                ],
            }
        )
    return out


def flat_rows(selected: Selection) -> List[Dict[str, Cell]]:
    """Every row, in the CSV's own columns (a template for --references)."""
    rows = []
    for gpu, results in selected:
        for r in results:
            row: Dict[str, Cell] = {
                "gpu_id": gpu.id,
                "gpu_name": gpu.name,
                "aliases": ";".join(gpu.aliases),
                "vendor": gpu.vendor,
            }
            row.update({k: getattr(r, k) for k in COLUMNS[4:]})
            row["images_per_sec"] = r.display
            rows.append(row)
    return rows


def _print_lines(
    fmt: str,
    rows: Sequence[Mapping[str, Cell]],
    columns: List[Tuple[Union[str, int], ...]],
    title: str,
    lines: List[str],
) -> None:
    if fmt == "markdown":
        render.emit(rows, fmt, columns=columns, title=title, caption=render.paragraphs(lines))
        return
    render.emit(rows, fmt, columns=columns, title=title)
    render.print_notes(lines)


@dataclass(frozen=True)
class ReferencesArgs:
    """What `references` was asked (cli/references.py builds it); None: the flag was not typed."""

    gpu: Optional[str] = None
    model: Optional[str] = None
    references: Optional[str] = None  # the user's own CSV, listed beside the built-in ones
    format: Literal["table", "markdown", "csv", "json"] = "table"


def cmd_references(args: ReferencesArgs) -> int:
    references = load_references(args.references)
    gpu_name, model = args.gpu, args.model
    selected = select(references, gpu_name, model)
    fmt = args.format
    if fmt == "json":
        render.emit(
            detail_json(selected), fmt, kind="references", conditions={"gpu": gpu_name or None, "model": model or None}
        )
    elif fmt == "csv":
        render.emit(flat_rows(selected), "csv", columns=COLUMNS)
    elif gpu_name:
        gpu = selected[0][0]
        rows, sources = detail_rows(selected)
        title = "%s: %s (tf_cnn_benchmarks, images/sec)" % (gpu.id, gpu.full_name)
        facts = "Launch price: %s; board power: %s." % (
            _fact_text(gpu.facts.price_usd, "$"),
            _fact_text(gpu.facts.power_w, "W"),
        )
        notes = [
            "update: ps = parameter_server, repl = replicated; images/sec in total over the GPUs. Rows "
            "under identical conditions are grouped (conditions on the first), spread: how far apart.",
            "trust: vendor > reviewer > user-log > derived > partial; compare leaves derived and partial "
            "out unless --include-low-trust.",
            facts,
        ]
        cells = [figure.cells() for figure in rows]
        _print_lines(fmt, cells, DETAIL_COLUMNS, title, notes + ["[%d] %s" % (i + 1, s) for i, s in enumerate(sources)])
    else:
        summaries = summary_rows(selected)
        total = sum(r.rows for r in summaries)
        notes = [
            "%d figures on %d GPUs. launch: the maker's announced price; power: board power; '-': not "
            "verified yet." % (total, len(summaries)),
            (
                "`--gpu NAME` lists a GPU's figures and sources; `--format json` names every GPU; `--format csv` "
                "gives every row (a template for --references FILE)."
            ),
            "Compare: tfcnnwrap compare SWEEP_DIR --against NAME[,NAME...]",
        ]
        _print_lines(fmt, [r.cells() for r in summaries], SUMMARY_COLUMNS, "Reference GPUs (tf_cnn_benchmarks)", notes)
    return 0
