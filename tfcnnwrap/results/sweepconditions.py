"""What every figure of a sweep was measured on and under, read from its sweep.json: the JSON envelope's
``conditions`` (report, list) and the parts a title names (report, the HTML pages).

Apart from report's tables so that `list`, which shows a sweep's conditions and nothing of report's, starts
without report's statistics and writers (issue 39: start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.results.plan import Plan

if TYPE_CHECKING:
    from tfcnnwrap.results.records import SweepMeta


def plan_conditions(meta: SweepMeta) -> Optional[Dict[str, Any]]:
    """The Plan's conditions (precision, XLA, GPU count(s), variable update, data), or None when the recorded
    plan cannot be read back (then the title says less rather than failing the report)."""
    try:
        plan = Plan.from_dict(meta.plan)
    except TfcnnwrapError:
        return None
    cond = dict(plan.conditions())
    cond["counts"] = list(plan.counts)
    cond["data_source"] = plan.data_origin()
    return cond


# Any: a SweepMeta (typed, mypy would narrow the envelope dict's values to its first ones' str)
def conditions(meta: Any) -> Dict[str, Any]:
    """What every figure of the sweep was measured on and under, for the JSON envelope's ``conditions``: the
    device and GPU, precision, XLA, GPU count(s), variable update, data, TensorFlow and branch."""
    cond = plan_conditions(meta) or {}
    out = {"device": "cpu" if meta.on_cpu else (meta.device or "gpu"), "gpu": meta.gpu_names() or None}
    out.update((k, v) for k, v in cond.items() if k not in ("counts", "num_gpus", "xla"))
    if cond:
        out["xla"] = cond.get("xla") == "yes"
    out["num_gpus"] = cond.get("counts") or None
    out.update(
        tensorflow_version=meta.tensorflow_version or None,
        branch=meta.upstream.branch or None,
        commit=meta.upstream.commit or None,
    )
    return out
