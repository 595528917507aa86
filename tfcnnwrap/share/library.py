"""The local library of bundles: ``<data>/bundles/<id>.tfcw.json.gz`` and the index ``<data>/library.sqlite``.

``<data>`` is ``$TFCNNWRAP_DATA``, else platformdirs' user data directory. The index (standard library
sqlite3, WAL, a busy timeout) holds one row per bundle and one per bundle and configuration: GPU, conditions,
model, batch size, GPU count, images/sec, verified, date. Import is atomic per bundle: the file is written
beside its name and renamed into place, then the bundle's rows are committed in one transaction; a failure
leaves no row (a file without a row is re-indexed by the next import). Two processes importing at once are
safe: each bundle's transaction is ``BEGIN IMMEDIATE`` and ``INSERT OR IGNORE`` de-duplicates by id.
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Collection,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from tfcnnwrap import render, safefs
from tfcnnwrap.clock import utc_now
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.results.references import name_words
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.bundle import BundleRefused, read_bytes
from tfcnnwrap.share.bundlecheck import FAILED, verify

if TYPE_CHECKING:
    import sqlite3
    from argparse import Namespace

ENV_DATA = "TFCNNWRAP_DATA"
INDEX = "library.sqlite"
BUNDLES = "bundles"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
# A bundle's index rows (index_rows): its bundles row, and a results row per configuration. precision, xla,
# variable_update and data are None where the bundle's conditions hold no text.
BundleRow = Tuple[str, str, str, str, str, int, str, str, Optional[str], Optional[str], Optional[str], Optional[str],
                  str]
ResultRow = Tuple[str, str, str, int, int, Optional[str], Optional[str], Optional[str], Optional[str], str, float, int,
                  int, str]
# check's answer: (outcome, message, None when refused / the bundle id when present / its rows when new)
Checked = Tuple[str, str, Union[None, str, Tuple[BundleRow, List[ResultRow]]]]

CPU_VENDOR = "cpu"  # the index's vendor of a bundle measured on the CPU (its conditions' device)
ROW_KEYS = ("id", "gpu", "model", "batch_size", "precision", "num_gpus", "images_per_sec", "verified", "created_at",
            "xla", "variable_update", "data", "tf_version", "runs_ok")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bundles (
  id TEXT PRIMARY KEY, gpu TEXT NOT NULL, vendor TEXT, created_at TEXT, imported_at TEXT, verified INTEGER,
  tool_version TEXT, tf_version TEXT, precision TEXT, xla TEXT, variable_update TEXT, data TEXT, origin TEXT);
CREATE TABLE IF NOT EXISTS results (
  bundle_id TEXT NOT NULL REFERENCES bundles(id), gpu TEXT NOT NULL, model TEXT NOT NULL,
  batch_size INTEGER NOT NULL, num_gpus INTEGER NOT NULL, precision TEXT, xla TEXT, variable_update TEXT,
  data TEXT, tf_version TEXT, images_per_sec REAL, runs_ok INTEGER, verified INTEGER, created_at TEXT,
  PRIMARY KEY (bundle_id, model, batch_size, num_gpus));
CREATE INDEX IF NOT EXISTS results_model ON results (model, verified);
"""


def data_dir() -> Path:
    """``$TFCNNWRAP_DATA``, else the user data directory platformdirs names for tfcnnwrap."""
    env = os.environ.get(ENV_DATA, "")
    if env.strip():
        return Path(env).expanduser()
    import platformdirs  # only the library verbs need it

    return Path(platformdirs.user_data_dir("tfcnnwrap", appauthor=False))


def _unusable(root: Path, why: Union[str, OSError]) -> TfcnnwrapError:
    return TfcnnwrapError("the library at %s is unusable (%s); set %s to another directory or move it aside"
                          % (root, why, ENV_DATA))


class Library:
    """The library at ``root`` (default: data_dir()); ``create`` False: a missing one stays missing."""

    def __init__(self, root: Union[Path, str, None] = None, create: bool = True) -> None:
        self.root = Path(root) if root is not None else data_dir()
        self.db: Optional["sqlite3.Connection"] = None
        self._known: Optional[FrozenSet[str]] = None
        if self.root.exists() and not self.root.is_dir():  # else mkdir's or a query's "no bundles" hides it
            raise _unusable(self.root, "not a directory")
        if not create and not (self.root / INDEX).is_file():
            return
        try:
            (self.root / BUNDLES).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _unusable(self.root, exc.strerror or exc) from None
        self._open()

    @property
    def exists(self) -> bool:
        return self.db is not None

    def _open(self) -> None:
        import sqlite3  # only the library verbs and a compare with community results need it

        self.sqlite3 = sqlite3
        try:
            self.db = db = sqlite3.connect(str(self.root / INDEX), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise _unusable(self.root, "its index was written by a newer tfcnnwrap; upgrade tfcnnwrap")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if version < SCHEMA_VERSION:
                _create_schema(db)
        except sqlite3.DatabaseError as exc:
            raise _unusable(self.root, "its index %s: %s" % (INDEX, exc)) from None

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def known_ids(self) -> Set[str]:
        if self.db is None:
            return set()
        return {row[0] for row in self.db.execute("SELECT id FROM bundles")}

    def has(self, ident: str) -> bool:
        return self.db is not None and \
            self.db.execute("SELECT 1 FROM bundles WHERE id=?", (ident,)).fetchone() is not None

    def path_of(self, ident: str) -> Path:
        return self.root / BUNDLES / bundles.file_name(ident)

    def known_ids_cached(self) -> frozenset:
        if self._known is None:
            self._known = frozenset(self.known_ids())
        return self._known

    def add_rows(self, bundle_row: BundleRow, rows: Sequence[ResultRow], data: bytes) -> bool:
        """Store a checked bundle (``data``: its file bytes, ``bundle_row``/``rows``: its index rows); False
        when it was already there. Atomic: the file is renamed into place before its rows are committed in
        one transaction (a file without rows is harmless and rewritten by the next import)."""
        ident = bundle_row[0]
        db = self.db
        if db is None:  # only Library(create=False) of a missing library has no index: it is for queries
            raise RuntimeError("add_rows on a library that does not exist (opened with create=False)")
        if self.has(ident):
            return False
        try:
            safefs.atomic_write(self.path_of(ident), data, fsync=False)
        except OSError as exc:
            raise _unusable(self.root, "cannot write %s: %s" % (self.path_of(ident), exc.strerror)) from None
        try:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute("INSERT OR IGNORE INTO bundles VALUES (%s)" % ",".join("?" * 13), bundle_row)
            if cur.rowcount:
                db.executemany("INSERT OR IGNORE INTO results VALUES (%s)" % ",".join("?" * 14), rows)
            db.execute("COMMIT")
        except self.sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise _unusable(self.root, "its index: %s" % exc) from None
        return bool(cur.rowcount)

    def community_rows(self, models: Optional[Sequence[str]] = None, device: Optional[str] = None) -> List[Any]:
        """(gpu, model, batch_size, num_gpus, precision, xla, variable_update, data, tf_version, images_per_sec,
        bundle id) of every verified configuration (of ``models``, measured on ``device``: "cpu" or "gpu", None
        both): what compare needs, lean for 10,000s."""
        if self.db is None:
            return []
        where = " AND r.model IN (%s)" % ",".join("?" * len(models)) if models else ""
        params: List[Any] = list(models or ())
        if device is not None:
            where += " AND (b.vendor = ?) = ?"
            params += [CPU_VENDOR, device == "cpu"]
        return self.db.execute("SELECT r.gpu, r.model, r.batch_size, r.num_gpus, r.precision, r.xla, "
                               "r.variable_update, r.data, r.tf_version, r.images_per_sec, r.bundle_id FROM results r "
                               "JOIN bundles b ON b.id = r.bundle_id WHERE r.verified = 1" + where,
                               params).fetchall()

    def rows(self, gpu: Optional[str] = None, model: Optional[str] = None) -> List[Any]:
        """Index rows (dicts of ROW_KEYS), newest bundle first; ``gpu``: names with those words."""
        if self.db is None:
            return []
        where, params = [], []
        if model:
            where.append("r.model = ?")
            params.append(model)
        sql = ("SELECT r.bundle_id, r.gpu, r.model, r.batch_size, r.precision, r.num_gpus, r.images_per_sec, "
               "r.verified, r.created_at, r.xla, r.variable_update, r.data, r.tf_version, r.runs_ok FROM results r"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY r.created_at DESC, r.bundle_id, r.model, r.batch_size, r.num_gpus")
        out = [dict(zip(ROW_KEYS, row)) for row in self.db.execute(sql, params)]
        for row in out:
            row["verified"] = bool(row["verified"])
        if gpu:
            out = [r for r in out if gpu_matches(gpu, r["gpu"])]
        return out


def _create_schema(db: "sqlite3.Connection") -> None:
    db.execute("BEGIN IMMEDIATE")  # two first imports at once: one creates, the other waits
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("PRAGMA user_version=%d" % SCHEMA_VERSION)
    db.execute("COMMIT")


def gpu_matches(typed: str, name: str) -> bool:
    """``--gpu 2070`` matches ``GeForce RTX 2070`` (the references' name rules: case, vendor words and
    punctuation do not count; every typed word must be one of the name's)."""
    typed_words = name_words(typed)
    return bool(typed_words) and set(typed_words) <= set(name_words(name))


def index_rows(
    bundle: Dict[str, Any], verified: bool, origin: str = ""
) -> Tuple[BundleRow, List[ResultRow]]:
    """(the bundles row, [results rows]) of a bundle: one results row per configuration with an ok run."""
    cond = {k: (v[:200] if isinstance(v, str) else None) for k, v in bundle["conditions"].items()}  # others' text
    tf = cond.get("tensorflow_version") or ""
    gpu = bundle["conditions"]["gpu"].strip()  # check_shape: a str of at most 200 characters
    shared = (cond.get("precision"), cond.get("xla"), cond.get("variable_update"), cond.get("data"), tf)
    # a CPU's bundle is filed under the vendor "cpu": its figures rank among CPU results, never among GPUs'
    vendor = CPU_VENDOR if bundle["conditions"].get("device") == "cpu" else bundles.vendor_of(gpu)
    bundle_row = (bundle["id"], gpu, vendor, bundle["created_at"], utc_now(), int(verified),
                  bundle["tool_version"], tf) + shared[:4] + (str(origin)[:500],)
    values: Dict[Tuple[str, int, int], List[float]] = {}
    for run in bundle["runs"]:
        if run["status"] == "ok" and run.get("images_per_sec") is not None:  # a fleet's hosts pooled
            key = (run["model"], run["batch_size"], run.get("num_gpus") or 1)
            values.setdefault(key, []).append(float(run["images_per_sec"]))
    rows = [(bundle["id"], gpu, model, bs, n) + shared + (statistics.mean(v), len(v), int(verified),
                                                           bundle["created_at"])
            for (model, bs, n), v in values.items()]
    return bundle_row, rows


# -- import ----------------------------------------------------------------------------------------------

PARALLEL_MIN_FILES = 64  # fewer bundles than this are checked in this process
MAX_JOBS = 8


def check(
    data: bytes, where: str, origin: str = "", expected_id: Optional[str] = None, known: Collection[str] = ()
) -> Checked:
    """What importing one bundle's bytes would do, without touching the library (so worker processes can
    do it): ('refused', message, None) / ('present', message, id) / ('new', message, (bundle row, rows))."""
    try:
        bundle = read_bytes(data, where)
    except BundleRefused as exc:
        return "refused", exc.message, None
    if expected_id is not None and bundle["id"] != expected_id:
        return "refused", "%s: holds bundle %s, not the one its name says" % (where, bundle["id"][:12]), None
    if bundle["id"] in known:
        return "present", "%s: already in the library (bundle %s)" % (where, bundle["id"][:12]), bundle["id"]
    verdict = verify(bundle)
    if verdict.state == FAILED:
        return "refused", "%s: not verified: %s" % (where, verdict.findings[0]), None
    state = "" if verdict.verified else ", unverified (no logs)"
    message = "%s: imported %s, bundle %s%s" % (where, bundle["conditions"]["gpu"], bundle["id"][:12], state)
    return "new", message, index_rows(bundle, verdict.verified, origin)


def store(library: Library, data: Optional[bytes], checked: Checked) -> Tuple[str, ...]:
    """(outcome, message) after storing what ``check`` found: 'imported', 'present' or 'refused'."""
    outcome, message, found = checked
    if outcome != "new":
        return outcome, message
    bundle_row, rows = found  # type: ignore[misc, str-unpack]  # "new": found is the rows
    if not library.add_rows(bundle_row, rows, data):  # type: ignore[arg-type]  # "new": data is the bytes
        return "present", "%s (already in the library)" % message.split(": imported")[0]
    return "imported", message


def import_one(
    library: Library, data: bytes, where: str, origin: str = "", expected_id: Optional[str] = None
) -> Tuple[str, ...]:
    """(outcome, message) for one bundle's bytes: outcome 'imported', 'present' or 'refused'.
    ``expected_id``: the id its file name claims (a pulled file must hold the bundle it is named after)."""
    return store(library, data, check(data, where, origin, expected_id, library.known_ids_cached()))


def _bundle_files(paths: Iterable[Union[Path, str]]) -> Iterator[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            yield from sorted(p for p in path.rglob("*" + bundles.SUFFIX) if not p.is_symlink())
        else:
            yield path


_KNOWN: FrozenSet[str] = frozenset()


def _check_file(
    path: Path,
) -> Tuple[Optional[bytes], Checked]:
    """(data, check's answer) of a bundle file; run in worker processes for many files."""
    try:
        data = bundles.read_path_bytes(path)
    except BundleRefused as exc:
        return None, ("refused", exc.message, None)
    return data, check(data, str(path), origin=str(Path(path).resolve()), known=_KNOWN)


def _worker_init(known: frozenset) -> None:
    global _KNOWN
    _KNOWN = known
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the pool


def checked_files(
    files: List[Path], known: frozenset
) -> Iterator[Tuple[Path, Optional[bytes], Checked]]:
    """(path, data, check's answer) of each file, in order; worker processes check them when there are many
    (verifying re-parses every log: the CPU work of an import)."""
    jobs = min(os.cpu_count() or 1, MAX_JOBS) if len(files) >= PARALLEL_MIN_FILES else 1
    if jobs <= 1 or not sys.platform.startswith("linux"):
        _worker_init(known)
        for path in files:
            yield (path,) + _check_file(path)
        return
    import multiprocessing  # only many files start workers; other verbs that load library skip its import

    with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_init, initargs=(known,)) as pool:
        for path, answer in zip(files, pool.imap(_check_file, files, chunksize=16)):
            yield (path,) + answer


def cmd_import(args: Namespace) -> int:
    """Exit 0 every bundle imported or already there, 1 some refused (each named with why), 2 usage."""
    for path in args.paths:
        if not Path(path).exists():
            raise UsageError("%s does not exist; give bundle files (.tfcw.json.gz) or directories of them" % path)
    library = Library()
    counts = {"imported": 0, "present": 0, "refused": 0}
    try:
        for _path, data, answer in checked_files(list(_bundle_files(args.paths)), frozenset(library.known_ids())):
            outcome, message = store(library, data, answer)
            counts[outcome] += 1
            (sys.stderr if outcome == "refused" else sys.stdout).write(
                ("refused: " if outcome == "refused" else "") + message + "\n")
    finally:
        library.close()
    sys.stderr.write("tfcnnwrap import: %d imported, %d already there, %d refused (library: %s)\n"
                     % (counts["imported"], counts["present"], counts["refused"], library.root))
    return 1 if counts["refused"] else 0


# -- the verb ----------------------------------------------------------------------------------------------


def cmd_library(args: Namespace) -> int:
    library = Library(create=False)
    try:
        rows = library.rows(gpu=args.gpu, model=args.model)
    finally:
        library.close()
    if args.format == "json":
        sys.stdout.write(render.to_json({"format": 2, "kind": "library",
                                         "conditions": {"library": str(library.root), "gpu": args.gpu,
                                                        "model": args.model}, "rows": rows}) + "\n")
        return 0
    shown = [dict(r, id=r["id"][:12], verified="yes" if r["verified"] else "unverified") for r in rows]
    columns = [("gpu", "GPU"), ("model", "model"), ("batch_size", "batch"), ("num_gpus", "GPUs", 2),
               ("precision", "precision", 3), ("images_per_sec", "images/sec"), ("verified", "verified"),
               ("tf_version", "TF", 4), ("created_at", "created", 5), ("id", "bundle", 1)]
    if args.format == "csv":
        render.emit(rows, "csv", list(ROW_KEYS))
        return 0
    if not rows:
        what = " matching the filters" if args.gpu or args.model else ""
        sys.stderr.write("tfcnnwrap library: no bundles%s in %s; `tfcnnwrap import` or `tfcnnwrap pull` adds "
                         "some\n" % (what, library.root))
        return 0
    render.emit(shown, args.format, columns, title="Library: %s" % library.root)
    return 0
