"""What `compare` computes, as records the presenters and pages read (pure): a sweep against references, the
ranking among them, a sweep against sweeps. They live here, below compare/ and present/, so that the code that
shows them never imports the code that computes them (compare/ fills them, present/ and pages/ read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from tfcnnwrap.results.records import ChangeRow, GeomeanCell, ReferenceRow

if TYPE_CHECKING:
    from tfcnnwrap.results.comparesweep import Sweep
    from tfcnnwrap.results.references import ReferenceGPU

LEVEL_PCT = 1.0  # within this many percent of the measured GPU reads as "level with" it


@dataclass(frozen=True)
class LinkCost:
    """What the sweep's link costs against the same GPU (one identity) at another link class (issue 36): the
    measured images/sec as a share of that community entry's, x 100, per model and their geometric mean."""

    gpu: str  # the measured GPU's name
    link: str  # the sweep's link class (``gen3 x4``)
    other_link: str  # the community entry's (``gen3 x16``)
    sweeps: Optional[int]  # bundles behind the community entry
    geomean_pct: float  # over every configuration both have
    per_model: Dict[str, float]  # model -> geometric mean over its configurations (batch sizes, GPU counts)
    gpu_id: str = ""  # the community entry's id (``community-rtx2070-gen3-x16``)


@dataclass(frozen=True)
class AgainstReferences:
    sweep: Sweep
    columns: Tuple[Tuple[str, ReferenceGPU], ...]  # (typed name, its GPU) per reference column
    rows: Tuple[ReferenceRow, ...]
    geomean: Tuple[GeomeanCell, ...]  # one per column, over its comparable ratios
    conditions: dict  # the sweep's (no batch size)
    sources: Tuple[Tuple[str, Tuple[str, ...]], ...]  # (source text, (typed names citing it)) in column order
    strict: bool = False
    low_trust_left_out: int = 0  # derived/partial rows of these GPUs and models left out
    link_cost: Tuple[LinkCost, ...] = ()  # the same GPU at another link class in the community

    @property
    def measured_count(self) -> int:
        return sum(1 for r in self.rows if r.measured is not None)


@dataclass(frozen=True)
class RankRow:
    gpu: str
    geomean_pct: Optional[float]  # the ranking's figure (per watt/dollar with --per); None: not ranked
    configurations: int  # how many configurations the comparison rests on
    measured: bool = False
    gpu_id: Optional[str] = None
    speed_geomean_pct: Optional[float] = None  # measured / reference images/sec, whatever --per says
    power_w: Optional[float] = None
    price_usd: Optional[float] = None
    rank: Optional[int] = None
    why_not_ranked: Optional[str] = None
    differs: Tuple[str, ...] = ()  # with nearest: the conditions its closest figures differ in
    link: Optional[str] = None  # a community entry's link class (``gen3 x4``); None where not known
    sweeps: Optional[int] = None  # community rows: bundles behind the entry
    signers: Optional[int] = None  # community rows: distinct keys that signed them (trusted or not)
    replicated: bool = False  # community rows: independent signers' figures agree within their intervals

    @property
    def relative_pct(self) -> Optional[float]:
        """The GPU's own figure against the measured one's (x 100): above 100 it is faster."""
        return 10000.0 / self.geomean_pct if self.geomean_pct else None

    def to_dict(self, per: Optional[str], of: int) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "gpu": self.gpu,
            "geomean_pct": self.geomean_pct,
            "configurations": self.configurations,
            "measured": self.measured,
            "gpu_id": self.gpu_id,
            "rank": self.rank,
            "of": of,
            "relative_pct": self.relative_pct,
            "speed_geomean_pct": self.speed_geomean_pct,
            "per": per,
            "power_w": self.power_w,
            "price_usd": self.price_usd,
            "link": self.link,
        }
        if self.why_not_ranked:
            out["why_not_ranked"] = self.why_not_ranked
        if self.differs:
            out["conditions_differ"] = list(self.differs)
        if self.sweeps is not None:
            out.update(sweeps=self.sweeps, signers=self.signers or 0, replicated=self.replicated)
        return out


@dataclass(frozen=True)
class Ranking:
    sweep: Sweep
    rows: Tuple[RankRow, ...]  # ranked best first (measured among them), then the unranked
    per: Optional[str]  # None, "watt" or "dollar"
    of: int  # measured configurations (with an ok run)
    without_conditions: int  # reference GPUs with no figure under the sweep's conditions
    strict: bool
    measured_power_w: Optional[float] = None
    measured_price_usd: Optional[float] = None
    power_source: Optional[str] = None  # "--watts" or "telemetry" under --per watt
    low_trust_left_out: int = 0  # derived/partial rows of the sweep's models left out
    nearest: bool = False  # GPUs without a figure under the sweep's conditions ranked by their closest ones
    link_cost: Tuple[LinkCost, ...] = ()  # the same GPU at another link class in the community

    @property
    def measured_row(self) -> RankRow:
        return next(r for r in self.rows if r.measured)

    def neighbours(self) -> Tuple[Optional[RankRow], List[RankRow], Optional[RankRow]]:
        """(faster, level, slower): the nearest ranked GPU above and below the measured one beyond LEVEL_PCT,
        and those within it."""
        ranked = [(r.geomean_pct, r) for r in self.rows if r.geomean_pct is not None and not r.measured]
        level = [r for pct, r in ranked if abs(pct - 100.0) < LEVEL_PCT]
        faster = [r for pct, r in ranked if pct <= 100.0 - LEVEL_PCT]
        slower = [r for pct, r in ranked if pct >= 100.0 + LEVEL_PCT]
        return (faster[-1] if faster else None), level, (slower[0] if slower else None)


@dataclass(frozen=True)
class SweepComparison:
    baseline: Sweep
    candidate: Sweep
    rows: Tuple[ChangeRow, ...]
    geomean_change_pct: Optional[float]  # over the configurations with a mean on both sides
    pairs: int
    environment: Tuple[Tuple[str, Any, Any], ...]  # (what, baseline's, candidate's) for what differs: GPU, driver, ...
    candidate_dir: Optional[str] = None  # set when several candidates follow one baseline
    geomean: Optional[GeomeanChange] = None  # its interval, verdict and spread (None: no pair to compare)


@dataclass(frozen=True)
class GeomeanChange:
    """A candidate's geometric mean of candidate / baseline over its configurations, with its 95% interval
    on the log scale (None: a configuration under 2 runs a side) and hyperfine's spread of the ratio."""

    ratio: float
    low_pct: Optional[float] = None
    high_pct: Optional[float] = None
    significant: Optional[bool] = None
    spread: Optional[float] = None  # +- of the ratio: ratio x sqrt(sum of squared relative stds) / k


@dataclass(frozen=True)
class ABResult:
    baseline: Sweep
    comparisons: Tuple[SweepComparison, ...]

    @property
    def several(self) -> bool:
        return len(self.comparisons) > 1


# what `compare` computes in one of its three views (compare/against.py's compute), for any renderer
Comparison = Union[AgainstReferences, ABResult, Ranking]
