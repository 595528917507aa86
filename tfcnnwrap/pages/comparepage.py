"""`compare --format html`: the page of each view of compare (against references, sweep against sweeps,
`--rank`), from the same result its other formats render (compare.against.compute; the notes are
comparetext's, abtext's and ranktext's). Drawn by the templates through reportpage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from tfcnnwrap.compare.against import CompareArgs, compute, finish
from tfcnnwrap.pages import svgcharts
from tfcnnwrap.pages.reportpage import Table, cell, check_out, config_label, emit, num, numcell, pct, render
from tfcnnwrap.present.abtext import ab_notes, environment_lines
from tfcnnwrap.present.comparetext import against_notes, cell_text, geomean_text
from tfcnnwrap.present.comparetext import pct as comparetext_pct
from tfcnnwrap.present.ranktext import rank_notes
from tfcnnwrap.present.report import title_parts
from tfcnnwrap.results.comparison import AgainstReferences, Ranking

if TYPE_CHECKING:
    from tfcnnwrap.results.comparesweep import Sweep
    from tfcnnwrap.results.comparison import ABResult, Comparison, SweepComparison


def sweep_parts(sweep: Sweep) -> List[str]:
    """The conditions a sweep's figures were measured under, as the report's title names them (GPU, precision,
    XLA, GPU count, variable update, data, TensorFlow, branch)."""
    return title_parts(sweep.path, sweep.meta)[1:]


def _ratio_kind(ratio: float) -> str:
    return "up" if ratio >= 100.0 else "down"


def against_table(comparison: AgainstReferences) -> Table:
    """The seed's table: each reference cell is ``203.99 (86.7%)`` as every format writes it (comparetext);
    on a phone each model becomes a card of labelled cells (the template's ``cards`` layout)."""
    several = comparison.sweep.several_counts
    headers = ["model", "batch"] + (["GPUs"] if several else []) + ["measured img/s", "ok runs"]
    headers += [typed for typed, _ in comparison.columns]
    table = Table(
        "Measured images/sec against each reference: its published images/sec (measured / it)", headers, cards=True
    )
    for row in comparison.rows:
        cells = [cell(row.model), numcell(row.batch_size)] + ([numcell(row.num_gpus)] if several else [])
        cells += [numcell(row.measured), numcell(row.runs_ok)]
        for c in row.cells:
            if not c.found:
                cells.append(cell("n/a", "muted"))
                continue
            cells.append(cell(cell_text(c), "n", title="published as %s" % c.published))
        table.rows.append(cells)
        table.row_classes.append("")
    geo = [cell("geomean")] + [cell("", "blank") for _ in range(len(headers) - 1 - len(comparison.geomean))]
    geo += [cell(geomean_text(g), "n") for g in comparison.geomean]
    table.rows.append(geo)
    table.row_classes.append("measured")
    return table


def against_charts(comparison: AgainstReferences) -> List:
    """Per model, measured / reference for each reference (100 %: level with it); then the geometric means."""
    charts = []
    for row in comparison.rows:
        bars = [
            svgcharts.Bar(
                c.name + ("" if c.comparable else " \u2020"),
                c.ratio_pct,
                _one_decimal(c.ratio_pct),
                kind=_ratio_kind(c.ratio_pct) if c.comparable else "flat",
            )
            for c in row.cells
            if c.ratio_pct is not None
        ]
        if bars:
            desc = "; ".join("%s: measured is %s of it" % (b.label, b.text) for b in bars)
            charts.append(
                svgcharts.bar_chart(
                    "%s: measured / reference, %%" % config_label(row),
                    bars,
                    axis="%",
                    rule=(100.0, "100 %, level with the reference"),
                    desc=desc,
                )
            )
    bars = [
        svgcharts.Bar(g.name, g.ratio_pct, _one_decimal(g.ratio_pct), kind=_ratio_kind(g.ratio_pct))
        for g in comparison.geomean
        if g.ratio_pct is not None
    ]
    if bars:
        charts.insert(
            0,
            svgcharts.bar_chart(
                "Geometric mean over the models: measured / reference, %",
                bars,
                axis="%",
                rule=(100.0, "100 %, level with the reference"),
                desc="; ".join("%s: %s" % (b.label, b.text) for b in bars),
            ),
        )
    return charts


def against_page(comparison: AgainstReferences) -> str:
    sweep = comparison.sweep
    return render(
        "compare.html.j2",
        title="%s against published references" % sweep.label(),
        heading="%s against published references" % (sweep.gpu_label() or sweep.name),
        subtitle=str(sweep.path),
        parts=sweep_parts(sweep),
        before=[],
        sections=[
            {"heading": "", "table": against_table(comparison), "charts": against_charts(comparison), "lines": []}
        ],
        notes=against_notes(comparison),
    )


# -- sweep against sweeps ------------------------------------------------------------------------------------


def _change_kind(row: Any) -> str:  # Any: a ChangeRow whose change_pct is set (its callers' filter, unseen by mypy)
    if row.significant is None or not row.significant:
        return "flat"
    return "up" if row.change_pct > 0 else "down"


def ab_table(comparison: SweepComparison) -> Table:
    kinds = any(r.data for r in comparison.rows)  # sweeps of both data kinds: each row's kind, as the text table
    table = Table(
        "Candidate against baseline, images/sec (change = candidate / baseline - 1)",
        ["model", "batch", "GPUs"]
        + (["data"] if kinds else [])
        + [
            "baseline",
            "candidate",
            "change",
            "95% CI low",
            "95% CI high",
            "significant",
            "p-value",
            "ok runs (b)",
            "ok runs (c)",
            "std (b)",
            "std (c)",
        ],
    )
    for r in comparison.rows:
        kind = _change_kind(r) if r.change_pct is not None else ""
        table.rows.append(
            [
                cell(r.model),
                numcell(r.batch_size),
                numcell(r.num_gpus),
            ]
            + ([cell(r.data or "")] if kinds else [])
            + [
                numcell(r.baseline),
                numcell(r.candidate),
                cell(pct(r.change_pct, True), "n " + kind),
                cell(pct(r.change_ci95_low, True), "n"),
                cell(pct(r.change_ci95_high, True), "n"),
                cell("n/a" if r.significant is None else num(r.significant)),
                numcell(r.p_value),
                numcell(r.baseline_runs),
                numcell(r.candidate_runs),
                numcell(r.baseline_std),
                numcell(r.candidate_std),
            ]
        )
        table.row_classes.append("")
    geo = [cell("geomean"), cell("")] + [cell("") for _ in range(4 if kinds else 3)]
    geo += [
        cell(pct(comparison.geomean_change_pct, True), "n"),
        cell("over %s pair%s" % (num(comparison.pairs), "" if comparison.pairs == 1 else "s")),
    ]
    table.rows.append(geo + [cell("") for _ in range(7)])
    table.row_classes.append("measured")
    return table


def ab_chart(comparison: SweepComparison) -> Optional[svgcharts.BarChart]:
    bars = [
        svgcharts.Bar(
            config_label(r),
            r.change_pct,
            pct(r.change_pct, True),
            r.change_ci95_low,
            r.change_ci95_high,
            _change_kind(r),
        )
        for r in comparison.rows
        if r.change_pct is not None
    ]
    if not bars:
        return None
    desc = "; ".join("%s: %s (95%% CI %s to %s)" % (b.label, b.text, pct(b.low, True), pct(b.high, True)) for b in bars)
    return svgcharts.bar_chart(
        "Change per configuration with its 95% interval (green: significantly faster, "
        "red: significantly slower, grey: not significant)",
        bars,
        axis="change, %",
        rule=(0.0, "0 %, no change"),
        desc=desc,
    )


def ab_page(result: ABResult, nav: Optional[List[Dict[str, str]]] = None) -> str:
    sections = []
    for comparison in result.comparisons:
        lines = environment_lines(comparison)
        sections.append(
            {
                "heading": "%s against %s" % (comparison.candidate.label(), comparison.baseline.label()),
                "lines": lines,
                "table": ab_table(comparison),
                "charts": [c for c in (ab_chart(comparison),) if c],
            }
        )
    base = result.baseline
    label = base.label() if hasattr(base, "label") else str(base)
    return render(
        "compare.html.j2",
        title="A/B: candidates against %s" % label,
        nav=nav or [],
        heading="A/B: %d candidate%s against baseline %s" % (len(sections), "" if len(sections) == 1 else "s", label),
        subtitle="",
        parts=sweep_parts(base) if hasattr(base, "meta") else [],
        before=[],
        sections=sections,
        notes=ab_notes(result.comparisons[0]) if result.comparisons else [],
    )


# -- rank --------------------------------------------------------------------------------------------------


def rank_tables(ranking: Ranking) -> Tuple[Table, Table]:
    """(main, more): one ratio convention on the page, the terminal's and the contract's ``geomean_pct``: yours
    as a share of each GPU (the seed's ``(86.7%)``: measured / reference), as the sentence above it and the chart
    say it; the inverse and the images/sec-only ratio of the JSON behind a disclosure."""
    table = Table(
        "Every reference GPU with figures under the sweep's conditions, best first; yours / it: your "
        "images/sec as a share of its (100 %: level)",
        ["rank", "GPU", "yours / it", "configurations", "of", "power, W", "price, USD"],
        cards=True,
    )
    more = Table(
        "The same ranking, every ratio of the JSON",
        ["GPU", "measured / reference, %", "images/sec measured / reference, %", "it / yours, %"],
        cards=True,
    )
    for r in ranking.rows:
        name = r.gpu + (" (yours)" if r.measured else "")
        table.rows.append(
            [
                cell("\u2013" if r.rank is None else num(r.rank)),
                cell(name),
                cell(_one_decimal(r.geomean_pct), "n"),
                numcell(r.configurations),
                numcell(ranking.of),
                numcell(r.power_w),
                numcell(r.price_usd),
            ]
        )
        table.row_classes.append("measured" if r.measured else "")
        more.rows.append([cell(name), numcell(r.geomean_pct), numcell(r.speed_geomean_pct), numcell(r.relative_pct)])
        more.row_classes.append("measured" if r.measured else "")
    return table, more


def _one_decimal(ratio: Optional[float]) -> str:
    return "\u2013" if ratio is None else comparetext_pct(ratio)


def rank_chart(ranking: Ranking) -> Optional[svgcharts.BarChart]:
    bars = [
        svgcharts.Bar(
            r.gpu + (" (yours)" if r.measured else ""),
            r.geomean_pct,
            _one_decimal(r.geomean_pct),
            kind="measured" if r.measured else _ratio_kind(r.geomean_pct),
        )
        for r in ranking.rows
        if r.geomean_pct is not None
    ]
    if len(bars) < 2:  # one bar says no more than the table
        return None
    return svgcharts.bar_chart(
        "Yours as a share of each GPU, best GPU first (100 %: level with yours; under it, that GPU is faster)",
        bars,
        axis="%",
        rule=(100.0, "100 %, level"),
        desc="; ".join("%s: %s" % (b.label, b.text) for b in bars),
    )


def rank_page(ranking: Ranking) -> str:
    notes = rank_notes(ranking)
    sweep = ranking.sweep
    main, more = rank_tables(ranking)
    return render(
        "compare.html.j2",
        title="%s ranked among published references" % sweep.label(),
        heading="%s ranked among published references" % (sweep.gpu_label() or sweep.name),
        subtitle=str(sweep.path),
        parts=sweep_parts(sweep),
        before=notes[:1],
        sections=[
            {
                "heading": "",
                "lines": [],
                "table": main,
                "more": more,
                "charts": [c for c in (rank_chart(ranking),) if c],
            }
        ],
        notes=notes[1:],
    )


def page(result: Comparison) -> str:
    """The page of any view of compare's result."""
    if isinstance(result, Ranking):
        return rank_page(result)
    if isinstance(result, AgainstReferences):
        return against_page(result)
    return ab_page(result)


def cmd_compare_html(args: CompareArgs) -> int:
    """`compare --format html [--out FILE]`: compare's result (compare.against.compute) drawn as its page."""
    out = check_out(args.out)  # before any work
    result = compute(args)
    emit(page(result), out)
    return finish(result, args)
