"""What a run's nvidia-smi samples say (pure): the lines of a ``.gpu.csv`` file read into numbers, and the
per-run summary (temperature, power, SM clock, throttle verdict and reasons, PCIe link).

A samples file starts with a header row naming its fields (issue 13); a file from before that has none and
holds the seven legacy fields in their fixed order.

Throttle rule (``throttle_verdict``): only *busy* samples count, those with utilization.gpu >= 50 % (all
samples when utilization is not reported), so that the idle start (TensorFlow importing, building the
graph) and the idle end do not look like clock drops. The early-run level is the median SM clock of the
first ``k`` busy samples, ``k = max(5, ceil(10 % of the busy samples))``. The run counts as throttled when
the median of any later window of ``k`` consecutive busy samples is more than 10 % below that level; a
single-sample dip does not count. With fewer than ``2 k`` busy samples there is no clock verdict.

The driver's own throttle reasons (``clocks_event_reasons.active``, ``clocks_throttle_reasons.active`` on
older drivers: a bit mask) are listed when active in at least two busy samples (one, for a shorter run).
A thermal or hardware slowdown makes the run ``throttled`` whatever the clocks did; ``sw_power_cap`` is
listed but alone does not, because a card at full load sits at its power limit by design and its clocks
then tell whether it cost anything.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

LEGACY_FIELDS: Tuple[str, ...] = (
    "timestamp",
    "index",
    "temperature.gpu",
    "clocks.sm",
    "power.draw",
    "utilization.gpu",
    "memory.used",
)
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
PCIE_FIELDS = ("pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max")
# query field -> the sample's key
KEYS = {
    "timestamp": "timestamp",
    "index": "index",
    "temperature.gpu": "temp_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "power.draw": "power_w",
    "utilization.gpu": "util_pct",
    "memory.used": "memory_used_mib",
    "clocks_event_reasons.active": "reasons",
    "clocks_throttle_reasons.active": "reasons",
    "pcie.link.gen.current": "pcie_gen",
    "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width",
    "pcie.link.width.max": "pcie_width_max",
}
# nvidia-smi's bits of clocks_event_reasons.active (nvml.h, nvmlClocksEventReason*)
REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
BENIGN_REASONS = frozenset(["gpu_idle", "applications_clocks_setting", "sync_boost", "display_clock_setting"])
LISTED_ONLY_REASONS = frozenset(["sw_power_cap"])  # named, but not alone a throttled run
BUSY_UTIL_PCT = 50.0
THROTTLE_DROP = 0.10
EARLY_MIN_SAMPLES = 5
EARLY_FRACTION = 0.10

_MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[gpu is lost]"}


def sample_number(text: str) -> Optional[float]:
    text = text.strip()
    if text.lower() in _MISSING:
        return None
    try:
        value = int(text, 16) if text[:2].lower() == "0x" else float(text)
    except ValueError:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # "nan" from a GPU that cannot tell: skipped for this field only
    return int(value) if float(value).is_integer() else value


def header_fields(line: str) -> Optional[Tuple[str, ...]]:
    """The query fields a header row names (units such as `` [MHz]`` dropped), or None for a data line."""
    parts = [p.strip().split(" [", 1)[0].strip() for p in line.split(",")]
    return tuple(parts) if parts and parts[0] == "timestamp" else None


def parse_sample_line(line: str, fields: Sequence[str] = LEGACY_FIELDS) -> Optional[Dict[str, Any]]:
    """One CSV line of the sampler -> dict of numbers (None where nvidia-smi says N/A), or None if the line
    is not a sample (a header, a cut-off last line, an error message)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(fields):
        return None
    sample: Dict[str, Any] = {KEYS.get(name, name): sample_number(text) for name, text in zip(fields[1:], parts[1:])}
    if sample.get("index") is None:
        return None
    sample["timestamp"] = parts[0]
    sample["index"] = int(sample["index"])
    for key in ("temp_c", "sm_clock_mhz", "power_w", "util_pct", "memory_used_mib"):
        sample.setdefault(key, None)
    return sample


def parse_lines(lines: Iterable[str]) -> Tuple[List[Dict[str, Any]], int]:
    """(samples, skipped): every sample of a file's lines, the header row (if any) naming the fields."""
    fields, samples, skipped = LEGACY_FIELDS, [], 0
    for line in lines:
        if not line.strip():
            continue
        named = header_fields(line)
        if named is not None:
            fields = named
            continue
        sample = parse_sample_line(line, fields)
        if sample is None and fields is not LEGACY_FIELDS:
            sample = parse_sample_line(line)  # an nvidia-smi that answered the legacy fields only
        if sample is None:
            skipped += 1
        else:
            samples.append(sample)
    return samples, skipped


def reason_names(mask: int) -> List[Any]:
    return [name for bit, name in REASON_BITS if mask & bit]


def _values(samples: List[Any], key: str) -> List[Any]:
    return [s[key] for s in samples if s.get(key) is not None]


def _rounded(value: Optional[float], digits: int = 1) -> Optional[float]:
    return None if value is None else round(value, digits)


def _max(values: Sequence[float]) -> Optional[float]:
    return max(values) if values else None


def _mean(values: List[Any]) -> Optional[float]:
    return statistics.mean(values) if values else None


def throttle_verdict(clocks: List[Any]) -> Tuple[Optional[bool], Optional[float], Optional[float]]:
    """``(throttled, early_level, lowest_window_median)`` for the SM clocks of the busy samples, in order.

    ``throttled`` is None when there are too few samples to tell (see the module docstring).
    """
    k = max(EARLY_MIN_SAMPLES, int(math.ceil(EARLY_FRACTION * len(clocks))))
    if len(clocks) < k:
        return None, None, None
    early = statistics.median(clocks[:k])
    later = clocks[k:]
    if len(later) < k:
        return None, early, None
    lowest = min(statistics.median(later[i : i + k]) for i in range(len(later) - k + 1))
    return lowest < (1.0 - THROTTLE_DROP) * early, early, lowest


def active_reasons(busy: List[Any]) -> Optional[List[str]]:
    """The non-benign throttle reasons active in at least two busy samples (one in a run of fewer than
    four), in bit order; None when the driver reported no reasons at all."""
    masks = _values(busy, "reasons")
    if not masks:
        return None
    needed = 2 if len(masks) >= 4 else 1
    counts: dict = {}
    for mask in masks:
        for name in reason_names(int(mask)):
            counts[name] = counts.get(name, 0) + 1
    return [name for _, name in REASON_BITS if counts.get(name, 0) >= needed and name not in BENIGN_REASONS]


def pcie_link(samples: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The link the GPU trained to under load: the highest current generation and width seen (an idle
    link drops to gen1 to save power), against the maximum the card and slot allow."""
    values = {key: _max(_values(samples, key)) for key in ("pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max")}
    if values["pcie_gen"] is None and values["pcie_width"] is None:
        return None
    link: Dict[str, Any] = {
        "gen": values["pcie_gen"],
        "gen_max": values["pcie_gen_max"],
        "width": values["pcie_width"],
        "width_max": values["pcie_width_max"],
    }
    link["text"] = "gen%s x%s of gen%s x%s" % tuple(
        "?" if v is None else v for v in (link["gen"], link["width"], link["gen_max"], link["width_max"])
    )
    link["degraded"] = bool(
        (link["gen"] or 0) < (link["gen_max"] or 0) or (link["width"] or 0) < (link["width_max"] or 0)
    )
    return link


def _throttled(clock_verdict: Optional[bool], reasons: Optional[List[str]]) -> Optional[bool]:
    by_reason = bool(reasons) and any(r not in LISTED_ONLY_REASONS for r in reasons)  # type: ignore[union-attr]
    if by_reason or clock_verdict:
        return True
    return clock_verdict if reasons is None else False


def summarize_gpu(samples: List[Any]) -> Dict[str, Any]:
    """The summary of one GPU's samples, in order."""
    utils = _values(samples, "util_pct")
    busy = [s for s in samples if s["util_pct"] is not None and s["util_pct"] >= BUSY_UTIL_PCT] if utils else samples
    clocks = _values(busy, "sm_clock_mhz")
    clock_verdict, early, lowest = throttle_verdict(clocks)
    reasons = active_reasons(busy)
    return {
        "samples": len(samples),
        "busy_samples": len(busy),
        "max_temp_c": _max(_values(samples, "temp_c")),
        "mean_sm_clock_mhz": _rounded(_mean(clocks)),
        "early_sm_clock_mhz": _rounded(early),
        "min_sm_clock_mhz": min(clocks) if clocks else None,
        "low_sm_clock_mhz": _rounded(lowest),
        "max_power_w": _rounded(_max(_values(samples, "power_w")), 2),
        "mean_power_w": _rounded(_mean(_values(busy, "power_w")), 2),
        "mean_util_pct": _rounded(_mean(utils)),
        "max_memory_used_mib": _max(_values(samples, "memory_used_mib")),
        "throttled": _throttled(clock_verdict, reasons),
        "clock_drop": clock_verdict,
        "throttle_reasons": reasons or [],
        "pcie_link": pcie_link(samples),
    }


def summarize_samples(lines: List[Any]) -> Dict[str, Any]:
    """Summary of the sampler's CSV lines (a list, or the text's lines).

    Clock and power means are over busy samples, utilization over all samples. With several GPUs the
    clock, utilization, power-mean, reason and throttle figures are those of the busiest GPU (highest mean
    utilization; the one the benchmark ran on) while temperature, peak power and memory are the maxima over
    all GPUs; ``per_gpu`` then holds each GPU's own summary.
    """
    samples, skipped = parse_lines(lines)
    by_gpu: dict = {}
    for sample in samples:
        by_gpu.setdefault(sample["index"], []).append(sample)
    if not by_gpu:
        summary = summarize_gpu([])
        summary.update(gpu_index=None, skipped_lines=skipped)
        return summary
    per_gpu = {index: summarize_gpu(group) for index, group in sorted(by_gpu.items())}
    busiest = max(per_gpu, key=lambda i: (per_gpu[i]["mean_util_pct"] or 0.0, -i))
    summary = dict(per_gpu[busiest])
    summary["samples"] = sum(s["samples"] for s in per_gpu.values())
    for key in ("max_temp_c", "max_power_w", "max_memory_used_mib"):
        summary[key] = _max([s[key] for s in per_gpu.values() if s[key] is not None])
    summary["gpu_index"] = busiest
    summary["skipped_lines"] = skipped
    if len(per_gpu) > 1:
        summary["per_gpu"] = {str(i): s for i, s in per_gpu.items()}
    return summary


def latest_with_fields(lines: List[str], fields: Tuple[str, ...]) -> Dict[int, Any]:
    """{index: sample} of the newest complete tick in ``lines`` (the tail of a samples file): walking back
    from the end, each GPU's last sample until a GPU repeats."""
    found = {}
    for line in reversed(lines):
        sample = parse_sample_line(line, fields)
        if sample is None:
            continue
        if sample["index"] in found:
            break
        found[sample["index"]] = sample
    return found
