"""How a ranking reads: where the measured GPU lands ("your GeForce RTX 2070: between the GeForce RTX 2080
and the Radeon RX Vega 64"), the ranked table with how many configurations each comparison rests on, and
the notes on method; JSON rows ``gpu, geomean_pct, configurations`` best first (rank computes)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, TextIO, Tuple

from tfcnnwrap import render
from tfcnnwrap.present.comparetext import conditions_line, count_unit, emit_text, low_trust_notes
from tfcnnwrap.present.linknote import link_cost_json, link_cost_lines, link_notes
from tfcnnwrap.run.procs import format_command

if TYPE_CHECKING:
    from tfcnnwrap.results.comparison import Ranking, RankRow

# what a ranking scores under each --per (placement sentence, title, notes and the plot say it so)
RANKED_BY = {None: "images/sec", "watt": "images/sec per watt", "dollar": "images/sec per dollar"}
JSON_KEYS = [
    "gpu",
    "geomean_pct",
    "configurations",
    "measured",
    "gpu_id",
    "rank",
    "of",
    "relative_pct",
    "speed_geomean_pct",
    "per",
    "power_w",
    "price_usd",
    "why_not_ranked",
    "conditions_differ",
]


_SHORT = {"precision": "prec", "num_gpus": "GPUs", "batch_size": "batch", "variable_update": "update"}


def _pct(value: float) -> str:
    return "%.1f%%" % value


def placement(ranking: Any) -> str:  # Any: a rank.Ranking; its measured row always has a rank, unseen by mypy
    """One sentence: the measured GPU's place, its neighbours and the figures that put it there."""
    me = ranking.measured_row
    faster, level, slower = ranking.neighbours()
    total = sum(1 for r in ranking.rows if r.rank is not None)
    if total == 1 and len(ranking.rows) == 1:
        return (
            "Your %s: no reference GPU published a figure under this sweep's conditions at its batch sizes;"
            " `compare --against NAME` shows each one's closest figures (marked \u2020).%s"
            % (me.gpu, _nearest_hint(ranking, total))
        )
    text = "Your %s: %d of %d by %s" % (me.gpu, me.rank, total, RANKED_BY[ranking.per])

    def near(row: Any) -> str:  # Any: a RankRow with a geomean_pct (neighbours() gives only those)
        return "the %s (%s, on %d configuration%s)" % (
            row.gpu,
            _pct(row.geomean_pct),
            row.configurations,
            "" if row.configurations == 1 else "s",
        )

    if faster and slower:
        text += ", between %s and %s" % (near(faster), near(slower))
    elif faster:
        text += ", below %s" % near(faster)
    elif slower:
        text += ", above %s" % near(slower)
    if level:
        text += "; level with %s" % ", ".join(near(r) for r in level)
    return text + "." + _nearest_hint(ranking, total)


NEAREST_BELOW = 3  # fewer ranked than this (yours included): ranking by the closest figures says more


def _nearest_hint(ranking: Any, total: int) -> str:  # Any: a rank.Ranking
    """A sentence offering --nearest when too few references share the sweep's exact conditions."""
    if ranking.nearest or total >= NEAREST_BELOW:
        return ""
    command = format_command(["python", "-m", "tfcnnwrap", "compare", str(ranking.sweep.path), "--rank", "--nearest"])
    return " Too few to place it; every reference ranked by its closest figures: `%s`" % command


def rank_json(ranking: Ranking) -> List[Dict[str, Any]]:
    return [row.to_dict(ranking.per, ranking.of) for row in ranking.rows]


def _figure(row: RankRow, per: Optional[str]) -> Optional[str]:
    if per == "watt":
        return "" if row.power_w is None else "%.0f W" % row.power_w
    if per == "dollar":
        return "" if row.price_usd is None else "$%.0f" % row.price_usd
    return None


def rank_text_rows(
    ranking: Ranking, short: bool = False
) -> Tuple[List[Dict[str, Optional[str]]], List[Tuple[str, str]]]:
    """Rows and columns of the ranked table; short headers for a terminal (the title says what is
    scored, a note why a GPU is not ranked)."""
    rows = []
    for row in ranking.rows:
        # "-", not "": at narrow widths the rank titles a stacked row, and an empty title is a blank line
        rows.append(
            {
                "rank": "-" if row.rank is None else str(row.rank),
                "gpu": ("> %s (yours)" % row.gpu)
                if row.measured
                else (
                    "%s \u2020%s" % (row.gpu, ",".join(_SHORT.get(d, d) for d in row.differs))
                    if row.differs
                    else row.gpu
                ),
                "geomean": _pct(row.geomean_pct) if row.geomean_pct is not None else "n/a",
                "relative": "" if row.relative_pct is None else "%.2fx" % (row.relative_pct / 100.0),
                "configs": "%d of %d" % (row.configurations, ranking.of),
                "speed": "" if row.speed_geomean_pct is None else _pct(row.speed_geomean_pct),
                "figure": _figure(row, ranking.per),
            }
        )
    what = {None: "", "watt": " per W", "dollar": " per $"}[ranking.per]
    # under --per each ratio's header says per what: a per-dollar ratio is not a speed ratio
    columns = [
        ("rank", "#"),
        ("gpu", "GPU"),
        ("geomean", ("yours/it" if short else "measured / reference") + what),
        ("relative", ("it/yours" if short else "reference / measured") + what),
    ]
    if ranking.per:
        columns += [
            ("speed", "img/s yours/it" if short else "images/sec measured / reference"),
            ("figure", "power" if ranking.per == "watt" else "price"),
        ]
    columns.append(("configs", "configs" if short else "configurations"))
    return rows, columns


def rank_notes(ranking: Any) -> List[str]:  # Any: a rank.Ranking; --per sets the power/price its notes show
    sweep = ranking.sweep
    notes = [placement(ranking)]
    notes.append(
        "Score: the geometric mean over the configurations a reference shares with this sweep of "
        "measured / reference %s, x 100 (under 100%%: the reference does better); best first. This "
        "sweep: %s%s."
        % (
            RANKED_BY[ranking.per],
            conditions_line(sweep.conditions(), unit=count_unit(sweep)),
            ", every reference figure at the sweep's batch size"
            if not (ranking.strict or ranking.nearest)
            else ", --strict: also its TensorFlow X.Y"
            if ranking.strict
            else ", --nearest: each reference's closest figures",
        )
    )
    if ranking.per == "watt":
        notes.append(
            "Per watt: (measured / W) / (reference / W_ref); W = %s, W_ref = the reference's board "
            "power (a rating: a GPU drawing less than its rating looks better than it is)."
            % (
                "--watts %g" % ranking.measured_power_w
                if ranking.power_source == "--watts"
                else "the sweep's mean power draw from telemetry, per configuration"
            )
        )
    elif ranking.per == "dollar":
        notes.append(
            "Per dollar: (measured / price) / (reference / launch price); price = --price $%.0f."
            % ranking.measured_price_usd
        )
    unranked = [r.gpu for r in ranking.rows if r.rank is None]
    if unranked:
        notes.append(
            "Not ranked (%s not published): %s."
            % ("board power" if ranking.per == "watt" else "launch price", ", ".join(unranked))
        )
    if any(r.differs for r in ranking.rows):
        notes.append(
            "\u2020 --nearest: no figure under exactly these conditions; ranked by its closest ones (same "
            "precision, then GPU count, batch size, variable update, synthetic data, higher trust, newer "
            "TF), which differ in what the mark names."
        )
    notes += low_trust_notes(ranking.low_trust_left_out)
    notes += link_notes(sweep) + link_cost_lines(ranking.link_cost)
    if ranking.without_conditions:
        notes.append(
            "%d other reference GPU%s published no figure under these conditions at these batch sizes "
            "(see `compare --against NAME` for their closest figures, marked \u2020)."
            % (ranking.without_conditions, "" if ranking.without_conditions == 1 else "s")
        )
    return notes


def render_rank(ranking: Ranking, fmt: str, stream: Optional[TextIO] = None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        sweep = ranking.sweep
        render.emit(
            rank_json(ranking),
            fmt,
            stream=stream,
            kind="rank",
            conditions=dict(sweep.conditions(), gpu=sweep.gpu_label()),
            extra={
                "sweep": str(sweep.path),
                "per": ranking.per,
                "of": ranking.of,
                "strict": ranking.strict,
                "link_cost": link_cost_json(ranking.link_cost),
            },
        )
        return
    if fmt == "csv":
        render.emit(rank_json(ranking), "csv", columns=JSON_KEYS, stream=stream)
        return
    title = "%s ranked among published references by %s" % (ranking.sweep.label(), RANKED_BY[ranking.per])
    rows, columns = rank_text_rows(ranking, short=(fmt != "markdown"))
    notes = rank_notes(ranking)
    emit_text(rows, columns, title, notes[1:], fmt, stream, before=notes[:1])
