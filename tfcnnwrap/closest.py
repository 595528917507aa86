"""The closest published row for a sweep's conditions (a reference GPU's own rule, or with ``--strict`` exact
conditions and the sweep's TensorFlow X.Y), the cell it gives a measured mean, and whether two TensorFlow
versions differ: one place for compare, rank and how their notes read. Pure: records only."""

from typing import Optional

from tfcnnwrap.records import ReferenceCell


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


def closest_result(gpu, model: str, wanted: dict, strict: bool = False, tf_version: Optional[str] = None):
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


def reference_cell(typed: str, gpu, model: str, mean: Optional[float], wanted: dict, strict: bool = False,
                   tf_version: Optional[str] = None) -> ReferenceCell:
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

