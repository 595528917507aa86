"""Published tf_cnn_benchmarks results to compare a sweep with: the packaged CSV plus the user's own.

One CSV row is one GPU x model x batch size under stated conditions (precision, GPU count, variable update,
data) with its source. Images/sec are kept as written in the source so that ``233`` and ``130.2`` print back
exactly as published.

Names are matched the way people write GPUs in table headers: case, spaces, hyphens, underscores and vendor
words (NVIDIA, GeForce, RTX, Radeon, RX, ...) do not count. An exact match wins over partial ones, so ``2080``
is the RTX 2080 and not the 2080 Ti; a partial match is taken only when it is unique.
"""

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

from tfcnnwrap.errors import UsageError

DATA_FILE = Path(__file__).resolve().parent / "data" / "references.csv"

COLUMNS = [
    "gpu_id",
    "gpu_name",
    "aliases",
    "vendor",
    "model",
    "batch_size",
    "images_per_sec",
    "precision",
    "num_gpus",
    "variable_update",
    "data",
    "tf_version",
    "source",
    "notes",
]
REQUIRED_COLUMNS = ["gpu_id", "gpu_name", "model", "batch_size", "images_per_sec", "precision", "num_gpus"]

# The conditions that make two images/sec figures comparable; a blank value means "not recorded".
CONDITIONS = ["batch_size", "precision", "num_gpus", "variable_update", "data"]

VENDOR_WORDS = frozenset(
    ["nvidia", "geforce", "gtx", "rtx", "tesla", "quadro", "amd", "radeon", "rx", "ati", "graphics", "gpu"]
)
PRECISIONS = {"fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16", "bf16": "bf16",
              "bfloat16": "bf16"}
DATA_KINDS = {"synthetic", "real"}

_TOKEN = re.compile(r"[a-z]+|[0-9]+")
_PLAIN_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def name_key(text):
    """``'GeForce RTX 2080-Ti'`` -> ``'2080ti'``: what is left of a GPU name once the noise is gone."""
    tokens = _TOKEN.findall(str(text).lower())
    return "".join(t for t in tokens if t not in VENDOR_WORDS)


def format_published(text, value):
    """The figure as the source wrote it (``233``, ``130.2``); never scientific notation."""
    text = (text or "").strip()
    if _PLAIN_NUMBER.match(text):
        return text
    return ("%.6f" % value).rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Result:
    gpu_id: str
    model: str
    batch_size: int
    images_per_sec: float
    text: str
    precision: str
    num_gpus: int
    variable_update: str
    data: str
    tf_version: str
    source: str
    notes: str
    origin: str

    @property
    def display(self):
        return format_published(self.text, self.images_per_sec)

    def conditions(self):
        return {k: getattr(self, k) for k in CONDITIONS}

    def differences(self, wanted):
        """Names of the conditions in which this result differs from ``wanted`` (blanks never differ)."""
        differs = []
        for key in CONDITIONS:
            mine, theirs = getattr(self, key), wanted.get(key)
            if mine in ("", None) or theirs in ("", None):
                continue
            if mine != theirs:
                differs.append(key)
        return differs


@dataclass
class ReferenceGPU:
    id: str
    name: str
    aliases: Tuple[str, ...]
    vendor: str
    origin: str
    results: List[Result] = field(default_factory=list)

    def keys(self):
        return {k for k in (name_key(self.id), name_key(self.name), *map(name_key, self.aliases)) if k}

    def label(self):
        return "%s (%s)" % (self.id, self.name)

    def sources(self):
        seen = []
        for r in self.results:
            if r.source and r.source not in seen:
                seen.append(r.source)
        return seen

    def best_result(self, model, wanted):
        """(result, differing condition names) of the row for ``model`` closest to ``wanted``; (None, [])."""
        candidates = [r for r in self.results if r.model == model]
        if not candidates:
            return None, []

        def distance(r):
            differs = r.differences(wanted)
            bs = wanted.get("batch_size") or r.batch_size
            return (len(differs), abs(r.batch_size - bs), r.num_gpus)

        best = min(candidates, key=distance)
        return best, best.differences(wanted)


class ReferenceSet:
    def __init__(self, gpus):
        self.gpus: Dict[str, ReferenceGPU] = gpus

    def __iter__(self):
        return iter(self.gpus.values())

    def __len__(self):
        return len(self.gpus)

    def resolve(self, typed):
        """The one GPU ``typed`` names; UsageError listing the candidates when none or several do."""
        key = name_key(typed)
        if not key:
            raise UsageError(
                "%r names no GPU; give a reference such as %s (see `tfcnnwrap references`)"
                % (typed, ", ".join(g.id for g in list(self)[:4]))
            )
        exact = [g for g in self if key in g.keys()]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise UsageError(
                "reference name %r is ambiguous: it matches %s; give one of those ids"
                % (typed, ", ".join(g.label() for g in exact))
            )
        partial = [g for g in self if any(key in k for k in g.keys())]
        if len(partial) == 1:
            return partial[0]
        if partial:
            raise UsageError(
                "reference name %r is ambiguous: it matches %s; give one of those ids"
                % (typed, ", ".join(g.label() for g in partial))
            )
        raise UsageError(
            "no reference GPU matches %r; known: %s (or add your own with --references FILE.csv)"
            % (typed, ", ".join(g.label() for g in self))
        )

    def resolve_list(self, text):
        """``'1080-Ti,2080,Vega 64'`` -> [(typed name, ReferenceGPU), ...] in the order given."""
        names = [n.strip() for n in str(text or "").split(",") if n.strip()]
        if not names:
            raise UsageError(
                "--against needs at least one reference name, e.g. --against \"1080-Ti,V100\" "
                "(see `tfcnnwrap references`)"
            )
        return [(n, self.resolve(n)) for n in names]


# -- loading ---------------------------------------------------------------------------------------------


def _bad(where, message):
    return UsageError("%s: %s" % (where, message))


def _positive_int(value, column, where):
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise _bad(where, "%s %r is not a positive whole number; fix that row" % (column, value))
    return number


def _positive_float(value, column, where):
    try:
        number = float(str(value).strip())
    except ValueError:
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise _bad(where, "%s %r is not a positive number of images/sec; fix that row" % (column, value))
    return number


def _result_from_row(row, where, origin):
    def text(column):
        return (row.get(column) or "").strip()

    for column in REQUIRED_COLUMNS:
        if not text(column):
            raise _bad(where, "%s is empty; every row needs %s" % (column, ", ".join(REQUIRED_COLUMNS)))
    precision = PRECISIONS.get(text("precision").lower())
    if precision is None:
        raise _bad(where, "precision %r is not one of fp32, fp16, bf16; fix that row" % text("precision"))
    data = text("data").lower()
    if data and data not in DATA_KINDS:
        raise _bad(where, "data %r is not synthetic or real (or blank); fix that row" % text("data"))
    return Result(
        gpu_id=text("gpu_id"),
        model=text("model"),
        batch_size=_positive_int(text("batch_size"), "batch_size", where),
        images_per_sec=_positive_float(text("images_per_sec"), "images_per_sec", where),
        text=text("images_per_sec"),
        precision=precision,
        num_gpus=_positive_int(text("num_gpus"), "num_gpus", where),
        variable_update=text("variable_update"),
        data=data,
        tf_version=text("tf_version"),
        source=text("source"),
        notes=text("notes"),
        origin=origin,
    )


def parse_csv(path, origin, taken_ids=()):
    """{gpu_id: ReferenceGPU} from one reference CSV; UsageError naming the file, line and fix."""
    path = Path(path)
    shown = str(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            reader.fieldnames = header
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                raise UsageError(
                    "%s: missing column%s %s; a reference CSV has the columns %s "
                    "(`tfcnnwrap references --format csv` prints a template)"
                    % (shown, "s" if len(missing) > 1 else "", ", ".join(missing), ",".join(COLUMNS))
                )
            gpus = {}
            seen = {}
            for row in reader:
                where = "%s line %d" % (shown, reader.line_num)
                if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                    continue
                result = _result_from_row(row, where, origin)
                if result.gpu_id in taken_ids:
                    raise _bad(
                        where,
                        "gpu_id %r is already a built-in reference; choose another gpu_id" % result.gpu_id,
                    )
                gpu = gpus.get(result.gpu_id)
                name = (row.get("gpu_name") or "").strip()
                if gpu is None:
                    aliases = tuple(a.strip() for a in (row.get("aliases") or "").split(";") if a.strip())
                    gpu = gpus[result.gpu_id] = ReferenceGPU(
                        result.gpu_id, name, aliases, (row.get("vendor") or "").strip(), origin
                    )
                elif name != gpu.name:
                    raise _bad(
                        where,
                        "gpu_id %r is named %r here but %r above; use one gpu_name per gpu_id"
                        % (result.gpu_id, name, gpu.name),
                    )
                key = (result.gpu_id, result.model) + tuple(result.conditions().values())
                if key in seen:
                    raise _bad(
                        where,
                        "repeats %s %s at batch size %d under the same conditions as line %d; keep one"
                        % (result.gpu_id, result.model, result.batch_size, seen[key]),
                    )
                seen[key] = reader.line_num
                gpu.results.append(result)
    except FileNotFoundError:
        raise UsageError("%s does not exist; give the path of a reference CSV" % shown) from None
    except IsADirectoryError:
        raise UsageError("%s is a directory; give the path of a reference CSV" % shown) from None
    except UnicodeDecodeError:
        raise UsageError("%s is not UTF-8 text; save it as CSV (UTF-8)" % shown) from None
    except csv.Error as exc:
        raise UsageError("%s is not a readable CSV (%s); fix the file" % (shown, exc)) from None
    if not gpus:
        raise UsageError("%s holds no reference rows; add rows under the header %s" % (shown, ",".join(COLUMNS)))
    return gpus


def builtin_gpus():
    return parse_csv(DATA_FILE, "built-in")


def load_references(user_csv=None):
    """The built-in references, plus those of ``user_csv`` (after them) when given."""
    gpus = builtin_gpus()
    if user_csv:
        extra = parse_csv(user_csv, str(user_csv), taken_ids=set(gpus))
        gpus.update(extra)
    _check_names(gpus)
    return ReferenceSet(gpus)


def _check_names(gpus):
    """Two GPUs must not answer to the same exact name, or neither could be chosen by it."""
    owner = {}
    for gpu in gpus.values():
        for key in gpu.keys():
            other = owner.setdefault(key, gpu)
            if other is not gpu:
                raise UsageError(
                    "%s: %s answers to the same name as %s; give it another gpu_name or aliases"
                    % (gpu.origin, gpu.label(), other.label())
                )


# -- the `references` verb -------------------------------------------------------------------------------


def _distinct(values):
    out = []
    for v in values:
        if v not in ("", None) and v not in out:
            out.append(v)
    return out


def conditions_text(results):
    """``fp32 · 1 GPU · parameter_server · synthetic · TF 1.12``, with ``a/b`` where rows differ."""
    parts = ["/".join(_distinct(r.precision for r in results))]
    gpus = _distinct(r.num_gpus for r in results)
    parts.append("%s GPU%s" % ("/".join(map(str, gpus)), "" if gpus == [1] else "s"))
    for key in ("variable_update", "data"):
        values = _distinct(getattr(r, key) for r in results)
        if values:
            parts.append("/".join(values))
    tf = _distinct(r.tf_version for r in results)
    if tf:
        parts.append("TF " + "/".join(tf))
    return " · ".join(p for p in parts if p)


def models_text(results):
    """``resnet50 64, resnet152 32/64``: each model with its batch sizes."""
    order = []
    sizes = {}
    for r in results:
        if r.model not in sizes:
            order.append(r.model)
            sizes[r.model] = []
        if r.batch_size not in sizes[r.model]:
            sizes[r.model].append(r.batch_size)
    return ", ".join("%s %s" % (m, "/".join(str(b) for b in sizes[m])) for m in order)


def summary_rows(references):
    """(one row per GPU, the numbered sources its ``source`` column points to)."""
    rows = []
    sources = []
    for gpu in references:
        marks = []
        for source in gpu.sources():
            if source not in sources:
                sources.append(source)
            marks.append("[%d]" % (sources.index(source) + 1))
        if not marks:
            marks.append(gpu.origin)
        rows.append(
            {
                "id": gpu.id,
                "name": gpu.name,
                "aliases": "; ".join(gpu.aliases),
                "models": models_text(gpu.results),
                "conditions": conditions_text(gpu.results),
                "source": " ".join(marks),
                "origin": gpu.origin,
            }
        )
    return rows, ["[%d] %s" % (i + 1, s) for i, s in enumerate(sources)]


def detail_json(references):
    out = []
    for gpu in references:
        out.append(
            {
                "id": gpu.id,
                "name": gpu.name,
                "aliases": list(gpu.aliases),
                "vendor": gpu.vendor,
                "origin": gpu.origin,
                "sources": gpu.sources(),
                "results": [
                    {
                        "model": r.model,
                        "batch_size": r.batch_size,
                        "images_per_sec": r.images_per_sec,
                        "precision": r.precision,
                        "num_gpus": r.num_gpus,
                        "variable_update": r.variable_update or None,
                        "data": r.data or None,
                        "tf_version": r.tf_version or None,
                        "source": r.source,
                        "notes": r.notes or None,
                    }
                    for r in gpu.results
                ],
            }
        )
    return out


def flat_rows(references):
    """Every row, in the CSV's own columns (a template for --references)."""
    rows = []
    for gpu in references:
        for r in gpu.results:
            row = {
                "gpu_id": gpu.id,
                "gpu_name": gpu.name,
                "aliases": ";".join(gpu.aliases),
                "vendor": gpu.vendor,
            }
            row.update({k: getattr(r, k) for k in COLUMNS[4:]})
            row["images_per_sec"] = r.display
            rows.append(row)
    return rows


def cmd_references(args):
    from tfcnnwrap import render

    references = load_references(getattr(args, "references", None))
    fmt = getattr(args, "format", "table") or "table"
    if fmt == "json":
        render.emit(detail_json(references), "json")
    elif fmt == "csv":
        render.emit(flat_rows(references), "csv", columns=COLUMNS)
    else:
        columns = [
            ("id", "id"),
            ("name", "name"),
            ("aliases", "aliases"),
            ("models", "models and batch sizes"),
            ("conditions", "conditions"),
            ("source", "source"),
        ]
        rows, sources = summary_rows(references)
        hint = (
            "Use: tfcnnwrap compare SWEEP_DIR --against NAME[,NAME...]; "
            "`--format json` lists every figure with its conditions."
        )
        if fmt == "markdown":
            render.emit(rows, fmt, columns=columns, title="Reference GPUs (tf_cnn_benchmarks, images/sec)",
                        caption="\n\n".join(sources + [hint]))
        else:
            render.emit(rows, fmt, columns=columns, title="Reference GPUs (tf_cnn_benchmarks, images/sec)")
            out = render.console()
            for line in sources + [hint]:
                out.print(line, markup=False)
    return 0
