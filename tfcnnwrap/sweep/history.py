"""The `list` verb: past sweeps under a results directory, newest first (issue 22.5).

One row per sweep: its directory, when it started, the GPU, TensorFlow, the conditions, the models, ok and
failed runs, and whether it is complete, running (its writer lock is held: the pid that holds it) or was
interrupted, with the command that resumes it. A directory
that holds a sweep.json this tfcnnwrap cannot read is listed as unreadable with why, never skipped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Union

from tfcnnwrap import render, settings
from tfcnnwrap.errors import TfcnnwrapError, UsageError
from tfcnnwrap.render import Col
from tfcnnwrap.results.plan import Plan
from tfcnnwrap.results.records import Status
from tfcnnwrap.results.store import load_sweep, running_pid, sweeps_by_age
from tfcnnwrap.results.sweepconditions import conditions
from tfcnnwrap.sweep.schedule import Schedule

TABLE_COLUMNS = [
    Col("name", "sweep"),
    Col("date", "date (UTC)", 3),
    Col("gpu", "GPU", 1),
    Col("tensorflow_version", "TF", 4),
    Col("conditions_text", "conditions", 5, True),
    Col("models_text", "models", 6, True),
    Col("runs_ok", "ok", 2),
    Col("runs_failed", "failed", 2),
    Col("state", "state"),
]
JSON_KEYS = [
    "sweep",
    "created_at",
    "gpu",
    "tensorflow_version",
    "conditions",
    "models",
    "runs_ok",
    "runs_failed",
    "complete",
    "state",
    "resume",
    "error",
    "running_pid",
]
# CSV: the conditions and models as the table words them (a cell holds text, not an object)
CSV_TEXT = {"conditions": "conditions_text", "models": "models_text"}


def _conditions_text(cond: Dict[str, Any]) -> str:
    counts = cond.get("num_gpus") or [1]
    unit = "tower" if cond.get("device") == "cpu" else "GPU"  # on the CPU tf_cnn_benchmarks counts towers
    gpus = "%s %s%s" % (", ".join(str(c) for c in counts), unit, "" if counts == [1] else "s")
    parts = [
        cond.get("precision"),
        "XLA" if cond.get("xla") else None,
        gpus,
        cond.get("variable_update"),
        "%s data" % str(cond["data"]).replace(",", " and ") if cond.get("data") else None,
    ]
    return " · ".join(p for p in parts if p)


def sweep_row(path: Union[Path, str]) -> Dict[str, Any]:
    """The list's row of the sweep at ``path`` (a dict; ``state`` "unreadable: why" when it cannot be read)."""
    try:
        _, meta, runs = load_sweep(path)
        plan = Plan.from_dict(meta.plan)
    except TfcnnwrapError as exc:
        return {
            "sweep": str(path),
            "name": Path(path).name,
            "state": "unreadable",
            "error": exc.message,
            "complete": None,
        }
    owed = Schedule(plan, runs, False).planned()
    cond = conditions(meta)
    cond.pop("commit", None)
    models: List[Dict[str, Any]] = [{"model": model, "batch_size": batch_size} for model, batch_size in plan.models]
    failed = sum(1 for r in runs if not r.ok and r.status != Status.INTERRUPTED)
    pid = running_pid(path)
    # a running sweep owes runs it is doing now: a --resume of it would be refused (its lock is held)
    resume = "python -m tfcnnwrap sweep --resume %s" % path if owed and pid is None else None
    state = (
        ("running (pid %d)" % pid if pid else "running")
        if pid is not None
        else "complete"
        if not owed
        else "interrupted (%d to run)" % len(owed)
    )
    date = (meta.created_at or "")[:16].replace("T", " ")
    return {
        "sweep": str(path),
        "name": Path(path).name,
        "created_at": meta.created_at,
        "date": date,
        "gpu": "CPU" if meta.on_cpu else (meta.gpu_names() or None),
        "tensorflow_version": meta.tensorflow_version or None,
        "conditions": cond,
        "conditions_text": _conditions_text(cond),
        "models": models,
        "models_text": ", ".join("%s (%d)" % (m["model"], m["batch_size"]) for m in models),
        "runs_ok": sum(1 for r in runs if r.ok),
        "runs_failed": failed,
        "complete": not owed,
        "state": state,
        "running_pid": pid or None,
        "resume": resume,
    }


def list_rows(root: Path) -> List[Dict[str, Any]]:
    """Every sweep directly under ``root``, newest first."""
    return [sweep_row(path) for path in reversed(sweeps_by_age(Path(root)))]


@dataclass(frozen=True)
class ListArgs:
    """What `list` was asked (cli/list.py builds it)."""

    results_dir: Optional[str]  # None: $TFCNNWRAP_RESULTS, else the config file's, else results/
    format: Literal["table", "markdown", "csv", "json"]


def cmd_list(args: ListArgs) -> int:
    root = Path(args.results_dir) if args.results_dir else settings.results_dir()
    if not root.is_dir():
        raise UsageError(
            "%s is not a directory: give the directory your sweeps are in (default results/, "
            "or $TFCNNWRAP_RESULTS)" % root
        )
    rows, fmt = list_rows(root), args.format
    if fmt == "json":
        render.emit(
            [{k: row.get(k) for k in JSON_KEYS} for row in rows],
            fmt,
            kind="list",
            conditions={},
            extra={"results_dir": str(root)},
        )
        return 0
    if fmt == "csv":
        render.emit([{k: row.get(CSV_TEXT.get(k, k)) for k in JSON_KEYS} for row in rows], fmt, columns=JSON_KEYS)
        return 0
    title = "%d sweep%s under %s, newest first" % (len(rows), "" if len(rows) == 1 else "s", root)
    notes = ["%s: %s" % (r["name"], r["error"]) for r in rows if r.get("error")]
    resumes = [(r["name"], r["resume"]) for r in rows if r.get("resume")]
    notes += ["resume %s: %s" % pair for pair in resumes]
    render.emit(
        rows,
        fmt,
        columns=TABLE_COLUMNS,
        title=title,
        caption=render.paragraphs(notes) if fmt == "markdown" and notes else None,
    )
    if fmt == "table":
        render.print_notes(notes[: len(notes) - len(resumes)])
        for name, command in resumes:
            render.print_line("resume %s:" % name)
            # a command to paste: one line, never broken inside a path (a narrow terminal folds it)
            render.print_line("  " + command, whole=True)
    return 0
