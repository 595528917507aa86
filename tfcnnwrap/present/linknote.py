"""The note `compare` adds when the sweep's GPU ran on a PCIe link narrower or slower than it can run at.

An eGPU behind Thunderbolt 3 trains to gen3 x4 of a card's gen3 x16; a card in a chipset slot or on a riser to
x4 or x1; a BIOS setting or a bad seat to a lower generation. Images/sec then measure the link as much as
the GPU, and a comparison with references (measured on x16 workstations) should say so. The link comes from
each run's telemetry (``gpusamples.pcie_link``: the widest and fastest the link reached under load, against
the maximum of card and slot). Runs come from other people's bundles too: every field is checked.

And the line saying what the link costs, where the community has the same GPU at another link class
(rank.link_cost): "Your GeForce RTX 2070 at gen3 x4 against the same GPU at gen3 x16 (community, 3 sweeps):
95.2% (resnet50 94.1%, vgg16 96.0%)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

if TYPE_CHECKING:
    from tfcnnwrap.results.comparesweep import Sweep
    from tfcnnwrap.results.comparison import LinkCost
    from tfcnnwrap.results.records import RunRecord

_KEYS = ("gen", "width", "gen_max", "width_max")


def _link(telemetry: Any) -> Optional[Tuple[Any, ...]]:
    """(gen, width, gen_max, width_max) as whole numbers in PCIe's range, or None."""
    link = telemetry.get("pcie_link") if isinstance(telemetry, dict) else None
    if not isinstance(link, dict):
        return None
    values = tuple(link.get(key) for key in _KEYS)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 64 for v in values):
        return None
    return values


def link_text(link: Tuple[int, ...]) -> str:
    return "gen%d x%d of gen%d x%d" % link


def guess(link: Tuple[int, ...]) -> str:
    """What usually trains a link to this shape, as a question (nvidia-smi cannot tell an enclosure)."""
    gen, width, _gen_max, width_max = link
    if width == 4 and width_max > 4:
        return "Thunderbolt 3?" if gen <= 3 else "Thunderbolt or an x4 slot?"
    if width == 1 and width_max > 1:
        return "a riser or x1 slot?"
    if width < width_max:
        return "a slot wired narrower than the card?"
    return "BIOS PCIe setting, riser or seating?"


def degraded(link: Tuple[int, ...]) -> bool:
    gen, width, gen_max, width_max = link
    return gen < gen_max or width < width_max


def link_note(runs: List[RunRecord]) -> Optional[str]:
    """One line about the ok runs' PCIe link when it ran below its maximum; None otherwise (or unknown)."""
    links = [_link(r.telemetry) for r in runs if r.value is not None]
    known = [link for link in links if link is not None]
    slow = [link for link in known if degraded(link)]
    if not slow:
        return None
    worst = min(slow, key=lambda link: (link[0] * link[1], link))
    share = "every run" if len(slow) == len(known) else "%d of %d runs" % (len(slow), len(known))
    return (
        "PCIe link: the GPU ran at %s (%s) in %s; host<->GPU copies are slower than on the references' "
        "full links: `tfcnnwrap doctor --bandwidth` measures what it costs." % (link_text(worst), guess(worst), share)
    )


def link_notes(sweep: Sweep) -> List[str]:
    """``link_note`` of a comparesweep.Sweep, as a list of notes (empty when the link ran at its maximum)."""
    note = link_note(sweep.runs)
    return [note] if note else []


def link_cost_line(cost: LinkCost) -> str:
    """One line: the measured figures as a share of the same GPU's at the other link, overall and per model."""
    sweeps = "" if cost.sweeps is None else ", %d sweep%s" % (cost.sweeps, "" if cost.sweeps == 1 else "s")
    models = ", ".join("%s %.1f%%" % (model, pct) for model, pct in cost.per_model.items())
    return "Your %s at %s against the same GPU at %s (community%s): %.1f%% (%s)" % (
        cost.gpu,
        cost.link,
        cost.other_link,
        sweeps,
        cost.geomean_pct,
        models,
    )


def link_cost_lines(costs: Iterable[LinkCost]) -> List[str]:
    return [link_cost_line(cost) for cost in costs]


def link_cost_json(costs: Iterable[LinkCost]) -> List[Dict[str, Any]]:
    """``link_cost`` of the JSON envelope: [] when no other link class of the GPU is known."""
    return [
        {
            "gpu": c.gpu,
            "link": c.link,
            "other_link": c.other_link,
            "gpu_id": c.gpu_id,
            "sweeps": c.sweeps,
            "geomean_pct": c.geomean_pct,
            "per_model": dict(c.per_model),
            "text": link_cost_line(c),
        }
        for c in costs
    ]
