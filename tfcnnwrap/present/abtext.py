"""How sweep against sweep reads: what differs between the sweeps' environments (a short list above each
table), the change with its 95% interval and significance per configuration, and the JSON, CSV, Markdown
and table forms; one row set per candidate (compare.ab computes)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from tfcnnwrap import render
from tfcnnwrap.present.comparetext import GEOMEAN, emit_text

if TYPE_CHECKING:
    from tfcnnwrap.results.comparison import ABResult, SweepComparison
    from tfcnnwrap.results.records import ChangeRow

AB_COLUMNS = [
    "model",
    "batch_size",
    "baseline",
    "candidate",
    "change_pct",
    "significant",
    "p_value",
    "change_ci95_low",
    "change_ci95_high",
    "num_gpus",
    "baseline_runs",
    "candidate_runs",
    "baseline_std",
    "candidate_std",
]


def _shown(value: Union[str, List[str]]) -> str:
    return "(not recorded)" if value in (None, "") else str(value)


def environment_lines(comparison: SweepComparison) -> List[str]:
    """The short list above the table: each difference as ``driver: 410.79 -> 418.56``."""
    if not comparison.environment:
        return [
            "Same environment: GPU, driver, TensorFlow, CUDA, cuDNN, branch, commit, host, precision, XLA and "
            "plan match (as recorded)."
        ]
    lines = ["What differs (baseline -> candidate):"]
    lines += ["  %s: %s -> %s" % (what, _shown(b), _shown(c)) for what, b, c in comparison.environment]
    return lines


def _geomean_row(comparison: Any) -> Dict[str, Any]:  # Any: a SweepComparison (typed, the row's values would be too)
    row = dict(
        {k: None for k in AB_COLUMNS}, model=GEOMEAN, change_pct=comparison.geomean_change_pct, pairs=comparison.pairs
    )
    row["environment_differences"] = [{"what": w, "baseline": b, "candidate": c} for w, b, c in comparison.environment]
    if comparison.candidate_dir is not None:
        row["candidate_dir"] = comparison.candidate_dir
    return row


def ab_json(result: ABResult) -> List[Dict[str, Any]]:
    """Rows for CSV: each candidate's configurations, then its geometric mean as a row (a flat file has no
    other place for it)."""
    out = []
    for comparison in result.comparisons:
        out += [row.to_dict() for row in comparison.rows] + [_geomean_row(comparison)]
    return out


def ab_envelope(result: ABResult) -> Dict[str, Any]:
    """`--format json`: the configurations' rows, and beside them the baseline's and candidates' directories,
    each candidate's geometric mean and what differs in its environment."""
    rows = [row.to_dict() for comparison in result.comparisons for row in comparison.rows]
    geomean, differences = [], []
    for comparison in result.comparisons:
        where = str(comparison.candidate.path)
        geomean.append(
            dict(
                {"candidate_dir": where, "change_pct": comparison.geomean_change_pct, "pairs": comparison.pairs},
                **_geomean_fields(comparison),
            )
        )
        differences += [
            {"candidate_dir": where, "what": w, "baseline": b, "candidate": c} for w, b, c in comparison.environment
        ]
    baseline = result.comparisons[0].baseline if result.comparisons else None
    return dict(
        rows=rows,
        conditions=baseline.conditions() if baseline is not None else {},
        extra={
            "baseline": str(baseline.path) if baseline is not None else None,
            "candidates": [str(c.candidate.path) for c in result.comparisons],
            "geomean": geomean,
            "environment_differences": differences,
        },
    )


def _p_text(p: Optional[float]) -> str:
    if p is None:
        return ""
    return "<0.001" if p < 0.001 else "%.3f" % p


def _geomean_fields(comparison: Any) -> Dict[str, Any]:  # Any: a SweepComparison
    """The geometric mean's interval, significance and verdict, for its JSON object."""
    g = comparison.geomean
    return {
        "change_ci95_low": g.low_pct if g else None,
        "change_ci95_high": g.high_pct if g else None,
        "significant": g.significant if g else None,
        "verdict": verdict(comparison),
    }


def ci_text(row: Any) -> str:  # Any: a ChangeRow; its CI has both bounds or neither, unseen by mypy
    if row.change_ci95_low is None:
        # 2 runs a side and still no interval: the baseline's mean is not clearly above zero
        return "unbounded" if row.significant is not None else ""
    return "%+.1f%% to %+.1f%%" % (row.change_ci95_low, row.change_ci95_high)


def _times(ratio: float, spread: Optional[float]) -> str:
    return "%.2f ± %.2f" % (ratio, spread) if spread is not None else "%.2f" % ratio


def verdict(comparison: Any) -> Optional[str]:  # Any: a SweepComparison
    """hyperfine's one line for a candidate: "CANDIDATE ran 1.52 ± 0.03 times faster than BASELINE", from
    the geometric mean over its configurations, with its interval; None when no configuration compares."""
    g = comparison.geomean
    if g is None:
        return None
    cand, base, k = comparison.candidate.label(), comparison.baseline.label(), comparison.pairs
    over = "geomean of %d configuration%s" % (k, "" if k == 1 else "s")
    if g.low_pct is None:
        return "%s ran %s times as fast as %s (%s; too few runs to tell a change from noise)" % (
            cand,
            _times(g.ratio, None),
            base,
            over,
        )
    interval = "%s, 95%% CI %+.1f%% to %+.1f%%" % (over, g.low_pct, g.high_pct or 0.0)  # both set or neither
    if not g.significant:
        return "no clear change: %s ran %s times as fast as %s (%s includes 0%%)" % (
            cand,
            _times(g.ratio, g.spread),
            base,
            interval,
        )
    if g.ratio >= 1.0:
        return "%s ran %s times faster than %s (%s)" % (cand, _times(g.ratio, g.spread), base, interval)
    slower = 1.0 / g.ratio
    return "%s ran %s times slower than %s (%s)" % (
        cand,
        _times(slower, None if g.spread is None else g.spread * slower / g.ratio),
        base,
        interval,
    )


def _ab_text_row(row: ChangeRow) -> Dict[str, str]:
    runs = "%s/%s" % (
        "-" if row.baseline_runs is None else row.baseline_runs,
        "-" if row.candidate_runs is None else row.candidate_runs,
    )
    return {
        "model": row.model,
        "batch_size": str(row.batch_size),
        "num_gpus": str(row.num_gpus),
        "data": row.data or "",
        "baseline": "" if row.baseline is None else "%.2f" % row.baseline,
        "candidate": "" if row.candidate is None else "%.2f" % row.candidate,
        "change": "" if row.change_pct is None else "%+.1f%%" % row.change_pct,
        "ci": ci_text(row),
        "significant": "n/a" if row.significant is None else ("yes" if row.significant else "no"),
        "p": _p_text(row.p_value),
        "runs": runs,
    }


def ab_text_rows(
    comparison: SweepComparison, short: bool = False
) -> Tuple[List[Dict[str, str]], List[Any]]:  # columns: (key, header) or (key, header, priority)
    rows = [_ab_text_row(row) for row in comparison.rows]
    change = "" if comparison.geomean_change_pct is None else "%+.1f%%" % comparison.geomean_change_pct
    g = comparison.geomean
    rows.append(
        {
            "model": GEOMEAN,
            "change": change,
            "ci": "" if g is None or g.low_pct is None else "%+.1f%% to %+.1f%%" % (g.low_pct, g.high_pct or 0.0),
            "significant": "" if g is None or g.significant is None else "yes" if g.significant else "no",
        }
    )
    several = len({r.num_gpus for r in comparison.rows}) > 1
    columns = [("model", "model"), ("batch_size", "batch" if short else "batch size")]
    columns += [("num_gpus", "GPUs")] if several else []
    columns += [("data", "data")] if any(r.data for r in comparison.rows) else []  # sweeps of both data kinds
    columns += [("baseline", "baseline"), ("candidate", "candidate"), ("change", "change")]
    if not short:
        return rows, columns + [
            ("ci", "change, 95% CI"),
            ("significant", "significant"),
            ("p", "p-value"),
            ("runs", "ok runs (b/c)"),
        ]
    # on a terminal the table steps aside rather than stacking: what the CI already says goes first (the
    # runs, then p, then significance: a CI that excludes 0% is significant), each named under the table
    return rows, columns + [("ci", "95% CI"), ("significant", "signif", 1), ("p", "p", 2), ("runs", "runs", 3)]


def ab_notes(comparison: SweepComparison) -> List[str]:
    """What the columns mean (what differs between the sweeps, their plans included, is listed above)."""
    notes = [
        "change = candidate / baseline - 1. Significant: Welch's t-test (unequal variances) at 95%; "
        "95% CI: Fieller's interval of the ratio of the means (Welch-Satterthwaite degrees of freedom), "
        "so it excludes 0% exactly when the change is significant, and never goes below -100% (a change "
        "beyond that is impossible); unbounded where the baseline's mean is not clearly above zero; n/a under "
        "2 ok runs a side. geomean: the geometric mean of the ratios, its 95% CI on the log scale over every "
        "configuration's standard errors; the verdict's ± is hyperfine's spread of the ratio."
    ]
    return notes


def render_ab(result: ABResult, fmt: str, stream: Optional[TextIO] = None) -> None:
    stream = stream or sys.stdout
    if fmt == "json":
        render.emit(fmt=fmt, stream=stream, kind="ab", **ab_envelope(result))
        return
    if fmt == "csv":
        columns = AB_COLUMNS + ["pairs"] + (["candidate_dir"] if result.several else [])
        # sweeps of both data kinds: each row's kind, after the others (as report's CSV adds it)
        columns += ["data"] if any(r.data for c in result.comparisons for r in c.rows) else []
        render.emit(ab_json(result), "csv", columns=columns, stream=stream)
        return
    for comparison in result.comparisons:
        title = "candidate %s against baseline %s, images/sec" % (
            comparison.candidate.label(),
            comparison.baseline.label(),
        )
        rows, columns = ab_text_rows(comparison, short=(fmt != "markdown"))
        line = verdict(comparison)
        emit_text(
            rows,
            columns,
            title,
            ab_notes(comparison),
            fmt,
            stream,
            before=(["Verdict: " + line] if line else []) + environment_lines(comparison),
        )


def _config_name(row: ChangeRow, gpus: str) -> str:
    """``resnet50 (batch 64, 2 GPUs, real data)``: the data kind named in sweeps of both kinds."""
    return "%s (batch %s%s%s)" % (row.model, row.batch_size, gpus, ", %s data" % row.data if row.data else "")


def _config_text(row: Any, several_counts: bool) -> str:  # Any: a regressed ChangeRow: its figures are set
    gpus = ", %d GPU%s" % (row.num_gpus, "" if row.num_gpus == 1 else "s") if several_counts else ""
    ci = " (95%% CI %s)" % ci_text(row) if row.change_ci95_low is not None else ""
    return "%s %+.1f%%%s" % (_config_name(row, gpus), row.change_pct, ci)


def unmeasured_text(found: list, several: bool) -> str:
    """One line naming every configuration whose candidate has no ok run (the gate's other reason to fail)."""
    counts = {r.num_gpus for _, r in found}
    parts = []
    for comparison, row in found:
        gpus = ", %d GPUs" % row.num_gpus if len(counts) > 1 or (row.num_gpus or 1) > 1 else ""
        where = " in %s" % comparison.candidate_dir if several else ""
        parts.append(_config_name(row, gpus) + where)
    return (
        "%d configuration%s with no ok candidate run to measure (--fail-on-regression fails what it cannot "
        "compare): %s" % (len(found), "" if len(found) == 1 else "s", "; ".join(parts))
    )


def regression_text(found: Sequence[Tuple[SweepComparison, ChangeRow]], pct: float, several: bool) -> str:
    """One line naming every regressed configuration (and its candidate when there are several)."""
    counts = {r.num_gpus for _, r in found}
    parts = []
    for comparison, row in found:
        where = " in %s" % comparison.candidate_dir if several else ""
        parts.append(_config_text(row, len(counts) > 1 or (row.num_gpus or 1) > 1) + where)
    return "%d configuration%s significantly slower than the baseline by more than %g%% (--fail-on-regression): %s" % (
        len(found),
        "" if len(found) == 1 else "s",
        pct,
        "; ".join(parts),
    )
