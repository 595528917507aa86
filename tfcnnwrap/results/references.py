"""Published tf_cnn_benchmarks results to compare a sweep with: the packaged CSV plus the user's own.

One CSV row is one GPU x model x batch size under stated conditions (precision, GPU count, variable update,
data, XLA) with its source. Images/sec are kept as written in the source so that ``233`` and ``130.2`` print
back exactly as published. ``data/gpus.csv`` holds each GPU's launch price and board power with their sources.

Names are matched the way people write GPUs in table headers: case, spaces, hyphens, underscores and vendor
words (NVIDIA, GeForce, RTX, Radeon, RX, ...) do not count. A name matches a GPU exactly, or by whole words;
a card whose name adds a variant word (Ti, Super, XT, Max-Q, Pro, ...) is another card, so ``1080`` never
means the 1080 Ti. A partial match is taken only when it is unique.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import sys
from dataclasses import dataclass, field, fields
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple, Union

from tfcnnwrap import __version__, safefs
from tfcnnwrap.boundedread import read_bounded, read_own_file
from tfcnnwrap.errors import DamagedFile, TfcnnwrapError, UsageError
from tfcnnwrap.jsontext import dumps
from tfcnnwrap.prose import some_of
from tfcnnwrap.render import CSV_FORMULA_START

if TYPE_CHECKING:
    from importlib.abc import Traversable


def _data_dir() -> Union[Path, Traversable]:
    """The package's data folder, found from the package (never a path into the source tree): a wheel, an
    editable checkout and a moved module find it alike. A package on disk (the CSV reader opens real paths)
    is read where it lies, as importlib.resources would give it, without that import's ~3 ms (tempfile,
    shutil) in every verb's start (issue 39); anything else through importlib.resources."""
    import tfcnnwrap  # the package this module is part of, wherever it moves within it

    here = Path(tfcnnwrap.__file__).parent / "data"
    if here.is_dir():
        return here
    from importlib.resources import files  # start-up: only a package not on disk needs its reader

    return files("tfcnnwrap") / "data"


DATA_DIR = _data_dir()
DATA_FILE = DATA_DIR / "references.csv"
FACTS_FILE = DATA_DIR / "gpus.csv"

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
    "xla",
    "tf_version",
    "source",
    "notes",
    "trust",
]
REQUIRED_COLUMNS = ["gpu_id", "gpu_name", "model", "batch_size", "images_per_sec", "precision", "num_gpus"]

MAX_CSV_BYTES = 64 * 1024 * 1024  # a reference CSV is text; the built-in one is under 2 MiB

# The conditions that make two images/sec figures comparable; a blank value means "not recorded".
CONDITIONS = ["batch_size", "precision", "num_gpus", "variable_update", "data", "xla"]

VENDOR_WORDS = frozenset(
    ["nvidia", "geforce", "gtx", "rtx", "tesla", "quadro", "amd", "radeon", "rx", "ati", "graphics", "gpu"]
)
# Words that make another card of the same number: a 1080 Ti is not a 1080.
VARIANT_WORDS = frozenset(
    ["ti", "super", "xt", "xtx", "max", "q", "maxq", "mobile", "laptop", "pro", "le", "gre", "ultra", "boost"]
)
PRECISIONS = {"fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16", "bf16": "bf16", "bfloat16": "bf16"}
DATA_KINDS = {"synthetic", "real"}
# How far a figure can be trusted, most first (docs/usage.md): the maker's or a system builder's own runs, a
# review or write-up (with the figures it quotes), a person's pasted log, a modified copy of tf_cnn_benchmarks,
# a figure that is not a final `total images/sec`. Blank (a user's CSV that does not say) ranks as a log.
TRUST_LEVELS = ("vendor", "reviewer", "user-log", "derived", "partial")
LOW_TRUST = frozenset(["derived", "partial"])
XLA_VALUES = {
    "yes": "yes",
    "true": "yes",
    "1": "yes",
    "on": "yes",
    "xla": "yes",
    "no": "no",
    "false": "no",
    "0": "no",
    "off": "no",
}

_CHUNK = re.compile(r"[a-z]*[0-9]+|[a-z]+")
_VENDOR_PREFIX = re.compile(r"^(%s)([0-9].*)$" % "|".join(sorted(VENDOR_WORDS, key=len, reverse=True)))
_PLAIN_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def name_words(text: str) -> List[Any]:
    """``'GeForce RTX2080Ti'`` -> ``['2080', 'ti']``: the words of a GPU name once the noise is gone.

    A word is letters, or letters followed by digits (``a100``, ``sxm4``), so ``2080Ti`` is two words and
    ``A100`` one; a vendor word glued to a number (``RTX3090``) comes off it.
    """
    words = []
    for chunk in re.split(r"[^a-z0-9]+", str(text).lower()):
        for word in _CHUNK.findall(chunk):
            m = _VENDOR_PREFIX.match(word)
            words.extend([m.group(2)] if m else [word])
    return [w for w in words if w not in VENDOR_WORDS]


def name_key(text: str) -> str:
    """``'GeForce RTX 2080-Ti'`` -> ``'2080ti'``: what is left of a GPU name once the noise is gone."""
    return "".join(name_words(text))


def format_published(text: str, value: float) -> str:
    """The figure as the source wrote it (``233``, ``130.2``); never scientific notation."""
    text = (text or "").strip()
    if _PLAIN_NUMBER.match(text):
        return text
    # every digit of the float, in positional notation: 5e-324 must not print as 0 (which reads back as no
    # figure at all), nor 1.5e3 as 1500.000000
    from decimal import Decimal  # start-up: only a figure its source did not write plainly needs it

    plain = format(Decimal(repr(float(value))), "f")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


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
    xla: str = ""
    trust: str = ""

    @property
    def display(self) -> str:
        return format_published(self.text, self.images_per_sec)

    def conditions(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in CONDITIONS}

    def key(self) -> Tuple[str, str, int, str, int, str, str, str, str, str, str]:
        """What makes a row a repeat: the same figure's conditions from the same source."""
        return (
            (self.gpu_id, self.model) + tuple(self.conditions().values()) + (self.tf_version, self.source, self.notes)
        )

    def differences(self, wanted: Dict[str, Any]) -> List[Any]:
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
class Facts:
    """A GPU's launch price and board power: a number with its source, or why there is none."""

    price_usd: object = None  # float, or the text "unpublished" / "unverified"
    price_source: str = ""
    power_w: object = None
    power_source: str = ""
    notes: str = ""
    identity: str = ""  # the physical GPU (results/gpuid.py): another reference's identity, e.g. an eGPU's card
    # peak TFLOPS at the highest boost clock, fp32 and fp16 (tensor cores where it has them), for the ceilings
    fp32_tflops: object = "unverified"
    fp32_source: str = ""
    fp16_tflops: object = "unverified"
    fp16_source: str = ""
    # TF32 tensor cores (Ampere on): TensorFlow 2.4+ runs fp32 matrix products on them; blank where none
    tf32_tflops: object = None
    tf32_source: str = ""

    @staticmethod
    def number(value: object) -> Optional[float]:
        return value if isinstance(value, float) else None


@dataclass
class ReferenceGPU:
    id: str
    name: str
    aliases: Tuple[str, ...]
    vendor: str
    origin: str
    results: List[Result] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    bundle_ids: List[str] = field(default_factory=list)  # a community GPU's bundles, for its provenance note
    link: Optional[str] = None  # a community entry's link class (``gen3 x4``), None where not known
    sweeps: Optional[int] = None  # a community GPU: its bundles; None for every other reference
    signers: Optional[int] = None  # a community GPU: distinct keys with a valid signature over its bundles
    replicated: bool = False  # a community GPU: two independent signers' figures agree within their intervals

    def names(self) -> List[str]:
        return [n for n in (self.id, self.name, *self.aliases) if name_key(n)]

    def keys(self) -> Set[str]:
        return {name_key(n) for n in self.names()}

    def label(self) -> str:
        return "%s (%s)" % (self.id, self.name)

    @property
    def full_name(self) -> str:
        """The name to print beside what the user typed (``1080-Ti`` -> ``GeForce GTX 1080 Ti``)."""
        return self.name or self.id

    @property
    def price_usd(self) -> Optional[float]:
        return Facts.number(self.facts.price_usd)

    @property
    def power_w(self) -> Optional[float]:
        return Facts.number(self.facts.power_w)

    def sources(self) -> List[str]:
        seen = []
        for r in self.results:
            if r.source and r.source not in seen:
                seen.append(r.source)
        return seen

    def best_result(
        self, model: str, wanted: Dict[str, Any], strict: bool = False
    ) -> Tuple[Optional[Result], List[Any]]:
        """(result, differing condition names) of the row for ``model`` closest to ``wanted``; (None, []).

        Closest: `closest_row`'s order. ``strict``: only a row that differs in nothing, else (None, []).
        """
        best, differs = closest_row([r for r in self.results if r.model == model], wanted)
        if best is None or (strict and differs):
            return None, []
        return best, differs


def _tf_key(version: str) -> Tuple[Any, ...]:
    """``'1.12.0'`` -> (1, 12); () for a blank or what is not a version, so it sorts as the oldest."""
    parts = str(version or "").strip().split(".")
    try:
        return (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit())))
    except (IndexError, ValueError):
        return ()


def _trust_rank(trust: str) -> int:
    return TRUST_LEVELS.index(trust) if trust in TRUST_LEVELS else TRUST_LEVELS.index("user-log")


def closest_row(
    rows: Union[List[Result], Tuple[Result, ...]], wanted: Dict[str, Any]
) -> Tuple[Optional[Result], List[Any]]:
    """(row, differing condition names) of the row of ``rows`` closest to the ``wanted`` conditions; (None, []).

    ``rows``: one GPU's rows for one model (built-in, a user's CSV's, or any other origin's: the rule does not
    care where a row came from). ``wanted``: the CONDITIONS, a blank or missing value meaning "any". Preferred,
    in this order, each only breaking the ties of the ones before it: the same precision; the same GPU count;
    the same batch size (else the nearest); the same variable update; synthetic data (the wanted kind when
    ``wanted`` names one) and the same XLA setting (off when ``wanted`` does not say), the last of the
    conditions; higher trust (TRUST_LEVELS); newer TensorFlow X.Y; then the order of ``rows`` (a source's
    first row wins a tie). A row's blank condition never differs.
    """
    rows = list(rows)
    if not rows:
        return None, []
    bs, data = wanted.get("batch_size"), wanted.get("data") or "synthetic"

    def order(item: Tuple[int, Result]) -> Tuple[Any, ...]:
        index, r = item
        differs = r.differences(wanted)
        return (
            "precision" in differs,
            "num_gpus" in differs,
            "batch_size" in differs,
            abs(r.batch_size - bs) if bs else 0,
            "variable_update" in differs,
            r.data not in ("", data),
            r.xla != (wanted.get("xla") or "no") and r.xla != "",
            _trust_rank(r.trust),
            tuple(-n for n in _tf_key(r.tf_version)) or (1,),
            index,
        )

    best = min(enumerate(rows), key=order)[1]
    return best, best.differences(wanted)


def _join(gpus: Union[List[ReferenceGPU], ReferenceSet]) -> str:
    return some_of([g.label() for g in gpus])


def _matches_by_words(typed_words: List[str], gpu: ReferenceGPU) -> bool:
    """Every typed word is a word of one of the GPU's names, and what that name adds is no variant word."""
    for name in gpu.names():
        words = name_words(name)
        if set(typed_words) <= set(words) and not (set(words) - set(typed_words)) & VARIANT_WORDS:
            return True
    return False


class ReferenceSet:
    def __init__(self, gpus: Dict[str, ReferenceGPU]) -> None:
        self.gpus: Dict[str, ReferenceGPU] = gpus

    def __iter__(self) -> Iterator[ReferenceGPU]:
        return iter(self.gpus.values())

    def __len__(self) -> int:
        return len(self.gpus)

    def candidates(self, typed: str) -> List[Any]:
        """The GPUs ``typed`` names: an exact name first, else every whole-word match."""
        key = name_key(typed)
        exact = [g for g in self if key in g.keys()]
        if exact:
            return exact
        words = name_words(typed)
        return [g for g in self if _matches_by_words(words, g)]

    def resolve(self, typed: str) -> ReferenceGPU:
        """The one GPU ``typed`` names; UsageError listing the candidates when none or several do."""
        if not name_key(typed):
            raise UsageError(
                "%r names no GPU; give a reference such as %s (see `tfcnnwrap references`)"
                % (typed, ", ".join(g.id for g in list(self)[:4]))
            )
        found = self.candidates(typed)
        if len(found) == 1:
            return found[0]
        if found:
            raise UsageError(
                "reference name %r is ambiguous: it matches %s; give one of those ids" % (typed, _join(found))
            )
        key = name_key(typed)
        similar = [g for g in self if any(key in k or k in key for k in g.keys())]
        if similar:
            raise UsageError(
                "no reference GPU matches %r (a Ti, Super, XT or Max-Q is another card); similar: %s; "
                "give one of those ids" % (typed, _join(similar))
            )
        raise UsageError(
            "no reference GPU matches %r; %d known, among them %s (see `tfcnnwrap references` for all, or add "
            "your own with --references FILE.csv)" % (typed, len(list(self)), some_of([g.label() for g in self]))
        )

    def resolve_list(self, text: str) -> List[Tuple[str, ReferenceGPU]]:
        """``'1080-Ti,2080,Vega 64'`` -> [(typed name, ReferenceGPU), ...] in the order given."""
        names = [n.strip() for n in str(text or "").split(",") if n.strip()]
        if not names:
            raise UsageError(
                '--against needs at least one reference name, e.g. --against "1080-Ti,V100" '
                "(see `tfcnnwrap references`)"
            )
        resolved = [(n, self.resolve(n)) for n in names]
        first: dict = {}
        for typed, gpu in resolved:
            if gpu.id in first:
                raise UsageError("--against names %s twice (%r and %r); drop one" % (gpu.name, first[gpu.id], typed))
            first[gpu.id] = typed
        return resolved

    def best(
        self, model: str, wanted: Dict[str, Any], strict: bool = False
    ) -> List[Tuple[ReferenceGPU, Result, List[Any]]]:
        """[(gpu, result, differing conditions)] of every GPU with a row for ``model``, closest row each."""
        out = []
        for gpu in self:
            result, differs = gpu.best_result(model, wanted, strict=strict)
            if result is not None:
                out.append((gpu, result, differs))
        return out


# -- loading ---------------------------------------------------------------------------------------------


def _bad(where: str, message: str) -> DamagedFile:
    return DamagedFile("%s: %s" % (where, message))


def _positive_int(value: str, column: str, where: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise _bad(where, "%s %r is not a positive whole number; fix that row" % (column, value))
    return number


def _positive_float(value: str, column: str, where: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise _bad(where, "%s %r is not a positive number of images/sec; fix that row" % (column, value))
    return number


def _xla(value: str, where: str) -> str:
    if not value:
        return ""
    xla = XLA_VALUES.get(value.lower())
    if xla is None:
        raise _bad(where, "xla %r is not yes or no (or blank); fix that row" % value)
    return xla


def _result_from_row(row: Dict[str, Optional[str]], where: str, origin: str) -> Result:
    def text(column: str) -> str:
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
    trust = text("trust").lower()
    if trust and trust not in TRUST_LEVELS:
        raise _bad(
            where, "trust %r is not one of %s (or blank); fix that row" % (text("trust"), ", ".join(TRUST_LEVELS))
        )
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
        xla=_xla(text("xla"), where),
        tf_version=text("tf_version"),
        source=text("source"),
        notes=text("notes"),
        origin=origin,
        trust=trust,
    )


def _read_rows(path: Union[Path, str, Traversable]) -> Tuple[List[str], List[Any]]:
    """(DictReader rows with stripped headers) of a CSV, or DamagedFile naming the fix.

    The file is read whole, within MAX_CSV_BYTES, by ``boundedread`` (a device is refused, a pipe that does
    not end is given up on); a cell that CSV output made safe for spreadsheets (``'=...``) reads back as
    written before."""
    shown = str(path)
    data = read_bounded(path, MAX_CSV_BYTES, "a reference CSV")  # type: ignore[arg-type]  # DATA_DIR: a real path
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DamagedFile("%s is not UTF-8 text; save it as CSV (UTF-8)" % shown) from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        return header, [(reader.line_num, {k: _unguard(v) for k, v in row.items()}) for row in reader]
    except csv.Error as exc:
        raise DamagedFile("%s is not a readable CSV (%s); fix the file" % (shown, exc)) from None


def _unguard(value: Optional[str]) -> Optional[str]:
    """The cell as written before `render.csv_safe` guarded it: ``'=SUM(1)`` -> ``=SUM(1)``."""
    if isinstance(value, str) and value[:1] == "'" and value[1:2] and value[1] in CSV_FORMULA_START:
        return value[1:]
    return value


def _gpu_for(
    row: Dict[str, Optional[str]],
    result: Result,
    gpus: Dict[str, ReferenceGPU],
    builtin: Dict[str, ReferenceGPU],
    where: str,
    origin: str,
) -> ReferenceGPU:
    """The GPU a row belongs to: one of this file's, or a built-in one when the row names it the same way."""
    name = (row.get("gpu_name") or "").strip()
    known = builtin.get(result.gpu_id)
    if known is not None:
        if name != known.name:
            raise _bad(
                where,
                "gpu_id %r is already a built-in reference (%s); choose another gpu_id for %r"
                % (result.gpu_id, known.name, name),
            )
        return known
    gpu = gpus.get(result.gpu_id)
    if gpu is None:
        aliases = tuple(a.strip() for a in (row.get("aliases") or "").split(";") if a.strip())
        gpu = gpus[result.gpu_id] = ReferenceGPU(
            result.gpu_id, name, aliases, (row.get("vendor") or "").strip(), origin
        )
    elif name != gpu.name:
        raise _bad(
            where,
            "gpu_id %r is named %r here but %r above; use one gpu_name per gpu_id" % (result.gpu_id, name, gpu.name),
        )
    return gpu


def parse_csv(
    path: Union[Path, str, Traversable], origin: str, builtin: Optional[Dict[str, ReferenceGPU]] = None
) -> Dict[str, ReferenceGPU]:
    """{gpu_id: ReferenceGPU} of the new GPUs in one reference CSV; DamagedFile naming the file, line and fix.

    A row for a built-in GPU (same gpu_id and gpu_name) joins that GPU, and a row the built-in data already
    holds is skipped, so `references --format csv` output, edited or not, reads back.
    """
    builtin = builtin or {}
    shown = str(path)
    header, rows = _read_rows(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise DamagedFile(
            "%s: missing column%s %s; a reference CSV has the columns %s "
            "(`tfcnnwrap references --format csv` prints a template)"
            % (shown, "s" if len(missing) > 1 else "", ", ".join(missing), ",".join(COLUMNS))
        )
    gpus: dict = {}
    seen = {r.key(): ("built-in", r.images_per_sec) for g in builtin.values() for r in g.results}
    added = 0
    for line, row in rows:
        where = "%s line %d" % (shown, line)
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        result = _result_from_row(row, where, origin)
        gpu = _gpu_for(row, result, gpus, builtin, where, origin)
        previous = seen.get(result.key())
        if previous == ("built-in", result.images_per_sec):
            continue
        if isinstance(previous, tuple):
            raise _bad(
                where,
                "changes the built-in figure of %s %s at batch size %d (same conditions and "
                "source); give your own figure its own source or notes"
                % (result.gpu_id, result.model, result.batch_size),
            )
        if previous is not None:
            raise _bad(
                where,
                "repeats %s %s at batch size %d under the same conditions and source as line %d;"
                " keep one" % (result.gpu_id, result.model, result.batch_size, previous),
            )
        seen[result.key()] = line
        gpu.results.append(result)
        added += 1
    if not rows or (not added and not builtin):
        raise DamagedFile("%s holds no reference rows; add rows under the header %s" % (shown, ",".join(COLUMNS)))
    return gpus


def _fact(value: str, source: str, what: str, gpu_id: str) -> Union[float, str]:
    text = (value or "").strip()
    if text.lower() in ("unpublished", "unverified"):
        return text.lower()
    try:
        number = float(text)
    except ValueError:
        number = 0.0
    if not number > 0 or not (source or "").strip():
        raise DamagedFile(
            "%s: %s %r of %s needs a positive number with its source, or 'unpublished'"
            % (FACTS_FILE, what, value, gpu_id)
        )
    return number


def load_facts(gpus: Mapping[str, ReferenceGPU], path: Union[Path, str, Traversable] = FACTS_FILE) -> None:
    """Fill each built-in GPU's Facts from gpus.csv (launch price in USD, board power in W, peak fp32 and fp16
    TFLOPS, with sources; the physical GPU's identity)."""
    _, rows = _read_rows(path)
    for _, row in rows:
        gpu = gpus.get((row.get("gpu_id") or "").strip())
        if gpu is None:
            continue
        peaks = {}
        for column in ("fp32_tflops", "fp16_tflops"):
            source = column.replace("tflops", "source")
            value = row.get(column) or "unverified"
            peaks[column] = _fact(value, row.get(source), column, gpu.id)
            peaks[source] = (row.get(source) or "").strip()
        if (row.get("tf32_tflops") or "").strip():
            peaks["tf32_tflops"] = _fact(row.get("tf32_tflops"), row.get("tf32_source"), "tf32_tflops", gpu.id)
            peaks["tf32_source"] = (row.get("tf32_source") or "").strip()
        gpu.facts = Facts(
            identity=(row.get("identity") or "").strip() or gpu.id,
            **peaks,  # type: ignore[arg-type]  # fp32_tflops/fp16_tflops: float or text, the sources text
            price_usd=_fact(row.get("launch_price_usd"), row.get("price_source"), "launch_price_usd", gpu.id),
            price_source=(row.get("price_source") or "").strip(),
            power_w=_fact(row.get("board_power_w"), row.get("power_source"), "board_power_w", gpu.id),
            power_source=(row.get("power_source") or "").strip(),
            notes=(row.get("notes") or "").strip(),
        )


def builtin_gpus() -> Dict[str, ReferenceGPU]:
    """The packaged references and facts: from the user cache when it holds them parsed for these very files
    (``cached_builtin``), else parsed here and cached for the next verb."""
    key = _builtin_key()
    gpus = _cached_builtin(key)
    if gpus is None:
        gpus = parse_csv(DATA_FILE, "built-in")
        load_facts(gpus)
        _check_names(gpus)  # before caching: a cached set has passed it
        _cache_builtin(key, gpus)
    return gpus


def load_references(user_csv: Optional[Union[Path, str]] = None) -> ReferenceSet:
    """The built-in references, plus those of ``user_csv`` (after them) when given."""
    gpus = builtin_gpus()
    if user_csv:
        extra = parse_csv(user_csv, str(user_csv), builtin=gpus)
        gpus.update(extra)
        _check_names(gpus)  # the built-in names were checked by builtin_gpus
    return ReferenceSet(gpus)


def _check_names(gpus: Dict[str, ReferenceGPU]) -> None:
    """Two GPUs must not answer to the same exact name, or neither could be chosen by it."""
    owner: dict = {}
    for gpu in gpus.values():
        for key in gpu.keys():
            other = owner.setdefault(key, gpu)
            if other is not gpu:
                raise DamagedFile(
                    "%s: %s answers to the same name as %s; give it another gpu_name or aliases"
                    % (gpu.origin, gpu.label(), other.label())
                )


# -- the built-in references, parsed once -------------------------------------------------------------------
# Parsing and checking references.csv's ~2,650 rows costs ~90 ms of every `references` and `compare`; the
# result, keyed by a hash of both packaged files' bytes, is kept in the user cache directory as compact JSON
# (each text once, in a table; a Result a list of indexes and numbers) and read back in ~15 ms. A cache that
# is missing, stale, broken or hostile (a wrong type anywhere, an index out of range) is ignored and rewritten.
CACHE_VERSION = 2  # raise it when ReferenceGPU, Result or Facts change
CACHE_NAME = "references.json"
MAX_CACHE_BYTES = 16 * 1024 * 1024
_RESULT_FIELDS = tuple(f.name for f in fields(Result))
_RESULT_WHOLE = ("batch_size", "num_gpus")
_TEXT_AT = [at for at, name in enumerate(_RESULT_FIELDS) if name not in _RESULT_WHOLE + ("images_per_sec",)]
_TEXT_NAMES = [_RESULT_FIELDS[at] for at in _TEXT_AT]


def cache_path() -> Path:
    """Where the parsed built-in references are kept: platformdirs' user cache directory. On Linux that is
    the XDG rule (an absolute $XDG_CACHE_HOME, else ~/.cache), read here without platformdirs' import (~4 ms
    with the tempfile and shutil it brings, in every `references` and `compare`: issue 39); a test holds the
    two to the same answer."""
    if sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.expanduser("~/.cache")
        if os.path.isabs(base):  # else a relative $HOME: platformdirs' own rule
            return Path(base) / "tfcnnwrap" / CACHE_NAME
    import platformdirs  # lazy: only when the references are read

    return Path(platformdirs.user_cache_dir("tfcnnwrap", appauthor=False)) / CACHE_NAME


def _builtin_key() -> str:
    digest = hashlib.sha256(("%d %s\0" % (CACHE_VERSION, __version__)).encode("utf-8"))
    for path in (DATA_FILE, FACTS_FILE):
        digest.update(read_bounded(path, MAX_CSV_BYTES, "a reference CSV"))  # type: ignore[arg-type]
        digest.update(b"\0")
    return digest.hexdigest()


def _compact_value(result: Result, name: str, ref: Callable[[str], int]) -> Optional[int]:
    if name == "images_per_sec":
        return None  # read back from the text
    value = getattr(result, name)
    return value if name in _RESULT_WHOLE else ref(value)


def _compact(key: str, gpus: Dict[str, ReferenceGPU]) -> Dict[str, Any]:
    table: Dict[str, int] = {}

    def ref(text: str) -> int:
        return table.setdefault(text, len(table))

    rows = []
    for gpu in gpus.values():
        results = [[_compact_value(r, n, ref) for n in _RESULT_FIELDS] for r in gpu.results]
        facts = [
            ref(getattr(gpu.facts, f.name)) if f.type == "str" else getattr(gpu.facts, f.name) for f in fields(Facts)
        ]
        rows.append(
            [
                ref(gpu.id),
                ref(gpu.name),
                [ref(a) for a in gpu.aliases],
                ref(gpu.vendor),
                ref(gpu.origin),
                results,
                facts,
            ]
        )
    return {"format": CACHE_VERSION, "key": key, "texts": list(table), "gpus": rows}


def _text(texts: List[str], index: object) -> str:
    if type(index) is not int or not 0 <= index < len(texts):
        raise ValueError("not an index")
    return texts[index]


def _fact_value(value: object) -> object:
    if value is None or type(value) in (float, str):
        return value
    raise ValueError("not a fact")


_TEXT_INDEXES = itemgetter(*_TEXT_AT)
_WHOLE_VALUES = itemgetter(*(_RESULT_FIELDS.index(name) for name in _RESULT_WHOLE))
_FIGURE_TEXT = _TEXT_NAMES.index("text")
# A result's fields in their order, picked from (its texts..., its whole numbers..., images/sec)
_IN_ORDER = itemgetter(
    *[
        _TEXT_AT.index(at)
        if at in _TEXT_AT
        else len(_TEXT_AT) + _RESULT_WHOLE.index(name)
        if name in _RESULT_WHOLE
        else len(_TEXT_AT) + len(_RESULT_WHOLE)
        for at, name in enumerate(_RESULT_FIELDS)
    ]
)


def _expanded_result(texts: List[str], row: object) -> Result:
    if type(row) is not list or len(row) != len(_RESULT_FIELDS):
        raise ValueError("not a result")
    indexes = _TEXT_INDEXES(row)
    if set(map(type, indexes)) != {int} or min(indexes) < 0:
        raise ValueError("not an index")  # past the end: IndexError
    whole = _WHOLE_VALUES(row)
    if set(map(type, whole)) != {int} or min(whole) < 1:
        raise ValueError("not a positive batch size or GPU count")
    found = itemgetter(*indexes)(texts)
    # read from its text as _positive_float reads it: exact, where jsontext would round a 17-digit figure
    number = float(found[_FIGURE_TEXT])
    if not 0 < number < float("inf"):
        raise ValueError("not a positive images_per_sec")
    # Every field checked above: set as they are. A frozen dataclass's __init__ sets each of the 15 through
    # object.__setattr__, half of the ~2,650 results' expansion (issue 39: `references` start-up).
    result = object.__new__(Result)
    result.__dict__.update(zip(_RESULT_FIELDS, _IN_ORDER(found + whole + (number,))))
    return result


def _expanded(data: object, key: str) -> Optional[Dict[str, ReferenceGPU]]:
    """The GPUs of a cache's JSON; None unless it is this version's, for ``key``, and well-formed throughout."""
    if type(data) is not dict or data.get("format") != CACHE_VERSION or data.get("key") != key:
        return None
    texts, rows = data.get("texts"), data.get("gpus")
    if type(texts) is not list or type(rows) is not list or not all(type(t) is str for t in texts):
        return None
    gpus: Dict[str, ReferenceGPU] = {}
    try:
        for gpu_id, name, aliases, vendor, origin, results, facts in rows:
            gpu = ReferenceGPU(
                _text(texts, gpu_id),
                _text(texts, name),
                tuple(_text(texts, a) for a in aliases),
                _text(texts, vendor),
                _text(texts, origin),
            )
            gpu.results = [_expanded_result(texts, r) for r in results]
            if type(facts) is not list or len(facts) != len(fields(Facts)):
                raise ValueError("not the facts")
            values: Dict[str, Any] = {  # typed per field: text where Facts says str
                f.name: _text(texts, v) if f.type == "str" else _fact_value(v) for f, v in zip(fields(Facts), facts)
            }
            gpu.facts = Facts(**values)
            gpus[gpu.id] = gpu
    except (TypeError, ValueError, IndexError):
        return None
    return gpus


def _cached_builtin(key: str) -> Optional[Dict[str, ReferenceGPU]]:
    raw = read_own_file(cache_path(), MAX_CACHE_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return _expanded(data, key)


def _cache_builtin(key: str, gpus: Dict[str, ReferenceGPU]) -> None:
    """Keep the parsed references for the next verb when they read back equal; a cache that cannot be written
    (a read-only home, a planted link) only costs the next verb the parse."""
    text = dumps(_compact(key, gpus))
    if _expanded(json.loads(text), key) != gpus:
        return  # a figure jsontext would round: parse the CSV each time rather than print another number
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        safefs.atomic_write(path, text, fsync=False)
    except (OSError, TfcnnwrapError):
        pass
