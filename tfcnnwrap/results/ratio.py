"""One mean against another: the change (candidate / baseline - 1) x 100 and its 95 % interval by Fieller's
theorem, Student's t at the Welch-Satterthwaite degrees of freedom (compare/ab.py says why). `compare`'s A/B
uses it, and so does a sweep of both data kinds for what the input path costs (aggregate.add_input_cost), from
a summary row's run count, mean and standard deviation alone.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

from tfcnnwrap.results.tdist import t975

Moments = Tuple[int, float, float]  # (n, mean, squared standard error of the mean)


def moments(values: Sequence[Any]) -> Optional[Moments]:
    """(n, mean, squared standard error); None when a figure is so large (a corrupted runs.jsonl) that the
    arithmetic leaves the finite floats, where no test means anything."""
    n = len(values)
    try:
        mean = sum(values) / n
        found = n, mean, sum((x - mean) ** 2 for x in values) / (n - 1) / n
    except OverflowError:
        return None
    return found if all(math.isfinite(m) for m in found[1:]) else None


def both_moments(baseline: List[Any], candidate: List[Any]) -> Optional[Tuple[Moments, Moments]]:
    """Both sides' moments, or None with fewer than 2 runs a side or figures beyond the finite floats."""
    if len(baseline) < 2 or len(candidate) < 2:
        return None
    b, c = moments(baseline), moments(candidate)
    return None if b is None or c is None else (b, c)


def row_moments(count: int, mean: Optional[float], std: Optional[float]) -> Optional[Moments]:
    """The moments of a summary row's ok runs (its runs_ok, mean, std); None under 2 runs."""
    if count < 2 or mean is None or std is None or not math.isfinite(std * std / count):
        return None
    return count, mean, std * std / count


def welch_df(nb: int, vb: float, nc: int, vc: float) -> float:
    return (vb + vc) ** 2 / (vb**2 / (nb - 1) + vc**2 / (nc - 1))


def change_interval_of(base: Moments, cand: Moments) -> Tuple[Optional[float], Optional[float]]:
    """(low, high) of the 95 % interval of (candidate mean / baseline mean - 1) x 100; (None, None) when the
    baseline mean is not clearly above zero (the interval is then unbounded)."""
    (nb, mb, vb), (nc, mc, vc) = base, cand
    if mb <= 0:
        return None, None
    if vb + vc == 0.0:
        change = (mc / mb - 1.0) * 100.0
        return change, change
    t = t975(welch_df(nb, vb, nc, vc))
    # (mc - r mb)^2 <= t^2 (vc + r^2 vb)  <=>  a r^2 - 2 b r + c <= 0
    a, b, c = mb * mb - t * t * vb, mc * mb, mc * mc - t * t * vc
    disc = b * b - a * c
    if a <= 0 or disc < 0:
        return None, None  # unbounded: the baseline's mean is not clearly above zero
    root = math.sqrt(disc)
    # c <= 0 (the candidate's mean not clearly above zero): the set reaches ratios at or below 0, and only
    # those above 0 are possible: the interval starts at -100%, never below it
    return max(-100.0, ((b - root) / a - 1.0) * 100.0), ((b + root) / a - 1.0) * 100.0
