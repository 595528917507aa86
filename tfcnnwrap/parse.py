"""The ``parse`` verb: one record per tf_cnn_benchmarks log file, ours or anyone's.

Which files: every path given as a file is parsed whatever its name. Inside a directory (recursively,
hidden directories skipped, symlinked directories not followed), a file is taken when its name ends in
``.log``, or when its first 64 KiB look like tf_cnn_benchmarks output (they hold ``TensorFlow:  ``,
``images/sec:`` or ``Flags parsing error``) -- so ``slurm-123.out`` or ``run.txt`` logs are found and a
README, a CSV or a sweep's ``runs.jsonl`` are not.

Exit: 0 every log is ok; 1 some log holds a failure (any status but ok); 2 a path does not exist or
no log was found, reported before anything is printed.

Logs are read by a few worker processes when there are many of them (Linux only, where forking is cheap
and safe; TFCNNWRAP_PARSE_JOBS=N sets how many, 1 for none). Records come out in the same order either way.
"""

import math
import os
import sys

from tfcnnwrap.errors import EXIT_OK, EXIT_RUNS_FAILED, UsageError
from tfcnnwrap.logparse import classify, parse_file

SNIFF_BYTES = 64 * 1024
SNIFF_MARKERS = (b"TensorFlow:  ", b"images/sec:", b"Flags parsing error")
LOG_SUFFIX = ".log"
PARALLEL_MIN_FILES = 200
MAX_JOBS = 8

COLUMNS = [
    "path", "status", "images_per_sec", "model", "batch_size", "batch_size_global", "devices", "tf_version",
    "dataset", "mode", "num_batches", "num_epochs", "data_format", "optimizer", "variable_update",
    "steps_seen", "last_step", "last_step_images_per_sec", "failure_kind", "failure_message",
]
TABLE_COLUMNS = [
    ("path", "log"), ("status", "status"), ("images_per_sec", "images/sec"), ("model", "model"),
    ("batch_size", "batch"), ("tf_version", "TF"), ("failure_message", "failure"),
]


def looks_like_log(path):
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return any(marker in head for marker in SNIFF_MARKERS)


def _walk(directory):
    """Log files under ``directory``: by name, a folder's files before its sub-folders."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    subdirs = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith("."):
                    subdirs.append(entry.path)
            elif entry.is_file():
                if entry.name.lower().endswith(LOG_SUFFIX) or looks_like_log(entry.path):
                    yield entry.path
        except OSError:
            continue
    for sub in subdirs:
        yield from _walk(sub)


def find_logs(paths):
    """Every log file the user meant, in order; raises UsageError naming a path that does not exist."""
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(
                "no such file or directory: %s (give tf_cnn_benchmarks log files or directories of them)" % path
            )
    for path in paths:
        if os.path.isdir(path):
            yield from _walk(path)
        else:
            yield path


def _plain(value):
    """NaN and infinity (a log may say `total images/sec: nan`) are no JSON numbers: None."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def record(path):
    """The parse record of one log file."""
    try:
        parsed = parse_file(path, failures="without_total")
    except OSError as exc:
        return dict(
            {c: None for c in COLUMNS}, path=path, status="no_result", steps_seen=0, failure_kind="error",
            failure_message="cannot read the file: %s" % (exc.strerror or exc),
        )
    last = parsed.last_step
    return {
        "path": path,
        "status": classify(parsed, None),
        "images_per_sec": _plain(parsed.total_images_per_sec),
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
    }


def _jobs(count):
    setting = os.environ.get("TFCNNWRAP_PARSE_JOBS", "").strip()
    if setting:
        try:
            return max(1, int(setting))
        except ValueError:
            raise UsageError("TFCNNWRAP_PARSE_JOBS must be a whole number, not %r" % setting)
    if count < PARALLEL_MIN_FILES or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_JOBS))


def _worker_init():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends the pool


def records(files):
    """The records of ``files``, in order; several worker processes read them when there are many."""
    jobs = min(_jobs(len(files)), len(files))
    if jobs <= 1:
        for path in files:
            yield record(path)
        return
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_init) as pool:
        yield from pool.imap(record, files, chunksize=max(8, len(files) // (jobs * 16)))


def cmd_parse(args):
    fmt = getattr(args, "format", None) or "table"
    files = list(find_logs(args.paths))
    if not files:
        raise UsageError(
            "no tf_cnn_benchmarks logs found in %s (looked for *.log files and files that look like logs)"
            % ", ".join(args.paths)
        )
    all_ok = True
    if fmt == "jsonl":
        # streamed: a line per log as soon as it is read (records hold plain JSON values only, so this
        # is what render.emit(rows, "jsonl") writes, without its per-value conversion)
        import json

        write = sys.stdout.write
        for row in records(files):
            all_ok = all_ok and row["status"] == "ok"
            write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        from tfcnnwrap.render import emit

        rows = list(records(files))
        all_ok = all(row["status"] == "ok" for row in rows)
        if fmt == "table":
            failed = sum(1 for r in rows if r["status"] != "ok")
            caption = "%d log(s), %d ok, %d failed" % (len(rows), len(rows) - failed, failed)
            emit(rows, "table", columns=TABLE_COLUMNS, title="tf_cnn_benchmarks logs", caption=caption)
        else:
            emit(rows, fmt, columns=COLUMNS)
    return EXIT_OK if all_ok else EXIT_RUNS_FAILED
