"""summary.json: the sweep's own aggregation of its runs, kept so `report` and `compare` need not import pandas.

The sweep writes it beside summary.csv after every run (`write_summary_json`), keyed by a hash of the runs it
summarised. A reader (`summarize_sweep`) takes its rows only when that key is the hash of the runs it just read
from runs.jsonl, and only when they agree with those runs (configurations, run counts, min, max, median, mean
and std, recomputed here without pandas); else,
and for a sweep from before summary.json, it aggregates again with pandas. The rows are those of
``aggregate.config_rows``, every field of each SummaryRow, written only when they read back identical (a float
past jsontext's 15 digits would not), so a report prints the same bytes either way.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from tfcnnwrap import __version__
from tfcnnwrap.boundedread import read_own_file
from tfcnnwrap.jsontext import dumps
from tfcnnwrap.results.aggregate import config_rows, order_rows
from tfcnnwrap.results.records import SummaryRow
from tfcnnwrap.results.store import SUMMARY_JSON

if TYPE_CHECKING:
    from tfcnnwrap.results.records import RunRecord
    from tfcnnwrap.results.store import SweepDir

# Raise it whenever aggregate.config_rows computes a field differently: older files then read as stale.
SUMMARY_VERSION = 3
MAX_BYTES = 32 * 1024 * 1024  # ~10 KB a configuration: far more configurations than any plan holds

_INTS = ("batch_size", "runs_ok", "runs_failed", "num_gpus", "throttled_runs", "drifting_runs")
_TEXTS = ("model", "failures", "host", "fleet_flag", "pcie_link", "data")
_BOOLS = ("scaling", "ci95_wide", "trend_significant")
_FIELDS = tuple(f.name for f in fields(SummaryRow))


def runs_key(runs: List[RunRecord]) -> str:
    """A hash of every field of ``runs`` (floats exact), of this summary's version and of tfcnnwrap's (a release
    that computes a figure otherwise never reads an older one's): equal keys, equal input to ``config_rows``."""
    text = json.dumps([SUMMARY_VERSION, __version__, [r.to_dict() for r in runs]], default=str, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _row_dict(row: SummaryRow) -> Dict[str, Any]:
    return {name: getattr(row, name) for name in _FIELDS}


def _value_ok(name: str, value: Any) -> bool:
    if value is None:
        return name not in ("model", "batch_size", "runs_ok", "runs_failed", "failures", "scaling", "pcie_link")
    if name in _INTS:
        return type(value) is int
    if name in _TEXTS:
        return type(value) is str
    if name in _BOOLS:
        return type(value) is bool
    if name == "throttle_reasons":
        return type(value) is dict and all(type(k) is str and type(v) is int for k, v in value.items())
    if name == "outlier_runs":
        return type(value) is list and all(type(v) is int for v in value)
    if name == "flags":
        return type(value) is list and all(type(v) is str for v in value)
    return type(value) is float


def row_from_dict(data: Any) -> Optional[SummaryRow]:
    """The SummaryRow of one stored object; None unless it holds every field with its exact type."""
    if type(data) is not dict or set(data) != set(_FIELDS):
        return None
    if not all(_value_ok(name, data[name]) for name in _FIELDS):
        return None
    values = dict(data, outlier_runs=tuple(data["outlier_runs"]), flags=tuple(data["flags"]))
    return SummaryRow(**values)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout (1 is not 1.0 here: a table prints them differently)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def summary_json_text(runs: List[RunRecord], rows: List[SummaryRow]) -> str:
    """summary.json's text: ``config_rows(runs)`` under the runs' key; rows null when they would not read
    back identical (a reader then aggregates again)."""
    text = dumps(
        {
            "format": SUMMARY_VERSION,
            "kind": "summary",
            "runs_key": runs_key(runs),
            "rows": [_row_dict(row) for row in rows],
        }
    )
    stored = json.loads(text)["rows"]
    back = [row_from_dict(data) for data in stored]
    if len(back) != len(rows) or not all(
        b is not None and _same(_row_dict(b), _row_dict(r)) for b, r in zip(back, rows)
    ):
        text = dumps({"format": SUMMARY_VERSION, "kind": "summary", "runs_key": runs_key(runs), "rows": None})
    return text + "\n"


def write_summary_json(sweep: SweepDir, runs: List[RunRecord], rows: List[SummaryRow]) -> None:
    """Keep ``rows`` (``config_rows(runs)``, in that order) for the readers: after runs.jsonl's append, so a
    sweep cut off between the two leaves a key that no longer matches."""
    sweep.write_summary_json(summary_json_text(runs, rows))


def _close(stored: Optional[float], computed: Optional[float]) -> bool:
    """Equal within a millionth: pandas' float sums and these differ in the last digits, a forged figure more."""
    if stored is None or computed is None:
        return stored is computed
    return abs(stored - computed) <= 1e-6 * max(1.0, abs(computed))


def _stats(values: List[float]) -> Tuple[Optional[float], Optional[float]]:
    """(mean, std) of ``values``, scaled before summing so that figures near the float limit do not overflow."""
    if not values:
        return None, None
    count = len(values)
    mean = math.fsum(v / count for v in values)
    if count < 2:
        return mean, None
    return mean, math.sqrt(math.fsum(((v - mean) / count) * (v - mean) for v in values) * count / (count - 1))


def _agrees(rows: List[SummaryRow], runs: List[RunRecord]) -> bool:
    """The rows are one per configuration of ``runs``, in first-seen order, with their run counts, min, max,
    median, mean and std: a summary.json written for other runs, or edited, is not taken."""
    by_config: Dict[Tuple[Any, ...], List[RunRecord]] = {}
    for run in runs:
        by_config.setdefault(run.config, []).append(run)
    if [(r.model, r.batch_size, r.num_gpus, r.host, r.data) for r in rows] != list(by_config):
        return False
    for row, members in zip(rows, by_config.values()):
        values = [r.value for r in members if r.value is not None]
        if (row.runs_ok, row.runs_ok + row.runs_failed) != (len(values), len(members)):
            return False
        mean, std = _stats(values)
        median = statistics.median(values) if values else None
        if not all(
            _close(a, b)
            for a, b in (
                (row.min, min(values, default=None)),
                (row.max, max(values, default=None)),
                (row.median, median),
                (row.mean, mean),
                (row.std, std),
            )
        ):
            return False
    return True


def cached_rows(sweep: SweepDir, runs: List[RunRecord]) -> Optional[List[SummaryRow]]:
    """summary.json's rows when they are ``config_rows(runs)``; None when missing, stale, broken or hostile."""
    raw = read_own_file(sweep.path / SUMMARY_JSON, MAX_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if type(data) is not dict or data.get("format") != SUMMARY_VERSION or type(data.get("rows")) is not list:
        return None
    if data.get("runs_key") != runs_key(runs):
        return None
    rows = [row_from_dict(item) for item in data["rows"]]
    if any(row is None for row in rows):
        return None
    checked = [row for row in rows if row is not None]
    return checked if _agrees(checked, runs) else None


def summarize_sweep(
    sweep: SweepDir, runs: List[RunRecord], order: Optional[List[Tuple[str, int]]] = None
) -> List[SummaryRow]:
    """``aggregate.summarize(runs, order)``: from summary.json when it is current, else with pandas."""
    if not runs:
        return []
    rows = cached_rows(sweep, runs)
    return order_rows(config_rows(runs) if rows is None else rows, order)
