"""The one JSON writer of tfcnnwrap, the envelope of every tabular `--format json`, and CSV's cells.

Every JSON text tfcnnwrap prints or writes (sweep.json, runs.jsonl, cluster plans, `--format json`) goes
through ``dumps``: strict (``allow_nan=False``), NaN and infinity written as null, numpy scalars as Python
ones, floats rounded once here to ``DIGITS`` significant digits so float arithmetic's noise
(176.92999999999998) never reaches a file while every measured digit does. CSV cells go through ``plain``
too, so both carry the same numbers.
Imports nothing of tfcnnwrap: every stage may use it.
"""

import json
import math
from typing import Any, Mapping, Optional, Sequence

FORMAT = 2  # the envelope's version: docs/results-format.md, "JSON output"
KINDS = ("report", "compare", "ab", "rank", "references", "library", "parse", "list", "doctor", "config")
DIGITS = 15  # significant digits: float noise sits at the 16th and 17th; a p-value of 9.8e-05 keeps its own


def plain(value: Any) -> Any:
    """``value`` as plain, strict JSON values: tuples become lists, numpy scalars Python ones, non-finite
    floats None, floats rounded to ``DIGITS`` significant digits, strings with undecodable bytes (surrogate
    escapes from a non-UTF-8 command line) get U+FFFD in their place."""
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return value
    if hasattr(value, "item") and not isinstance(value, (bytes, bool, int, float)):
        try:
            value = value.item()  # a numpy scalar
        except (TypeError, ValueError):
            pass
    if isinstance(value, float):
        return float("%.*g" % (DIGITS, value)) + 0.0 if math.isfinite(value) else None
    return value


def dumps(value: Any, **options: Any) -> str:
    """``value`` as strict JSON text (``json.dumps`` options such as ``indent`` or ``sort_keys`` pass on)."""
    return json.dumps(plain(value), allow_nan=False, ensure_ascii=False, **options)


def envelope(kind: str, rows: Sequence[Mapping], conditions: Optional[Mapping] = None, **extra: Any) -> dict:
    """``{"format": 2, "kind": KIND, "conditions": {...}, "rows": [...]}`` plus what the kind adds (A/B's
    ``baseline`` and ``candidates``, compare's ``geomean``)."""
    if kind not in KINDS:
        raise ValueError("unknown JSON kind %r" % kind)
    out = {"format": FORMAT, "kind": kind, "conditions": dict(conditions or {}), "rows": list(rows)}
    out.update(extra)
    return out


def csv_cell(value: Any) -> str:
    """A CSV cell holding what the JSON holds: ``true``/``false`` (JSON's spelling, not Python's), the same
    rounded numbers, lists and objects as their JSON text, nothing for null."""
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    return str(value)
