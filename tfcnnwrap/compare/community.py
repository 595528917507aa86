"""Community results: the library's verified bundles as reference-like rows for `compare --against/--rank`.

One narrow function, ``reference_set(references_csv, source)``, gives compare and rank the references to use:
the built-in ones (and ``--references FILE``), the community ones, or both. A community GPU is one
``references.ReferenceGPU`` per GPU name, labelled ``<GPU> community (N sweeps)``; each of its results is one
configuration under one set of conditions (model, batch size, GPU count, precision, XLA, variable update, data,
TensorFlow X.Y): the median across the sweeps of their means, its source naming the range and the bundle ids.
Unverified bundles (exported without logs) stay out. Read from the index only, never the bundle files, so a
library of 10,000 bundles ranks in well under a second.
"""

from __future__ import annotations

import statistics
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from tfcnnwrap import render
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.results.references import ReferenceGPU, ReferenceSet, Result, load_references
from tfcnnwrap.share.bundle import slug, vendor_of
from tfcnnwrap.share.library import Library

if TYPE_CHECKING:
    from tfcnnwrap.compare.rank import Ranking

SOURCES = ("builtin", "community", "all")
ID_PREFIX = "community-"
SHOWN_IDS = 5  # bundle ids a provenance note names before "and N more"
# (model, batch size, GPU count, precision, xla, variable update, data, TF X.Y): one set of conditions
_Conditions = Tuple[str, int, int, str, str, str, str, str]


def _tf_xy(version: str) -> str:
    parts = str(version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else str(version or "")


def group_rows(rows: List[Any]) -> Dict[str, Any]:
    """{gpu: {(model, batch, gpus, precision, xla, update, data, tf X.Y): [(images/sec, bundle id)]}} of
    ``rows``: library.Library.community_rows tuples (gpu, ..., tf_version, images/sec, id)."""
    groups: Dict[str, Dict[_Conditions, List[Tuple[float, str]]]] = {}
    for gpu, model, batch, count, precision, xla, update, data, tf, value, ident in rows:
        key = (model, batch, count, precision or "", xla or "", update or "", data or "", _tf_xy(tf))
        groups.setdefault(gpu, {}).setdefault(key, []).append((value, ident))
    return groups


def provenance(ids: List[str]) -> str:
    shown = ", ".join(i[:12] for i in ids[:SHOWN_IDS])
    more = " and %d more" % (len(ids) - SHOWN_IDS) if len(ids) > SHOWN_IDS else ""
    return "bundles %s%s" % (shown, more)


def _result(gpu_id: str, key: Tuple[str, int, int, str, str, str, str, str], pairs: List[Tuple[float, str]]) -> Result:
    model, batch, gpus, precision, xla, update, data, tf = key
    values = sorted(v for v, _ in pairs)
    ids = sorted({i for _, i in pairs})
    median = statistics.median(values)
    source = "community (%d sweep%s): median %.2f, range %.2f-%.2f images/sec; %s" % (
        len(values), "" if len(values) == 1 else "s", median, values[0], values[-1], provenance(ids))
    return Result(gpu_id=gpu_id, model=model, batch_size=batch, images_per_sec=median, text="%.2f" % median,
                  precision=precision, num_gpus=gpus, variable_update=update, data=data, tf_version=tf,
                  source=source, notes="range %.2f-%.2f" % (values[0], values[-1]), origin="community", xla=xla)


def community_gpus(rows: List[Any]) -> Dict[str, ReferenceGPU]:
    """{id: ReferenceGPU} of the library's verified rows, one GPU per GPU name."""
    gpus = {}
    for name, groups in sorted(group_rows(rows).items()):
        gpu_id = ID_PREFIX + slug(name)
        sweeps = len({i for pairs in groups.values() for _, i in pairs})
        gpu = ReferenceGPU(id=gpu_id, name="%s community (%d sweep%s)" % (name, sweeps, "" if sweeps == 1 else "s"),
                           aliases=(), vendor=vendor_of(name), origin="community",
                           bundle_ids=sorted({i for pairs in groups.values() for _, i in pairs}))
        gpu.results = [_result(gpu_id, key, pairs) for key, pairs in sorted(groups.items())]
        gpus[gpu_id] = gpu
    return gpus


def library_rows(models: Optional[Sequence[str]] = None) -> List[Any]:
    """The library's verified index rows (of ``models``); [] when there is no library yet."""
    library = Library(create=False)
    try:
        return library.community_rows(models)
    finally:
        library.close()


def _rows_or_warn(models: Optional[Sequence[str]], source: str) -> List[Any]:
    """The library's rows; with ``--source all`` an unusable library is a warning, not the end of compare."""
    try:
        return library_rows(models)
    except TfcnnwrapError as exc:
        if source == "community":
            raise

        sys.stderr.write("tfcnnwrap compare: warning: no community results: %s\n" % exc.message)
        return []


def reference_set(
    references_csv: Optional[str] = None, source: str = "all", models: Optional[Sequence[str]] = None
) -> ReferenceSet:
    """The references compare and rank use: built-in (+ ``references_csv``), community, or all."""
    source = source or "all"
    if source not in SOURCES:
        raise UsageError("--source must be one of %s, not %r" % (", ".join(SOURCES), source))
    if source == "community" and references_csv:
        raise UsageError("--references adds to the built-in references: use it with --source builtin or all")
    gpus = dict(load_references(references_csv).gpus) if source != "community" else {}
    if source != "builtin":
        taken = {k for g in gpus.values() for k in g.keys()}
        for gpu_id, gpu in community_gpus(_rows_or_warn(models, source)).items():
            if gpu_id not in gpus and not (gpu.keys() & taken):
                gpus[gpu_id] = gpu
    if source == "community" and not gpus:
        raise UsageError("the library holds no verified community results; `tfcnnwrap pull GIT_URL` or "
                         "`tfcnnwrap import BUNDLE` adds some (or use --source builtin)")
    return ReferenceSet(gpus)


def rank_provenance(ranking: Ranking) -> List[Any]:
    """One note per community GPU the ranking shows: which bundles its figures are the median of."""
    shown = [row for row in ranking.rows if str(row.gpu_id or "").startswith(ID_PREFIX)]
    if not shown:
        return []
    gpus = community_gpus(library_rows())
    return ["%s: per configuration the median across its sweeps; %s"
            % (row.gpu, provenance(gpus[row.gpu_id].bundle_ids)) for row in shown if row.gpu_id in gpus]


def print_provenance(ranking: Ranking, fmt: str) -> None:
    """The ``Community:`` notes under a ranking: wrapped between words on a terminal, one line each in
    Markdown."""
    lines = ["Community: %s" % line for line in rank_provenance(ranking)]
    if fmt == "markdown":
        sys.stdout.write("".join("\n%s\n" % render.md_text(line) for line in lines))
        return
    out = render.console()
    for line in lines:
        render.print_note(out, line)
