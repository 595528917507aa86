"""The local library of bundles: ``<data>/bundles/<id>.tfcw.json.gz`` and the index ``<data>/library.sqlite``.

``<data>`` is ``$TFCNNWRAP_DATA``, else platformdirs' user data directory. The index (standard library
sqlite3, WAL, a busy timeout) holds one row per bundle and one per bundle and configuration: GPU, conditions,
model, batch size, GPU count, images/sec, verified, date. Import is atomic per bundle: the file is written
beside its name and renamed into place, then the bundle's rows are committed in one transaction; a failure
leaves no row (a file without a row is re-indexed by the next import). Two processes importing at once are
safe: each bundle's transaction is ``BEGIN IMMEDIATE`` and ``INSERT OR IGNORE`` de-duplicates by id.
Index format 2 adds the ``signers`` table (the keys of a bundle's valid signatures, and the principal the
allowed signers named at import) and each result's 95% interval; a format-1 index gains both when opened.
Format 3 adds the index ``results_newest`` (`library` lists rows newest first without sorting them all); an
older index gains it when opened. Every query that selects or orders uses an index; those that read every
row (compare's community rows, the signers, the intervals) scan, the cheapest way to read a whole table
(docs/performance.md shows each query's plan).
"""

from __future__ import annotations

import errno
import math
import os
import signal
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
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
    Type,
    Union,
)

from tfcnnwrap import render, safefs, settings
from tfcnnwrap.clock import utc_now
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.results.bundlerecords import Bundle, Signature
from tfcnnwrap.results.ceilings import is_outlier
from tfcnnwrap.results.gpuid import gpu_identity, is_plain, known, link_class
from tfcnnwrap.results.references import name_words
from tfcnnwrap.results.tdist import t975
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.bundle import BundleRefused, read_bytes
from tfcnnwrap.share.indexrows import (
    BUNDLE_COLUMNS,
    ROW_KEYS,
    BundleRow,
    CommunityRow,
    LibraryRow,
    ResultRow,
    SignerRow,
)
from tfcnnwrap.share.signing import Signer, allowed_signers_path, check_all, signature_findings
from tfcnnwrap.share.verify import FAILED, verify

if TYPE_CHECKING:
    import sqlite3

ENV_DATA = "TFCNNWRAP_DATA"
INDEX = "library.sqlite"
BUNDLES = "bundles"
# 2: the signers table and results.ci95_pct; 3: the index results_newest (`library`'s order). An older index is
# migrated when opened; one that cannot be (read-only) is read as it is.
SCHEMA_VERSION = 3
SIGNED_VERSION = 2  # the first format with the signers table and intervals
BUSY_TIMEOUT_S = 60.0
CPU_VENDOR = "cpu"  # the index's vendor of a bundle measured on the CPU (its conditions' device)


@dataclass(frozen=True)
class Refused:
    """check's answer for a bundle the library does not take: why."""

    message: str
    outcome: ClassVar[str] = "refused"


@dataclass(frozen=True)
class Present:
    """check's answer for a bundle the library holds, with no signature it lacks."""

    message: str
    id: str
    outcome: ClassVar[str] = "present"


@dataclass(frozen=True)
class New:
    """check's answer for a new, checked bundle: its index rows, for store to add."""

    message: str
    bundle: BundleRow
    results: Tuple[ResultRow, ...]
    signers: Tuple[SignerRow, ...]
    outcome: ClassVar[str] = "new"

    @property
    def id(self) -> str:
        return self.bundle.id


@dataclass(frozen=True)
class Signed:
    """check's answer for a bundle the library holds that brings good signatures it lacks: store adds them."""

    message: str
    id: str
    signatures: Tuple[Signature, ...]
    signers: Tuple[SignerRow, ...]
    outcome: ClassVar[str] = "signed"


# What importing one bundle would do (check), made in a worker process and acted on by store in the parent.
Checked = Union[Refused, Present, New, Signed]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS bundles (
  id TEXT PRIMARY KEY, gpu TEXT NOT NULL, vendor TEXT, created_at TEXT, imported_at TEXT, verified INTEGER,
  tool_version TEXT, tf_version TEXT, precision TEXT, xla TEXT, variable_update TEXT, data TEXT, origin TEXT,
  link TEXT);
CREATE TABLE IF NOT EXISTS results (
  bundle_id TEXT NOT NULL REFERENCES bundles(id), gpu TEXT NOT NULL, model TEXT NOT NULL,
  batch_size INTEGER NOT NULL, num_gpus INTEGER NOT NULL, precision TEXT, xla TEXT, variable_update TEXT,
  data TEXT, tf_version TEXT, images_per_sec REAL, runs_ok INTEGER, verified INTEGER, created_at TEXT,
  ci95_pct REAL, PRIMARY KEY (bundle_id, model, batch_size, num_gpus));
CREATE INDEX IF NOT EXISTS results_model ON results (model, verified);
CREATE INDEX IF NOT EXISTS results_newest ON results (created_at DESC, bundle_id, model, batch_size, num_gpus);
CREATE TABLE IF NOT EXISTS signers (
  bundle_id TEXT NOT NULL REFERENCES bundles(id), fingerprint TEXT NOT NULL, principal TEXT,
  PRIMARY KEY (bundle_id, fingerprint));
"""


def data_dir() -> Path:
    """``$TFCNNWRAP_DATA``, else the user data directory platformdirs names for tfcnnwrap (settings.data_dir:
    the allowed signers file lives there too)."""
    return settings.data_dir()


def _unusable(root: Path, why: Union[str, OSError]) -> TfcnnwrapError:
    return TfcnnwrapError(
        "the library at %s is unusable (%s); set %s to another directory or move it aside" % (root, why, ENV_DATA)
    )


_FULL_ERRNOS = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)
_SQLITE_FULL = 13  # SQLITE_FULL: "database or disk is full"


def _is_full(exc: BaseException) -> bool:
    """A write refused because the disk (or the user's quota) is full, by the OS or by SQLite."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_ERRNOS
    return getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL or "disk is full" in str(exc)


def _write_failed(root: Path, what: str, exc: BaseException) -> TfcnnwrapError:
    """A failed write to the library: a full disk says so (the library is intact: each bundle's write is atomic
    and its rows one transaction), anything else is the library's own problem."""
    if _is_full(exc):
        return TfcnnwrapError(
            "no space left on the disk holding the library at %s (writing %s); free some space "
            "and try again (what is already in the library is kept)" % (root, what)
        )
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    return _unusable(root, "%s: %s" % (what, detail))


def _not_a_folder(root: Path) -> Optional[Path]:
    """``root``, or the first of its parents that exists, when that is not a directory: a library there can be
    neither read nor made (a missing index under a file would read as "no bundles")."""
    for path in (root, *root.parents):
        try:
            if path.exists():
                return None if path.is_dir() else path
        except OSError:
            return None
    return None


class Library:
    """The library at ``root`` (default: data_dir()); ``create`` False: a missing one stays missing."""

    def __init__(self, root: Union[Path, str, None] = None, create: bool = True) -> None:
        self.root = Path(root) if root is not None else data_dir()
        self.bundle_folder = str(self.root / BUNDLES)  # path_of's folder, as text for per-file look-ups
        self.db: Optional["sqlite3.Connection"] = None
        self.has_link = False
        self.unsigned_index = False  # an index of format 1 that could not be migrated (read-only)
        self._known: Optional[Dict[str, FrozenSet[str]]] = None
        blocker = _not_a_folder(self.root)  # else mkdir's or a query's "no bundles" hides it
        if blocker is not None:
            raise _unusable(self.root, "%s is not a directory" % blocker)
        if not create and not (self.root / INDEX).is_file():
            return
        try:
            (self.root / BUNDLES).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _write_failed(self.root, "its folder", exc) from None
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
                self._migrate(db, version)
            self.has_link = _with_link_column(db, sqlite3.OperationalError)
        except sqlite3.DatabaseError as exc:
            raise _write_failed(self.root, "its index %s" % INDEX, exc) from None

    def _migrate(self, db: "sqlite3.Connection", version: int) -> None:
        """Create the index, or bring an older one up to date; an older one we may not write (a read-only
        library) is read as it is: before format 2 it has no signers table, so its bundles read as unsigned;
        before format 3 its queries lack an index (slower, the same answers)."""
        try:
            _create_schema(db)
        except self.sqlite3.OperationalError:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if not version:  # a new index we cannot create is unusable
                raise
            self.unsigned_index = version < SIGNED_VERSION

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def known_ids(self) -> Set[str]:
        if self.db is None:
            return set()
        return {row[0] for row in self.db.execute("SELECT id FROM bundles")}

    def has(self, ident: str) -> bool:
        return (
            self.db is not None and self.db.execute("SELECT 1 FROM bundles WHERE id=?", (ident,)).fetchone() is not None
        )

    def path_of(self, ident: str) -> Path:
        return self.root / BUNDLES / bundles.file_name(ident)

    def known_ids_cached(self) -> Dict[str, FrozenSet[str]]:
        """known_signers, read once: {id: its signers' keys} (``in`` asks for an id)."""
        if self._known is None:
            self._known = self.known_signers()
        return self._known

    def add_rows(
        self, bundle_row: BundleRow, rows: Sequence[ResultRow], data: bytes, signers: Sequence[SignerRow] = ()
    ) -> bool:
        """Store a checked bundle (``data``: its file bytes, ``bundle_row``/``rows``: its index rows); False
        when it was already there. Atomic: the file is renamed into place before its rows are committed in
        one transaction (a file without rows is harmless and rewritten by the next import)."""
        db = self.db
        if db is None:  # only Library(create=False) of a missing library has no index: it is for queries
            raise RuntimeError("add_rows on a library that does not exist (opened with create=False)")
        ident = bundle_row.id
        if self.has(ident):
            return False
        try:
            safefs.atomic_write(self.path_of(ident), data, fsync=False)
        except OSError as exc:
            raise _write_failed(self.root, str(self.path_of(ident)), exc) from None
        try:
            db.execute("BEGIN IMMEDIATE")
            columns = BUNDLE_COLUMNS if self.has_link else BUNDLE_COLUMNS[:-1]
            cur = db.execute(
                "INSERT OR IGNORE INTO bundles (%s) VALUES (%s)" % (",".join(columns), ",".join("?" * len(columns))),
                bundle_row[: len(columns)],
            )
            if cur.rowcount:
                db.executemany("INSERT OR IGNORE INTO results VALUES (%s)" % ",".join("?" * 15), rows)
                db.executemany("INSERT OR IGNORE INTO signers VALUES (?, ?, ?)", signers)
            db.execute("COMMIT")
        except self.sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise _write_failed(self.root, "its index %s" % INDEX, exc) from None
        return bool(cur.rowcount)

    def add_signatures(
        self, ident: str, entries: Sequence[Signature], signers: Sequence[SignerRow], data: bytes
    ) -> None:
        """Add checked signatures to a bundle the library holds: its file gains the entries (``data``, the bytes
        they came in, stands in for a stored file that is unreadable) and the index their rows, under one write
        lock, so two imports adding signatures at once lose none."""
        db = self.db
        if db is None:
            raise RuntimeError("add_signatures on a library that does not exist (opened with create=False)")
        path = self.path_of(ident)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                bundle = bundles.read_path(path)
            except BundleRefused:
                bundle = read_bytes(data, str(path))
            for entry in entries:
                bundle = bundle.signed(entry) or bundle
            safefs.atomic_write(path, bundles.to_bytes(bundle), fsync=False)
            db.executemany("INSERT OR IGNORE INTO signers VALUES (?, ?, ?)", signers)
            db.execute("COMMIT")
        except (self.sqlite3.DatabaseError, OSError) as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise _unusable(
                self.root, "cannot add signatures to %s: %s" % (path, getattr(exc, "strerror", None) or exc)
            ) from None
        finally:
            self._known = None

    def known_signers(self) -> Dict[str, FrozenSet[str]]:
        """{id: the keys of its signatures in the index} of every bundle: what an import checks against."""
        keys = self.signer_keys()
        return {ident: frozenset(keys.get(ident, ())) for ident in self.known_ids()}

    def community_rows(
        self, models: Optional[Sequence[str]] = None, device: Optional[str] = None
    ) -> List[CommunityRow]:
        """The CommunityRow of every verified configuration (of ``models``, measured on ``device``: "cpu" or
        "gpu", None both): what compare needs, lean for 10,000s."""
        if self.db is None:
            return []
        params: List[Any] = list(models or ()) + ([CPU_VENDOR, device == "cpu"] if device is not None else [])
        found = self.db.execute(community_sql(len(models or ()), device is not None, self.has_link), params)
        return [CommunityRow._make(row) for row in found]

    def community_index(
        self, models: Optional[Sequence[str]] = None, device: Optional[str] = None
    ) -> Tuple[Dict[Tuple[Any, ...], List[str]], List[Tuple[Any, ...]]]:
        """community_rows in two lean parts, for 100,000s of rows: ({(gpu, precision, xla, variable_update,
        data, tf_version, link class): [ids of the verified bundles measured on ``device`` under them]},
        [(bundle id, model, batch_size, num_gpus, images_per_sec)] of the verified results of ``models``). A
        bundle's conditions are read once per distinct set, not once per configuration (the text columns are
        most of a row's cost); a result whose bundle is in no list is not the device's."""
        if self.db is None:
            return {}, []
        columns = "gpu, precision, xla, variable_update, data, tf_version, %s" % ("link" if self.has_link else "NULL")
        where = " AND (vendor = ?) = ?" if device is not None else ""
        found = self.db.execute(
            "SELECT %s, group_concat(id, ' ') FROM bundles WHERE verified = 1%s GROUP BY %s"
            % (columns, where, columns),
            [CPU_VENDOR, device == "cpu"] if device is not None else [],
        )
        of = {row[:7]: row[7].split(" ") for row in found}  # ids: 64 hex digits (bundle.py), no space
        asked = list(models or ())
        results = self.db.execute(community_results_sql(len(asked), self._most_rows(asked)), asked).fetchall()
        return of, results

    def _most_rows(self, models: List[str]) -> bool:
        """Do ``models`` hold most of the index's results (two counts, ~15 ms at 500,000): then a scan reads
        them faster than results_model finds them (0.35 s against 0.54 s of CPU at 500,000)."""
        if not models or self.db is None:
            return False
        total = self.db.execute("SELECT count(*) FROM results").fetchone()[0]
        sql = "SELECT count(*) FROM results WHERE verified = 1 AND model IN (%s)" % ",".join("?" * len(models))
        return self.db.execute(sql, models).fetchone()[0] * 2 > total

    def created_at(self, stamp: str) -> List[str]:
        """The ids of the bundles created at ``stamp`` (results_newest finds them)."""
        if self.db is None:
            return []
        return [
            row[0] for row in self.db.execute("SELECT DISTINCT bundle_id FROM results WHERE created_at = ?", (stamp,))
        ]

    def _signed_db(self) -> Optional["sqlite3.Connection"]:
        """The index when it has its signers table and intervals (format 2 on), else None."""
        return None if self.unsigned_index else self.db

    def signer_keys(self) -> Dict[str, Set[str]]:
        """{bundle id: fingerprints of its valid signatures}: what community entries count as signers."""
        out: Dict[str, Set[str]] = {}
        db = self._signed_db()
        for ident, key in db.execute("SELECT bundle_id, fingerprint FROM signers") if db else ():
            out.setdefault(ident, set()).add(key)
        return out

    def intervals(self) -> Dict[Tuple[str, str, int, int], float]:
        """{(bundle id, model, batch size, GPUs): 95% interval half-width in % of the mean} where known, of the
        signed bundles: only they count toward `replicated` (an unsigned bundle's interval is never read)."""
        db = self._signed_db()
        if db is None:
            return {}
        return {row[:4]: row[4] for row in db.execute(INTERVALS_SQL)}

    def _signer_names(self) -> Dict[str, List[str]]:
        """{bundle id: its signers as shown: the principal where the allowed signers named one, else the key}."""
        out: Dict[str, List[str]] = {}
        db = self._signed_db()
        for ident, key, principal in db.execute("SELECT * FROM signers") if db else ():
            out.setdefault(ident, []).append(principal or key)
        return {k: sorted(v) for k, v in out.items()}

    def rows(self, gpu: Optional[str] = None, model: Optional[str] = None) -> List[LibraryRow]:
        """`library`'s rows, newest bundle first; ``gpu``: names with those words."""
        if self.db is None:
            return []
        names = self._signer_names()
        out = []
        for row in self.db.execute(rows_sql(bool(model)), [model] if model else []):
            found = dict(zip(ROW_KEYS, row))
            found["verified"] = bool(found["verified"])
            out.append(
                LibraryRow(
                    **found,
                    gpu_id=gpu_identity(found["gpu"]),
                    outlier=is_outlier(
                        found["gpu"],
                        found["model"],
                        found["precision"] or "fp32",
                        found["num_gpus"],
                        found["images_per_sec"],
                    ),
                    signers=tuple(names.get(found["id"], [])),
                )
            )
        if gpu:
            out = [r for r in out if gpu_matches(gpu, r.gpu)]
        return out


# the signed bundles (the signers' primary key), each one's results by the results' primary key
INTERVALS_SQL = (
    "SELECT r.bundle_id, r.model, r.batch_size, r.num_gpus, r.ci95_pct FROM "
    "(SELECT DISTINCT bundle_id FROM signers) s JOIN results r ON r.bundle_id = s.bundle_id "
    "WHERE r.ci95_pct IS NOT NULL"
)


def rows_sql(by_model: bool) -> str:
    """`library`'s query, newest first (``by_model``: of one model, a parameter): results_newest gives the
    order, so no sort of every row (and with a model, the rows of others are skipped, not sorted)."""
    return (
        "SELECT r.bundle_id, r.gpu, r.model, r.batch_size, r.precision, r.num_gpus, r.images_per_sec, "
        "r.verified, r.created_at, r.xla, r.variable_update, r.data, r.tf_version, r.runs_ok FROM results r"
        + (" WHERE r.model = ?" if by_model else "")
        + " ORDER BY r.created_at DESC, r.bundle_id, r.model, r.batch_size, r.num_gpus"
    )


def community_sql(models: int, by_device: bool, has_link: bool = True) -> str:
    """community_rows' query: of ``models`` models (parameters; 0: all), ``by_device``: then two parameters,
    the CPU's vendor and whether the CPU's rows are wanted. With models, results_model finds their rows; without,
    every verified row is read (a scan: the cheapest way to read nearly the whole table); each joins its bundle
    by the bundles' primary key."""
    where = " AND r.model IN (%s)" % ",".join("?" * models) if models else ""
    where += " AND (b.vendor = ?) = ?" if by_device else ""
    return (
        "SELECT r.gpu, r.model, r.batch_size, r.num_gpus, r.precision, r.xla, r.variable_update, r.data, "
        "r.tf_version, r.images_per_sec, r.bundle_id, %s, r.created_at FROM results r JOIN bundles b "
        "ON b.id = r.bundle_id WHERE r.verified = 1%s" % ("b.link" if has_link else "NULL", where)
    )


def community_results_sql(models: int, scan: bool = False) -> str:
    """community_index's results query: of ``models`` models (parameters; 0: all): results_model finds them,
    unless ``scan`` (they hold most results: ``+model`` keeps SQLite off the index); every verified result is
    otherwise read by a scan (the cheapest way to read nearly the whole table)."""
    return "SELECT bundle_id, model, batch_size, num_gpus, images_per_sec FROM results WHERE verified = 1" + (
        " AND %smodel IN (%s)" % ("+" if scan else "", ",".join("?" * models)) if models else ""
    )


def gpu_matches(typed: str, name: str) -> bool:
    """``--gpu 2070`` matches ``GeForce RTX 2070`` and every other spelling of that GPU, never a look-alike
    (``GeForce RTX 2070~``): one GPU identity (results/gpuid.py) when ``typed`` names a known GPU, else the
    references' name rules (case, vendor words and punctuation do not count; every typed word must be one of
    the name's) over plain names."""
    wanted = gpu_identity(typed)
    if known(wanted):
        return gpu_identity(name) == wanted
    typed_words = name_words(typed)
    return bool(typed_words) and is_plain(name.strip()) and set(typed_words) <= set(name_words(name))


def _create_schema(db: "sqlite3.Connection") -> None:
    """Create the index, or bring an older one up to SCHEMA_VERSION (format 1 lacks the signers table, made
    here, and results.ci95_pct, added empty: its bundles were format 1, which carry no signatures; formats 1
    and 2 lack the index results_newest, built here from the rows they hold)."""
    db.execute("BEGIN IMMEDIATE")  # two first imports at once: one creates, the other waits
    if db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:  # the other one did
        db.execute("COMMIT")
        return
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    if "ci95_pct" not in {row[1] for row in db.execute("PRAGMA table_info(results)")}:
        db.execute("ALTER TABLE results ADD COLUMN ci95_pct REAL")
    db.execute("PRAGMA user_version=%d" % SCHEMA_VERSION)
    db.execute("COMMIT")


def _with_link_column(db: "sqlite3.Connection", refused: Type[BaseException]) -> bool:
    """Whether the bundles table has its ``link`` column, added to an index made before it had one (a
    read-only library keeps its old table: its bundles read as of an unknown link)."""
    if any(row[1] == "link" for row in db.execute("PRAGMA table_info(bundles)")):
        return True
    try:
        db.execute("ALTER TABLE bundles ADD COLUMN link TEXT")
    except refused:  # read-only, or another process added it first
        return any(row[1] == "link" for row in db.execute("PRAGMA table_info(bundles)"))
    return True


def index_rows(bundle: Bundle, verified: bool, origin: str = "") -> Tuple[BundleRow, List[ResultRow]]:
    """(the bundles row, [results rows]) of a bundle: one results row per configuration with an ok run."""
    cond = bundle.conditions
    # others' text, at most 200 characters of it
    precision, xla, update, data, tf = (
        None if v is None else v[:200]
        for v in (cond.precision, cond.xla, cond.variable_update, cond.data, cond.tensorflow_version)
    )
    tf = tf or ""
    gpu = cond.gpu.strip()  # check_shape: a str of at most 200 characters
    # a CPU's bundle is filed under the vendor "cpu": its figures rank among CPU results, never among GPUs'
    vendor = CPU_VENDOR if cond.on_cpu else bundles.vendor_of(gpu)
    bundle_row = BundleRow(
        id=bundle.id,
        gpu=gpu,
        vendor=vendor,
        created_at=bundle.created_at,
        imported_at=utc_now(),
        verified=int(verified),
        tool_version=bundle.tool_version,
        tf_version=tf,
        precision=precision,
        xla=xla,
        variable_update=update,
        data=data,
        origin=str(origin)[:500],
        link=link_class(cond.link),
    )
    rows = []
    for (model, bs, n), found in bundle.ok_figures().items():  # a fleet's hosts pooled
        values = [float(v) for v in found]
        rows.append(
            ResultRow(
                bundle_id=bundle.id,
                gpu=gpu,
                model=model,
                batch_size=bs,
                num_gpus=n,
                precision=precision,
                xla=xla,
                variable_update=update,
                data=data,
                tf_version=tf,
                images_per_sec=statistics.mean(values),
                runs_ok=len(values),
                verified=int(verified),
                created_at=bundle.created_at,
                ci95_pct=_ci95_pct(values),
            )
        )
    return bundle_row, rows


def _ci95_pct(values: List[float]) -> Optional[float]:
    """The 95% interval of the values' mean, as % of it (None under two values): what `replicated` compares."""
    if len(values) < 2:
        return None
    try:
        mean = statistics.mean(values)
        half = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        return half / mean * 100.0 if mean > 0 and math.isfinite(half) else None
    except (OverflowError, ValueError):  # others' figures: finite, but their squares need not be
        return None


def signer_rows(bundle_id: str, signers: Sequence[Signer]) -> List[SignerRow]:
    """The signers-table rows of a bundle's valid signatures (one per key)."""
    rows = {s.fingerprint: SignerRow(bundle_id, s.fingerprint, s.principal) for s in signers if s.valid}
    return list(rows.values())


# -- import ----------------------------------------------------------------------------------------------

PARALLEL_MIN_FILES = 64  # fewer bundles than this are checked in this process
MAX_JOBS = 8


def check(
    data: bytes,
    where: str,
    origin: str = "",
    expected_id: Optional[str] = None,
    known: Collection[str] = (),
    allowed: Optional[Path] = None,
) -> Checked:
    """What importing one bundle's bytes would do, without touching the library (so worker processes can
    do it): Refused, Present (the library holds it), Signed (it holds it, and this copy brings good signatures
    it lacks) or New (its index rows)."""
    try:  # the id's hash (RFC 8785 JSON: a fifth of a bundle's check) computed once: here or in verify
        bundle = read_bytes(data, where, check_id=False)
    except BundleRefused as exc:
        return Refused(exc.message)
    changed = "%s: %s" % (where, bundles.ID_CHANGED % bundle.id[:16])
    try:
        if (expected_id is not None and bundle.id != expected_id) or bundle.id in known:
            if not bundles.genuine_id(bundle):
                return Refused(changed)
        if expected_id is not None and bundle.id != expected_id:
            return Refused("%s: holds bundle %s, not the one its name says" % (where, bundle.short_id))
        if bundle.id in known:
            return _present(bundle, where, known, allowed)
        verdict = verify(bundle, allowed)
    except BundleRefused as exc:  # a value with no RFC 8785 form, so no id can be its hash
        return Refused("%s: %s" % (where, exc.message))
    if verdict.state == FAILED:
        if verdict.findings[:1] == (bundles.ID_CHANGED % bundle.id[:16],):
            return Refused(changed)  # as read_bytes names it: the other findings are moot
        return Refused("%s: not verified: %s" % (where, verdict.findings[0]))
    state = "" if verdict.verified else ", unverified (no logs)"
    message = "%s: imported %s, bundle %s%s" % (where, bundle.gpu, bundle.short_id, state)
    bundle_row, rows = index_rows(bundle, verdict.verified, origin)
    return New(message, bundle_row, tuple(rows), tuple(signer_rows(bundle.id, verdict.signers)))


def _present(bundle: Bundle, where: str, known: Collection[str], allowed: Optional[Path]) -> Checked:
    """A bundle the library holds (``known``: {id: its signers' keys} where the caller knows them): signatures
    the library lacks are checked, all of them good: ('signed', message, (id, entries, signer rows)) for store to
    add; one bad: refused, as verify would."""
    message = "%s: already in the library (bundle %s)" % (where, bundle.short_id)
    have = known.get(bundle.id, frozenset()) if isinstance(known, dict) else frozenset()
    fresh = [e for e in bundle.signatures if e.fingerprint not in have]
    if not isinstance(known, dict) or not fresh:
        return Present(message, bundle.id)
    signers = check_all(bundle, allowed)  # all of them: a finding numbers its signature as verify does
    bad = signature_findings(signers)
    if bad:
        return Refused("%s: not verified: %s" % (where, bad[0]))
    keep = {s.fingerprint: (entry, s) for entry, s in zip(bundle.signatures, signers) if s.fingerprint not in have}
    if not keep:
        return Present(message, bundle.id)
    return Signed(
        "%s; %d new signature%s added" % (message, len(keep), "" if len(keep) == 1 else "s"),
        bundle.id,
        tuple(e for e, _ in keep.values()),
        tuple(signer_rows(bundle.id, [s for _, s in keep.values()])),
    )


def store(library: Library, data: Optional[bytes], checked: Checked) -> Tuple[str, str]:
    """(outcome, message) after storing what ``check`` found: 'imported', 'present' or 'refused' ('signed':
    present, its new signatures added). ``data``: the bundle's bytes (None only for a file that could not be
    read, whose answer is Refused)."""
    if isinstance(checked, (Refused, Present)) or data is None:
        return checked.outcome, checked.message
    if isinstance(checked, Signed):
        library.add_signatures(checked.id, checked.signatures, checked.signers, data)
        return "present", checked.message
    if not library.add_rows(checked.bundle, checked.results, data, checked.signers):
        return "present", "%s (already in the library)" % checked.message.split(": imported")[0]
    return "imported", checked.message


def import_one(
    library: Library,
    data: bytes,
    where: str,
    origin: str = "",
    expected_id: Optional[str] = None,
    allowed: Optional[Path] = None,
) -> Tuple[str, ...]:
    """(outcome, message) for one bundle's bytes: outcome 'imported', 'present' or 'refused'.
    ``expected_id``: the id its file name claims (a pulled file must hold the bundle it is named after)."""
    return store(library, data, check(data, where, origin, expected_id, library.known_ids_cached(), allowed))


def _bundle_files(paths: Iterable[Union[Path, str]]) -> Iterator[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            yield from sorted(p for p in path.rglob("*" + bundles.SUFFIX) if not p.is_symlink())
        else:
            yield path


_KNOWN: Collection[str] = frozenset()  # the library's ids ({id: signers' keys} from import)
_ALLOWED: Optional[Path] = None  # the allowed signers file the workers name signers by


def _check_file(
    path: Path,
) -> Tuple[Optional[bytes], Checked]:
    """(data, check's answer) of a bundle file; run in worker processes for many files."""
    try:
        data = bundles.read_path_bytes(path)
    except BundleRefused as exc:
        return None, Refused(exc.message)
    return data, check(data, str(path), origin=str(Path(path).resolve()), known=_KNOWN, allowed=_ALLOWED)


def _worker_init(known: Collection[str], allowed: Optional[Path] = None) -> None:
    global _KNOWN, _ALLOWED
    _KNOWN, _ALLOWED = known, allowed
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the pool


def checked_files(
    files: List[Path], known: Collection[str], allowed: Optional[Path] = None
) -> Iterator[Tuple[Path, Optional[bytes], Checked]]:
    """(path, data, check's answer) of each file, in order; worker processes check them when there are many
    (verifying re-parses every log: the CPU work of an import)."""
    jobs = min(os.cpu_count() or 1, MAX_JOBS) if len(files) >= PARALLEL_MIN_FILES else 1
    if jobs <= 1 or not sys.platform.startswith("linux"):
        _worker_init(known, allowed)
        for path in files:
            yield (path,) + _check_file(path)
        return
    import multiprocessing  # only many files start workers; other verbs that load library skip its import

    with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_init, initargs=(known, allowed)) as pool:
        for path, answer in zip(files, pool.imap(_check_file, files, chunksize=16)):
            yield (path,) + answer


@dataclass(frozen=True)
class ImportArgs:
    """`import BUNDLE|DIR...`: bundle files or directories of them."""

    paths: Tuple[str, ...]


def cmd_import(args: ImportArgs) -> int:
    """Exit 0 every bundle imported or already there, 1 some refused (each named with why), 2 usage."""
    for path in args.paths:
        if not Path(path).exists():
            raise UsageError("%s does not exist; give bundle files (.tfcw.json.gz) or directories of them" % path)
    allowed = allowed_signers_path()
    library = Library()
    counts = {"imported": 0, "present": 0, "refused": 0}
    try:
        for _path, data, answer in checked_files(list(_bundle_files(args.paths)), library.known_signers(), allowed):
            outcome, message = store(library, data, answer)
            counts[outcome] += 1
            (sys.stderr if outcome == "refused" else sys.stdout).write(
                ("refused: " if outcome == "refused" else "") + message + "\n"
            )
    finally:
        library.close()
    sys.stderr.write(
        "tfcnnwrap import: %d imported, %d already there, %d refused (library: %s)\n"
        % (counts["imported"], counts["present"], counts["refused"], library.root)
    )
    return 1 if counts["refused"] else 0


# -- the verb ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LibraryArgs:
    """`library`: ``gpu`` words a GPU's name has, ``model`` one model (None: all); ``format`` table, markdown,
    csv or json."""

    gpu: Optional[str] = None
    model: Optional[str] = None
    format: str = "table"


def cmd_library(args: LibraryArgs) -> int:
    library = Library(create=False)
    try:
        found = library.rows(gpu=args.gpu, model=args.model)
    finally:
        library.close()
    rows = [r.to_dict() for r in found]
    if args.format == "json":
        sys.stdout.write(
            render.to_json(
                {
                    "format": 2,
                    "kind": "library",
                    "conditions": {"library": str(library.root), "gpu": args.gpu, "model": args.model},
                    "rows": rows,
                }
            )
            + "\n"
        )
        return 0
    shown = [
        dict(
            r.to_dict(),
            id=r.id[:12],
            verified=("yes" if r.verified else "unverified") + (", outlier" if r.outlier else ""),
            signers=", ".join(r.signers) or "-",
        )
        for r in found
    ]
    columns = [
        ("gpu", "GPU"),
        ("model", "model"),
        ("batch_size", "batch"),
        ("num_gpus", "GPUs", 2),
        ("precision", "precision", 3),
        ("images_per_sec", "images/sec"),
        ("verified", "verified"),
        ("signers", "signed by", 4),
        ("tf_version", "TF", 4),
        ("created_at", "created", 5),
        ("id", "bundle", 1),
    ]
    if args.format == "csv":
        render.emit(rows, "csv", list(ROW_KEYS) + ["signers"])
        return 0
    if not rows:
        what = " matching the filters" if args.gpu or args.model else ""
        sys.stderr.write(
            "tfcnnwrap library: no bundles%s in %s; `tfcnnwrap import` or `tfcnnwrap pull` adds "
            "some\n" % (what, library.root)
        )
        return 0
    render.emit(shown, args.format, columns, title="Library: %s" % library.root)
    return 0
