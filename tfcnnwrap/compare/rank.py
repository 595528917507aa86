"""`compare SWEEP --rank`: the measured GPU placed among every reference GPU that has a figure under the
sweep's conditions for at least one of its configurations.

Each reference is scored by the geometric mean, over the configurations it shares with the sweep, of
measured / reference images/sec (x 100: ``geomean_pct``; under 100 the reference is faster), the same
figure as `--against`'s geomean row. Shared means a figure under exactly the sweep's conditions (batch
size included: a † stand-in never counts; `--strict` also requires the sweep's TensorFlow X.Y where both
are known). `--per watt` and `--per dollar` score the geometric mean of (measured / W) / (reference /
W_ref), i.e. measured / reference x W_ref / W, with W the measured GPU's mean power draw from telemetry
(or `--watts`) and W_ref the reference's board power; or with the price (`--price`) and the launch price.
References without a published power or price are listed as such, not ranked.

What the link costs (issue 36, item 3; `link_cost`, for `--rank` and `--against` alike): a sweep whose link class
is known (``gen3 x4``) against the same GPU (one identity, results/gpuid.py) at each other link class the
community has (``gen3 x16``), by the same shared ratios, per model and as their geometric mean.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from tfcnnwrap.compare.community import entry_id, reference_set
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.closest import closest_result, low_trust_left_out
from tfcnnwrap.results.comparesweep import Sweep, config_of, geometric_mean
from tfcnnwrap.results.comparison import LinkCost, Ranking, RankRow
from tfcnnwrap.results.gpuid import gpu_identity, link_class
from tfcnnwrap.results.references import CONDITIONS

if TYPE_CHECKING:
    from pathlib import Path

    from tfcnnwrap.results.references import ReferenceGPU

Config = Tuple[str, int, Optional[int], Optional[str]]  # (model, batch_size, num_gpus, data): comparesweep.config_of


def measured_name(sweep: Sweep) -> str:
    return sweep.gpu_label() or ("CPU" if sweep.meta.on_cpu else "GPU (name not recorded)")


def shared_ratios(
    gpu: ReferenceGPU, sweep: Sweep, strict: bool, include_low_trust: bool = False, nearest: bool = False
) -> Tuple[List[Tuple[Config, float]], Tuple[str, ...]]:
    """([(config, measured / reference)], differing condition names) over the configurations ``gpu`` has a
    figure for under exactly the sweep's conditions, or with ``nearest`` its closest figure for each."""
    out: List[Tuple[Config, float]] = []
    differing: List[str] = []
    for row in sweep.rows:
        if row.mean is None:
            continue
        wanted = sweep.conditions(row.batch_size, row.num_gpus)
        result, differs = closest_result(
            gpu, row.model, wanted, strict, sweep.meta.tensorflow_version, include_low_trust
        )
        # a total over another GPU count is no stand-in for this one, not even the nearest
        if result is not None and (not differs or (nearest and "num_gpus" not in differs)):
            out.append((config_of(row), row.mean / result.images_per_sec))
            differing += [d for d in differs if d not in differing]
    return out, tuple(c for c in CONDITIONS if c in differing)


def _measured_power(sweep: Sweep, watts: Optional[float]) -> Callable[[Optional[Config]], float]:
    """config -> the measured GPU's power (``--watts``, else the config's telemetry, else the sweep's)."""
    overall = watts or sweep.mean_power_w()
    if overall is None:
        raise UsageError(
            "--per watt needs the measured GPU's power: this sweep's runs recorded no power "
            "telemetry (mean_power_w); give --watts W (e.g. its board power)"
        )
    return lambda config: watts or sweep.mean_power_w(config) or overall


def _reference_row(
    gpu: ReferenceGPU,
    pairs: Sequence[Tuple[Config, float]],
    per: Optional[str],
    power_of: Optional[Callable[[Optional[Config]], float]],
    price: Optional[float],
    differs: Iterable[str] = (),
) -> RankRow:
    """The RankRow of one reference GPU over its shared (config, ratio) pairs."""
    speed = geometric_mean([ratio for _, ratio in pairs]) * 100.0  # type: ignore[operator]  # pairs: never empty
    row = RankRow(
        gpu=gpu.full_name,
        gpu_id=gpu.id,
        geomean_pct=speed,
        configurations=len(pairs),
        speed_geomean_pct=speed,
        power_w=gpu.power_w,
        price_usd=gpu.price_usd,
        differs=tuple(differs),
        link=gpu.link,
        sweeps=gpu.sweeps,
        signers=gpu.signers,
        replicated=gpu.replicated,
    )
    if per is None:
        return row
    if per == "watt":
        if gpu.power_w is None:
            return replace(row, geomean_pct=None, why_not_ranked="no published board power")
        assert power_of is not None  # per watt: rank() made it
        scaled = [ratio * gpu.power_w / power_of(config) for config, ratio in pairs]
    else:
        if gpu.price_usd is None:
            return replace(row, geomean_pct=None, why_not_ranked="no published launch price")
        assert price is not None  # per dollar: rank() refused a missing --price
        scaled = [ratio * gpu.price_usd / price for _, ratio in pairs]
    return replace(row, geomean_pct=geometric_mean(scaled) * 100.0)  # type: ignore[operator]  # never empty


def rank(
    sweep_path: Union[Path, str],
    per: Optional[str] = None,
    price: Optional[float] = None,
    watts: Optional[float] = None,
    references_csv: Optional[str] = None,
    strict: bool = False,
    host: Optional[str] = None,
    include_low_trust: bool = False,
    nearest: bool = False,
    source: str = "all",
) -> Ranking:
    _check_rank_flags(per, price, watts, strict, nearest)
    sweep = Sweep(sweep_path, host=host, data="synthetic")  # both kinds run: the references' terms
    # built-in and/or the library's community results measured on the sweep's device, its own bundles left out
    references = reference_set(references_csv, source, sweep=sweep, device="cpu" if sweep.meta.on_cpu else "gpu")
    of = sum(1 for r in sweep.rows if r.mean is not None)
    if not of:
        raise UsageError(sweep.no_ok_run() + ("" if sweep.kind else "; run or resume it before ranking it"))
    power_of = _measured_power(sweep, watts) if per == "watt" else None
    rows, without = [], 0
    for gpu in references:
        pairs, differs = shared_ratios(gpu, sweep, strict, include_low_trust, nearest)
        if not pairs:
            without += 1
            continue
        rows.append(_reference_row(gpu, pairs, per, power_of, price, differs))
    measured_power = power_of(None) if power_of else None
    rows.append(
        RankRow(
            gpu=measured_name(sweep),
            geomean_pct=100.0,
            configurations=of,
            measured=True,
            speed_geomean_pct=100.0,
            power_w=measured_power,
            price_usd=price if per == "dollar" else None,
        )
    )
    ranked = sorted((r for r in rows if r.geomean_pct is not None), key=lambda r: (r.geomean_pct, not r.measured))
    ranked = [_with_rank(r, i) for i, r in enumerate(ranked, 1)]
    unranked = sorted((r for r in rows if r.geomean_pct is None), key=lambda r: r.speed_geomean_pct or 0.0)
    return Ranking(
        sweep=sweep,
        rows=tuple(ranked + unranked),
        per=per,
        of=of,
        without_conditions=without,
        strict=strict,
        measured_power_w=measured_power,
        measured_price_usd=price if per == "dollar" else None,
        power_source=("--watts" if watts else "telemetry") if per == "watt" else None,
        low_trust_left_out=low_trust_left_out(list(references), {r.model for r in sweep.rows}, include_low_trust),
        nearest=nearest,
        link_cost=link_cost(sweep, references, strict, include_low_trust),
    )


# -- what the link costs (issue 36): the same GPU at another link class ------------------------------------


def _per_model(pairs: List[Tuple[Config, float]]) -> Dict[str, float]:
    """model -> geometric mean x 100 of its ratios (one per batch size and GPU count), in the sweep's order."""
    ratios: Dict[str, List[float]] = {}
    for config, ratio in pairs:
        ratios.setdefault(config[0], []).append(ratio)
    return {model: geometric_mean(values) * 100.0 for model, values in ratios.items()}  # type: ignore[operator]  # ratios > 0


def link_cost(
    sweep: Sweep, references: Iterable[ReferenceGPU], strict: bool = False, include_low_trust: bool = False
) -> Tuple[LinkCost, ...]:
    """One LinkCost per community entry of the sweep's GPU at another link class with a figure under the
    sweep's conditions, the most sweeps first; () when the sweep's link or GPU name is unknown."""
    link = link_class(sweep.link())
    name = sweep.gpu_label()
    if link is None or not name or sweep.meta.on_cpu or "," in name:  # several GPU models: no one identity
        return ()
    identity = gpu_identity(name)
    costs = []
    for gpu in references:
        other = gpu.link
        if gpu.origin != "community" or not other or other == link or gpu.id != entry_id(identity, other):
            continue
        pairs, _differs = shared_ratios(gpu, sweep, strict, include_low_trust)
        if not pairs:
            continue
        costs.append(
            LinkCost(
                gpu=measured_name(sweep),
                link=link,
                other_link=other,
                sweeps=gpu.sweeps,
                geomean_pct=geometric_mean(ratio for _, ratio in pairs) * 100.0,  # type: ignore[operator]  # pairs
                per_model=_per_model(pairs),
                gpu_id=gpu.id,
            )
        )
    return tuple(sorted(costs, key=lambda c: (-(c.sweeps or 0), c.other_link)))


def _check_rank_flags(
    per: Optional[str], price: Optional[float], watts: Optional[float], strict: bool, nearest: bool
) -> None:
    """UsageError for flags that cannot go together, before any work."""
    if per == "dollar" and price is None:
        raise UsageError("--per dollar needs --price USD: what the measured GPU cost")
    # a price or power the ranking would not use must not look as if it had been
    if price is not None and per != "dollar":
        raise UsageError("--price ranks per dollar only: add --per dollar, or drop --price")
    if watts is not None and per != "watt":
        raise UsageError("--watts ranks per watt only: add --per watt, or drop --watts")
    if nearest and strict:
        raise UsageError("--nearest ranks by the closest figures, --strict by exact ones only; give one of them")


def _with_rank(row: RankRow, rank_number: int) -> RankRow:
    return replace(row, rank=rank_number)
