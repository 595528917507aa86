"""`site SOURCE... --out DIR`: a static results site (relative links only: any static host, or opened from
disk) of sweep directories, bundles (``*.tfcw.json.gz``), directories of either, or ``library``: an index
(a leaderboard per set of conditions and model: the site's results among the published references, with
their trust and intervals; newest results), a page per GPU (every result, spread across
sweeps), a page per sweep or bundle (reportpage's result view) and, with ``--ab``, an A/B page.

Bundles come from other people: read with a bound (64 MiB unpacked), as JSON objects only, every field
checked before use, written into pages only through autoescaping templates, their names never used as paths
(pages and logs are named by a slug and a hash). Each bundle passes `verify`'s checks before it is shown (its
id is the hash of its content, each log matches its sha256 and re-parses to the recorded figure and status):
one that fails is left out and named; one exported with --no-logs is shown, marked unverified.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import signal
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

from tfcnnwrap import safefs
from tfcnnwrap.compare.ab import sweep_vs_sweeps
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.jsontext import dumps
from tfcnnwrap.pages import svgcharts
from tfcnnwrap.pages.comparepage import ab_page
from tfcnnwrap.pages.reportpage import (
    ResultView,
    Table,
    cell,
    num,
    numcell,
    render,
    report_context,
    sweep_view,
    text_of,
)
from tfcnnwrap.results import ceilings
from tfcnnwrap.results.aggregate import summarize_plain
from tfcnnwrap.results.bundlerecords import Bundle
from tfcnnwrap.results.closest import closest_result
from tfcnnwrap.results.fleetreport import with_fleet
from tfcnnwrap.results.gpuid import gpu_identity
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.results.references import ReferenceGPU, ReferenceSet, Result, load_references
from tfcnnwrap.results.store import is_sweep
from tfcnnwrap.run.logparse import step_points
from tfcnnwrap.share import library, signing, verify
from tfcnnwrap.share.bundle import ID_CHANGED, BundleRefused, checked, parse_json
from tfcnnwrap.share.export import Redactor

if TYPE_CHECKING:
    from tfcnnwrap.results.comparison import ABResult

BUNDLE_SUFFIX = ".tfcw.json.gz"
MAX_BUNDLE_BYTES = 64 * 1024 * 1024  # unpacked; a bundle is one sweep's runs and logs
CONDITION_KEYS = ("precision", "xla", "variable_update", "data")


class BundleError(ValueError):
    """A bundle that cannot be read (not gzip, too big, not a JSON object, wrong shape)."""


def read_bundle(path: Path, limit: int = MAX_BUNDLE_BYTES) -> dict:
    """A bundle's JSON object, read with a bound: gzip, at most ``limit`` bytes unpacked, strict JSON."""
    try:
        with gzip.open(str(path), "rb") as fh:
            data = fh.read(limit + 1)
    except (OSError, EOFError) as exc:
        raise BundleError("%s: not a readable gzip file (%s)" % (path, exc)) from None
    if len(data) > limit:
        raise BundleError("%s: more than %d MiB unpacked; not a bundle" % (path, limit // (1024 * 1024)))

    try:  # bundle's strict parser: 1e999 (infinity), a key twice or a JSON bomb are refused, not shown
        value = parse_json(data, str(path))
    except BundleRefused as exc:
        raise BundleError(exc.message) from None
    if not isinstance(value, dict):
        raise BundleError("%s: holds %s, not a bundle object" % (path, type(value).__name__))
    if not isinstance(value.get("runs"), list):
        raise BundleError("%s: no list of runs" % path)
    return value


def library_dir() -> Path:
    """The library's bundle folder: ``$TFCNNWRAP_DATA/bundles``, else the user data directory's."""
    return library.data_dir() / library.BUNDLES


def slug(text: str, key: str) -> str:
    """A file name made from ``text`` (ASCII letters, digits, hyphens) and a hash of ``key``: safe on every
    file system, unique per key, never a path from the input."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "result"
    return "%s-%s" % (base, hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:10])


@dataclass
class Entry:
    """One sweep or bundle of the site."""

    key: str
    kind: str  # "sweep" or "bundle"
    view: ResultView
    conditions: dict  # precision, xla, variable_update, data (text)
    slug: str = ""
    logs: Optional[dict] = None  # bundle: log name -> text
    unverified: bool = False  # a bundle exported with --no-logs: nothing to check its figures against
    signers: Tuple[str, ...] = ()  # a bundle: who signed it (valid signatures only), as `verify` names them
    # a bundle whose pages the worker that read it wrote (a large site): those pages and their bytes, its file
    # (read again should the slug change), its run count; its view keeps only what the index and GPU pages read
    written: Tuple[str, ...] = ()
    size: int = 0
    path: Optional[Path] = None
    run_count: int = -1

    @property
    def page(self) -> str:
        return "r/%s.html" % self.slug

    @property
    def runs_shown(self) -> int:
        return len(self.view.runs) if self.run_count < 0 else self.run_count


def sweep_entry(path: Path, out_dir: Path) -> Entry:
    """A local sweep's entry, redacted as `export` redacts a bundle (host and user names, home paths): a site is
    for publishing."""
    view = redacted(sweep_view(path, out_dir / "r", root=out_dir))
    return Entry(key=str(path.resolve()), kind="sweep", view=view, conditions=view.conditions)


def redacted(view: ResultView) -> ResultView:
    """The view with every text a reader sees passed through export's Redactor (the sweep's hosts named)."""
    hosts = [text for what, text in view.environment if what == "host"]
    hosts += sorted({str(r.host) for r in view.runs if getattr(r, "host", None)})
    redact = Redactor(hosts)
    links = {key: dict(link, text=redact.text(str(link.get("text", "")))) for key, link in view.log_links.items()}
    return replace(
        view,
        label=redact.text(view.label),
        parts=[redact.text(p) for p in view.parts],
        environment=[(what, redact.text(text)) for what, text in view.environment],
        log_links=links,
        advice=[redact.text(a) for a in view.advice],
    )


def _scalar_text(value: object, limit: int = 300) -> str:
    text = text_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _bundle_gpu(cond: dict) -> str:
    for key in ("gpu", "gpu_name", "gpus"):
        value = cond.get(key)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value if isinstance(v, (str, int, float)))
        if isinstance(value, str) and value.strip():
            return _scalar_text(value.strip(), 200)
    return "GPU not recorded"


def _bundle_logs(data: dict) -> dict:
    logs = data.get("logs")
    if not isinstance(logs, dict):
        return {}
    return {
        name: item["text"]
        for name, item in logs.items()
        if isinstance(name, str) and isinstance(item, dict) and isinstance(item.get("text"), str)
    }


def _bundle_runs(data: dict) -> list:
    runs = []
    for record in data["runs"]:
        try:
            runs.append(RunRecord.from_dict(record))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue  # a record that is not one is left out, as a torn runs.jsonl line is
    return runs


UNVERIFIED_NOTE = "unverified: exported with --no-logs, so its figures cannot be checked against its logs"


def checked_bundle(path: Path, data: dict, allowed_signers: Optional[Path] = None) -> verify.Verdict:
    """`verify`'s Verdict of ``data`` (read by read_bundle): verified, or unverified (exported with --no-logs),
    with its signers; BundleError naming why for one that fails: an id that is not the hash of its content, a
    log that does not match its sha256, a figure or status its log does not give, a broken signature."""
    try:  # the id is verify's to check: its hash over the canonical JSON costs as much as the rest of the check
        bundle = checked(data, str(path), check_id=False)
    except BundleRefused as exc:
        raise BundleError(exc.message) from None
    try:
        verdict = verify.verify(bundle, allowed_signers)
    except BundleRefused as exc:  # a value with no canonical (RFC 8785) form, so no id can be its hash
        raise BundleError("%s: %s" % (path, exc.message)) from None
    changed = ID_CHANGED % bundle.id[:16]
    if verdict.state == verify.FAILED and verdict.findings[:1] == (changed,):
        raise BundleError("%s: %s" % (path, changed))  # named as check_shape names it, the other findings moot
    if verdict.state == verify.FAILED:
        shown = "; ".join(verdict.findings[:3]) + ("; ..." if len(verdict.findings) > 3 else "")
        raise BundleError(
            "%s: %s (%d finding%s: %s); `tfcnnwrap verify %s` lists them"
            % (path, verify.FAILED, len(verdict.findings), "" if len(verdict.findings) == 1 else "s", shown, path.name)
        )
    return verdict


def bundle_entry(path: Path, data: dict, verified: bool = True) -> Entry:
    """A bundle's entry: its runs summarised as `report` does, its conditions and logs as text; an unverified
    one says so in its label (index, GPU page) and its conditions (its page)."""
    runs = _bundle_runs(data)
    raw = data.get("conditions")
    cond: dict = raw if isinstance(raw, dict) else {}
    logs = _bundle_logs(data)
    rows = [r.to_dict() for r in with_fleet(summarize_plain(runs))]
    ident = _scalar_text(data.get("id") or path.name, 80)
    conditions = {k: _condition_text(cond.get(k)) for k in CONDITION_KEYS}
    if cond.get("xla") in ("yes", "no"):
        conditions["xla"] = "XLA" if cond["xla"] == "yes" else "no XLA"
    # far above everything published for that GPU and conditions: flagged on its page and label, not refused
    outliers = [note for note in ceilings.notes(Bundle.from_dict(data)) if note.startswith("outlier")]
    parts = (
        ([] if verified else [UNVERIFIED_NOTE])
        + [_scalar_text(o, 300) for o in outliers]
        + [
            "%s: %s" % (k, _scalar_text(v, 120))
            for k, v in cond.items()
            if isinstance(v, (str, int, float, bool)) and k not in ("gpu", "gpu_name")
        ]
    )
    env = [
        (k, _scalar_text(data.get(k)))
        for k in ("id", "format", "tool_version", "created_at")
        if data.get(k) is not None
    ]
    env += [(str(k)[:80], _scalar_text(v)) for k, v in cond.items()]
    stamp = data.get("created_at")
    created = stamp if isinstance(stamp, str) else ""
    label = "bundle %s%s%s" % (ident, "" if verified else " (unverified)", " (outlier)" if outliers else "")
    view = ResultView(
        label=label,
        gpu=_bundle_gpu(cond),
        parts=parts,
        rows=rows,
        runs=runs,
        environment=env,
        created_at=created[:40],
        conditions=conditions,
        series={
            run.key: (step_points(logs[run.log].encode("utf-8", "replace")), []) for run in runs if run.log in logs
        },
    )
    return Entry(
        key="bundle:%s:%s" % (ident, path.resolve()),
        kind="bundle",
        view=view,
        conditions=conditions,
        logs=logs,
        unverified=not verified,
    )


def _condition_text(value: object) -> str:
    if isinstance(value, bool):
        return "XLA" if value else "no XLA"
    return str(value)[:80] if value not in (None, "") else "not recorded"


# -- sources -----------------------------------------------------------------------------------------------


def _expand(source: str) -> List[Path]:
    """The sweeps and bundle files a SOURCE names (``library``: the bundles library)."""
    path = library_dir() if source == "library" else Path(source)
    if source == "library" and not path.is_dir():
        return []  # an empty library: the site says so
    if not path.exists():
        raise UsageError(
            "%s does not exist; give sweep directories, bundles (*%s), directories of them or "
            "`library`" % (source, BUNDLE_SUFFIX)
        )
    if path.is_file() or is_sweep(path):
        return [path]
    found = _found_under(path)
    if not found and source != "library":
        raise UsageError("%s holds no sweep and no bundle (*%s)" % (source, BUNDLE_SUFFIX))
    return found


def _found_under(root: Path) -> List[Path]:
    """Bundle files and sweeps anywhere under ``root`` (a results repository keeps its bundles at
    bundles/<vendor>/<gpu>/); a sweep is not entered, a linked folder or file not followed."""
    found = []
    for top, dirs, files in os.walk(root, followlinks=False):
        here = Path(top)
        sweeps = [d for d in dirs if not (here / d).is_symlink() and is_sweep(here / d)]
        found += [here / d for d in sweeps]
        dirs[:] = [d for d in dirs if d not in sweeps and d != ".git"]
        found += [
            here / f
            for f in files
            if f.endswith(BUNDLE_SUFFIX) and (here / f).is_file() and not (here / f).is_symlink()
        ]
    return sorted(found)


PARALLEL_FROM = 16  # fewer sources than this are read in this process: a pool's start costs more


def _read_one(path: Path, out_dir: Path, allowed_signers: Optional[Path] = None) -> tuple:
    """(entry, None), or (None, why) for a source that cannot be read; runs in worker processes."""
    try:
        if path.is_file():
            data = read_bundle(path)
            verdict = checked_bundle(path, data, allowed_signers)
            entry = bundle_entry(path, data, verdict.state == verify.VERIFIED)
            entry.signers = tuple(_scalar_text(s.name, 80) for s in verdict.signers if s.valid)
            return entry, None
        return sweep_entry(path, out_dir), None
    except (BundleError, TfcnnwrapError) as exc:
        return None, str(getattr(exc, "message", exc))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if not path.is_file():
            raise
        # another person's bundle of a shape no check foresaw: left out, named, never a crash
        return None, "%s: not a bundle this tfcnnwrap can read (%s: %s)" % (path, type(exc).__name__, str(exc)[:120])


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the pool


def _read_all(paths: List[Path], out_dir: Path, allowed_signers: Optional[Path] = None) -> list:
    """Every source read, in order; many of them in worker processes, which write each bundle's pages as they
    read it (rendering is most of a library site's work) and send back only what the index and GPU pages need:
    a library's entries whole would be GBs to pickle and hold. As `parse` does: forked workers, on Linux only (a
    spawned worker would run `python -m tfcnnwrap` again)."""
    if not _pooled(len(paths), PARALLEL_FROM):
        return [_read_one(p, out_dir, allowed_signers) for p in paths]
    writer = SiteWriter(out_dir)
    for rel in ("r", "logs"):
        writer.folder(rel)
    if not safefs.is_link(out_dir / MARKER) and not (out_dir / MARKER).exists():
        write_marker(out_dir, [])  # pages come before the index: an interrupted site's folder is still ours
    return _pool_map(_read_and_write, [(p, out_dir, allowed_signers) for p in paths], chunksize=8)


def _pooled(count: int, least: int) -> bool:
    return count >= least and min(os.cpu_count() or 1, 8) >= 2 and sys.platform.startswith("linux")


def _pool_map(func: Callable[[tuple], tuple], items: List[tuple], chunksize: int) -> list:
    """``func`` of each item, in order, in forked worker processes (one a core, at most 8)."""
    import multiprocessing  # only many sources start workers: a small site skips its import

    workers = min(os.cpu_count() or 1, 8)
    with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_init) as pool:
        return pool.map(func, items, chunksize=chunksize)


def _read_and_write(item: tuple) -> tuple:
    """A worker's: _read_one, then a bundle's pages written under its own GPU name (which one_name_per_gpu
    changes only where the site holds several spellings of it: collect then writes them again) and the slim
    entry returned."""
    path, out_dir, allowed_signers = item
    entry, problem = _read_one(path, out_dir, allowed_signers)
    if entry is None or entry.kind != "bundle":
        return entry, problem
    entry.slug = entry_slug(entry)
    return _written(entry, out_dir, path), None


def entry_slug(entry: Entry) -> str:
    return slug(entry.view.gpu + "-" + entry.view.label.rsplit("/", 1)[-1], entry.key)


def _written(entry: Entry, out_dir: Path, path: Path) -> Entry:
    """``entry``'s pages written; the entry with what the index and GPU pages read of it (its rows' figures)."""
    writer = SiteWriter(out_dir)
    write_result(entry, writer, navs(False)[1])
    rows = [{k: row.get(k) for k in _INDEX_ROW_KEYS} for row in entry.view.rows]
    view = replace(entry.view, parts=[], rows=rows, runs=[], environment=[], series={}, log_links={}, advice=[])
    return replace(
        entry,
        view=view,
        logs=None,
        written=tuple(writer.written),
        size=writer.bytes,
        path=path,
        run_count=len(entry.view.runs),
    )


_INDEX_ROW_KEYS = ("model", "batch_size", "num_gpus", "mean", "ci95_pct")  # what the index and GPU pages read


def _rewrite(item: tuple) -> tuple:
    """A worker's: a bundle whose shown GPU name is not its own read (and checked) again and its pages written
    under the shown name; (entry, None) or (None, why) as _read_one."""
    path, out_dir, allowed_signers, gpu = item
    entry, problem = _read_one(path, out_dir, allowed_signers)
    if entry is None:
        return None, problem
    entry.view.gpu = gpu
    entry.slug = entry_slug(entry)
    return _written(entry, out_dir, path), None


def collect(sources: List[str], out_dir: Path, allowed_signers: Optional[Path] = None) -> tuple:
    """(entries, problems): every source read; one that cannot be is named with why and left out. Signers are
    named by principal from ``allowed_signers`` where it names them (else by key fingerprint)."""
    paths = [path for source in sources for path in _expand(source)]
    entries, problems, seen = [], [], set()
    for entry, problem in _read_all(paths, out_dir, allowed_signers):
        if problem:
            problems.append(problem)
        elif entry.key not in seen:
            seen.add(entry.key)
            entries.append(entry)
    one_name_per_gpu(entries)
    for entry in entries:
        entry.slug = entry_slug(entry)
    return _renamed_written_again(entries, problems, out_dir, allowed_signers), problems


def _renamed_written_again(
    entries: List[Entry], problems: List[str], out_dir: Path, allowed_signers: Optional[Path]
) -> List[Entry]:
    """Entries whose pages a worker wrote under a GPU name one_name_per_gpu changed: written again under the
    shown name (read and checked again: a file changed since is shown as it is now, or left out), the first
    ones removed."""
    moved = [e for e in entries if e.written and e.written[-1] != e.page]
    if not moved:
        return entries
    items = [(e.path, out_dir, allowed_signers, e.view.gpu) for e in moved]
    if _pooled(len(items), PARALLEL_FROM):
        again = _pool_map(_rewrite, items, chunksize=8)
    else:
        again = [_rewrite(item) for item in items]
    remove_stale(out_dir, [rel for e in moved for rel in e.written], [])
    fresh = {id(old): new for old, new in zip(moved, again)}
    kept = []
    for entry in entries:
        new, problem = fresh.get(id(entry), (entry, None))
        if problem:
            problems.append(problem)
        else:
            kept.append(new)
    return kept


def one_name_per_gpu(entries: List[Entry]) -> None:
    """Every spelling of one GPU (results/gpuid.py) shown as the one most of its results use, so that one GPU
    is one GPU page and one row per ranking; a look-alike name keeps its own."""
    spellings: Dict[str, Dict[str, int]] = {}
    for entry in entries:
        names = spellings.setdefault(gpu_identity(entry.view.gpu), {})
        names[entry.view.gpu] = names.get(entry.view.gpu, 0) + 1
    shown = {ident: min(names.items(), key=lambda kv: (-kv[1], kv[0]))[0] for ident, names in spellings.items()}
    for entry in entries:
        entry.view.gpu = shown[gpu_identity(entry.view.gpu)]


# -- pages -------------------------------------------------------------------------------------------------


def row_conditions(conditions: dict, row: dict) -> dict:
    """A row's conditions: in a sweep of both data kinds each row ran on its own kind (its ``data``), never
    on the sweep's "synthetic,real"."""
    data = row.get("data")
    return dict(conditions, data=data) if isinstance(data, str) and data else conditions


def condition_label(conditions: dict, num_gpus: Optional[int]) -> str:
    gpus = "%s GPU%s" % (num(num_gpus), "" if num_gpus == 1 else "s") if num_gpus else "GPUs not recorded"
    return " \u00b7 ".join(
        [
            conditions.get("precision", ""),
            conditions.get("xla", ""),
            gpus,
            conditions.get("variable_update", ""),
            "%s data" % conditions.get("data", ""),
        ]
    )


def gpu_page_name(gpu: str) -> str:
    return "gpu/%s.html" % slug(gpu, gpu)


def results_by_config(entries: List[Entry]) -> dict:
    """{condition label: {(model, batch_size): {gpu: [(mean, entry, row)]}}} over rows with a mean."""
    groups: dict = {}
    for entry in entries:
        for row in entry.view.rows:
            if not isinstance(row.get("mean"), (int, float)):
                continue
            label = condition_label(row_conditions(entry.conditions, row), row.get("num_gpus"))
            config = (str(row.get("model")), row.get("batch_size"))
            groups.setdefault(label, {}).setdefault(config, {}).setdefault(entry.view.gpu, []).append(
                (row["mean"], entry, row)
            )
    return groups


def config_order(config: Tuple[str, object]) -> Tuple[str, int, float, str]:
    """(model, batch size) in reading order: models by name, batch sizes by number (16, 64, 512, not as text)."""
    model, batch = config
    if isinstance(batch, (int, float)) and not isinstance(batch, bool):
        return (str(model), 0, float(batch), "")
    return (str(model), 1, 0.0, str(batch))


# -- the leaderboard: the site's results beside everything published, each with its trust ---------------------
# A published figure is shown under exactly the conditions of the site's rows (compare --strict's rule, `derived`
# and `partial` rows left out as compare leaves them); a site result's trust is what `verify` found.


def entry_trust(entry: Entry) -> str:
    """A site result's trust: a bundle signed (by whom), verified or unverified; a local sweep is its own."""
    if entry.kind == "sweep":
        return "local sweep"
    checked = "unverified" if entry.unverified else "verified"
    if entry.signers:
        return "signed by %s, %s" % (
            ", ".join(entry.signers[:3]) + (" \u2026" if len(entry.signers) > 3 else ""),
            checked,
        )
    return checked


def _wanted(conditions: dict, model_row: dict) -> dict:
    """A site row's conditions in the references' terms ("not recorded" is any)."""
    plain = {k: ("" if conditions.get(k) in (None, "not recorded") else conditions[k]) for k in CONDITION_KEYS}
    plain["xla"] = {"XLA": "yes", "no XLA": "no"}.get(str(plain["xla"]), "")
    plain["batch_size"] = model_row.get("batch_size")
    plain["num_gpus"] = model_row.get("num_gpus")
    return plain


def published_rows(refs: Optional[ReferenceSet], model: str, wanted: dict) -> List[Tuple[ReferenceGPU, Result]]:
    """Every reference GPU's figure for ``model`` under exactly ``wanted``'s conditions (one per GPU)."""
    out = []
    for gpu in refs or []:
        result, _ = closest_result(gpu, model, wanted, strict=True)
        if result is not None:
            out.append((gpu, result))
    return out


def _interval(results: list) -> str:
    """One result: its mean's 95% interval; several: the range of their means."""
    if len(results) == 1:
        ci = results[0][2].get("ci95_pct")
        return "\u00b1%.1f%% (95%% CI)" % ci if _finite(ci) else "\u2013"
    means = [m for m, _, _ in results]
    return "%s to %s over %d results" % (num(min(means)), num(max(means)), len(means))


def _kind(entry: Entry) -> str:
    if entry.kind == "sweep":
        return "local sweep"
    return "unverified" if entry.unverified else ("signed" if entry.signers else "verified")


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def replicated(results: list) -> bool:
    """Two verified bundles signed by disjoint sets of signers (independent people) whose means' 95% intervals
    overlap: compare's community rule (compare/community.py), over one GPU's results of one configuration."""
    known = []
    for mean, entry, row in results:
        ci = row.get("ci95_pct")
        if _kind(entry) == "signed" and _finite(ci):
            known.append((mean, mean * ci / 100.0, set(entry.signers)))
    return any(
        keys_a.isdisjoint(keys_b) and abs(a - b) <= half_a + half_b
        for i, (a, half_a, keys_a) in enumerate(known)
        for b, half_b, keys_b in known[i + 1 :]
    )


def _trust_summary(results: list) -> str:
    """One result: its trust; several: how many of each kind, who signed, and whether it was replicated."""
    if len(results) == 1:
        return entry_trust(results[0][1])
    kinds = [_kind(e) for _, e, _ in results]
    text = ", ".join("%d %s" % (kinds.count(k), k) for k in sorted(set(kinds), key=kinds.index))
    names = sorted({n for _, e, _ in results if _kind(e) == "signed" for n in e.signers})
    if names:
        text += " (signed by %s%s)" % (", ".join(names[:3]), " \u2026" if len(names) > 3 else "")
    return text + ("; replicated" if replicated(results) else "")


def _site_line(gpu: str, results: list, prefix: str) -> tuple:
    """(images/sec, row cells after the rank, row class) of one site GPU: the median of its results' means."""
    value = statistics.median(m for m, _, _ in results)
    newest = max(results, key=lambda r: r[1].view.created_at)[1]
    cells = [
        cell(gpu, href=prefix + gpu_page_name(gpu)),
        numcell(value),
        cell(_trust_summary(results), "wrap"),
        cell(_interval(results)),
        cell(newest.view.created_at or newest.view.label, href=prefix + newest.page),
    ]
    return value, cells, "measured"


def short_source(source: str) -> str:
    """A reference's source as a leaderboard cell shows it: its first clause, a link as its site and path's first
    two parts (the whole source is the cell's title and on `tfcnnwrap references`)."""
    text = source.split(",", 1)[0].strip() or "not recorded"
    link = re.match(r"https?://([^/\s]+)((?:/[^/\s]+){0,2})(\S*)", text)
    if link:
        text = link.group(1) + link.group(2) + ("/\u2026" if link.group(3) else "")
    return text


def _published_line(gpu: ReferenceGPU, result: Result) -> tuple:
    source = short_source(result.source)
    tf = " (TensorFlow %s)" % result.tf_version if result.tf_version else ""
    cells = [
        cell(gpu.full_name),
        numcell(result.images_per_sec),
        cell("reference: %s" % (result.trust or "user-log")),
        cell("\u2013"),
        cell(_scalar_text(source + tf, 80), "wrap", title=_scalar_text(result.source, 300)),
    ]
    return result.images_per_sec, cells, ""


def leaderboard(model: str, batch: object, by_gpu: dict, refs: Optional[ReferenceSet], prefix: str = "") -> tuple:
    """(table, chart) of one model and batch size: the site's GPUs (median over results) and every published
    figure under the same conditions, ranked by images/sec; the chart, of the site's GPUs, only for two or more."""
    lines = [_site_line(gpu, results, prefix) for gpu, results in by_gpu.items()]
    first = next(iter(by_gpu.values()))[0]
    lines += [
        _published_line(g, r)
        for g, r in published_rows(refs, model, _wanted(row_conditions(first[1].conditions, first[2]), first[2]))
    ]
    table = Table(
        "%s, batch %s: images/sec, this site's results (median over results) and published references"
        % (model, num(batch)),
        ["rank", "GPU", "img/s", "trust", "interval", "source"],
        cards=True,
    )
    for i, (_, cells, cls) in enumerate(sorted(lines, key=lambda line: -line[0]), 1):
        table.rows.append([numcell(i)] + cells)
        table.row_classes.append(cls)
    bars = []
    for gpu, results in sorted(by_gpu.items(), key=lambda kv: -statistics.median(m for m, _, _ in kv[1])):
        means = [m for m, _, _ in results]
        mid = statistics.median(means)
        bars.append(svgcharts.Bar(gpu, mid, num(mid), min(means), max(means)))
    chart = (
        svgcharts.bar_chart(
            "%s bs%s: median images/sec per GPU of this site (whiskers: min to max over results)" % (model, num(batch)),
            bars,
            axis="images/sec",
            desc="; ".join("%s: %s" % (b.label, b.text) for b in bars),
        )
        if len(bars) > 1
        else None  # one GPU: its row says it, a one-bar chart adds nothing
    )
    return table, chart


def rank_tables(groups: dict, prefix: str = "", refs: Optional[ReferenceSet] = None) -> List[dict]:
    """Per set of conditions, per model and batch size: the leaderboard of the site's GPUs and the references."""
    sections = []
    for label, configs in sorted(groups.items()):
        items = [
            leaderboard(model, batch, by_gpu, refs, prefix)
            for (model, batch), by_gpu in sorted(configs.items(), key=lambda kv: config_order(kv[0]))
        ]
        sections.append({"label": label, "items": items})
    return sections


def newest_table(entries: List[Entry], prefix: str = "", limit: int = 30) -> Table:
    table = Table("Newest results", ["recorded", "GPU", "source", "configurations", "runs"])
    for entry in sorted(entries, key=lambda e: e.view.created_at, reverse=True)[:limit]:
        table.rows.append(
            [
                cell(entry.view.created_at or "not recorded"),
                cell(entry.view.gpu, href=prefix + gpu_page_name(entry.view.gpu)),
                cell(entry.view.label, href=prefix + entry.page),
                numcell(len(entry.view.rows)),
                numcell(entry.runs_shown),
            ]
        )
        table.row_classes.append("")
    return table


def result_matrices(entries: List[Entry]) -> List[Table]:
    """Per set of conditions, one row per result and one column per configuration: its mean images/sec."""
    groups: dict = {}
    for entry in sorted(entries, key=lambda e: e.view.created_at, reverse=True):
        for row in entry.view.rows:
            label = condition_label(row_conditions(entry.conditions, row), row.get("num_gpus"))
            config = "%s bs%s" % (row.get("model"), num(row.get("batch_size")))
            group = groups.setdefault(label, {"configs": [], "rows": {}})
            if config not in group["configs"]:
                group["configs"].append(config)
            group["rows"].setdefault(entry.key, (entry, {}))[1][config] = row.get("mean")
    tables = []
    for label, group in sorted(groups.items()):
        table = Table("%s: mean images/sec of each result" % label, ["recorded", "source"] + group["configs"])
        for entry, means in group["rows"].values():
            table.rows.append(
                [cell(entry.view.created_at or "not recorded"), cell(entry.view.label, href="../" + entry.page)]
                + [numcell(means.get(c)) for c in group["configs"]]
            )
            table.row_classes.append("")
        tables.append(table)
    return tables


def gpu_context(gpu: str, entries: List[Entry]) -> dict:
    """Every result of one GPU, and per set of conditions and configuration the spread of its means."""
    mine = [e for e in entries if e.view.gpu == gpu]
    spread: dict = {}
    for entry in mine:
        for row in entry.view.rows:
            if isinstance(row.get("mean"), (int, float)):
                label = condition_label(row_conditions(entry.conditions, row), row.get("num_gpus"))
                config = (str(row.get("model")), row.get("batch_size"))
                spread.setdefault(label, {}).setdefault(config, []).append(row["mean"])
    sections = []
    for label, configs in sorted(spread.items()):
        table = Table(
            "%s: the mean across results" % label, ["model", "batch", "results", "min", "median", "max", "spread %"]
        )
        bars = []
        for (model, batch), means in sorted(configs.items(), key=lambda kv: config_order(kv[0])):
            mid = statistics.median(means)
            table.rows.append(
                [
                    cell(model),
                    numcell(batch),
                    numcell(len(means)),
                    numcell(min(means)),
                    numcell(mid),
                    numcell(max(means)),
                    numcell((max(means) - min(means)) / mid * 100.0 if mid else None),
                ]
            )
            table.row_classes.append("")
            bars.append(svgcharts.Bar("%s bs%s" % (model, num(batch)), mid, num(mid), min(means), max(means)))
        # one scale for one model: configurations of different models share no axis (alexnet would hide the rest)
        same_model = len({model for model, _ in configs}) == 1 and len(bars) > 1
        chart = (
            svgcharts.bar_chart(
                "%s, %s: median images/sec per configuration (whiskers: min to max across results)" % (gpu, label),
                bars,
                axis="images/sec",
                desc="; ".join("%s: %s" % (b.label, b.text) for b in bars),
            )
            if same_model
            else None
        )
        sections.append((table, chart))
    return {"gpu": gpu, "spread": sections, "results": result_matrices(mine), "count": len(mine)}


def _bundle_links(entry: Entry) -> dict:
    """Log name -> the site path its text is written to (a counter, never the name)."""
    return {name: "logs/%s/%d.txt" % (entry.slug, i) for i, name in enumerate(sorted(entry.logs or {}))}


def _bundle_log_link(names: Dict[str, str], run: RunRecord) -> Dict[str, str]:
    if not run.log:
        return {"state": "none", "text": "no log recorded"}
    if run.log in names:
        return {"state": "ok", "text": run.log, "href": "../" + names[run.log]}
    return {"state": "missing", "text": "missing: %s is not in the bundle" % run.log}


# -- writing -----------------------------------------------------------------------------------------------


class SiteWriter:
    """Files under the site directory: folders made without following a planted link, every page written by
    atomic replace (a link at a page's name is replaced, never written through); ``written``: each page's
    name, for the marker that lets the next `site` replace this one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self.bytes = 0
        self.written: List[str] = []

    def folder(self, rel: str) -> None:
        path = self.root / rel
        if safefs.is_link(path):
            raise UsageError("%s is a link; tfcnnwrap does not write through links: remove it" % path)
        path.mkdir(exist_ok=True)

    def write(self, rel: str, text: str) -> None:
        data = text.encode("utf-8")
        # no fsync per page: a site is rebuilt from its sources in seconds, and 1,000 fsyncs are not
        safefs.atomic_write(self.root / rel, data, fsync=False)
        self.count += 1
        self.bytes += len(data)
        self.written.append(rel)


# -- the folder a site owns --------------------------------------------------------------------------------
# `site --out DIR` writes into an empty folder or one an earlier `site` made: that one holds MARKER, the list
# of the pages it wrote, so the next site removes those it no longer has (and nothing else, never through a
# link, never outside DIR). A folder holding anything else is the user's: refused, naming what is there.

MARKER = ".tfcnnwrap-site.json"
# A library's site has a page per bundle and a file per log: ~1.1 KB of names per bundle (15 logs), 106 MB at
# 100,000 bundles (16 MiB, the bound once, refused the site of 16,000 as not ours). 512 MiB: 450,000 bundles.
MAX_MARKER_BYTES = 512 * 1024 * 1024
IGNORED = frozenset({".git"})  # a site kept in a git checkout (a results repository's pages)
_PAGE_NAME = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,200}(/[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,200}){0,3}$")


def earlier_pages(out: Path) -> List[str]:
    """The pages an earlier site wrote into ``out`` ([] for an empty folder); UsageError naming a file of
    ``out`` when no earlier site made it."""
    entries = sorted(p.name for p in out.iterdir() if p.name not in IGNORED)
    if not entries:
        return []
    marker = out / MARKER
    try:
        ours = not safefs.is_link(marker) and marker.is_file() and marker.stat().st_size <= MAX_MARKER_BYTES
        listed = json.loads(marker.read_bytes()) if ours else None
    except (OSError, ValueError):
        listed = None
    pages = listed.get("pages") if isinstance(listed, dict) else None
    if not isinstance(pages, list):
        raise UsageError(
            "--out %s holds %s, which no earlier `tfcnnwrap site` made; give an empty folder (or "
            "one a site was written to)" % (out, next((n for n in entries if n != MARKER), MARKER))
        )
    return [p for p in pages if isinstance(p, str) and _PAGE_NAME.match(p)]


def _inside_without_links(out: Path, rel: str) -> Optional[Path]:
    """``out/rel`` when no folder on the way (and not the name itself) is a link, else None."""
    path = out
    for part in rel.split("/"):
        if part in (".", "..") or safefs.is_link(path / part):
            return None
        path = path / part
    return path


def remove_stale(out: Path, before: List[str], now: List[str]) -> int:
    """Remove the pages of the earlier site the new one did not write, then the log folders left empty."""
    removed = 0
    keep = set(now)
    for rel in sorted(set(before) - keep):
        path = _inside_without_links(out, rel)
        if path is not None and path.is_file():
            try:
                path.unlink()
                removed += 1
            except OSError:
                continue
    for rel in sorted({r.rsplit("/", 1)[0] for r in set(before) - keep if "/" in r}, reverse=True):
        path = _inside_without_links(out, rel)
        if path is not None and path.is_dir() and rel not in ("r", "gpu", "logs") and not any(path.iterdir()):
            path.rmdir()
    return removed


def write_marker(out: Path, pages: List[str]) -> None:
    safefs.atomic_write(
        out / MARKER, dumps({"format": 1, "kind": "tfcnnwrap-site", "pages": pages}) + "\n", fsync=False
    )


def navs(ab: bool) -> Tuple[List[dict], List[dict]]:
    """The links atop the index (and an A/B page) and atop every other page, one folder down."""
    root_nav = [{"href": "index.html", "text": "All results"}] + ([{"href": "ab.html", "text": "A/B"}] if ab else [])
    return root_nav, [{"href": "../" + n["href"], "text": n["text"]} for n in root_nav]


def build_site(
    entries: List[Entry],
    writer: SiteWriter,
    problems: List[str],
    ab: Optional[ABResult] = None,
    empty_note: str = "",
    refs: Optional[ReferenceSet] = None,
) -> None:
    root_nav, sub_nav = navs(ab is not None)
    for rel in ("r", "gpu", "logs"):
        writer.folder(rel)
    gpus = sorted({e.view.gpu for e in entries})
    writer.write(
        "index.html",
        render(
            "index.html.j2",
            title="tf_cnn_benchmarks results",
            nav=root_nav,
            entries=entries,
            sections=rank_tables(results_by_config(entries), refs=refs),
            newest=newest_table(entries),
            problems=problems,
            gpus=[{"name": g, "href": gpu_page_name(g)} for g in gpus],
            empty_note=empty_note,
        ),
    )
    for gpu in gpus:
        writer.write(
            gpu_page_name(gpu),
            render(
                "gpu.html.j2", title="%s: tf_cnn_benchmarks results" % gpu, nav=sub_nav, **gpu_context(gpu, entries)
            ),
        )
    write_results(entries, writer, sub_nav)
    if ab is not None:
        writer.write("ab.html", ab_page(ab, nav=root_nav))


def write_result(entry: Entry, writer: SiteWriter, sub_nav: List[dict]) -> None:
    """One sweep's or bundle's page, and a bundle's logs; of an entry whose pages a worker wrote, their names."""
    if entry.written:
        writer.written += entry.written
        writer.count += len(entry.written)
        writer.bytes += entry.size
        return
    if entry.kind == "bundle":
        names = _bundle_links(entry)
        entry.view.log_links = {run.key: _bundle_log_link(names, run) for run in entry.view.runs}
        if names:
            writer.folder("logs/%s" % entry.slug)
        for name, rel in names.items():
            writer.write(rel, (entry.logs or {})[name])
    nav = sub_nav + [{"href": "../" + gpu_page_name(entry.view.gpu), "text": entry.view.gpu}]
    writer.write(
        entry.page,
        render(
            "result.html.j2", title="%s: %s" % (entry.view.gpu, entry.view.label), nav=nav, **report_context(entry.view)
        ),
    )


# what forked writers render: the parent's entries, inherited by fork (never pickled: a library's are GBs)
_WRITING: Optional[tuple] = None
WRITE_CHUNK = 64  # entries a writer renders per task


def _write_chunk(span: tuple) -> tuple:
    """(pages written, bytes) of entries[start:stop]: rendered and written in a forked worker."""
    entries, root, sub_nav = _WRITING  # type: ignore[misc]  # set before the pool forks
    writer = SiteWriter(root)
    for entry in entries[span[0] : span[1]]:
        write_result(entry, writer, sub_nav)
    return writer.written, writer.bytes


def write_results(entries: List[Entry], writer: SiteWriter, sub_nav: List[dict]) -> None:
    """Every entry's pages (a library's site: 100,000s of pages, most of a site's rendering): in forked worker
    processes when there are many, on Linux, as collect reads them; the pages listed in order either way."""
    global _WRITING
    workers = min(os.cpu_count() or 1, 8)
    if not _pooled(sum(1 for e in entries if not e.written), PARALLEL_FROM * 4):
        for entry in entries:  # those a worker wrote as it read them are only listed
            write_result(entry, writer, sub_nav)
        return
    import multiprocessing  # only a large site starts writers

    _WRITING = (entries, writer.root, sub_nav)
    spans = [(i, i + WRITE_CHUNK) for i in range(0, len(entries), WRITE_CHUNK)]
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_init) as pool:
            for written, size in pool.imap(_write_chunk, spans):
                writer.written += written
                writer.count += len(written)
                writer.bytes += size
    finally:
        _WRITING = None


def _site_dir(out: str) -> Path:
    path = Path(out)
    if safefs.is_link(path):
        raise UsageError("--out %s is a link; tfcnnwrap does not write through links: give a directory" % out)
    if path.exists() and not path.is_dir():
        raise UsageError("--out %s is a file; give a directory for the site" % out)
    if not path.parent.is_dir():
        raise UsageError("--out %s: the directory %s does not exist; create it first" % (out, path.parent))
    path.mkdir(exist_ok=True)
    return path


@dataclass(frozen=True)
class SiteArgs:
    """`site SOURCE... --out DIR`: sweeps, bundles, folders of them or `library`; ``ab`` adds the A/B page
    (the first source the baseline)."""

    sources: Tuple[str, ...]
    out: str
    ab: bool = False


def cmd_site(args: SiteArgs) -> int:
    """Exit 0 every source read · 1 some could not be (each named with why) · 2 usage."""
    started = time.perf_counter()
    out = _site_dir(args.out)
    before = earlier_pages(out)
    ab = None
    if args.ab:
        if len(args.sources) < 2 or not all(is_sweep(Path(s)) for s in args.sources):
            raise UsageError("--ab compares sweep directories: give a baseline and one or more candidates")
        ab = sweep_vs_sweeps(args.sources[0], args.sources[1:])
    entries, problems = collect(list(args.sources), out, signing.allowed_signers_path())
    empty = ""
    if not entries:
        where = library_dir() if "library" in args.sources else ", ".join(args.sources)
        empty = "No results yet: %s holds no sweep and no bundle." % where
    writer = SiteWriter(out)
    build_site(entries, writer, problems, ab, empty, load_references() if entries else None)
    remove_stale(out, before, writer.written)
    write_marker(out, writer.written)
    for problem in problems:
        sys.stderr.write("tfcnnwrap site: left out %s\n" % problem)
    sys.stderr.write(
        "tfcnnwrap site: wrote %d pages (%d KB) of %d result%s to %s in %.1f s; open %s\n"
        % (
            writer.count,
            writer.bytes // 1024,
            len(entries),
            "" if len(entries) == 1 else "s",
            out,
            time.perf_counter() - started,
            out / "index.html",
        )
    )
    return 1 if problems else 0
