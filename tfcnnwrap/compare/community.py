"""Community results: the library's verified bundles as reference-like rows for `compare --against/--rank`.

One narrow function, ``reference_set(references_csv, source)``, gives compare and rank the references to use:
the built-in ones (and ``--references FILE``), the community ones, or both. A community entry is one
``references.ReferenceGPU`` per GPU identity (results/gpuid.py: every spelling of one GPU, never a look-alike
name) and link class (``gen3 x4`` from the bundles' ``conditions.link``; one GPU in a desktop slot and in an
eGPU enclosure are two entries), labelled ``<GPU> community[, <link>] (N sweeps[, M signers])`` (M: distinct
keys with a valid signature over its bundles; left out when none); each of its results is one configuration
under one set of conditions (model, batch size, GPU count, precision, XLA, variable update, data, TensorFlow
X.Y): the median across the sweeps of their means, its source naming the range and the bundle ids.
Unverified bundles (exported without logs) stay out, and so do the bundles of the sweep being compared (it
never counts toward its own community). Read from the index only (but for the few bundles that could be the
sweep itself), never the bundle files, and once per compare (the provenance notes reuse the ranking's entries):
a bundle's conditions once, its results as narrow rows (library.Library.community_index). An entry
is ``replicated`` when, under one set of conditions, two bundles signed by disjoint sets of keys have figures
whose 95% intervals overlap.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from tfcnnwrap import render
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.results.gpuid import gpu_identity
from tfcnnwrap.results.references import ReferenceGPU, ReferenceSet, Result, load_references
from tfcnnwrap.share.bundle import read_path, slug, vendor_of
from tfcnnwrap.share.indexrows import CommunityRow
from tfcnnwrap.share.library import Library

if TYPE_CHECKING:
    from tfcnnwrap.results.comparesweep import Sweep
    from tfcnnwrap.results.comparison import Ranking

SOURCES = ("builtin", "community", "all")
ID_PREFIX = "community-"
SHOWN_IDS = 5  # bundle ids a provenance note names before "and N more"
# ({bundle id: signing keys}, {(bundle id, model, batch size, GPUs): 95% interval in %}) from the index
Evidence = Tuple[Dict[str, Set[str]], Dict[Tuple[str, str, int, int], float]]
Pair = Tuple[float, str]  # (images/sec, bundle id): one bundle's figure for one configuration


class BundleConditions(NamedTuple):
    """What the library's index keys verified bundles by: the GPU as named and the conditions besides the
    configuration (None where a bundle does not say)."""

    gpu: str
    precision: Optional[str]
    xla: Optional[str]
    variable_update: Optional[str]
    data: Optional[str]
    tf_version: Optional[str]
    link: Optional[str]  # ``gen3 x4``; None where the bundle or an older index does not say


# One verified result of the library's index: (bundle_id, model, batch_size, num_gpus, images_per_sec), the
# row as SQLite gives it: 500,000 of them read for one `--rank`, where a record each cost 0.5 s (group_index
# unpacks them by position in its one loop)
IndexResult = Tuple[str, str, int, int, float]


@dataclass(frozen=True)
class CommunityIndex:
    """The library's verified bundles, each set of conditions once with its bundles, and their results (what
    library.Library.community_index reads, lean for 100,000s of results)."""

    bundles: Dict[BundleConditions, List[str]]
    results: Sequence[IndexResult]


def read_index(found: Tuple[Mapping[Tuple[Any, ...], List[str]], Sequence[IndexResult]]) -> CommunityIndex:
    """library.Library.community_index's two parts as records: the one place their positions are read."""
    bundles, results = found
    return CommunityIndex({BundleConditions(*key): ids for key, ids in bundles.items()}, results)


class FigureConditions(NamedTuple):
    """One configuration under one set of conditions: what a community figure is the median of."""

    model: str
    batch_size: int
    num_gpus: int
    precision: str
    xla: str
    variable_update: str
    data: str
    tf: str  # X.Y


@dataclass(frozen=True)
class Entry:
    """One community entry as its bundles are gathered: each spelling of its GPU with the bundles that use
    it, and each configuration under one set of conditions with its bundles' figures."""

    names: Dict[str, Set[str]] = field(default_factory=dict)
    groups: Dict[FigureConditions, List[Pair]] = field(default_factory=dict)


def _tf_xy(version: Optional[str]) -> str:
    parts = str(version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else str(version or "")


# A community entry's key: one GPU (results/gpuid.py) at one link class (``gen3 x4``; None: not known)
EntryKey = Tuple[str, Optional[str]]
# the results of one bundle conditions and configuration: (its conditions, model, batch size, GPUs, figures)
Gathered = Tuple[BundleConditions, str, int, int, List[Pair]]


def group_rows(rows: Sequence[CommunityRow]) -> Dict[EntryKey, Entry]:
    """The entries of ``rows`` (library.Library.community_rows), one per GPU identity and link
    class: two spellings of one GPU are one entry; one GPU at two link widths (a desktop slot, an eGPU
    enclosure) is two."""
    # first by the rows' own fields (a tuple key: the cheap per-row step, for 100,000s of rows), then each
    # distinct one under its GPU identity and conditions (names normalised once per distinct key, not per row)
    raw: Dict[Tuple[Any, ...], List[Pair]] = {}
    for row in rows:
        key = row[:9] + row[11:12]
        pairs = raw.get(key)
        if pairs is None:
            raw[key] = pairs = []
        pairs.append((row.images_per_sec, row.bundle_id))
    return _entries((BundleConditions(key[0], *key[4:10]), key[1], key[2], key[3], pairs) for key, pairs in raw.items())


def _entries(gathered: Iterable[Gathered]) -> Dict[EntryKey, Entry]:
    """The entries of results already gathered by their own fields."""
    entries: Dict[EntryKey, Entry] = {}
    for cond, model, batch, count, pairs in gathered:
        entry = entries.setdefault((gpu_identity(cond.gpu), cond.link or None), Entry())
        entry.names.setdefault(cond.gpu, set()).update(ident for _, ident in pairs)
        key = FigureConditions(
            model,
            batch,
            count,
            cond.precision or "",
            cond.xla or "",
            cond.variable_update or "",
            cond.data or "",
            _tf_xy(cond.tf_version),
        )
        entry.groups.setdefault(key, []).extend(pairs)
    return entries


def group_index(index: CommunityIndex, own: Collection[str] = ()) -> Dict[EntryKey, Entry]:
    """group_rows of the library's index (the bundles in ``own`` left out): the same entries, made with one
    dict look-up per result (its bundle's set of conditions numbered)."""
    number: Dict[str, int] = {}
    for k, ids in enumerate(index.bundles.values()):
        number.update(dict.fromkeys(ids, k))
    for ident in own:
        number.pop(ident, None)
    raw: Dict[Tuple[int, str, int, int], List[Pair]] = {}
    for ident, model, batch, count, value in index.results:
        n = number.get(ident)
        if n is None:  # not the device's, not verified, or the sweep's own bundle
            continue
        key = (n, model, batch, count)
        pairs = raw.get(key)
        if pairs is None:
            raw[key] = pairs = []
        pairs.append((value, ident))
    conditions = list(index.bundles)
    return _entries((conditions[n], model, batch, count, pairs) for (n, model, batch, count), pairs in raw.items())


def provenance(ids: List[str]) -> str:
    shown = ", ".join(i[:12] for i in ids[:SHOWN_IDS])
    more = " and %d more" % (len(ids) - SHOWN_IDS) if len(ids) > SHOWN_IDS else ""
    return "bundles %s%s" % (shown, more)


def _result(gpu_id: str, key: FigureConditions, pairs: List[Pair]) -> Result:
    model, batch, gpus, precision, xla, update, data, tf = key
    values = sorted(v for v, _ in pairs)
    ids = sorted({i for _, i in pairs})
    median = statistics.median(values)
    source = "community (%d sweep%s): median %.2f, range %.2f-%.2f images/sec; %s" % (
        len(values),
        "" if len(values) == 1 else "s",
        median,
        values[0],
        values[-1],
        provenance(ids),
    )
    return Result(
        gpu_id=gpu_id,
        model=model,
        batch_size=batch,
        images_per_sec=median,
        text="%.2f" % median,
        precision=precision,
        num_gpus=gpus,
        variable_update=update,
        data=data,
        tf_version=tf,
        source=source,
        notes="range %.2f-%.2f" % (values[0], values[-1]),
        origin="community",
        xla=xla,
    )


def entry_id(identity: str, link: Optional[str]) -> str:
    """``community-rtx2070``, ``community-rtx2070-gen3-x4``: one id per entry key, never shared by two."""
    return ID_PREFIX + identity + ("-" + slug(link) if link else "")


def counts_label(sweeps: int, signers: int) -> str:
    """``5 sweeps, 3 signers`` (``1 sweep``; no signers part when none signed)."""
    text = "%d sweep%s" % (sweeps, "" if sweeps == 1 else "s")
    return text + (", %d signer%s" % (signers, "" if signers == 1 else "s") if signers else "")


def entry_label(name: str, link: Optional[str], sweeps: int, signers: int = 0) -> str:
    """``GeForce RTX 2070 community, gen3 x4 (3 sweeps, 2 signers)``; no link part where it is not known."""
    return "%s community%s (%s)" % (name, ", " + link if link else "", counts_label(sweeps, signers))


def _shown_name(names: Dict[str, Set[str]]) -> str:
    """The spelling most of an entry's bundles use (the first in order on a tie)."""
    return sorted(names.items(), key=lambda item: (-len(item[1]), item[0]))[0][0]


def replicated(key: FigureConditions, pairs: List[Pair], evidence: Evidence) -> bool:
    """Two bundles of one set of conditions, signed by disjoint sets of keys (independent people), whose
    figures' 95% intervals overlap: the figure was reproduced by someone else, not just repeated."""
    signers, intervals = evidence
    by_keys: Dict[FrozenSet[str], List[Tuple[float, float]]] = {}  # per set of signing keys, its intervals
    for value, ident in pairs if signers else ():  # no signed bundle: none of its pairs looked up
        keys = signers.get(ident)
        pct = intervals.get((ident, key[0], key[1], key[2])) if keys else None
        if keys and pct is not None:
            half = value * pct / 100.0
            by_keys.setdefault(frozenset(keys), []).append((value - half, value + half))
    # pairs of key sets, not of bundles: thousands of bundles by a few people stay a few comparisons
    sets = list(by_keys)
    return any(
        a.isdisjoint(b) and _any_overlap(by_keys[a], by_keys[b]) for i, a in enumerate(sets) for b in sets[i + 1 :]
    )


def _any_overlap(first: List[Tuple[float, float]], second: List[Tuple[float, float]]) -> bool:
    """Whether an interval (low, high) of ``first`` meets one of ``second``: one pass in order of their low
    ends, each compared with the highest end the other list has reached (n log n, not n x m)."""
    reach = [float("-inf"), float("-inf")]
    for low, high, side in sorted([(lo, hi, 0) for lo, hi in first] + [(lo, hi, 1) for lo, hi in second]):
        if low <= reach[1 - side]:
            return True
        reach[side] = max(reach[side], high)
    return False


def community_gpus(
    rows: Sequence[CommunityRow], evidence: Optional[Evidence] = None, entries: Optional[Dict[EntryKey, Entry]] = None
) -> Dict[str, ReferenceGPU]:
    """{id: ReferenceGPU} of the library's verified rows (or of ``entries``, group_index's), one per GPU
    identity and link class; ``evidence`` (signers and intervals, library_evidence) counts the signers and
    marks a replicated entry."""
    evidence = evidence or ({}, {})
    gpus = {}
    grouped = group_rows(rows) if entries is None else entries
    for (identity, link), entry in sorted(grouped.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        groups = entry.groups
        gpu_id = entry_id(identity, link)
        ids = sorted({i for pairs in groups.values() for _, i in pairs})
        signed = evidence[0]
        keys = set().union(*(signed[i] for i in ids if i in signed)) if signed else set()
        name = _shown_name(entry.names)
        gpu = ReferenceGPU(
            id=gpu_id,
            name=entry_label(name, link, len(ids), len(keys)),
            aliases=(),
            vendor=vendor_of(name),
            origin="community",
            bundle_ids=ids,
            link=link,
            sweeps=len(ids),
            signers=len(keys),
            replicated=any(replicated(k, pairs, evidence) for k, pairs in groups.items()),
        )
        gpu.results = [_result(gpu_id, key, pairs) for key, pairs in sorted(groups.items())]
        gpus[gpu_id] = gpu
    return gpus


def own_bundles(rows: Union[Sequence[CommunityRow], CommunityIndex], sweep: Optional[Sweep]) -> Set[str]:
    """The ids of the library's bundles that are ``sweep`` itself (exported, maybe before a resume, and
    imported): the same creation time, and every ok run of the bundle one of the sweep's own (model, batch
    size, run number, start time, images/sec). Only the few bundles of that creation time are opened."""
    if sweep is None or not sweep.meta.created_at:
        return set()
    if isinstance(rows, CommunityIndex):  # the bundles of that time, by the index
        listed = {i for ids in rows.bundles.values() for i in ids}
        candidates = sorted(i for i in _created_at(sweep.meta.created_at) if i in listed)
    else:
        candidates = sorted({row.bundle_id for row in rows if row.created_at == sweep.meta.created_at})
    if not candidates:
        return set()
    mine = {(r.model, r.batch_size, r.run, r.started_at, r.images_per_sec) for r in sweep.runs if r.status == "ok"}
    own = set()
    library = Library(create=False)
    try:
        for ident in candidates:
            try:
                bundle = read_path(library.path_of(ident))
            except TfcnnwrapError:
                continue
            theirs = {(r.model, r.batch_size, r.run, r.started_at, r.images_per_sec) for r in bundle.runs if r.ok}
            if theirs and theirs <= mine:
                own.add(ident)
    finally:
        library.close()
    return own


def _created_at(stamp: str) -> List[str]:
    library = Library(create=False)
    try:
        return library.created_at(stamp)
    finally:
        library.close()


def library_index(models: Optional[Sequence[str]] = None, device: Optional[str] = None) -> CommunityIndex:
    """The library's community_index (of ``models``, measured on ``device``); empty without a library."""
    library = Library(create=False)
    try:
        return read_index(library.community_index(models, device))
    finally:
        library.close()


def library_evidence() -> Evidence:
    """The index's signers and intervals (({}, {}) without a library): what community_gpus counts."""
    library = Library(create=False)
    try:
        return library.signer_keys(), library.intervals()
    finally:
        library.close()


def _rows_or_warn(models: Optional[Sequence[str]], source: str, device: Optional[str] = None) -> CommunityIndex:
    """The library's index; with ``--source all`` an unusable library is a warning, not the end of compare."""
    try:
        return library_index(models, device)
    except TfcnnwrapError as exc:
        if source == "community":
            raise

        sys.stderr.write("tfcnnwrap compare: warning: no community results: %s\n" % exc.message)
        return CommunityIndex({}, [])


# {id(sweep): (that sweep, its community entries)}: reference_set's community entries, kept for the ranking's
# provenance notes (rank_provenance), so a library of 100,000s of rows is read and grouped once per compare
_BUILT: Dict[int, Tuple[Sweep, Dict[str, ReferenceGPU]]] = {}


def reference_set(
    references_csv: Optional[str] = None,
    source: str = "all",
    models: Optional[Sequence[str]] = None,
    sweep: Optional[Sweep] = None,
    device: Optional[str] = None,
) -> ReferenceSet:
    """The references compare and rank use: built-in (+ ``references_csv``), community, or all. ``sweep``:
    the sweep being compared, whose own bundles never count toward its community; the community's of
    ``device`` only when it is given (a CPU's results rank among CPUs', a GPU's among GPUs')."""
    source = source or "all"
    if source not in SOURCES:
        raise UsageError("--source must be one of %s, not %r" % (", ".join(SOURCES), source))
    if source == "community" and references_csv:
        raise UsageError("--references adds to the built-in references: use it with --source builtin or all")
    gpus = dict(load_references(references_csv).gpus) if source != "community" else {}
    if source != "builtin":
        taken = {k for g in gpus.values() for k in g.keys()}
        data = _rows_or_warn(models, source, device)
        own = own_bundles(data, sweep)
        entries = group_index(data, own)
        community = community_gpus([], library_evidence() if entries else None, entries)
        _BUILT.clear()  # the last one only
        if sweep is not None:  # what rank_provenance names under this sweep's ranking, read once
            _BUILT[id(sweep)] = (sweep, community)
        for gpu_id, gpu in community.items():
            if gpu_id not in gpus and not (gpu.keys() & taken):
                gpus[gpu_id] = gpu
    if source == "community" and not gpus:
        raise UsageError(
            "the library holds no verified community results; `tfcnnwrap pull GIT_URL` or "
            "`tfcnnwrap import BUNDLE` adds some (or use --source builtin)"
        )
    return ReferenceSet(gpus)


def rank_provenance(ranking: Ranking) -> List[str]:
    """One note per community GPU the ranking shows: which bundles its figures are the median of."""
    shown = [row for row in ranking.rows if str(row.gpu_id or "").startswith(ID_PREFIX)]
    if not shown:
        return []
    built = _BUILT.pop(id(ranking.sweep), None)
    if built is not None and built[0] is ranking.sweep:  # the entries the ranking was made of
        gpus = built[1]
    else:
        data = library_index()
        entries = group_index(data, own_bundles(data, ranking.sweep))
        gpus = community_gpus([], library_evidence(), entries)
    return [
        "%s: per configuration the median across its sweeps; %s%s"
        % (
            row.gpu,
            provenance(gpus[row.gpu_id].bundle_ids),
            "; replicated: independent signers' figures agree within their 95% intervals"
            if gpus[row.gpu_id].replicated
            else "",
        )
        for row in shown
        if row.gpu_id in gpus
    ]


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
