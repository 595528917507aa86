"""The host-GPU link a sweep's runs crossed (issue 36): the PCIe generation and width the GPU trained to under
load (each run's telemetry, ``pcie_link``) against the most the card and slot allow, and the copy bandwidth the
sweep timed before its first run (sweep.json's ``environment.link_bandwidth``). Pure: records in, a dict out;
a bundle's ``conditions.link`` and whoever keys results by link read the same one.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional

from tfcnnwrap.results.records import RunRecord

LINK_KEYS = ("pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width", "h2d_gbps", "d2h_gbps")
MAX_GEN = 8  # PCIe 6 is out, 7 specified: more is a corrupted record
MAX_WIDTH = 32
MAX_GBPS = 1e6  # as probe.Bandwidth reads the figures: finite and plausible


def _whole(value: object, high: int) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    whole = int(value)
    return whole if whole == value and 1 <= whole <= high else None


def _gbps(value: object) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 < value < MAX_GBPS else None


def _most(values: List[Optional[int]]) -> Optional[int]:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def sweep_link(environment: Mapping[str, Any], runs: Iterable[RunRecord]) -> Dict[str, Any]:
    """``{pcie_gen, pcie_width, pcie_max_gen, pcie_max_width, h2d_gbps, d2h_gbps}``, None where unknown (a CPU
    sweep, a driver without pcie.* fields, a sweep from before the link was timed). The link is the highest
    generation and width any ok run's GPU trained to (an idle link drops to gen1), against its maxima."""
    found = [(r.telemetry or {}).get("pcie_link") for r in runs if r.ok]
    links: List[Dict[str, Any]] = [link for link in found if isinstance(link, dict)]
    timed = environment.get("link_bandwidth")
    timed = timed if isinstance(timed, dict) else {}
    return {
        "pcie_gen": _most([_whole(link.get("gen"), MAX_GEN) for link in links]),
        "pcie_width": _most([_whole(link.get("width"), MAX_WIDTH) for link in links]),
        "pcie_max_gen": _most([_whole(link.get("gen_max"), MAX_GEN) for link in links]),
        "pcie_max_width": _most([_whole(link.get("width_max"), MAX_WIDTH) for link in links]),
        "h2d_gbps": _gbps(timed.get("h2d_gbps")),
        "d2h_gbps": _gbps(timed.get("d2h_gbps")),
    }


def link_text(link: Optional[Mapping[str, Any]]) -> Optional[str]:
    """``gen3 x4`` (what the GPU trained to), ``gen3 x4 of x16`` when it could do more; None when unknown."""
    if not isinstance(link, Mapping) or link.get("pcie_width") is None:
        return None
    gen = link.get("pcie_gen")
    text = "%sx%s" % ("gen%s " % gen if gen is not None else "", link["pcie_width"])
    most = link.get("pcie_max_width")
    return text + (" of x%s" % most if most is not None and most != link["pcie_width"] else "")
