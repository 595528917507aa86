"""`compare`: a sweep against published references, sweep against sweep(s), or a sweep ranked among every
reference GPU. Figures only: how they read (cells such as ``203.99 (86.7%)``, the dagger, the notes) is
comparetext's (and ranktext's) job.

Against references each measured configuration meets each reference GPU's closest published figure for the
sweep's conditions (precision, GPU count, variable update, data, XLA, batch size: `Plan.conditions()`); one
taken under other conditions is not comparable, is marked †, and stays out of the geometric mean;
``strict`` leaves it out altogether, and with it a figure of another TensorFlow X.Y when both are known.
Sweep against sweep: compareab. Ranking: rank.
"""

from dataclasses import dataclass
from typing import Any, Tuple

from tfcnnwrap.comparesweep import Sweep, geometric_mean, newest_sweeps
from tfcnnwrap.errors import UsageError
from tfcnnwrap.records import GeomeanCell, ReferenceCell, ReferenceRow

# -- against references ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgainstReferences:
    sweep: Any  # comparesweep.Sweep
    columns: Tuple  # (typed name, references.ReferenceGPU) per reference column
    rows: Tuple[ReferenceRow, ...]
    geomean: Tuple[GeomeanCell, ...]  # one per column, over its comparable ratios
    conditions: dict  # the sweep's (no batch size)
    sources: Tuple  # (source text, (typed names citing it)) in column order
    strict: bool = False

    @property
    def measured_count(self):
        return sum(1 for r in self.rows if r.measured is not None)


def tf_xy(version):
    """``'1.12.0'`` -> ``'1.12'``; None for what is not a version (``git b1e174e``, blank)."""
    parts = str(version or "").strip().split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1][:2].isdigit():
        return "%s.%s" % (parts[0], "".join(ch for ch in parts[1] if ch.isdigit()))
    return None


def tf_differs(reference, sweep):
    """True when both TensorFlow versions are known and their X.Y differ (blanks never differ)."""
    a, b = tf_xy(reference), tf_xy(sweep)
    return a is not None and b is not None and a != b


def closest_result(gpu, model, wanted, strict=False, tf_version=None):
    """(result, differing condition names): ``gpu``'s closest row (references' rule), or with ``strict`` its
    first row with exactly ``wanted``'s conditions and the sweep's TensorFlow X.Y (else (None, []))."""
    if not strict:
        return gpu.best_result(model, wanted)
    exact = [(i, r) for i, r in enumerate(gpu.results)
             if r.model == model and not r.differences(wanted) and not tf_differs(r.tf_version, tf_version)]
    if not exact:
        return None, []
    # XLA off when the sweep does not say, then the CSV's order, as best_result breaks ties.
    return min(exact, key=lambda item: (not wanted.get("xla") and item[1].xla == "yes", item[0]))[1], []


def reference_cell(typed, gpu, model, mean, wanted, strict=False, tf_version=None):
    """``mean`` (None: no ok run) against ``gpu``'s closest published figure for ``wanted`` conditions."""
    result, differs = closest_result(gpu, model, wanted, strict, tf_version)
    if result is None:
        return ReferenceCell(name=typed, id=gpu.id, gpu_name=gpu.name)
    return ReferenceCell(
        name=typed, id=gpu.id, gpu_name=gpu.name, images_per_sec=result.images_per_sec,
        published=result.display, ratio_pct=mean / result.images_per_sec * 100.0 if mean is not None else None,
        comparable=not differs,
        differs={k: {"reference": getattr(result, k), "sweep": wanted[k]} for k in differs},
        conditions=result.conditions(), source=result.source or gpu.origin, tf_version=result.tf_version,
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


def against_references(sweep_path, against, references_csv=None, strict=False, host=None, source="all"):
    """The sweep's measured rows against each named reference GPU, and each one's geometric mean.
    ``source``: builtin, community (the library's results) or all (tfcnnwrap.community)."""
    from tfcnnwrap.community import reference_set

    columns = tuple(reference_set(references_csv, source).resolve_list(against))
    sweep = Sweep(sweep_path, host=host)
    tf_version = sweep.meta.tensorflow_version
    rows = []
    for measured in sweep.rows:
        wanted = sweep.conditions(measured.batch_size, measured.num_gpus)
        cells = tuple(reference_cell(typed, gpu, measured.model, measured.mean, wanted, strict, tf_version)
                      for typed, gpu in columns)
        rows.append(ReferenceRow(model=measured.model, batch_size=measured.batch_size, measured=measured.mean,
                                 runs_ok=measured.runs_ok, cells=cells, num_gpus=measured.num_gpus))
    of = sum(1 for r in rows if r.measured is not None)
    geomean = []
    for i, (typed, gpu) in enumerate(columns):
        ratios = [r.cells[i].ratio_pct / 100.0 for r in rows if r.cells[i].comparable and r.cells[i].ratio_pct
                  is not None]
        g = geometric_mean(ratios)
        geomean.append(GeomeanCell(name=typed, id=gpu.id, gpu_name=gpu.name,
                                   ratio_pct=g * 100.0 if g is not None else None, count=len(ratios), of=of))
    return AgainstReferences(sweep=sweep, columns=columns, rows=tuple(rows), geomean=tuple(geomean),
                             conditions=sweep.conditions(), sources=_sources(columns, rows), strict=strict)


# -- the verb --------------------------------------------------------------------------------------------

_ONLY_AB = ("fail_on_regression", "--fail-on-regression PCT only goes with sweep against sweep; drop it")
_ONLY_RANK = (("per", "--per"), ("price", "--price"), ("watts", "--watts"))


def _mode(args, dirs):
    """'against', 'rank' or 'ab', after the rules on which arguments go together."""
    against, rank = getattr(args, "against", None), getattr(args, "rank", False)
    if against is not None and rank:
        raise UsageError("--against and --rank are two views; give one of them")
    for attr, flag in _ONLY_RANK:
        if getattr(args, attr, None) is not None and not rank:
            raise UsageError("%s only goes with --rank; add --rank or drop it" % flag)
    if against is not None or rank:
        if len(dirs) > 1:
            raise UsageError("%s compares one sweep; give one SWEEP_DIR (or none: the newest under results/), "
                             "or drop it to compare sweeps" % ("--against" if against is not None else "--rank"))
        if getattr(args, "fail_on_regression", None) is not None:
            raise UsageError(_ONLY_AB[1])
        return "against" if against is not None else "rank"
    if len(dirs) == 1:
        raise UsageError(
            "comparing one sweep needs --against NAME[,NAME...] (see `tfcnnwrap references`) or --rank, "
            "or give two sweep directories to compare them"
        )
    if getattr(args, "references", None):
        raise UsageError("--references only goes with --against or --rank; drop it to compare sweeps")
    if getattr(args, "strict", False):
        raise UsageError("--strict only goes with --against or --rank; drop it to compare sweeps")
    return "ab"


def _dirs(args, mode):
    dirs = list(getattr(args, "dirs", None) or [])
    if dirs:
        _refuse_repeats(dirs[1:])
        return dirs
    return [str(p) for p in newest_sweeps(2 if mode == "ab" else 1)]


def _refuse_repeats(dirs):
    """A candidate named twice only repeats its rows (a sweep against itself stays allowed: the sanity check
    that reads 'Same environment' and +0.0%)."""
    from pathlib import Path

    seen = {}
    for d in dirs:
        key = Path(d).resolve()
        if key in seen:
            raise UsageError("candidate %s is given twice (as %s and %s); name each candidate once"
                             % (key.name, seen[key], d))
        seen[key] = d


def _regression_exit(result, pct):
    """1 (and one line naming the configurations) when a candidate regressed beyond ``pct``; else 0."""
    import sys

    from tfcnnwrap.abtext import regression_text
    from tfcnnwrap.compareab import regressions

    found = regressions(result, pct)
    if not found:
        return 0
    from tfcnnwrap import prose

    prose.write("tfcnnwrap compare: %s" % regression_text(found, pct, result.several), sys.stderr)
    return 1


def cmd_compare(args):
    import sys

    dirs = list(getattr(args, "dirs", None) or [])
    mode = _mode(args, dirs)
    dirs = _dirs(args, mode)
    fmt = getattr(args, "format", None) or "table"
    plot_path = getattr(args, "plot", None)
    if plot_path:
        from tfcnnwrap.plot import require_matplotlib

        require_matplotlib()
    host = getattr(args, "host", None)
    if mode == "rank":
        from tfcnnwrap import rank

        return rank.cmd_rank(args, dirs[0], fmt, plot_path)
    from tfcnnwrap import abtext, comparetext, plot

    code = 0
    if mode == "against":
        result = against_references(dirs[0], args.against, getattr(args, "references", None),
                                    strict=bool(getattr(args, "strict", False)), host=host,
                                    source=getattr(args, "source", None) or "all")
        comparetext.render_against(result, fmt)
        drawn = plot.plot_against if plot_path else None
    else:
        from tfcnnwrap.compareab import sweep_vs_sweeps

        result = sweep_vs_sweeps(dirs[0], dirs[1:], host=host)
        abtext.render_ab(result, fmt)
        drawn = plot.plot_ab if plot_path else None
        pct = getattr(args, "fail_on_regression", None)
        code = _regression_exit(result, pct) if pct is not None else 0
    if drawn:
        drawn(result, plot_path)
        sys.stderr.write("tfcnnwrap compare: wrote %s\n" % plot_path)
    return code
