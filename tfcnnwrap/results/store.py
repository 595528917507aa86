"""The sweep directory on disk: sweep.json, runs.jsonl, logs/, summary.csv, and its writer lock.

Every finished run is appended to runs.jsonl and fsynced before the next run starts, so a killed sweep loses
at most the run in flight. Readers tolerate a torn last line. Nothing read from the directory can point a
reader outside it.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.errors import DamagedFile, TfcnnwrapError, UsageError
from tfcnnwrap.filelock import FileLock, held_by, held_elsewhere
from tfcnnwrap.jsontext import dumps
from tfcnnwrap.results.records import FORMAT_VERSION, RunRecord, SweepMeta  # noqa: F401 - FORMAT_VERSION for the writer
from tfcnnwrap.settings import results_dir as default_results

if TYPE_CHECKING:
    from io import BufferedRandom

    from tfcnnwrap.results.plan import Plan, RunSpec

SWEEP_JSON = "sweep.json"
RUNS_JSONL = "runs.jsonl"
LOGS_DIR = "logs"
SUMMARY_CSV = "summary.csv"
SUMMARY_JSON = "summary.json"  # the rows of summary.csv for report and compare (results/summarycache.py)
LOCK_NAME = ".tfcnnwrap.lock"

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def fs_error(verb: str, path: Union[Path, str], exc: OSError, exit_code: int = 2) -> TfcnnwrapError:
    """The user's file system said no (read-only, full, not a directory): one line naming the file."""
    reason = getattr(exc, "strerror", None) or str(exc)
    return TfcnnwrapError("cannot %s %s: %s" % (verb, path, reason), exit_code=exit_code)


def _first_existing_ancestor(path: Path) -> Optional[Path]:
    for candidate in [Path(path)] + list(Path(path).parents):
        if os.path.lexists(str(candidate)):
            return candidate
    return None


def _first_missing(path: Path) -> Optional[Path]:
    """The outermost directory ``mkdir(parents=True)`` would make for ``path`` (None: it exists)."""
    missing = None
    for candidate in [Path(path)] + list(Path(path).parents):
        if os.path.lexists(str(candidate)):
            break
        missing = candidate
    return missing


def _after_last_newline(fh: BufferedRandom, size: int, chunk: int = 64 * 1024) -> int:
    """Offset just past the last newline of the file (0 if none), read backwards in chunks."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        fh.seek(start)
        at = fh.read(end - start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def _is_record(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except ValueError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _truncate_quietly(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass  # the next writer's repair cuts the fragment off instead


def log_name(
    model: str,
    batch_size: int,
    run: int,
    suffix: str = ".log",
    num_gpus: Optional[int] = None,
    data: Optional[str] = None,
) -> str:
    """``resnet50-bs64-run1.log``; ``resnet50-bs64-g2-run1.log`` when a sweep runs several GPU counts,
    ``resnet50-bs64-real-run1.log`` when it runs both data kinds."""
    safe_model = _UNSAFE_NAME.sub("_", str(model)).strip(".") or "model"
    gpus = "-g%d" % int(num_gpus) if num_gpus is not None else ""
    kind = "-" + _UNSAFE_NAME.sub("_", data) if data else ""
    return "%s-bs%d%s%s-run%d%s" % (safe_model, int(batch_size), gpus, kind, int(run), suffix)


def is_sweep(path: Path) -> bool:
    return (Path(path) / SWEEP_JSON).is_file()


def read_json_lines(path: Path) -> List[Any]:
    """Records of a JSON-lines file; a torn or corrupt line (a killed writer) is skipped."""
    records = []
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8", "replace"))
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    records.append(obj)
    except FileNotFoundError:
        pass
    return records


def is_run_record(record: Dict[str, Any]) -> bool:
    """A record with the fields every reader relies on (a hand-edited line without them is skipped)."""
    return RunRecord.is_valid(record)


def as_written(record: RunRecord) -> RunRecord:
    """``record`` as a reader of runs.jsonl gets it back (floats at jsontext's digits, undecodable bytes
    replaced): what the sweep summarises, so that summary.json's key and rows are report's own."""
    return RunRecord.from_dict(json.loads(dumps(record.to_dict())))


def latest_runs(records: Iterable[RunRecord]) -> List[RunRecord]:
    """One RunRecord per run key: the last one written wins (a resume re-runs in place)."""
    return list({rec.key: rec for rec in records}.values())


class SweepDir:
    def __init__(self, path: Union[Path, str]) -> None:
        self.path = Path(path)
        self.meta: Optional[SweepMeta] = None  # sweep.json, once read or written
        self._lock = FileLock(self.path / LOCK_NAME)

    # -- paths -------------------------------------------------------------------------------------
    @property
    def sweep_json(self) -> Path:
        return self.path / SWEEP_JSON

    @property
    def runs_jsonl(self) -> Path:
        return self.path / RUNS_JSONL

    @property
    def logs_dir(self) -> Path:
        return self.path / LOGS_DIR

    @property
    def summary_csv(self) -> Path:
        return self.path / SUMMARY_CSV

    def log_relpath(
        self,
        model: str,
        batch_size: int,
        run: int,
        suffix: str = ".log",
        num_gpus: Optional[int] = None,
        data: Optional[str] = None,
    ) -> str:
        return "%s/%s" % (LOGS_DIR, log_name(model, batch_size, run, suffix, num_gpus, data))

    def spec_log(self, spec: RunSpec, plan: Plan, suffix: str = ".log") -> str:
        """The log of a plan's RunSpec (named with its GPU count in a sweep of several counts, its data kind in
        a sweep of both)."""
        gpus = spec.num_gpus if plan.scaling else None
        return self.log_relpath(spec.model, spec.batch_size, spec.run, suffix, gpus, spec.data)

    def inside(self, relpath: str) -> Optional[Path]:
        """The absolute path of ``relpath`` if it stays inside the sweep directory, else None."""
        if not isinstance(relpath, str) or not relpath:
            return None
        root = self.path.resolve()
        candidate = (root / relpath).resolve()
        try:
            candidate.relative_to(root)
        except ValueError:
            return None
        return candidate

    # -- writing -----------------------------------------------------------------------------------
    def refuse_existing(self) -> None:
        """UsageError when this path cannot become a new sweep (checked before anything slow happens).

        Only a new or empty directory becomes a sweep: one holding a leftover runs.jsonl (or anything else)
        would otherwise present old runs under the new sweep's metadata.
        """
        try:
            str(self.path).encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(
                "--out %s is not valid UTF-8 (the name is recorded in sweep.json); choose a plain name"
                % ascii(str(self.path))
            ) from None
        if is_sweep(self.path):
            raise UsageError(
                "%s already holds a sweep: continue it with `--resume %s` or choose another --out"
                % (self.path, self.path)
            )
        if self.path.is_symlink() and not self.path.exists():
            raise UsageError(
                "--out %s is a link to %s, which does not exist; tfcnnwrap never makes a directory "
                "through a link: choose another --out" % (self.path, os.readlink(str(self.path)))
            )
        if self.path.exists() and not self.path.is_dir():
            raise UsageError("--out %s is a file, not a directory; choose another --out" % self.path)
        if self.path.is_dir():
            try:
                held = sorted(p.name for p in self.path.iterdir())
            except OSError as exc:
                raise fs_error("read", self.path, exc) from None
            if held:
                raise UsageError(
                    "--out %s is not empty (it holds %s); a new sweep needs a new or empty directory: choose "
                    "another --out, or continue a sweep with --resume" % (self.path, ", ".join(held[:5]))
                )
            return
        ancestor = _first_existing_ancestor(self.path)
        if ancestor is not None and not ancestor.is_dir():
            raise UsageError(
                "--out %s cannot be made: %s is a file, not a directory; choose another --out" % (self.path, ancestor)
            )
        if ancestor is not None and not os.access(str(ancestor), os.W_OK | os.X_OK):
            raise UsageError(
                "--out %s cannot be made: %s is not writable; choose another --out" % (self.path, ancestor)
            )

    def refuse_links(self) -> None:
        """Refuse a sweep whose own parts are links leading out of it (exit 2, before anything is read)."""
        safefs.refuse_links_outside(
            self.path, (SWEEP_JSON, RUNS_JSONL, LOGS_DIR, SUMMARY_CSV, SUMMARY_JSON, LOCK_NAME), "sweep directory"
        )

    def create(self, meta: SweepMeta) -> None:
        """Make a new sweep directory; refuse one that already holds anything. A failure leaves nothing."""
        self.refuse_existing()
        made = _first_missing(self.path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self.logs_dir.mkdir()
            self.lock()
            self.write_meta(meta)
        except BaseException as exc:
            self.unlock()
            self._remove_half_made(made)
            if isinstance(exc, OSError):
                raise fs_error("create", getattr(exc, "filename", None) or self.path, exc) from None
            raise

    def _remove_half_made(self, made: Optional[Path]) -> None:
        """Undo a failed create: the directories it made, or what it put in an empty --out."""
        import shutil  # lazy: only a failed create removes trees; `list` and `report` start without it

        if made is not None:
            shutil.rmtree(str(made), ignore_errors=True)
            return
        for name in (LOGS_DIR, LOCK_NAME):
            part = self.path / name
            if part.is_dir() and not safefs.is_link(part):
                shutil.rmtree(str(part), ignore_errors=True)
            elif os.path.lexists(str(part)):
                try:
                    part.unlink()
                except OSError:
                    pass

    def write_meta(self, meta: SweepMeta) -> None:
        try:
            safefs.atomic_write(self.sweep_json, dumps(meta.to_dict(), indent=2) + "\n")
        except OSError as exc:
            raise fs_error("write", self.sweep_json, exc) from None
        self.meta = meta

    def lock(self) -> None:
        if self._lock.held:
            return
        try:
            self._lock.acquire()
        except OSError as exc:
            raise fs_error("lock", self._lock.path, exc) from None

    def unlock(self) -> None:
        self._lock.release()

    def writer_running(self) -> bool:
        """Whether a sweep (another process) holds this directory's writer lock: it is still running."""
        return not self._lock.held and held_elsewhere(self._lock.path)

    def prepare_for_appending(self) -> Optional[Path]:
        """Check runs.jsonl before this writer reads or appends to it; repair a torn last line.

        Called by the sweep once it holds the lock. Returns the side file the torn bytes went to, or None.
        """
        path = self.runs_jsonl
        if safefs.is_link(path):
            raise safefs.LinkRefused("%s is a symbolic link; tfcnnwrap never writes through links: remove it" % path)
        if path.exists() and not path.is_file():
            raise UsageError("%s is not a file; move it aside (the sweep's records live in that file)" % path)
        try:
            return self._repair_tail()
        except OSError as exc:
            raise fs_error("repair", path, exc) from None

    def _repair_tail(self) -> Optional[Path]:
        """A last line without its newline: a whole record gets its newline; a fragment (a writer killed
        mid-append, a full disk) moves to runs.jsonl.torn-<time>, so that the next record starts a line."""
        try:
            fd = os.open(str(self.runs_jsonl), os.O_RDWR | _NOFOLLOW | _BINARY)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return None
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return None
            cut = _after_last_newline(fh, size)
            fh.seek(cut)
            tail = fh.read()
            if _is_record(tail):
                fh.seek(0, os.SEEK_END)
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
                return None
            side = self._save_torn(tail)
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
            return side

    def _save_torn(self, data: bytes) -> Path:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        side = self.path / ("%s.torn-%s" % (RUNS_JSONL, stamp))
        with safefs.create_new(side) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return side

    def append_run(self, record: RunRecord) -> None:
        """Append one run record on a line of its own and make it durable before returning.

        A write that fails (a full disk) is cut off again, so runs.jsonl keeps whole lines only.
        """
        line = (dumps(record.to_dict()) + "\n").encode("utf-8")
        try:
            self._repair_tail()
            with safefs.open_append(self.runs_jsonl) as fh:
                # Straight to the descriptor: a buffered file would retry the failed rest on close.
                fd = fh.fileno()
                start = os.lseek(fd, 0, os.SEEK_END)
                try:
                    _write_all(fd, line)
                    os.fsync(fd)
                except OSError:
                    _truncate_quietly(fd, start)
                    raise
        except OSError as exc:
            raise fs_error("append to", self.runs_jsonl, exc) from None

    def write_summary_csv(self, text: str) -> None:
        try:
            safefs.atomic_write(self.summary_csv, text)
        except OSError as exc:
            raise fs_error("write", self.summary_csv, exc) from None

    def write_summary_json(self, text: str) -> None:
        path = self.path / SUMMARY_JSON
        try:
            safefs.atomic_write(path, text)
        except OSError as exc:
            raise fs_error("write", path, exc) from None

    # -- reading -----------------------------------------------------------------------------------
    def read_meta(self) -> SweepMeta:
        """The SweepMeta of sweep.json (also kept as ``self.meta``). Exit 2 if it is missing, unreadable, of
        the wrong shape, or written by a newer tfcnnwrap."""
        where = "%s/%s" % (self.path, SWEEP_JSON)
        self.refuse_links_out()
        try:
            with open(self.sweep_json, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            raise UsageError(
                "%s is not a sweep directory (no %s); give a directory made by `tfcnnwrap sweep`"
                % (self.path, SWEEP_JSON)
            ) from None
        except (OSError, ValueError) as exc:
            raise DamagedFile("%s is unreadable (%s); it is not a usable sweep" % (where, exc)) from None
        self.meta = SweepMeta.from_dict(raw, where)
        return self.meta

    def refuse_links_out(self) -> None:
        """UsageError when sweep.json or runs.jsonl is a link leading out of the sweep: another person's sweep
        would otherwise make a reader (export, report) take some other file for its records."""
        bad = safefs.link_leading_outside(self.path, (SWEEP_JSON, RUNS_JSONL))
        if bad is not None:
            raise safefs.LinkRefused(
                "%s is a symbolic link leading out of the sweep %s; tfcnnwrap never follows "
                "it: put the file itself there" % (bad, self.path)
            )

    def read_runs(self) -> List[Any]:
        """The latest RunRecord of every run in runs.jsonl (torn and hand-broken lines skipped)."""
        info = self.meta if self.meta is not None else self.read_meta()
        # records written before runs carried num_gpus ran the plan's count: filled here, once
        return latest_runs(
            RunRecord.from_dict(r, info.plan_num_gpus) for r in read_json_lines(self.runs_jsonl) if is_run_record(r)
        )


def open_sweep(path: Union[Path, str]) -> SweepDir:
    """A SweepDir for reading; exit 2 with a clear message if ``path`` is not a sweep."""
    path = Path(path)
    if not path.exists():
        raise UsageError("%s does not exist; give a sweep directory such as results/<timestamp>" % path)
    if not path.is_dir():
        raise UsageError("%s is not a directory; give a sweep directory such as results/<timestamp>" % path)
    sweep = SweepDir(path)
    sweep.read_meta()
    return sweep


def load_sweep(path: Union[Path, str]) -> Tuple[SweepDir, SweepMeta, List[RunRecord]]:
    """(SweepDir, SweepMeta, [RunRecord]) of a finished or partial sweep."""
    sweep = open_sweep(path)
    return sweep, sweep.read_meta() if sweep.meta is None else sweep.meta, sweep.read_runs()


def sweeps_by_age(root: Path) -> List[Path]:
    """The sweeps directly under ``root``, oldest first by sweep.json's created_at (then name); [] when
    ``root`` is not a directory."""
    if not root.is_dir():
        return []

    def created(path: Path) -> str:
        try:
            with open(path / SWEEP_JSON, encoding="utf-8") as fh:
                value = json.load(fh).get("created_at")
        except (OSError, ValueError, AttributeError):
            return ""
        return value if isinstance(value, str) else ""

    return sorted((p for p in root.iterdir() if is_sweep(p)), key=lambda p: (created(p), p.name))


def running_pid(path: Union[Path, str]) -> Optional[int]:
    """The pid of the sweep writing to ``path`` now (its writer lock is held; 0 when it wrote no pid), None
    when no sweep is running there."""
    return held_by(Path(path) / LOCK_NAME)


def finished_sweeps(root: Path) -> Tuple[List[Path], List[str]]:
    """(the sweeps under ``root`` that no sweep is writing to, oldest first; "NAME is running (pid N)" per
    running one): what a verb picks when no sweep is named, since a running sweep's figures are not yet all in."""
    found, running = [], []
    for path in sweeps_by_age(root):
        pid = running_pid(path)
        if pid is None:
            found.append(path)
        else:
            running.append("%s is running%s" % (path.name, " (pid %d)" % pid if pid else ""))
    return found, running


def running_note(running: List[str]) -> str:
    """``; 20261201-101500 is running (pid 4242): name it to read it as it is`` for an error that found too
    few sweeps, or ''."""
    if not running:
        return ""
    return "; %s: name it to read it as it stands" % "; ".join(running)


def newest_sweep(results_dir: Union[Path, str, None] = None) -> Path:
    """The most recently created sweep under ``results_dir`` (default: $TFCNNWRAP_RESULTS, else results/)
    that no sweep is still writing to."""
    root = Path(results_dir) if results_dir is not None else default_results()
    found, running = finished_sweeps(root)
    if not found:
        raise UsageError(
            "no %ssweep found under %s/%s; run `python -m tfcnnwrap sweep` first or name a SWEEP_DIR"
            % ("finished " if running else "", root, running_note(running))
        )
    return found[-1]
