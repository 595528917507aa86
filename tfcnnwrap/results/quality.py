"""Can a configuration's figure be trusted? The verdict a reader sees beside every mean (issue 22).

Pure: from a configuration's ok values in run order and what its summary row already holds (outlier runs,
the CI95's width, throttled runs), the short flags of the report's `flags` column (``outlier``, ``wide CI``,
``drift``, ``throttled``) and one line per problem saying what to do about it. The sweep's end summary and
`report` print the same lines, so nothing the sweep knew is lost when a report is read later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from tfcnnwrap.results.tdist import t975

if TYPE_CHECKING:
    from tfcnnwrap.results.records import RunRecord

CI95_WIDE_PCT = 2.0  # a CI95 wider than +-2 % of the mean: the figure is not yet pinned down
TREND_PCT = 3.0  # the last third of the runs against the first: heat soak, or a warm-up spread over runs
SUGGESTED_COOL_TO_C = 60

OUTLIER, WIDE_CI, DRIFT, THROTTLED = "outlier", "wide CI", "drift", "throttled"
FLAGS = (OUTLIER, WIDE_CI, DRIFT, THROTTLED)


def trend_pct(values: Sequence[float]) -> Optional[float]:
    """The mean of the last third of ``values`` (ok runs in run order) against the mean of the first third,
    in %; None under 3 values (no thirds to tell apart)."""
    if len(values) < 3:
        return None
    third = len(values) // 3
    from statistics import (
        fmean,
    )  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    first, last = fmean(values[:third]), fmean(values[-third:])
    if not first:
        return None
    return (last / first - 1.0) * 100.0


def trend_significant(values: Sequence[float]) -> Optional[bool]:
    """Does the trend between runs exceed their noise? True when the 95 % interval of the least-squares slope
    over run order excludes zero (Student's t, n - 2 degrees of freedom); None under 3 values. Three runs of
    3.88, 5.31, 3.76 fall 3.1 % first to last, but the middle one alone spreads wider than that: noise."""
    n = len(values)
    if n < 3:
        return None
    top = max(abs(v) for v in values)
    if not top or not math.isfinite(top):
        return None if not math.isfinite(top) else False
    values = [v / top for v in values]  # figures near the float limit (a corrupted log) square to infinity
    xs = range(n)
    from statistics import (
        fmean,
    )  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    x_mean, y_mean = (n - 1) / 2.0, fmean(values)
    sxx = sum((x - x_mean) ** 2 for x in xs)
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, values)) / sxx
    residual = sum((y - y_mean - slope * (x - x_mean)) ** 2 for x, y in zip(xs, values))
    if not slope:
        return False
    half = t975(n - 2) * math.sqrt(residual / (n - 2) / sxx)
    return abs(slope) > half


@dataclass(frozen=True)
class Verdict:
    """What is known about one configuration's steadiness, and the flags it earns."""

    outlier_runs: Tuple[int, ...] = ()
    ci95_pct: Optional[float] = None
    trend_pct: Optional[float] = None
    throttled_runs: Optional[int] = None
    runs_ok: int = 0
    throttle_reasons: Tuple[Tuple[str, int], ...] = ()
    max_temp_c: Optional[float] = None
    trend_significant: Optional[bool] = None  # None: not known (under 3 runs, an old row): the size alone decides

    @property
    def drifts(self) -> bool:
        """A trend beyond TREND_PCT that the run-to-run noise does not explain."""
        return self.trend_pct is not None and abs(self.trend_pct) > TREND_PCT and self.trend_significant is not False

    @property
    def flags(self) -> List[str]:
        found = []
        if self.outlier_runs:
            found.append(OUTLIER)
        if self.ci95_pct is not None and self.ci95_pct > CI95_WIDE_PCT:
            found.append(WIDE_CI)
        if self.drifts:
            found.append(DRIFT)
        if self.throttled_runs:
            found.append(THROTTLED)
        return found


def _runs_text(numbers: Sequence[int]) -> str:
    words = [str(n) for n in numbers]
    if len(words) == 1:
        return "run " + words[0]
    return "runs %s and %s" % (", ".join(words[:-1]), words[-1])


def _reasons_text(reasons: Dict[str, int]) -> str:
    return ", ".join("%s in %d" % (name, count) for name, count in sorted(reasons.items(), key=lambda kv: -kv[1]))


def problems(verdict: Verdict, runs_planned: Optional[int] = None, device: Optional[str] = None) -> List[str]:
    """One sentence per flag: what was seen and what to do (without the configuration's name), as fits the
    ``device`` the sweep ran on (a CPU has no temperatures to wait on: no thermal advice there)."""
    lines = []
    more = max(10, 2 * (runs_planned or verdict.runs_ok or 3))
    if verdict.outlier_runs:
        lines.append(
            "%s far from the others (kept in the mean): check %s log, or add runs (--runs %d)"
            % (_runs_text(verdict.outlier_runs), "its" if len(verdict.outlier_runs) == 1 else "their", more)
        )
    if verdict.ci95_pct is not None and verdict.ci95_pct > CI95_WIDE_PCT:
        lines.append(
            "CI95 ±%.2f%% is wider than ±%g%%: add runs until it narrows (--until-ci %g)"
            % (verdict.ci95_pct, CI95_WIDE_PCT, CI95_WIDE_PCT)
        )
    if verdict.drifts and verdict.trend_pct is not None:
        if verdict.trend_pct < 0 and device == "cpu":
            lines.append(
                "runs fell %.1f%% from the first third to the last (something else busy?): quiet the "
                "machine (`python -m tfcnnwrap doctor` names what runs) and add runs (--runs %d)"
                % (-verdict.trend_pct, more)
            )
        elif verdict.trend_pct < 0:
            lines.append(
                "runs fell %.1f%% from the first third to the last (heat soak?): cool between runs "
                "(--cool-to %d)" % (-verdict.trend_pct, SUGGESTED_COOL_TO_C)
            )
        else:
            lines.append(
                "runs rose %.1f%% from the first third to the last (still warming up?): more warm-up "
                "(--num-warmup-batches)" % verdict.trend_pct
            )
    if verdict.throttled_runs:
        why = _reasons_text(dict(verdict.throttle_reasons)) or "SM clock dropped over 10 %"
        hottest = ", max %g °C" % verdict.max_temp_c if verdict.max_temp_c is not None else ""
        lines.append(
            "%d of %d runs throttled (%s%s): --cool-to %d or better airflow"
            % (verdict.throttled_runs, verdict.runs_ok, why, hottest, SUGGESTED_COOL_TO_C)
        )
    return lines


def _reason_text(runs: Iterable[Any]) -> str:  # Any: throttled RunRecords, their gpu set (a filter mypy can't see)
    counts: dict = {}
    for run in runs:
        for reason in run.gpu.throttle_reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if not counts:
        return "SM clock dropped over 10 %"
    kinds = []
    for reason in sorted(counts, key=lambda r: -counts[r]):
        kind = "thermal slowdown" if "thermal" in reason else "power cap" if "power" in reason else "slowdown"
        kinds.append("%s: %s" % (kind, reason))
    return ", ".join(kinds)


def throttle_warning(runs: List[RunRecord]) -> Optional[str]:
    """One line naming the reason when some of the sweep's runs throttled, else None: the warning the sweep
    ends with, and `report` repeats (it lives here, with the flags, so both read it from one place)."""
    with_gpu = [r for r in runs if r.telemetry is not None]
    throttled = [r for r in with_gpu if r.throttled]
    if not throttled:
        return None
    temps = [r.max_temp_c for r in throttled if r.max_temp_c is not None]
    hottest = " — max %g °C" % max(temps) if temps else ""
    return "%d of %d runs throttled (%s)%s; try --cool-to %d or better airflow" % (
        len(throttled),
        len(with_gpu),
        _reason_text(throttled),
        hottest,
        SUGGESTED_COOL_TO_C,
    )
