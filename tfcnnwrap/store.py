"""The sweep directory on disk: sweep.json, runs.jsonl, logs/, summary.csv, and its writer lock.

Every finished run is appended to runs.jsonl and fsynced before the next run starts, so a killed sweep loses
at most the run in flight. Readers tolerate a torn last line. Nothing read from the directory can point a
reader outside it.
"""

import json
import os
import re
from pathlib import Path

from tfcnnwrap.errors import UsageError
from tfcnnwrap.filelock import FileLock, LockBusy
from tfcnnwrap.records import FORMAT_VERSION, RunRecord, SweepMeta  # noqa: F401 - FORMAT_VERSION for the writer

SWEEP_JSON = "sweep.json"
RUNS_JSONL = "runs.jsonl"
LOGS_DIR = "logs"
SUMMARY_CSV = "summary.csv"
LOCK_NAME = ".tfcnnwrap.lock"

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def run_key(record):
    """(model, batch_size, run) of a record or a dict, the plan's run spec (see RunRecord.key for the full key)."""
    if isinstance(record, RunRecord):
        return (record.model, record.batch_size, record.run)
    return (record.get("model"), record.get("batch_size"), record.get("run"))


def log_name(model, batch_size, run, suffix=".log"):
    safe_model = _UNSAFE_NAME.sub("_", str(model)).strip(".") or "model"
    return "%s-bs%d-run%d%s" % (safe_model, int(batch_size), int(run), suffix)


def is_sweep(path):
    return (Path(path) / SWEEP_JSON).is_file()


# The sweep's writer lock lives in filelock (setup uses it too); the old names stay importable.
SweepLocked = LockBusy


def read_json_lines(path):
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


def is_run_record(record):
    """A record with the fields every reader relies on (a hand-edited line without them is skipped)."""
    return RunRecord.is_valid(record)


def latest_runs(records, default_num_gpus=None):
    """One RunRecord per run key: the last one written wins (a resume re-runs in place).

    ``records``: RunRecords or dicts; a dict without num_gpus counts as ``default_num_gpus`` (the plan's),
    by default the one count of the RunRecords among them (read with their plan's count), so a writer's fresh
    dict replaces the record it re-ran.
    """
    records = list(records)
    if default_num_gpus is None:
        counts = {r.num_gpus for r in records if isinstance(r, RunRecord)}
        default_num_gpus = counts.pop() if len(counts) == 1 else None
    latest = {}
    for rec in records:
        rec = RunRecord.coerce(rec, default_num_gpus)
        latest[rec.key] = rec
    return list(latest.values())


class SweepDir:
    def __init__(self, path):
        self.path = Path(path)
        self.meta = None
        self.info = None
        self._lock = FileLock(self.path / LOCK_NAME)

    # -- paths -------------------------------------------------------------------------------------
    @property
    def sweep_json(self):
        return self.path / SWEEP_JSON

    @property
    def runs_jsonl(self):
        return self.path / RUNS_JSONL

    @property
    def logs_dir(self):
        return self.path / LOGS_DIR

    @property
    def summary_csv(self):
        return self.path / SUMMARY_CSV

    def log_relpath(self, model, batch_size, run, suffix=".log"):
        return "%s/%s" % (LOGS_DIR, log_name(model, batch_size, run, suffix))

    def inside(self, relpath):
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
    def refuse_existing(self):
        """UsageError when this path cannot become a new sweep (checked before anything slow happens)."""
        if is_sweep(self.path):
            raise UsageError(
                "%s already holds a sweep: continue it with `--resume %s` or choose another --out"
                % (self.path, self.path)
            )
        if self.path.exists() and not self.path.is_dir():
            raise UsageError("--out %s is a file, not a directory; choose another --out" % self.path)

    def create(self, meta):
        """Make a new sweep directory; refuse one that already holds a sweep."""
        self.refuse_existing()
        self.path.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(exist_ok=True)
        self.lock()
        self.write_meta(meta)

    def write_meta(self, meta):
        tmp = self.sweep_json.with_name(SWEEP_JSON + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.sweep_json)

    def lock(self):
        if not self._lock.held:
            self._lock.acquire()

    def unlock(self):
        self._lock.release()

    def append_run(self, record):
        """Append one run record (a RunRecord or a dict) and make it durable before returning."""
        if isinstance(record, RunRecord):
            record = record.to_dict()
        line = json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
        with open(self.runs_jsonl, "ab") as fh:
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())

    def write_summary_csv(self, text):
        tmp = self.summary_csv.with_name(SUMMARY_CSV + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        tmp.replace(self.summary_csv)

    # -- reading -----------------------------------------------------------------------------------
    def read_meta(self):
        """The SweepMeta of sweep.json (also kept as ``self.info``; ``self.meta`` keeps the raw object, which
        the writer extends and rewrites on --resume). Exit 2 if it is missing, unreadable, of the wrong shape,
        or written by a newer tfcnnwrap."""
        where = "%s/%s" % (self.path, SWEEP_JSON)
        try:
            with open(self.sweep_json, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            raise UsageError(
                "%s is not a sweep directory (no %s); give a directory made by `tfcnnwrap sweep`"
                % (self.path, SWEEP_JSON)
            ) from None
        except (OSError, ValueError) as exc:
            raise UsageError("%s is unreadable (%s); it is not a usable sweep" % (where, exc)) from None
        self.info = SweepMeta.from_dict(raw, where)
        self.meta = raw
        return self.info

    def read_runs(self):
        """The latest RunRecord of every run in runs.jsonl (torn and hand-broken lines skipped)."""
        info = self.info if self.info is not None else self.read_meta()
        valid = (r for r in read_json_lines(self.runs_jsonl) if is_run_record(r))
        return latest_runs(valid, info.plan_num_gpus)


def open_sweep(path):
    """A SweepDir for reading; exit 2 with a clear message if ``path`` is not a sweep."""
    path = Path(path)
    if not path.exists():
        raise UsageError("%s does not exist; give a sweep directory such as results/<timestamp>" % path)
    if not path.is_dir():
        raise UsageError("%s is not a directory; give a sweep directory such as results/<timestamp>" % path)
    sweep = SweepDir(path)
    sweep.read_meta()
    return sweep


def load_sweep(path):
    """(SweepDir, SweepMeta, [RunRecord]) of a finished or partial sweep."""
    sweep = open_sweep(path)
    return sweep, sweep.info, sweep.read_runs()


def newest_sweep(results_dir="results"):
    """The most recently created sweep under ``results_dir``."""
    root = Path(results_dir)
    candidates = [p for p in root.iterdir() if is_sweep(p)] if root.is_dir() else []
    if not candidates:
        raise UsageError(
            "no sweep found under %s/; run `python -m tfcnnwrap sweep` first or name a SWEEP_DIR" % root
        )

    def created(path):
        try:
            with open(path / SWEEP_JSON, encoding="utf-8") as fh:
                value = json.load(fh).get("created_at")
        except (OSError, ValueError, AttributeError):
            return ""
        return value if isinstance(value, str) else ""

    return max(candidates, key=lambda p: (created(p), p.name))


def gpu_names(meta):
    """The GPU names a sweep's environment recorded (TensorFlow's view, else nvidia-smi's), or ''."""
    return SweepMeta.coerce(meta).gpu_names()


def plan_order(meta):
    """(model, batch_size) pairs in the order the sweep's plan lists them."""
    return SweepMeta.coerce(meta).plan_order
