"""`compare`: a sweep against published references, or one sweep against another. Figures only: how they
read (cells such as ``203.99 (86.7%)``, the dagger, the notes) is comparetext's job.

Against references each measured configuration meets each reference GPU's closest published figure; one
taken under other conditions (batch size, precision, GPU count, variable update, data) is not comparable and
stays out of the geometric mean. Sweep against sweep: change per model and a Welch t-test at 95%.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

from tfcnnwrap.aggregate import ok_values, summarize
from tfcnnwrap.errors import UsageError
from tfcnnwrap.records import (
    ChangeRow,
    GeomeanCell,
    ReferenceCell,
    ReferenceRow,
    SummaryRow,
)
from tfcnnwrap.store import load_sweep

ALPHA = 0.05
# Plan keys that do not change what a figure means (models show as rows; runs and the timeout as counts).
_NOT_CONDITIONS = ("models", "runs", "timeout_s")


# -- reading a sweep -------------------------------------------------------------------------------------


class Sweep:
    """A sweep directory read for comparison: its meta, its plan, its rows per model and batch size."""

    def __init__(self, path):
        from tfcnnwrap.plan import Plan

        self.dir, self.meta, self.runs = load_sweep(path)
        self.path = Path(path)
        self.plan = Plan.from_dict(self.meta.plan)
        self.rows = measured_rows(self.meta.plan_order, self.runs)
        self.values = ok_values(self.runs)

    @property
    def name(self):
        return self.path.resolve().name or str(self.path)

    def gpu_label(self):
        return self.meta.gpu_names() or None

    def label(self):
        gpu = self.gpu_label()
        return "%s (%s)" % (self.name, gpu) if gpu else self.name

    def conditions(self, batch_size=None):
        """The plan's conditions, with the batch size of one configuration."""
        return dict(self.plan.conditions(), batch_size=batch_size)


def measured_rows(order, runs):
    """SummaryRows in plan order, one per (model, batch_size); a planned pair without runs yet has no mean."""
    summary = {}
    for row in summarize(runs, order):
        summary.setdefault(row.pair, row)
    rows = [summary.pop(tuple(pair), None) or SummaryRow(model=pair[0], batch_size=pair[1]) for pair in order]
    return rows + list(summary.values())


def geometric_mean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


# -- against references ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgainstReferences:
    sweep: Any  # Sweep
    columns: Tuple  # (typed name, references.Gpu) per reference column
    rows: Tuple[ReferenceRow, ...]
    geomean: Tuple[GeomeanCell, ...]  # one per column, over its comparable ratios
    conditions: dict  # the sweep's (no batch size)
    sources: Tuple  # (source text, (typed names citing it)) in column order

    @property
    def measured_count(self):
        return sum(1 for r in self.rows if r.measured is not None)


def reference_cell(typed, gpu, model, mean, wanted):
    """``mean`` (None: no ok run) against ``gpu``'s closest published figure for ``wanted`` conditions."""
    result, differs = gpu.best_result(model, wanted)
    if result is None:
        return ReferenceCell(name=typed, id=gpu.id, gpu_name=gpu.name)
    return ReferenceCell(
        name=typed, id=gpu.id, gpu_name=gpu.name, images_per_sec=result.images_per_sec,
        published=result.display, ratio_pct=mean / result.images_per_sec * 100.0 if mean is not None else None,
        comparable=not differs,
        differs={k: {"reference": getattr(result, k), "sweep": wanted[k]} for k in differs},
        conditions=result.conditions(), source=result.source or gpu.origin,
    )


def _sources(columns, rows):
    """The sources of the figures the table shows (a GPU's library may cite hundreds), in column order."""
    cited = {}
    for i, (typed, _gpu) in enumerate(columns):
        for row in rows:
            source = row.cells[i].source
            if source:
                names = cited.setdefault(source, [])
                if typed not in names:
                    names.append(typed)
    return tuple((source, tuple(names)) for source, names in cited.items())


def against_references(sweep_path, against, references_csv=None):
    """The sweep's measured rows against each named reference GPU, and each one's geometric mean."""
    from tfcnnwrap.references import load_references

    columns = tuple(load_references(references_csv).resolve_list(against))
    sweep = Sweep(sweep_path)
    rows = []
    for measured in sweep.rows:
        wanted = sweep.conditions(measured.batch_size)
        cells = tuple(reference_cell(typed, gpu, measured.model, measured.mean, wanted) for typed, gpu in columns)
        rows.append(ReferenceRow(model=measured.model, batch_size=measured.batch_size, measured=measured.mean,
                                 runs_ok=measured.runs_ok, cells=cells))
    of = sum(1 for r in rows if r.measured is not None)
    geomean = []
    for i, (typed, gpu) in enumerate(columns):
        ratios = [r.cells[i].ratio_pct / 100.0 for r in rows if r.cells[i].comparable and r.cells[i].ratio_pct
                  is not None]
        g = geometric_mean(ratios)
        geomean.append(GeomeanCell(name=typed, id=gpu.id, gpu_name=gpu.name,
                                   ratio_pct=g * 100.0 if g is not None else None, count=len(ratios), of=of))
    return AgainstReferences(sweep=sweep, columns=columns, rows=tuple(rows), geomean=tuple(geomean),
                             conditions=sweep.plan.conditions(), sources=_sources(columns, rows))


# -- sweep against sweep ---------------------------------------------------------------------------------


def welch(baseline, candidate):
    """(p_value, significant) of Welch's two-sample t-test; (None, None) with fewer than 2 runs a side.

    The same test as ``scipy.stats.ttest_ind(candidate, baseline, equal_var=False)``, computed from the
    Welch-Satterthwaite degrees of freedom and scipy.special's Student t distribution: importing
    scipy.stats alone costs a second, four times the rest of `compare`.
    """
    nb, nc = len(baseline), len(candidate)
    if nb < 2 or nc < 2:
        return None, None
    mb, mc = sum(baseline) / nb, sum(candidate) / nc
    vb = sum((x - mb) ** 2 for x in baseline) / (nb - 1) / nb
    vc = sum((x - mc) ** 2 for x in candidate) / (nc - 1) / nc
    if vb + vc == 0.0:
        # Neither side has any spread: t is undefined, and any difference is certain.
        p = 0.0 if mb != mc else 1.0
        return p, p < ALPHA
    from scipy.special import stdtr

    t = (mc - mb) / math.sqrt(vb + vc)
    df = (vb + vc) ** 2 / (vb ** 2 / (nb - 1) + vc ** 2 / (nc - 1))
    p = float(min(1.0, 2.0 * stdtr(df, -abs(t))))
    return p, p < ALPHA


@dataclass(frozen=True)
class SweepComparison:
    baseline: Any  # Sweep
    candidate: Any  # Sweep
    rows: Tuple[ChangeRow, ...]
    geomean_change_pct: Optional[float]  # over the pairs with a mean on both sides
    pairs: int
    differences: Tuple  # (plan key, baseline's value, candidate's value)


def plan_differences(a, b):
    """(key, a's value, b's value) for each plan setting that differs, over both plans read by plan.Plan (so
    a setting one version records and another leaves to its default compares as that default)."""
    da, db = a.plan.to_dict(), b.plan.to_dict()
    keys = [k for k in da if k not in _NOT_CONDITIONS] + [k for k in db if k not in da and k not in _NOT_CONDITIONS]
    return tuple((k, da.get(k), db.get(k)) for k in keys if da.get(k) != db.get(k))


def change_row(key, b, c, baseline_values, candidate_values):
    """One configuration of both sweeps (``b``/``c``: its SummaryRow on each side, or None)."""
    b_mean, c_mean = b.mean if b else None, c.mean if c else None
    p_value, significant = welch(baseline_values, candidate_values)
    return ChangeRow(
        model=key[0], batch_size=key[1], baseline=b_mean, candidate=c_mean,
        change_pct=(c_mean / b_mean - 1.0) * 100.0 if b_mean and c_mean is not None else None,
        significant=significant, p_value=p_value,
        baseline_runs=b.runs_ok if b else None, candidate_runs=c.runs_ok if c else None,
        baseline_std=b.std if b else None, candidate_std=c.std if c else None,
    )


def sweep_vs_sweep(baseline_path, candidate_path):
    baseline, candidate = Sweep(baseline_path), Sweep(candidate_path)
    base_rows = {r.pair: r for r in baseline.rows}
    cand_rows = {r.pair: r for r in candidate.rows}
    keys = list(base_rows) + [k for k in cand_rows if k not in base_rows]
    rows = tuple(change_row(k, base_rows.get(k), cand_rows.get(k), baseline.values.get(k, []),
                            candidate.values.get(k, [])) for k in keys)
    ratios = [r.candidate / r.baseline for r in rows if r.change_pct is not None]
    g = geometric_mean(ratios)
    return SweepComparison(baseline=baseline, candidate=candidate, rows=rows,
                           geomean_change_pct=(g - 1.0) * 100.0 if g is not None else None, pairs=len(ratios),
                           differences=plan_differences(baseline, candidate))


# -- the verb --------------------------------------------------------------------------------------------


def _check_args(args):
    dirs = list(getattr(args, "dirs", None) or [])
    against = getattr(args, "against", None)
    if len(dirs) > 2:
        raise UsageError(
            "compare takes one sweep (with --against) or two sweeps (baseline, candidate), not %d" % len(dirs)
        )
    if len(dirs) == 1 and not against:
        raise UsageError(
            "comparing one sweep needs --against NAME[,NAME...] (see `tfcnnwrap references`), "
            "or give two sweep directories to compare them"
        )
    if len(dirs) == 2 and against is not None:
        raise UsageError(
            "--against compares one sweep with references; drop it to compare two sweeps, or give one sweep"
        )
    if len(dirs) == 2 and getattr(args, "references", None):
        raise UsageError("--references only goes with --against; drop it to compare two sweeps")
    return dirs, against


def cmd_compare(args):
    import sys

    from tfcnnwrap import comparetext

    dirs, against = _check_args(args)
    fmt = getattr(args, "format", None) or "table"
    plot_path = getattr(args, "plot", None)
    if plot_path:
        from tfcnnwrap.plot import require_matplotlib

        require_matplotlib()
    if against is not None:
        result = against_references(dirs[0], against, getattr(args, "references", None))
        comparetext.render_against(result, fmt)
    else:
        result = sweep_vs_sweep(dirs[0], dirs[1])
        comparetext.render_ab(result, fmt)
    if plot_path:
        from tfcnnwrap import plot

        (plot.plot_against if against is not None else plot.plot_ab)(result, plot_path)
        sys.stderr.write("tfcnnwrap compare: wrote %s\n" % plot_path)
    return 0
