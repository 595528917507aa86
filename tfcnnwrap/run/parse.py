"""The ``parse`` verb: one record per tf_cnn_benchmarks log file, ours or anyone's.

Which files: a path given as a file is parsed if it is a regular file (a device such as /dev/zero or a
FIFO would never end: refused) and its name ends in ``.log`` or it looks like a log (below); any other file
named (``/etc/hostname``) is "not a tf_cnn_benchmarks log", a usage error like a path that does not exist.
Inside a directory (recursively, hidden directories
skipped, symlinked directories not followed, only regular files), a file is taken when its name ends in
``.log``, or when its first 64 KiB look like tf_cnn_benchmarks output: they hold ``TensorFlow:  ``,
``images/sec:`` or ``Flags parsing error``, or -- a run that died before its header, say on a missing
shared library at import -- TensorFlow's own C++ log lines or a Python traceback, next to the word
TensorFlow. So ``slurm-123.out`` or ``run.txt`` logs are found and a README, a CSV or a sweep's
``runs.jsonl`` are not. What cannot be read (a directory, a file) is named on stderr, not skipped silently.

Exit: 0 every log is ok; 1 some log holds a failure (any status but ok); 2 a path does not exist, is not
a regular file or directory, is a file that is not a log, or no log was found, reported before anything is
printed.

Logs are read by a few worker processes when there are many of them (Linux only, where forking is cheap
and safe; TFCNNWRAP_PARSE_JOBS=N sets how many, 1 for none). Records come out in the same order either way.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import re
import signal
import stat
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple

from tfcnnwrap.errors import EXIT_OK, EXIT_RUNS_FAILED, UsageError
from tfcnnwrap.jsontext import dumps
from tfcnnwrap.render import emit
from tfcnnwrap.run.logparse import TRACEBACK_START, classify, parse_file, strip_ansi_bytes

SNIFF_BYTES = 64 * 1024
SNIFF_MARKERS = (b"TensorFlow:  ", b"images/sec:", b"Flags parsing error")
# A run that died before tf_cnn_benchmarks printed anything: TensorFlow's C++ log lines (TF 1.x
# "2026-11-30 10:00:00.000000: I tensorflow/...cc:141]", TF 2.x "I0000 00:00:1796016972.504125 6565
# port.cc:153]") or a Python traceback -- either only next to TensorFlow's name, so that another program's
# glog output or traceback is not taken for a benchmark log.
_CPP_LOG_LINE_RE = re.compile(
    rb"(?m)^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} \d\d:\d\d:[\d.]+\s+\d+ )\S+\.cc:\d+\]"
)
_TF_NAME_RE = re.compile(rb"(?i)tensorflow|TF_ENABLE_ONEDNN_OPTS")
_TRACEBACK_BYTES = TRACEBACK_START.encode()
LOG_SUFFIX = ".log"
PARALLEL_MIN_FILES = 200
MAX_JOBS = 8

COLUMNS = [
    "path",
    "status",
    "images_per_sec",
    "model",
    "batch_size",
    "batch_size_global",
    "devices",
    "tf_version",
    "dataset",
    "mode",
    "num_batches",
    "num_epochs",
    "data_format",
    "optimizer",
    "variable_update",
    "steps_seen",
    "last_step",
    "last_step_images_per_sec",
    "failure_kind",
    "failure_message",
    "task_role",
    "ranks",
]
# What tf_cnn_benchmarks prints when a task of a distributed job serves instead of reporting (benchmark_cnn.py):
# a parameter server, or a worker under distributed_all_reduce. Such a log has no total by design.
_SERVING = ((b"Running parameter server ", "ps"), (b"Starting worker ", "worker (serving)"))
_SERVING_HEAD = 1 << 20
TABLE_COLUMNS = [
    ("path", "log"),
    ("status", "status"),
    ("images_per_sec", "images/sec"),
    ("model", "model"),
    ("batch_size", "batch"),
    ("tf_version", "TF"),
    ("failure_message", "failure"),
]


def _warn(message: str) -> None:
    sys.stderr.write("tfcnnwrap parse: warning: %s\n" % message)


def looks_like_log(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        _warn("cannot read %s (%s); skipped" % (path, exc.strerror or exc))
        return False
    return sniff(head)


def sniff(head: bytes) -> bool:
    """Whether the first bytes of a file look like a tf_cnn_benchmarks log (see the module docstring)."""
    head = strip_ansi_bytes(head)  # a coloured log is still a log
    if any(marker in head for marker in SNIFF_MARKERS):
        return True
    if _TRACEBACK_BYTES in head or _CPP_LOG_LINE_RE.search(head) is not None:
        return _TF_NAME_RE.search(head) is not None
    return False


def _walk(directory: str) -> Iterator[str]:
    """Log files under ``directory``: by name, a folder's files before its sub-folders."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        _warn("cannot read the directory %s (%s); its logs are skipped" % (directory, exc.strerror or exc))
        return
    subdirs = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith("."):
                    subdirs.append(entry.path)
            elif entry.is_file():  # a regular file, or a link to one
                if entry.name.lower().endswith(LOG_SUFFIX) or looks_like_log(entry.path):
                    yield entry.path
            elif entry.name.lower().endswith(LOG_SUFFIX):
                _warn("%s is not a regular file (a FIFO, device or socket); skipped" % entry.path)
        except OSError as exc:
            _warn("cannot read %s (%s); skipped" % (entry.path, exc.strerror or exc))
    for sub in subdirs:
        yield from _walk(sub)


def _check_path(path: str) -> bool:
    """UsageError unless ``path`` is a directory or a regular file (a FIFO or /dev/zero would never end)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(
            "no such file or directory: %s (give tf_cnn_benchmarks log files or directories of them)" % path
        ) from None
    except OSError as exc:
        raise UsageError("cannot read %s (%s)" % (path, exc.strerror or exc)) from None
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise UsageError(
            "not a regular file: %s (a FIFO, device or socket is never read; give log files or directories)" % path
        )
    return stat.S_ISDIR(mode)


def find_logs(paths: Sequence[str]) -> Iterator[str]:
    """Every log file the user meant, in order; raises UsageError naming a path that does not exist."""
    is_dir = [_check_path(path) for path in paths]
    for path, directory in zip(paths, is_dir):
        if directory:
            yield from _walk(path)
        elif not path.lower().endswith(LOG_SUFFIX) and not looks_like_log(path):
            raise UsageError(
                "not a tf_cnn_benchmarks log: %s (its first %d KiB hold no TensorFlow header, step, total or "
                "error of one; a file named *.log is read whatever it holds)" % (path, SNIFF_BYTES // 1024)
            )
        else:
            yield path


def _plain(value: Optional[float]) -> Optional[float]:
    """NaN and infinity (a log may say `total images/sec: nan`) are no JSON numbers: None."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def record(path: str) -> Dict[str, Any]:
    """The parse record of one log file."""
    try:
        parsed = parse_file(path, failures="without_total")
    except OSError as exc:
        return dict(
            {c: None for c in COLUMNS},
            path=path,
            status="no_result",
            steps_seen=0,
            failure_kind="error",
            ranks=1,
            failure_message="cannot read the file: %s" % (exc.strerror or exc),
        )
    last = parsed.last_step
    status = classify(parsed, None)
    return {
        "path": path,
        "status": status,
        "images_per_sec": parsed.total_images_per_sec if status == "ok" else None,
        "model": parsed.model,
        "batch_size": parsed.batch_size,
        "batch_size_global": parsed.batch_size_global,
        "devices": parsed.devices,
        "tf_version": parsed.tf_version,
        "dataset": parsed.dataset,
        "mode": parsed.mode,
        "num_batches": parsed.num_batches,
        "num_epochs": _plain(parsed.num_epochs),
        "data_format": parsed.data_format,
        "optimizer": parsed.optimizer,
        "variable_update": parsed.variable_update,
        "steps_seen": parsed.steps_seen,
        "last_step": last.step if last else None,
        "last_step_images_per_sec": _plain(last.images_per_sec) if last else None,
        "failure_kind": parsed.failure_kind,
        "failure_message": parsed.failure_message,
        "task_role": serving_role(path) if status == "no_result" and parsed.failure_kind is None else None,
        "ranks": parsed.ranks,
    }


def serving_role(path: str) -> Optional[str]:
    """ "ps" or "worker (serving)" when the log is a distributed task that serves rather than reports (its
    missing total is no failure), else None; read only for logs without a total, from their first MiB."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SERVING_HEAD)
    except OSError:
        return None
    for marker, role in _SERVING:
        if marker in head:
            return role
    return None


def failed(row: Dict[str, Any]) -> bool:
    """A log that holds a failure (the exit code's 1): not ok, and not a serving task of a distributed job."""
    return row["status"] != "ok" and not row.get("task_role")


def _jobs(count: int) -> int:
    setting = os.environ.get("TFCNNWRAP_PARSE_JOBS", "").strip()
    if setting:
        try:
            return max(1, int(setting))
        except ValueError:
            raise UsageError("TFCNNWRAP_PARSE_JOBS must be a whole number, not %r" % setting) from None
    if count < PARALLEL_MIN_FILES or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_JOBS))


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the pool


def records(files: List[str]) -> Iterator[Dict[str, Any]]:
    """The records of ``files``, in order; several worker processes read them when there are many."""
    jobs = min(_jobs(len(files)), len(files))
    if jobs <= 1:
        for path in files:
            yield record(path)
        return

    with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_init) as pool:
        yield from pool.imap(record, files, chunksize=max(8, len(files) // (jobs * 16)))


@dataclass(frozen=True)
class ParseArgs:
    """What `parse` was asked (cli/parse.py builds it)."""

    paths: Tuple[str, ...]  # log files or directories, at least one
    format: Literal["table", "markdown", "csv", "json", "jsonl"]


def cmd_parse(args: ParseArgs) -> int:
    fmt = args.format
    files = list(find_logs(args.paths))
    if not files:
        raise UsageError(
            "no tf_cnn_benchmarks logs found in %s (looked for *.log files and files that look like logs)"
            % ", ".join(args.paths)
        )
    all_ok = True
    if fmt == "jsonl":
        # streamed: a line per log as soon as it is read, through the one strict JSON writer

        write = sys.stdout.write
        for row in records(files):
            all_ok = all_ok and not failed(row)
            write(dumps(row) + "\n")
    else:
        rows = list(records(files))
        all_ok = not any(failed(row) for row in rows)
        if fmt == "markdown":
            emit(rows, fmt, columns=TABLE_COLUMNS, title="tf_cnn_benchmarks logs")
        elif fmt == "table":
            ok = sum(1 for r in rows if r["status"] == "ok")
            serving = sum(1 for r in rows if r.get("task_role"))
            caption = "%d log(s), %d ok, %d failed" % (len(rows), ok, len(rows) - ok - serving)
            if serving:
                caption += ", %d serving task(s) of distributed jobs (no total by design)" % serving
            emit(rows, "table", columns=TABLE_COLUMNS, title="tf_cnn_benchmarks logs", caption=caption)
        else:
            emit(rows, fmt, columns=COLUMNS, kind="parse")
    return EXIT_OK if all_ok else EXIT_RUNS_FAILED
