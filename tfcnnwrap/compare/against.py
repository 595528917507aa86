"""`compare`: a sweep against published references, sweep against sweep(s), or a sweep ranked among every
reference GPU. Figures only: how they read (cells such as ``203.99 (86.7%)``, the dagger, the notes) is
comparetext's (and ranktext's) job.

Against references each measured configuration meets each reference GPU's closest published figure for the
sweep's conditions (precision, GPU count, variable update, data, XLA, batch size: `Plan.conditions()`); one
taken under other conditions is not comparable, is marked †, and stays out of the geometric mean;
``strict`` leaves it out altogether, and with it a figure of another TensorFlow X.Y when both are known.
Sweep against sweep: compare.ab. Ranking: rank.

The verb: cli/compare.py builds one `CompareArgs`; `compute` checks which arguments go together and gives the
one result (a `Comparison`), which `cmd_compare` renders as a table, Markdown, CSV or JSON and
pages/comparepage.py as a page; `finish` then applies `--fail-on-regression` and draws `--plot` for either.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, List, Literal, Optional, Tuple, Union

from tfcnnwrap import prose
from tfcnnwrap.compare import rank
from tfcnnwrap.compare.ab import regressions, sweep_vs_sweeps, unmeasured
from tfcnnwrap.compare.community import print_provenance, reference_set
from tfcnnwrap.errors import UsageError
from tfcnnwrap.present import abtext, comparetext, plot, plothistory, ranktext
from tfcnnwrap.present.outfile import written_to
from tfcnnwrap.present.plotrank import plot_rank
from tfcnnwrap.results.closest import low_trust_left_out, reference_cell
from tfcnnwrap.results.comparesweep import Sweep, geometric_mean, newest_sweeps
from tfcnnwrap.results.comparison import ABResult, AgainstReferences, Comparison, Ranking
from tfcnnwrap.results.records import GeomeanCell, ReferenceRow

if TYPE_CHECKING:
    from tfcnnwrap.results.references import ReferenceGPU

# -- against references ----------------------------------------------------------------------------------


def _sources(
    columns: Tuple[Tuple[str, ReferenceGPU], ...], rows: List[ReferenceRow]
) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """The sources of the figures the table shows (a GPU's library may cite hundreds), in column order."""
    cited: dict = {}
    for i, (typed, _gpu) in enumerate(columns):
        for row in rows:
            source = row.cells[i].source
            if source:
                names = cited.setdefault(source, [])
                if typed not in names:
                    names.append(typed)
    return tuple((source, tuple(names)) for source, names in cited.items())


def against_references(
    sweep_path: Union[Path, str],
    against: str,
    references_csv: Optional[str] = None,
    strict: bool = False,
    host: Optional[str] = None,
    include_low_trust: bool = False,
    source: str = "all",
) -> AgainstReferences:
    """The sweep's measured rows against each named reference GPU, and each one's geometric mean.
    ``source``: builtin, community (the library's results) or all (tfcnnwrap.compare.community)."""
    sweep = Sweep(sweep_path, host=host, data="synthetic")  # both kinds run: the references' terms
    references = reference_set(references_csv, source, sweep=sweep)
    columns = tuple(references.resolve_list(against))
    tf_version = sweep.meta.tensorflow_version
    rows = []
    for measured in sweep.rows:
        wanted = sweep.conditions(measured.batch_size, measured.num_gpus)
        cells = tuple(
            reference_cell(typed, gpu, measured.model, measured.mean, wanted, strict, tf_version, include_low_trust)
            for typed, gpu in columns
        )
        rows.append(
            ReferenceRow(
                model=measured.model,
                batch_size=measured.batch_size,
                measured=measured.mean,
                runs_ok=measured.runs_ok,
                cells=cells,
                num_gpus=measured.num_gpus,
            )
        )
    of = sum(1 for r in rows if r.measured is not None)
    geomean = []
    for i, (typed, gpu) in enumerate(columns):
        column = [r.cells[i] for r in rows]
        ratios = [c.ratio_pct / 100.0 for c in column if c.comparable and c.ratio_pct is not None]
        g = geometric_mean(ratios)
        geomean.append(
            GeomeanCell(
                name=typed,
                id=gpu.id,
                gpu_name=gpu.name,
                ratio_pct=g * 100.0 if g is not None else None,
                count=len(ratios),
                of=of,
            )
        )
    return AgainstReferences(
        sweep=sweep,
        columns=columns,
        rows=tuple(rows),
        geomean=tuple(geomean),
        conditions=sweep.conditions(),
        sources=_sources(columns, rows),
        strict=strict,
        low_trust_left_out=low_trust_left_out([g for _, g in columns], {r.model for r in rows}, include_low_trust),
        # every entry of the sweep's GPU at another link, named in --against or not
        link_cost=rank.link_cost(sweep, references, strict, include_low_trust),
    )


# -- the verb ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareArgs:
    """What `compare` is asked, typed (cli/compare.py builds it from the command line once)."""

    dirs: Tuple[str, ...] = ()  # none: the newest sweep(s) under results/
    against: Optional[str] = None  # reference GPUs, comma-separated as typed
    rank: bool = False
    references: Optional[str] = None  # the user's own references CSV
    source: Literal["builtin", "community", "all"] = "all"
    strict: bool = False
    include_low_trust: bool = False
    nearest: bool = False
    per: Optional[Literal["watt", "dollar"]] = None
    price: Optional[float] = None
    watts: Optional[float] = None
    fail_on_regression: Optional[float] = None  # PCT
    host: Optional[str] = None
    format: str = "table"  # table, markdown, csv, json or html
    out: Optional[str] = None
    plot: Optional[str] = None


_ONLY_AB = ("fail_on_regression", "--fail-on-regression PCT only goes with sweep against sweep; drop it")
_ONLY_RANK = (("per", "--per"), ("price", "--price"), ("watts", "--watts"))


def _mode(args: CompareArgs) -> str:
    """'against', 'rank' or 'ab', after the rules on which arguments go together."""
    against, rank = args.against, args.rank
    if against is not None and rank:
        raise UsageError("--against and --rank are two views; give one of them")
    for attr, flag in _ONLY_RANK:
        if getattr(args, attr) is not None and not rank:
            raise UsageError("%s only goes with --rank; add --rank or drop it" % flag)
    if args.nearest and not rank:
        raise UsageError("--nearest only goes with --rank; add --rank or drop it")
    if args.include_low_trust and against is None and not rank:
        raise UsageError("--include-low-trust only goes with --against or --rank; drop it to compare sweeps")
    if against is not None or rank:
        if len(args.dirs) > 1:
            raise UsageError(
                "%s compares one sweep; give one SWEEP_DIR (or none: the newest under results/), "
                "or drop it to compare sweeps" % ("--against" if against is not None else "--rank")
            )
        if args.fail_on_regression is not None:
            raise UsageError(_ONLY_AB[1])
        return "against" if against is not None else "rank"
    if len(args.dirs) == 1:
        raise UsageError(
            "comparing one sweep needs --against NAME[,NAME...] (see `tfcnnwrap references`) or --rank, "
            "or give two sweep directories to compare them"
        )
    if args.references:
        raise UsageError("--references only goes with --against or --rank; drop it to compare sweeps")
    if args.strict:
        raise UsageError("--strict only goes with --against or --rank; drop it to compare sweeps")
    return "ab"


def _dirs(args: CompareArgs, mode: str) -> List[str]:
    dirs = list(args.dirs)
    if dirs:
        _refuse_repeats(dirs[1:])
        return dirs
    return [str(p) for p in newest_sweeps(2 if mode == "ab" else 1)]


def _refuse_repeats(dirs: List[str]) -> None:
    """A candidate named twice only repeats its rows (a sweep against itself stays allowed: the sanity check
    that reads 'Same environment' and +0.0%)."""
    seen: dict = {}
    for d in dirs:
        key = Path(d).resolve()
        if key in seen:
            raise UsageError(
                "candidate %s is given twice (as %s and %s); name each candidate once" % (key.name, seen[key], d)
            )
        seen[key] = d


def compute(args: CompareArgs) -> Comparison:
    """What `compare` computes for ``args``: a sweep against references, its ranking, or sweep against sweeps;
    every renderer (text and JSON here, HTML in pages/comparepage.py) shows this one result."""
    mode = _mode(args)
    dirs = _dirs(args, mode)
    if args.plot:
        plot.require_matplotlib()
    if mode == "rank":
        return rank.rank(
            dirs[0],
            per=args.per,
            price=args.price,
            watts=args.watts,
            references_csv=args.references,
            strict=args.strict,
            host=args.host,
            include_low_trust=args.include_low_trust,
            nearest=args.nearest,
            source=args.source,
        )
    if mode == "against":
        assert args.against is not None  # _mode: against
        return against_references(
            dirs[0],
            args.against,
            args.references,
            strict=args.strict,
            host=args.host,
            include_low_trust=args.include_low_trust,
            source=args.source,
        )
    return sweep_vs_sweeps(dirs[0], dirs[1:], host=args.host)


def _regression_exit(result: ABResult, pct: float) -> int:
    """1 (and one line naming the configurations) when a candidate regressed beyond ``pct`` or has a
    configuration without a single ok run; else 0."""
    found, missing = regressions(result, pct), unmeasured(result)
    reasons = ([abtext.regression_text(found, pct, result.several)] if found else []) + (
        [abtext.unmeasured_text(missing, result.several)] if missing else []
    )
    if not reasons:
        return 0

    prose.write("tfcnnwrap compare: %s" % "; and ".join(reasons), sys.stderr)
    return 1


def finish(result: Comparison, args: CompareArgs) -> int:
    """After any renderer: `--fail-on-regression`'s verdict, then `--plot`; the exit code."""
    code = 0
    if isinstance(result, ABResult) and args.fail_on_regression is not None:
        code = _regression_exit(result, args.fail_on_regression)
    if args.plot:
        if isinstance(result, Ranking):
            plot_rank(result, args.plot)
        elif isinstance(result, AgainstReferences):
            plot.plot_against(result, args.plot)
        elif len(result.comparisons) > 1:  # more than two sweeps: each configuration over the sweeps' dates
            plothistory.plot_history(result, args.plot)
        else:
            plot.plot_ab(result, args.plot)
        sys.stderr.write("tfcnnwrap compare: wrote %s\n" % args.plot)
    return code


def render_text(result: Comparison, fmt: str) -> None:
    """The table, Markdown, CSV or JSON of a result (present/ says how each reads)."""
    if isinstance(result, Ranking):
        ranktext.render_rank(result, fmt)
        if fmt in ("table", "markdown"):
            print_provenance(result, fmt)
    elif isinstance(result, AgainstReferences):
        comparetext.render_against(result, fmt)
    else:
        abtext.render_ab(result, fmt)


def cmd_compare(args: CompareArgs) -> int:
    """`compare` in every format but HTML (pages/comparepage.py draws that one from the same result)."""
    if args.out:
        return written_to(args.out, lambda: cmd_compare(replace(args, out=None)))
    result = compute(args)
    render_text(result, args.format)
    return finish(result, args)
