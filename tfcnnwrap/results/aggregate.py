"""Statistics over a sweep's runs with pandas: one SummaryRow per configuration, over ok runs. A site of
thousands of small sweeps (a library's bundles) takes them without pandas' fixed cost per group-by:
``summarize_plain`` gives the same rows, and falls back to pandas where it could not promise that."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from tfcnnwrap.render import to_csv
from tfcnnwrap.results import quality, ratio
from tfcnnwrap.results.fleetreport import fleet_columns, with_fleet
from tfcnnwrap.results.records import DATA_COLUMNS, SCALING_COLUMNS, SUMMARY_COLUMNS, SummaryRow
from tfcnnwrap.results.tdist import t975

if TYPE_CHECKING:
    from pandas import DataFrame, Series

    from tfcnnwrap.results.quality import Verdict
    from tfcnnwrap.results.records import RunRecord

__all__ = [
    "SUMMARY_COLUMNS",
    "summarize",
    "config_rows",
    "order_rows",
    "summary_csv_text",
    "ci95_pct",
    "add_scaling",
    "summary_columns",
    "summarize_plain",
]

_FRAME_COLUMNS = ["model", "batch_size", "num_gpus", "host", "data", "status", "images_per_sec"]


def _failures_text(statuses: List[str]) -> str:
    counts: dict = {}
    for status in statuses:
        if status != "ok":
            counts[str(status)] = counts.get(str(status), 0) + 1
    return " ".join("%s:%d" % (k, counts[k]) for k in sorted(counts))


def runs_frame(runs: List[RunRecord]) -> DataFrame:
    """The runs as a DataFrame with the columns statistics need (images/sec of ok runs only)."""
    import pandas as pd  # pandas takes ~0.3 s to import: only when runs are summarised

    frame = pd.DataFrame(
        [[r.model, r.batch_size, r.num_gpus, r.host, r.data, str(r.status), r.value] for r in runs],
        columns=_FRAME_COLUMNS,
    )
    frame["images_per_sec"] = pd.to_numeric(frame["images_per_sec"], errors="coerce")
    return frame


def ci95_pct(std: Optional[float], count: int, mean: Optional[float]) -> Optional[float]:
    """The 95% confidence interval's half-width (Student t) as % of the mean; None under 2 runs."""
    if std is None or mean is None or count < 2 or not mean:
        return None
    half_width = t975(count - 1) * std / math.sqrt(count)
    return _num(half_width / mean * 100.0)


def _telemetry(runs: List[RunRecord]) -> Tuple[Optional[int], Optional[float]]:
    """(throttled_runs, max_temp_c) over the ok runs (those the statistics use) that recorded GPU telemetry;
    None where none did."""
    runs = [r for r in runs if r.value is not None]
    flags = [r.throttled for r in runs if r.throttled is not None]
    temps = [r.max_temp_c for r in runs if r.max_temp_c is not None]
    return (sum(flags) if flags else None), (max(temps) if temps else None)


def _exact_mean_std(runs: List[RunRecord]) -> Tuple[Optional[float], Optional[float]]:
    """(mean, std) of the ok runs' figures in exact arithmetic (statistics' fractions): for figures near the
    float limit, whose float sum overflows (three totals of 1.7e308 have a mean of 1.7e308, not inf)."""
    values = [r.value for r in runs if r.value is not None and math.isfinite(r.value)]
    if not values:
        return None, None
    import statistics  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    return _num(statistics.mean(values)), (_num(statistics.stdev(values)) if len(values) > 1 else None)


def _row(
    config: Tuple[str, int, Optional[int], Optional[str], Optional[str]],
    stats: Union[Series, Dict[str, float]],  # pandas' figures of the group, or plain_stats'
    size: int,
    statuses: List[str],
    runs: List[RunRecord],
) -> SummaryRow:
    model, batch_size, num_gpus, host, data = config
    mean, std = _num(stats["mean"]), _num(stats["std"])
    count = int(stats["count"])
    if count and (mean is None or (count > 1 and std is None)):
        mean, std = _exact_mean_std(runs)
    throttled, max_temp = _telemetry(runs)
    ci95 = ci95_pct(std, count, mean)
    row = SummaryRow(
        model=model,
        batch_size=int(batch_size),
        runs_ok=count,
        runs_failed=int(size - count),
        mean=mean,
        std=std,
        cv_pct=_num(std / mean * 100.0) if std is not None and mean else None,
        min=_num(stats["min"]),
        max=_num(stats["max"]),
        median=_num(stats["median"]),
        failures=_failures_text(statuses),
        num_gpus=num_gpus,
        ci95_pct=ci95,
        throttled_runs=throttled,
        max_temp_c=max_temp,
        host=host,
        data=data,
        **thermal_columns(runs),
        **steadiness_columns(runs, ci95),
    )
    values = [r.value for r in sorted(runs, key=lambda r: r.run) if r.value is not None]
    row = replace(row, trend_pct=_num(quality.trend_pct(values)), trend_significant=quality.trend_significant(values))
    return replace(row, flags=tuple(verdict(row).flags))


def verdict(row: SummaryRow) -> Verdict:
    """The quality verdict (flags and what to do) of a SummaryRow."""
    return quality.Verdict(
        outlier_runs=tuple(row.outlier_runs),
        ci95_pct=row.ci95_pct,
        trend_pct=row.trend_pct,
        trend_significant=row.trend_significant,
        throttled_runs=row.throttled_runs,
        runs_ok=row.runs_ok,
        throttle_reasons=tuple(sorted(row.throttle_reasons.items())),
        max_temp_c=row.max_temp_c,
    )


# -- issue 14: are the numbers to be trusted? ------------------------------------------------------------

CI95_WIDE_PCT = quality.CI95_WIDE_PCT
OUTLIER_MADS = 3.0
# Of 3 runs the MAD is the smaller distance to the median, so the other run "lies" 3 MADs out at the
# slightest spread (185.9, 187.2, 186.1): too few to tell an outlier; a wide CI95 says it instead.
OUTLIER_MIN_RUNS = 5
MAD_TO_SIGMA = 1.4826  # the MAD of normal data times this estimates its standard deviation


def thermal_columns(runs: List[RunRecord]) -> Dict[str, Any]:
    """SummaryRow fields from the ok runs' GPU telemetry: mean power and SM clock (means of the runs'
    means), each throttle reason with the number of runs it was active in, the PCIe links seen."""
    gpus = [r.gpu for r in runs if r.value is not None and r.gpu is not None]
    powers = [g.mean_power_w for g in gpus if g.mean_power_w is not None]
    clocks = [g.mean_sm_clock_mhz for g in gpus if g.mean_sm_clock_mhz is not None]
    reasons: dict = {}
    links: list = []
    for g in gpus:
        for reason in g.throttle_reasons:
            reasons[reason] = reasons.get(reason, 0) + 1
        if g.pcie_link and g.pcie_link not in links:
            links.append(g.pcie_link)
    return {
        "mean_power_w": round(sum(powers) / len(powers), 2) if powers else None,
        "mean_sm_clock_mhz": round(sum(clocks) / len(clocks), 1) if clocks else None,
        "throttle_reasons": {k: reasons[k] for k in sorted(reasons)},
        "pcie_link": "; ".join(links),
    }


def outlier_runs(runs: Iterable[Any]) -> List[Any]:  # Any: RunRecords; the body's ok filter on value is unseen by mypy
    """Run numbers of the ok runs outside median +- 3 MAD (scaled to a standard deviation) of their
    configuration; none when the MAD is 0 or there are fewer than ``OUTLIER_MIN_RUNS`` ok runs."""
    ok = [r for r in runs if r.value is not None]
    if len(ok) < OUTLIER_MIN_RUNS:
        return []
    values = [r.value for r in ok]
    import statistics  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values) * MAD_TO_SIGMA
    if not mad:
        return []
    return sorted(r.run for r in ok if abs(r.value - median) > OUTLIER_MADS * mad)


def steadiness_columns(runs: List[RunRecord], ci95: Optional[float]) -> Dict[str, Any]:
    """SummaryRow fields on steadiness: drifting ok runs (None when no run recorded its step rates), the
    outlier runs (flagged, never dropped), and whether the 95% CI is wider than +-2 %."""
    ok = [r for r in runs if r.value is not None]
    judged = [r.drifting for r in ok if r.drifting is not None]
    return {
        "drifting_runs": sum(judged) if judged else None,
        "outlier_runs": tuple(outlier_runs(runs)),
        "ci95_wide": None if ci95 is None else ci95 > CI95_WIDE_PCT,
    }


def summarize(runs: List[RunRecord], order: Optional[List[Tuple[str, int]]] = None) -> List[SummaryRow]:
    """One SummaryRow per (model, batch_size, num_gpus, host), statistics over ok runs only.

    ``runs``: RunRecords. Rows follow ``order`` (the plan's (model, batch_size)
    pairs), then any other configuration in first-seen order; std needs two ok runs.
    """
    if not runs:
        return []
    return order_rows(config_rows(runs), order)


def config_rows(runs: List[RunRecord]) -> List[SummaryRow]:
    """One SummaryRow per configuration in the order the runs first name it, before ``order_rows``: what
    pandas computes, and what summary.json keeps for report and compare (results/summarycache.py)."""
    # pandas drops NaN group keys: a record without num_gpus, host or data groups under a stand-in.
    frame = runs_frame(runs).fillna({"num_gpus": -1, "host": "", "data": ""})
    grouped = frame.groupby(["model", "batch_size", "num_gpus", "host", "data"], sort=False)

    with warnings.catch_warnings():
        # figures near the float limit (a corrupted runs.jsonl) overflow to inf here, and _row computes
        # those exactly; numpy's RuntimeWarning about it would only print a path into pandas
        warnings.simplefilter("ignore", RuntimeWarning)
        stats = grouped["images_per_sec"].agg(["count", "mean", "std", "min", "max", "median"])
    statuses = grouped["status"].agg(list)
    sizes = grouped.size()
    by_config: dict = {}
    for r in runs:
        by_config.setdefault(r.config, []).append(r)
    rows = []
    for config, members in by_config.items():
        key = (config[0], config[1], -1 if config[2] is None else config[2], config[3] or "", config[4] or "")
        rows.append(_row(config, stats.loc[key], sizes.loc[key], statuses.loc[key], members))
    return rows


def summarize_plain(runs: List[RunRecord], order: Optional[List[Tuple[str, int]]] = None) -> List[SummaryRow]:
    """``summarize`` without pandas for a small sweep (a bundle: pandas' fixed cost per group-by was a quarter of
    a site's time per bundle): the same rows, every figure equal after the 9-decimal rounding each gets. pandas
    does it (imported) where that is not certain: a mean near a rounding edge, figures near the float limit."""
    if not runs:
        return []
    groups: dict = {}
    for r in runs:  # pandas' group keys: a missing num_gpus or host groups under the stand-in config_rows gives it
        key = (r.model, r.batch_size, -1 if r.num_gpus is None else r.num_gpus, r.host or "", r.data or "")
        groups.setdefault(key, []).append(r)
    by_config: dict = {}
    for r in runs:
        by_config.setdefault(r.config, []).append(r)
    rows = []
    for config, members in by_config.items():
        group = groups[(config[0], config[1], -1 if config[2] is None else config[2], config[3] or "", config[4] or "")]
        stats = plain_stats([r.value for r in group])
        if stats is None:
            return summarize(runs, order)
        rows.append(_row(config, stats, len(group), [str(r.status) for r in group], members))
    return order_rows(rows, order)


_PLAIN_LIMIT = 1e15  # figures beyond this (no GPU's images/sec) are left to pandas and _exact_mean_std


def plain_stats(values: List[Optional[float]]) -> Optional[Dict[str, float]]:
    """count, mean, std, min, max and median of the figures that are not None, as pandas' group-by gives them
    once rounded to STAT_DECIMALS: std by its algorithm (Welford's, in run order), the mean exactly rounded; None
    where the mean lies so near a rounding edge that pandas' summation order could round it the other way."""
    vals = [v for v in values if v is not None and v == v]
    if any(not abs(v) <= _PLAIN_LIMIT for v in vals):
        return None
    nan = float("nan")
    if not vals:
        return {"count": 0, "mean": nan, "std": nan, "min": nan, "max": nan, "median": nan}
    count = len(vals)
    mean = math.fsum(vals) / count
    # pandas sums in run order (Kahan) or pairwise (numpy): within count + 2 units in the last place of the
    # figures' magnitude; the rounded mean is certain when that whole span rounds to one value
    span = (count + 2) * 2.0**-52 * max(abs(v) for v in vals)
    if _num(mean - span) != _num(mean + span):
        return None
    seen, running, m2 = 0, 0.0, 0.0
    for v in vals:  # pandas' group_var, step for step: the same float operations give the same bits
        seen += 1
        old = running
        running += (v - old) / seen
        m2 += (v - running) * (v - old)
    std = math.sqrt(m2 / (count - 1)) if count > 1 else nan
    import statistics  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    return {
        "count": count,
        "mean": mean,
        "std": std,
        "min": min(vals),
        "max": max(vals),
        "median": statistics.median(vals),
    }


def order_rows(rows: List[SummaryRow], order: Optional[List[Tuple[str, int]]] = None) -> List[SummaryRow]:
    """``config_rows``' rows in ``order`` (the plan's (model, batch_size) pairs; others after them, as they
    came), with speed-up and efficiency in a sweep of several GPU counts."""
    rank = {tuple(pair): i for i, pair in enumerate(order or [])}
    return add_input_cost(add_scaling(sorted(rows, key=lambda row: rank.get(row.pair, len(rank)))))


def add_input_cost(rows: List[SummaryRow]) -> List[SummaryRow]:
    """In a sweep of both data kinds, each real-data row's mean against the same configuration's synthetic one
    (``vs_synthetic_pct``, in %) with that change's 95 % interval (Fieller, ratio.py): what feeding real images
    from the host costs. Rows of a sweep of one kind come back unchanged."""
    synthetic = {(r.model, r.batch_size, r.num_gpus, r.host): r for r in rows if r.data == "synthetic"}
    costed = []
    for row in rows:
        base = synthetic.get((row.model, row.batch_size, row.num_gpus, row.host)) if row.data == "real" else None
        if base is None or not base.mean or row.mean is None:
            costed.append(row)
            continue
        b, c = ratio.row_moments(base.runs_ok, base.mean, base.std), ratio.row_moments(row.runs_ok, row.mean, row.std)
        low, high = ratio.change_interval_of(b, c) if b is not None and c is not None else (None, None)
        costed.append(
            replace(
                row,
                vs_synthetic_pct=_pct((row.mean / base.mean - 1.0) * 100.0),
                vs_synthetic_ci95_low=_pct(low),
                vs_synthetic_ci95_high=_pct(high),
            )
        )
    return costed


def _pct(value: Optional[float]) -> Optional[float]:
    """A percentage rounded once, where it is made (as compare's changes are)."""
    return None if value is None or not math.isfinite(value) else round(value, STAT_DECIMALS) + 0.0


def add_scaling(rows: List[SummaryRow]) -> List[SummaryRow]:
    """In a sweep of several GPU counts, each row's speed-up over the same model (batch size per device, host)
    at one GPU, and its efficiency (speed-up / count, in %); None where there is no 1-GPU mean. Rows of a
    single-count sweep come back unchanged (their columns stay those of format 1)."""
    if len({r.num_gpus for r in rows if r.num_gpus is not None}) < 2:
        return rows
    one_gpu = {(r.model, r.batch_size, r.host, r.data): r.mean for r in rows if r.num_gpus == 1}
    scaled = []
    for row in rows:
        base = one_gpu.get((row.model, row.batch_size, row.host, row.data))
        speedup = _num(row.mean / base) if base and row.mean is not None else None
        efficiency = _num(speedup / row.num_gpus * 100.0) if speedup is not None and row.num_gpus else None
        scaled.append(replace(row, speedup=speedup, efficiency_pct=efficiency, scaling=True))
    return scaled


def summary_columns(rows: List[SummaryRow]) -> List[str]:
    """The columns of summary.csv and `report --format csv`: the contract's, plus speed-up and efficiency in
    a sweep of several GPU counts."""
    return (
        SUMMARY_COLUMNS
        + (SCALING_COLUMNS if any(r.scaling for r in rows) else [])
        + (DATA_COLUMNS if any(r.data is not None for r in rows) else [])
    )


def summary_csv_text(rows: List[SummaryRow]) -> str:
    rows = with_fleet(rows)  # a fleet's rows name their host and compare it with the fleet
    return to_csv([row.to_dict() for row in rows], fleet_columns(rows, summary_columns(rows)))


# Statistics are kept to 9 decimals: float arithmetic's noise (a mean of 176.92999999999998, a std of 3e-14
# over identical runs) never reaches summary.csv or `report --format json`; every real digit does.
STAT_DECIMALS = 9


def _num(value: Any) -> Optional[float]:  # Any: a float, a numpy/pandas scalar or None; float() sorts them
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return round(value, STAT_DECIMALS) + 0.0 if math.isfinite(value) else None
