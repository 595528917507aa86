"""The scaling view of a sweep of several GPU counts (`--num-gpus 1,2,4`): per model, images/sec at each count,
the ideal (one GPU's figure times the count), the speed-up over one GPU and the efficiency (speed-up / count).

Weak scaling, as tf_cnn_benchmarks measures it: the batch size is per device, so N GPUs process N times the
images per step and perfect scaling is a speed-up of N. The figures themselves are aggregate.add_scaling's;
this module only lays them out (report's table and Markdown; JSON and CSV carry the row fields).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from tfcnnwrap import render
from tfcnnwrap.render import Col, make_table, md_text, to_markdown

if TYPE_CHECKING:
    from rich.console import Console

    from tfcnnwrap.fit import FittedTable
    from tfcnnwrap.results.records import SummaryRow

COLUMNS = [
    ("model", "model"),
    ("batch_size", "batch/GPU"),
    ("num_gpus", "GPUs"),
    ("mean", "img/s"),
    ("ideal", "ideal img/s"),
    ("speedup", "speed-up"),
    ("efficiency_pct", "efficiency"),
]
TITLE = "Scaling (batch size per GPU): speed-up over 1 GPU"
CAPTION = "ideal = 1-GPU img/s x GPUs; efficiency = speed-up / GPUs"
MISSING = "-"
# What a count counts: GPUs, or on the CPU tf_cnn_benchmarks' towers on /cpu:0, /cpu:1, ... (report's title)
TOWER = "tower"


def _counting(text: str, unit: str) -> str:
    """A header, the title or the caption with its GPUs counted as ``unit`` ("GPU" or "tower")."""
    return text.replace("GPU", unit)


def is_scaling(rows: Sequence[SummaryRow]) -> bool:
    """True for the rows of a sweep of several GPU counts (aggregate.add_scaling marked them)."""
    return any(getattr(row, "scaling", False) for row in rows)


def view_rows(rows: Sequence[SummaryRow]) -> List[Dict[str, Any]]:
    """One dict per configuration of a scaling sweep (SummaryRows in plan order), with ``ideal`` added."""
    one_gpu = {(r.model, r.batch_size, r.host, r.data): r.mean for r in rows if r.num_gpus == 1}
    out = []
    for row in rows:
        base = one_gpu.get((row.model, row.batch_size, row.host, row.data))
        ideal = base * row.num_gpus if base is not None and row.num_gpus else None
        out.append(
            {
                "model": row.model,
                "batch_size": row.batch_size,
                "num_gpus": row.num_gpus,
                "host": row.host,
                "data": row.data,
                "mean": row.mean,
                "ideal": ideal,
                "speedup": row.speedup,
                "efficiency_pct": row.efficiency_pct,
            }
        )
    return out


def _cells(row: Mapping[str, Any]) -> List[str]:
    """The row's texts for people: figures with two decimals, speed-up as 1.90x, efficiency as 95.0%."""

    def fixed(value: Optional[float], fmt: str) -> str:
        return MISSING if value is None else fmt % value

    return [
        row["model"]
        + (" %s data" % row["data"] if row.get("data") else "")
        + ("@" + row["host"] if row["host"] else ""),
        str(row["batch_size"]),
        MISSING if row["num_gpus"] is None else str(row["num_gpus"]),
        fixed(row["mean"], "%.2f"),
        fixed(row["ideal"], "%.2f"),
        fixed(row["speedup"], "%.2fx"),
        fixed(row["efficiency_pct"], "%.1f%%"),
    ]


# On a narrow terminal the ideal figure and the batch size step aside first (render's fitting rule).
PRIORITY = {"model": 0, "batch_size": 2, "num_gpus": 0, "mean": 0, "ideal": 3, "speedup": 0, "efficiency_pct": 1}


def scaling_table(rows: Sequence[SummaryRow], unit: str = "GPU") -> FittedTable:
    """The scaling view as a table that fits the terminal (render.make_table), texts from ``_cells``."""
    cols = [Col(key, _counting(header, unit), PRIORITY[key]) for key, header in COLUMNS]
    texts = [dict(zip((key for key, _ in COLUMNS), _cells(row))) for row in view_rows(rows)]
    return make_table(texts, cols, title=_counting(TITLE, unit), caption=_counting(CAPTION, unit))


def scaling_markdown(rows: Sequence[SummaryRow], unit: str = "GPU") -> str:
    texts = [dict(zip((key for key, _ in COLUMNS), _cells(row))) for row in view_rows(rows)]
    cols = [Col(key, _counting(header, unit)) for key, header in COLUMNS]
    table = to_markdown(texts, cols)
    return "### %s\n\n%s\n%s\n" % (md_text(_counting(TITLE, unit)), table, md_text(_counting(CAPTION, unit)))


def emit_scaling(rows: Sequence[SummaryRow], fmt: str, console: Optional[Console] = None, unit: str = "GPU") -> None:
    """The scaling view after report's table (``console``) or Markdown (stdout), when the sweep has several
    GPU counts (``unit``: what a count counts); nothing otherwise, and nothing for JSON and CSV (their rows
    carry speedup, efficiency_pct)."""
    if not is_scaling(rows):
        return
    if fmt == "table":
        (console or render.console()).print(scaling_table(rows, unit))
    elif fmt == "markdown":
        sys.stdout.write("\n" + scaling_markdown(rows, unit))
