"""What `report` adds for distributed and fleet sweeps: the job's shape in the title, and per-host rows of a
fleet measured against the fleet.

A fleet row's ``vs_fleet_pct`` = (host mean / the fleet's median of host means − 1) × 100, per model, batch
size and GPU count. A host is flagged ``slow`` when it is slower than that median by more than 5 %, or by more
than twice the fleet's CV (the coefficient of variation of the host means, %): the first catches a clearly
slow GPU in a small or noisy fleet, the second a host that falls outside an otherwise tight fleet.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, List, Optional

if TYPE_CHECKING:
    from tfcnnwrap.results.records import SummaryRow, SweepMeta

SLOWER_PCT = 5.0
CV_FACTOR = 2.0


def cluster_label(meta: SweepMeta) -> Optional[str]:
    """``cluster local: parameter_server, 1 ps + 2 workers`` / ``fleet over slurm``, or None."""
    plan = getattr(meta, "plan", None) or {}
    cluster = plan.get("cluster")
    if not cluster:
        return None
    if plan.get("fleet"):
        return "fleet: every node of a %s allocation" % cluster
    mode = plan.get("variable_update") or "parameter_server"
    workers, ps = plan.get("workers") or 0, plan.get("ps") or 0
    shape = "%d worker%s" % (workers, "" if workers == 1 else "s")
    if ps:
        shape = "%d ps + %s" % (ps, shape)
    if mode == "distributed_all_reduce":
        shape += " + 1 controller"
    return "cluster %s: %s, %s" % (cluster, mode, shape)


def flag(vs_pct: Optional[float], fleet_cv_pct: float) -> Optional[str]:
    """``slow`` with its reason, or None (pure: the rule of the module docstring)."""
    if vs_pct is None:
        return None
    if -vs_pct > SLOWER_PCT:
        return "slow: %.1f%% below the fleet median" % -vs_pct
    if fleet_cv_pct > 0 and -vs_pct > CV_FACTOR * fleet_cv_pct:
        return "slow: %.1f%% below the fleet median, over %g x the fleet's CV (%.2f%%)" % (
            -vs_pct,
            CV_FACTOR,
            fleet_cv_pct,
        )
    return None


def with_fleet(rows: List[SummaryRow]) -> List:
    """``rows`` (SummaryRows) with ``vs_fleet_pct`` and ``fleet_flag`` set on rows that name a host."""
    rows = list(rows)
    groups: dict = {}
    for row in rows:
        if row.host and row.mean is not None:
            groups.setdefault((row.model, row.batch_size, row.num_gpus, row.data), []).append(row.mean)
    out = []
    for row in rows:
        means = groups.get((row.model, row.batch_size, row.num_gpus, row.data))
        if not row.host or not means or row.mean is None:
            out.append(row)
            continue
        import statistics  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

        median = statistics.median(means)
        cv = statistics.stdev(means) / statistics.mean(means) * 100.0 if len(means) > 1 else 0.0
        vs = round((row.mean / median - 1.0) * 100.0, 2) if median else None
        out.append(replace(row, vs_fleet_pct=vs, fleet_flag=flag(vs, cv)))
    return out


def fleet_columns(rows: List[SummaryRow], columns: List[Any]) -> List[Any]:
    """``columns`` (names, or (name, header) pairs) with host, vs_fleet_pct and the flag when rows name hosts;
    a column ``columns`` already holds (the report's table places host and vs fleet % itself) is not added
    again."""
    if not any(getattr(r, "host", None) for r in rows):
        return columns
    pairs = bool(columns) and isinstance(columns[0], tuple)
    have = {c[0] if pairs else c for c in columns}
    out = list(columns)
    if "host" not in have:
        if pairs:
            out.insert(1, ("host", "host"))
        else:
            out.append("host")
    for name, header in (("vs_fleet_pct", "vs fleet %"), ("fleet_flag", "flag")):
        if name not in have:
            out.append((name, header) if pairs else name)
    return out
