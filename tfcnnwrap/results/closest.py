"""The closest published row for a sweep's conditions (a reference GPU's own rule, or with ``--strict`` exact
conditions and the sweep's TensorFlow X.Y), the cell it gives a measured mean, and whether two TensorFlow
versions differ: one place for compare, rank and how their notes read. Pure: records only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

from tfcnnwrap.results.records import ReferenceCell
from tfcnnwrap.results.references import LOW_TRUST, closest_row

if TYPE_CHECKING:
    from tfcnnwrap.results.references import ReferenceGPU, Result


def tf_xy(version: Optional[str]) -> Optional[str]:
    """``'1.12.0'`` -> ``'1.12'``; None for what is not a version (``git b1e174e``, blank)."""
    parts = str(version or "").strip().split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1][:2].isdigit():
        return "%s.%s" % (parts[0], "".join(ch for ch in parts[1] if ch.isdigit()))
    return None


def tf_differs(reference: Optional[str], sweep: Optional[str]) -> bool:
    """True when both TensorFlow versions are known and their X.Y differ (blanks never differ)."""
    a, b = tf_xy(reference), tf_xy(sweep)
    return a is not None and b is not None and a != b


def usable_rows(gpu: ReferenceGPU, model: str, include_low_trust: bool = False) -> List[Any]:
    """``gpu``'s rows for ``model`` a comparison may use: `derived` and `partial` ones only when asked."""
    return [r for r in gpu.results if r.model == model and (include_low_trust or r.trust not in LOW_TRUST)]


def low_trust_left_out(gpus: List[ReferenceGPU], models: Set[str], include_low_trust: bool = False) -> int:
    """How many rows of ``gpus`` for ``models`` a comparison leaves out for their trust level."""
    if include_low_trust:
        return 0
    models = set(models)
    # usable_rows' own test, row by row: asking whether each row is in its GPU's usable list compared every
    # pair of rows (~60,000 comparisons, ~40 ms of each `compare --rank`)
    return sum(1 for gpu in gpus for r in gpu.results if r.model in models and r.trust in LOW_TRUST)


def closest_result(
    gpu: ReferenceGPU,
    model: str,
    wanted: Dict[str, Any],
    strict: bool = False,
    tf_version: Optional[str] = None,
    include_low_trust: bool = False,
) -> Tuple[Optional[Result], List[Any]]:
    """(result, differing condition names): ``gpu``'s closest usable row (`references.closest_row`), or with
    ``strict`` its closest among the rows with exactly ``wanted``'s conditions and the sweep's TensorFlow X.Y
    (else (None, []))."""
    rows = usable_rows(gpu, model, include_low_trust)
    if strict:
        rows = [r for r in rows if not r.differences(wanted) and not tf_differs(r.tf_version, tf_version)]
    return closest_row(rows, wanted)


def reference_cell(
    typed: str,
    gpu: ReferenceGPU,
    model: str,
    mean: Optional[float],
    wanted: Dict[str, Any],
    strict: bool = False,
    tf_version: Optional[str] = None,
    include_low_trust: bool = False,
) -> ReferenceCell:
    """``mean`` (None: no ok run) against ``gpu``'s closest published figure for ``wanted`` conditions."""
    result, differs = closest_result(gpu, model, wanted, strict, tf_version, include_low_trust)
    if result is None:
        return ReferenceCell(name=typed, id=gpu.id, gpu_name=gpu.name)
    return ReferenceCell(
        name=typed,
        id=gpu.id,
        gpu_name=gpu.name,
        images_per_sec=result.images_per_sec,
        published=result.display,
        ratio_pct=mean / result.images_per_sec * 100.0 if mean is not None else None,
        comparable=not differs,
        differs={k: {"reference": getattr(result, k), "sweep": wanted[k]} for k in differs},
        conditions=result.conditions(),
        source=result.source or gpu.origin,
        tf_version=result.tf_version,
    )
