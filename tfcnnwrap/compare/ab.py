"""Sweep against sweep(s): per configuration the change of the mean, Welch's t-test at 95%, the change's
95% confidence interval, what differs between the sweeps' environments, and the regressions that
`--fail-on-regression PCT` fails on.

The interval of a change is the interval of the ratio of two means, by Fieller's theorem: the set of ratios
rho for which ``mean_c - rho * mean_b`` is not significantly different from zero, i.e.
``(mean_c - rho mean_b)^2 <= t^2 (var_c/n_c + rho^2 var_b/n_b)``. Unlike dividing a Welch interval of the
difference by the baseline mean, it accounts for the baseline mean's own uncertainty (the interval is not
symmetric around the change). t is Student's at the Welch-Satterthwaite degrees of freedom of the test, so
the interval excludes 0% exactly when the test calls the change significant. Bounded by what is possible:
where the set reaches a ratio at or below zero (a candidate whose mean is not clearly above zero) it starts
at -100%; where the baseline's mean is not clearly above zero it is unbounded (null, "unbounded" on screen).

Each candidate's geometric mean of the ratios gets its interval on the log scale (the delta method over every
configuration's standard errors, Student's t at their Welch-Satterthwaite degrees of freedom), never below
-100%, and hyperfine's spread (``ratio x sqrt(sum of squared relative standard deviations) / k``) for the
one-line verdict "CANDIDATE ran 1.52 +- 0.03 times faster than BASELINE".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from tfcnnwrap.results.aggregate import STAT_DECIMALS
from tfcnnwrap.results.comparesweep import ConfigKey, Sweep, config_of, geometric_mean
from tfcnnwrap.results.comparison import ABResult, GeomeanChange, SweepComparison
from tfcnnwrap.results.ratio import both_moments, change_interval_of, welch_df
from tfcnnwrap.results.records import ChangeRow

if TYPE_CHECKING:
    from pathlib import Path

    from tfcnnwrap.results.records import SummaryRow

ALPHA = 0.05
# Plan keys that do not change what a figure means (models show as rows; runs and the timeout as counts).
# data_source and data_dir: the environment's "data" and "data source" facts say it once, without the paths
_NOT_CONDITIONS = ("models", "runs", "timeout_s", "data_source", "data_dir")


def welch(baseline: List[Any], candidate: List[Any]) -> Tuple[Optional[float], Optional[bool]]:
    """(p_value, significant) of Welch's two-sample t-test; (None, None) with fewer than 2 runs a side.

    The same test as ``scipy.stats.ttest_ind(candidate, baseline, equal_var=False)``, computed from the
    Welch-Satterthwaite degrees of freedom and scipy.special's Student t distribution: importing
    scipy.stats alone costs a second, four times the rest of `compare`.
    """
    moments = both_moments(baseline, candidate)
    if moments is None:
        return None, None
    (nb, mb, vb), (nc, mc, vc) = moments
    if vb + vc == 0.0:
        # Neither side has any spread: t is undefined, and any difference is certain.
        p = 0.0 if mb != mc else 1.0
        return p, p < ALPHA
    from scipy.special import stdtr  # scipy: only when a comparison is computed

    t = (mc - mb) / math.sqrt(vb + vc)
    p = float(min(1.0, 2.0 * stdtr(welch_df(nb, vb, nc, vc), -abs(t))))
    return p, p < ALPHA


def change_interval(baseline: List[float], candidate: List[float]) -> Tuple[Optional[float], ...]:
    """(low, high) of the 95% interval of (candidate mean / baseline mean - 1) x 100 by Fieller's theorem;
    (None, None) with fewer than 2 runs a side, or when the baseline mean is not clearly above zero (the
    interval is then unbounded)."""
    found = both_moments(baseline, candidate)
    return (None, None) if found is None else change_interval_of(*found)


# -- one candidate against the baseline ------------------------------------------------------------------


def _log_terms(row: ChangeRow) -> Optional[Tuple[float, float, float, float]]:
    """(log ratio, its squared standard error, the Satterthwaite numerator's part, its denominator's part)
    of one configuration; None under 2 runs a side."""
    nb, nc, sb, sc = row.baseline_runs, row.candidate_runs, row.baseline_std, row.candidate_std
    if not (nb and nc and nb > 1 and nc > 1) or sb is None or sc is None or not row.baseline or not row.candidate:
        return None
    rb, rc = (sb / row.baseline) ** 2 / nb, (sc / row.candidate) ** 2 / nc
    return (
        math.log(row.candidate / row.baseline),
        rb + rc,
        rb**2 / (nb - 1) + rc**2 / (nc - 1),
        (sb / row.baseline) ** 2 + (sc / row.candidate) ** 2,
    )


def geomean_change(rows: Sequence[ChangeRow]) -> Optional[GeomeanChange]:
    """The geometric mean of the rows' ratios with its log-scale 95% interval, significance and spread."""
    from tfcnnwrap.results.tdist import t975

    pairs = [r for r in rows if r.change_pct is not None and r.baseline and r.candidate]
    if not pairs:
        return None
    found = [_log_terms(r) for r in pairs]
    k = len(pairs)
    logs: List[float] = [math.log(float(r.candidate or 0.0) / float(r.baseline or 1.0)) for r in pairs]
    ratio = math.exp(sum(logs) / k)
    terms = [t for t in found if t is not None]
    if len(terms) < k:
        return GeomeanChange(ratio)
    se2 = sum(t[1] for t in terms)
    spread = ratio * math.sqrt(sum(t[3] for t in terms)) / k
    if k == 1:  # one configuration: its own (Fieller) interval and test, so the two lines agree
        only = pairs[0]
        return GeomeanChange(ratio, only.change_ci95_low, only.change_ci95_high, only.significant, spread)
    if se2 == 0.0:
        change = _pct((ratio - 1.0) * 100.0)
        return GeomeanChange(ratio, change, change, ratio != 1.0, 0.0)
    half = t975(se2**2 / sum(t[2] for t in terms)) * math.sqrt(se2) / k
    low, high = ((math.exp(math.log(ratio) + sign * half) - 1.0) * 100.0 for sign in (-1.0, 1.0))
    return GeomeanChange(ratio, _pct(low), _pct(high), low > 0 or high < 0, spread)


def plan_differences(a: Sweep, b: Sweep) -> Tuple[Any, ...]:
    """(key, a's value, b's value) for each plan setting that differs, over both plans read by plan.Plan (so
    a setting one version records and another leaves to its default compares as that default)."""
    da, db = a.plan.to_dict(), b.plan.to_dict()
    keys = [k for k in da if k not in _NOT_CONDITIONS] + [k for k in db if k not in da and k not in _NOT_CONDITIONS]
    return tuple((k, da.get(k), db.get(k)) for k in keys if da.get(k) != db.get(k))


def _short_commit(commit: Optional[str]) -> Optional[str]:
    return commit[:10] if isinstance(commit, str) else commit


def _environment_facts(sweep: Sweep) -> List[Tuple[Optional[str], ...]]:
    meta, env = sweep.meta, sweep.meta.environment
    return [
        ("GPU", meta.gpu_names() or ("CPU" if meta.on_cpu else None)),
        ("driver", env.get("nvidia_driver")),
        ("TensorFlow", meta.tensorflow_version or env.get("tensorflow_version")),
        ("CUDA", env.get("cuda_version")),
        ("cuDNN", env.get("cudnn_version")),
        ("branch", meta.upstream.branch),
        ("commit", _short_commit(meta.upstream.commit)),
        ("host", env.get("host")),
        ("precision", sweep.conditions()["precision"]),
        ("XLA", sweep.conditions().get("xla")),
        ("data", sweep.conditions()["data"]),
        ("data source", sweep.plan.data_origin()),
    ]


def environment_differences(baseline: Sweep, candidate: Sweep) -> Tuple[Any, ...]:
    """(what, baseline's, candidate's) for each fact of the sweeps' environments that differs, then each plan
    setting that differs (``plan num_gpus``); a fact one side did not record counts as differing only when
    the other side did."""
    out = []
    for (what, b), (_, c) in zip(_environment_facts(baseline), _environment_facts(candidate)):
        if b != c:
            out.append((what, b, c))
    out += [("plan %s" % k, b, c) for k, b, c in plan_differences(baseline, candidate)]
    return tuple(out)


def _pct(value: Optional[float]) -> Optional[float]:
    """A percentage rounded once, where it is made (90 / 100 - 1 is -9.999999999999998 %, not -10)."""
    return None if value is None else round(value, STAT_DECIMALS) + 0.0


def change_row(
    key: ConfigKey,
    b: Optional[SummaryRow],
    c: Optional[SummaryRow],
    baseline_values: List[float],
    candidate_values: List[float],
    candidate_dir: Optional[str] = None,
) -> ChangeRow:
    """One configuration of both sweeps (``b``/``c``: its SummaryRow on each side, or None)."""
    b_mean, c_mean = b.mean if b else None, c.mean if c else None
    p_value, significant = welch(baseline_values, candidate_values)
    low, high = (_pct(v) for v in change_interval(baseline_values, candidate_values))
    return ChangeRow(
        model=key[0],
        batch_size=key[1],
        baseline=b_mean,
        candidate=c_mean,
        change_pct=_pct((c_mean / b_mean - 1.0) * 100.0) if b_mean and c_mean is not None else None,
        significant=significant,
        p_value=p_value,
        baseline_runs=b.runs_ok if b else None,
        candidate_runs=c.runs_ok if c else None,
        baseline_std=b.std if b else None,
        candidate_std=c.std if c else None,
        num_gpus=key[2],
        change_ci95_low=low,
        change_ci95_high=high,
        candidate_dir=candidate_dir,
        data=key[3],
    )


def _kind_keyed(sweep: Sweep, both: bool) -> Tuple[Dict[ConfigKey, SummaryRow], Dict[ConfigKey, List[float]]]:
    """The sweep's rows and ok values by configuration; where the other sweep ran both data kinds and this
    one a single kind, each key names that kind, so that its runs pair with the same kind of the other."""
    kind = sweep.conditions()["data"] if both and not sweep.plan.data_kinds else None

    def key(config: ConfigKey) -> ConfigKey:
        return config if kind is None else (config[0], config[1], config[2], kind)

    return {key(config_of(r)): r for r in sweep.rows}, {key(k): v for k, v in sweep.values.items()}


def compare_one(
    baseline: Sweep, candidate: Sweep, candidate_dir: Optional[str] = None, both: Optional[bool] = None
) -> SweepComparison:
    """``both``: whether any sweep compared ran both data kinds (default: either of these two), so that a sweep
    of one kind names its runs' kind alike in every comparison of a set."""
    if both is None:
        both = bool(baseline.plan.data_kinds or candidate.plan.data_kinds)
    (base_rows, base_values), (cand_rows, cand_values) = (_kind_keyed(s, both) for s in (baseline, candidate))
    keys = list(base_rows) + [k for k in cand_rows if k not in base_rows]
    rows = tuple(
        change_row(k, base_rows.get(k), cand_rows.get(k), base_values.get(k, []), cand_values.get(k, []), candidate_dir)
        for k in keys
    )
    ratios = [r.candidate / r.baseline for r in rows if r.change_pct is not None]  # type: ignore[operator]  # both set
    g = geometric_mean(ratios)
    return SweepComparison(
        baseline=baseline,
        candidate=candidate,
        rows=rows,
        geomean_change_pct=_pct((g - 1.0) * 100.0) if g is not None else None,
        pairs=len(ratios),
        environment=environment_differences(baseline, candidate),
        candidate_dir=candidate_dir,
        geomean=geomean_change(rows),
    )


def sweep_vs_sweeps(
    baseline_path: Union[Path, str], candidate_paths: Sequence[Union[Path, str]], host: Optional[str] = None
) -> ABResult:
    """The baseline against each candidate (in the order given); JSON rows name their candidate only when
    there are several."""
    baseline = Sweep(baseline_path, host=host)
    several = len(candidate_paths) > 1
    candidates = [Sweep(path, host=host) for path in candidate_paths]
    both = any(s.plan.data_kinds for s in [baseline] + candidates)
    comparisons = tuple(
        compare_one(baseline, candidate, str(path) if several else None, both)
        for path, candidate in zip(candidate_paths, candidates)
    )
    return ABResult(baseline=baseline, comparisons=comparisons)


def sweep_vs_sweep(
    baseline_path: Union[Path, str], candidate_path: Union[Path, str], host: Optional[str] = None
) -> SweepComparison:
    return sweep_vs_sweeps(baseline_path, [candidate_path], host).comparisons[0]


def unmeasured(result: ABResult) -> list:
    """(comparison, row) of every configuration a candidate ran without a single ok run (each crashed, ran out
    of memory or timed out): a gate cannot pass what it could not measure."""
    return [
        (comparison, row)
        for comparison in result.comparisons
        for row in comparison.rows
        if row.candidate is None and row.candidate_runs is not None
    ]


def regressions(result: ABResult, pct: float) -> List[Tuple[SweepComparison, ChangeRow]]:
    """(comparison, row) of every configuration whose candidate is significantly slower (Welch, 95%) than
    the baseline and slower by more than ``pct`` percent: asv's `continuous` rule (a significant change and
    one beyond the threshold), so noise never fails a build and neither does a real but tiny slowdown."""
    return [
        (comparison, row)
        for comparison in result.comparisons
        for row in comparison.rows
        if row.significant and row.change_pct is not None and row.change_pct < -pct
    ]
