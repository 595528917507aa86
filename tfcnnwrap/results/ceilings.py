"""Physical ceilings and outliers: can a GPU have trained a model at a given images/sec at all?

The ceiling of a figure is ``peak TFLOPS x devices / training cost per image``:

* the peak is gpus.csv's, each with its source, at the highest boost clock the maker publishes: for an fp32
  figure the fp32 peak, or the TF32 tensor-core peak where the GPU has one (TensorFlow 2.4+ runs fp32 products
  on it); for fp16 (and bf16) the higher of the fp16 peak (tensor cores where the GPU has them) and the fp32
  one, none where the fp16 peak is not known. The peak belongs to the GPU's identity (results/gpuid.py), so
  every spelling of a GPU, and TensorFlow's device-line name, has it;
* the cost is a lower bound: 2 FLOPs per multiply-add of the model's forward pass (data/models.csv, each count
  with its source), i.e. one forward pass' arithmetic for the whole training step. A direct training step is
  about three forward passes (6 FLOPs per multiply-add), but cuDNN's Winograd and FFT convolutions do several
  times fewer multiplications than the direct count: the seed's RTX 2070 ran alexnet at 2,259 images/sec,
  3.5 GFLOPs per image at the card's peak, under the 5 GFLOPs of a direct forward and backward pass. A ceiling
  must never refuse a real figure; tests hold every published reference row under its ceiling.

A figure above its ceiling is *implausible*: `verify` says not verified (exit 1) with a finding naming the
ceiling, and `import`, `pull` and `site`, which share verify, refuse it. A figure more than OUTLIER_FACTOR
over the best that the built-in references publish for the same GPU, model, precision and GPU count is an
*outlier*: flagged in verify, the library and the site, not refused. A GPU with no known peak or a model
with no known cost is not checked, and verify says so.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from tfcnnwrap.boundedread import read_bounded
from tfcnnwrap.results.bundlerecords import Bundle, Conditions
from tfcnnwrap.results.gpuid import builtin_references, gpu_identity, identity_of, references_of
from tfcnnwrap.results.references import DATA_DIR, Facts

MODELS_FILE = DATA_DIR / "models.csv"
FLOPS_PER_MULTIPLY_ADD = 2.0  # the lower-bound training cost: one forward pass' arithmetic (see above)
OUTLIER_FACTOR = 1.25  # more than 25 % over the best published figure of the same GPU and conditions
_HALF = ("fp16", "bf16")


@dataclass(frozen=True)
class ModelCost:
    model: str
    input_size: int
    forward_gmacs: float  # multiply-adds of one forward pass, in billions
    source: str

    @property
    def training_gflops(self) -> float:
        """The lower-bound cost of one image's training step, in GFLOPs."""
        return FLOPS_PER_MULTIPLY_ADD * self.forward_gmacs


@dataclass(frozen=True)
class Ceiling:
    images_per_sec: float
    peak_tflops: float
    devices: int
    cost: ModelCost
    peak_source: str

    def describe(self) -> str:
        return (
            "%.0f images/sec (peak %.1f TFLOPS x %d device%s / %.2f GFLOPs per image, 2 x %.2f G "
            "multiply-adds of %s's forward pass)"
            % (
                self.images_per_sec,
                self.peak_tflops,
                self.devices,
                "" if self.devices == 1 else "s",
                self.cost.training_gflops,
                self.cost.forward_gmacs,
                self.cost.model,
            )
        )


@lru_cache(maxsize=1)
def model_costs() -> Dict[str, ModelCost]:
    """{model: ModelCost} from data/models.csv."""
    text = read_bounded(MODELS_FILE, 1 << 20, "the model costs").decode("utf-8")  # type: ignore[arg-type]
    out = {}
    for row in csv.DictReader(io.StringIO(text, newline="")):
        out[row["model"].strip()] = ModelCost(
            row["model"].strip(), int(row["input_size"]), float(row["forward_gmacs"]), row["source"].strip()
        )
    return out


def peak(gpu: str, precision: str) -> Optional[Tuple[float, str]]:
    """(peak TFLOPS, its source) of the GPU ``gpu`` names for ``precision``; None where none is known."""
    found = []
    for ref in references_of(gpu_identity(gpu)):
        facts = ref.facts
        fp32 = Facts.number(facts.fp32_tflops)
        candidates = [(fp32, facts.fp32_source), (Facts.number(facts.tf32_tflops), facts.tf32_source)]
        if precision in _HALF:
            fp16 = Facts.number(facts.fp16_tflops)
            candidates = [(fp16, facts.fp16_source)] + (candidates[:1] if fp16 is not None else [])
        found += [(value, source) for value, source in candidates if value is not None]
    return max(found) if found else None


def ceiling(gpu: str, model: str, precision: str, devices: int) -> Optional[Ceiling]:
    """The most images/sec ``devices`` of the GPU ``gpu`` names can train ``model`` at; None where its peak
    or the model's cost is not known."""
    cost = model_costs().get(model)
    top = peak(gpu, precision or "fp32")
    if cost is None or top is None:
        return None
    tflops, source = top
    return Ceiling(tflops * 1000.0 * max(1, devices) / cost.training_gflops, tflops, max(1, devices), cost, source)


def published_best(gpu: str, model: str, precision: str, num_gpus: int) -> Optional[float]:
    """The best figure the built-in references publish for the GPU, model, precision and GPU count."""
    return _best_table().get((gpu_identity(gpu), model, precision or "fp32", num_gpus))


@lru_cache(maxsize=1)
def _best_table() -> Dict[Tuple[str, str, str, int], float]:
    best: Dict[Tuple[str, str, str, int], float] = {}
    for ref in builtin_references():  # the same built-in set the identity resolves against
        identity = identity_of(ref)
        for r in ref.results:
            key = (identity, r.model, r.precision, r.num_gpus)
            best[key] = max(best.get(key, 0.0), r.images_per_sec)
    return best


def is_outlier(gpu: str, model: str, precision: str, num_gpus: int, value: float) -> bool:
    best = published_best(gpu, model, precision, num_gpus)
    return best is not None and value > best * OUTLIER_FACTOR


def _workers(bundle: Bundle) -> int:
    """A distributed job's workers, as verify checks them against each log (the job's global batch over its
    per-device batch): the conditions' ``cluster.workers``, never a run's own ``cluster.tasks`` (which verify
    does not check, and which counts parameter servers); 1 for a fleet, whose hosts each run their own job."""
    workers = bundle.conditions.workers
    return workers if workers is not None and workers > 1 else 1


def gpu_names(cond: Conditions) -> List[str]:
    """The GPUs a bundle lists (``gpus``, else ``gpu`` split at commas): a run may have run on any of them."""
    return list(cond.listed_gpus()) or [""]


def bundle_ceiling(names: List[str], model: str, precision: str, devices: int) -> Optional[Ceiling]:
    """The highest ceiling of the GPUs ``names`` (a run may have run on any); None where one is not known."""
    found = [ceiling(name, model, precision, devices) for name in names]
    known = [c for c in found if c is not None]
    return max(known, key=lambda c: c.images_per_sec) if known and len(known) == len(found) else None


def _configs(bundle: Bundle) -> Dict[Tuple[str, int], List[Tuple[str, float]]]:
    """{(model, devices): [(where, images/sec)]} of a bundle's ok runs with a figure."""
    out: Dict[Tuple[str, int], List[Tuple[str, float]]] = {}
    workers = _workers(bundle)
    for run in bundle.runs:
        if not run.ok or run.images_per_sec is None:
            continue
        gpus = run.num_gpus if run.num_gpus is not None and run.num_gpus > 1 else 1
        count = gpus * (workers if run.distributed else 1)
        out.setdefault((run.model, count), []).append((run.where, float(run.images_per_sec)))
    return out


def implausible(bundle: Bundle) -> List[str]:
    """One finding per run whose figure is above its physical ceiling (a bundle read by share/bundle.py)."""
    cond = bundle.conditions
    gpu, precision = cond.gpu, cond.precision or "fp32"
    if cond.on_cpu:
        return []
    findings = []
    names = gpu_names(cond)
    for (model, devices), runs in _configs(bundle).items():
        top = bundle_ceiling(names, model, precision, devices)
        for where, value in runs:
            if top is not None and value > top.images_per_sec:
                findings.append(
                    "%s: implausible: %.2f images/sec is above the physical ceiling of %s for %s "
                    "(%s)" % (where, value, gpu, precision, top.describe())
                )
    return findings


def notes(bundle: Bundle) -> List[str]:
    """What verify says beside its verdict: outliers, and a GPU or model whose ceiling is not known."""
    cond = bundle.conditions
    gpu, precision = cond.gpu, cond.precision or "fp32"
    if cond.on_cpu:
        return []
    out = []
    configs = _configs(bundle)
    if configs and any(peak(name, precision) is None for name in gpu_names(cond)):
        out.append(
            "no known peak TFLOPS for %s (%s): its figures are not checked against a physical ceiling"
            % (gpu, precision)
        )
    for (model, devices), runs in sorted(configs.items()):
        if model not in model_costs():
            out.append("no known training cost for model %s: its figures are not checked against a ceiling" % model)
        best = published_best(gpu, model, precision, devices)
        mean = sum(v for _, v in runs) / len(runs)
        if best is not None and mean > best * OUTLIER_FACTOR:
            out.append(
                "outlier: %s on %d GPU%s at %.2f images/sec is %.0f%% over the best published figure for "
                "%s (%.2f)" % (model, devices, "" if devices == 1 else "s", mean, (mean / best - 1) * 100, gpu, best)
            )
    return out
