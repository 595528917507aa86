"""A sweep directory read for `compare`: its configurations (model, batch size, GPU count), each one's
statistics and ok values, the conditions a reference must share, and which sweeps `compare` reads when it
is given none.

A fleet sweep (records with ``host``) is pooled per configuration, so every host's runs count as runs of
one configuration; ``host=`` keeps one host's runs only.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from tfcnnwrap import settings
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.linkinfo import sweep_link
from tfcnnwrap.results.plan import Config, Plan, RunSpec
from tfcnnwrap.results.records import Status, SummaryRow
from tfcnnwrap.results.store import finished_sweeps, load_sweep, running_note
from tfcnnwrap.results.summarycache import summarize_sweep

if TYPE_CHECKING:
    from tfcnnwrap.results.records import RunRecord
    from tfcnnwrap.results.store import SweepDir


ConfigKey = Tuple[str, int, Optional[int], Optional[str]]


def config_of(row: Union[SummaryRow, RunRecord]) -> ConfigKey:
    """(model, batch_size, num_gpus, data): what a row or record measured, hosts pooled (data: None unless the
    sweep ran both kinds)."""
    return (row.model, row.batch_size, row.num_gpus, row.data)


class Sweep:
    """A sweep directory read for comparison: its meta, its plan, its rows per configuration."""

    def __init__(self, path: Union[Path, str], host: Optional[str] = None, data: Optional[str] = None) -> None:
        """``host``: one host's runs of a fleet sweep; ``data``: one kind's runs of a sweep of both, read as if
        the sweep had run that kind alone (ignored for a sweep of one kind)."""
        self.dir, self.meta, runs = load_sweep(path)
        self.path = Path(path)
        self.plan = Plan.from_dict(self.meta.plan)
        self.kind = data if data is not None and self.plan.data_kinds else None  # the one kind read of both
        if self.kind is not None:
            self.plan = self.plan.only_data(self.kind)
            runs = [dataclasses.replace(r, data=None) for r in runs if r.data == data]
        self.hosts = sorted({r.host for r in runs if r.host})
        self.host = host
        if host is not None:
            if host not in self.hosts:
                raise UsageError(
                    "%s has no runs of host %r; its hosts: %s (or leave --host out to pool them)"
                    % (self.path, host, ", ".join(self.hosts) or "none (not a fleet sweep)")
                )
            runs = [r for r in runs if r.host == host]
        # Hosts pooled: one configuration whichever node ran it.
        self.runs = [dataclasses.replace(r, host=None) if r.host else r for r in runs]
        self.rows = measured_rows(self.dir, self.plan.configs(), self.runs)
        self.values = ok_values(self.runs)

    def lacking(self) -> List[RunSpec]:
        """The planned runs this sweep has no finished record of (never run, or cut off: ``interrupted``), in
        plan order; [] for a sweep that ran its plan. Extra runs of ``--until-ci`` are never lacking."""
        done = {
            (r.model, r.batch_size, r.num_gpus or self.plan.num_gpus, r.run, r.data)
            for r in self.runs
            if r.status != Status.INTERRUPTED
        }
        return [spec for spec in self.plan.run_specs() if tuple(spec) not in done]

    def no_ok_run(self) -> str:
        """Why this sweep has nothing to compare: no ok run; read for one kind of a sweep of both data kinds,
        none of that kind (its other kind's runs may well be ok)."""
        if self.kind is not None:
            return (
                "%s has no ok %s-data run, the runs compared with the references (their terms); resume it with "
                "--retry-failed" % (self.path, self.kind)
            )
        return "%s has no ok run yet" % self.path

    @property
    def name(self) -> str:
        return self.path.resolve().name or str(self.path)

    def gpu_label(self) -> Optional[str]:
        return self.meta.gpu_names() or None

    def label(self) -> str:
        gpu = self.gpu_label()
        return "%s (%s)" % (self.name, gpu) if gpu else self.name

    @property
    def several_counts(self) -> bool:
        return len({r.num_gpus for r in self.rows}) > 1

    def conditions(self, batch_size: Optional[int] = None, num_gpus: Optional[int] = None) -> Dict[str, Any]:
        """The plan's conditions (the references' terms), with one configuration's batch size and GPU count."""
        cond = dict(self.plan.conditions())
        cond["batch_size"] = batch_size
        if num_gpus is not None:
            cond["num_gpus"] = num_gpus * self.plan.job_workers()
        return cond

    def link(self) -> Dict[str, Any]:
        """The host-GPU link the sweep's runs crossed (linkinfo.sweep_link): a bundle's ``conditions.link``."""
        return sweep_link(self.meta.environment, self.runs)

    def mean_power_w(self, config: Optional[ConfigKey] = None) -> Optional[float]:
        """Mean GPU power over ok runs (of ``config``) whose telemetry recorded ``mean_power_w``; None."""
        powers = []
        for r in self.runs:
            if r.value is None or (config is not None and config_of(r) != config):
                continue
            power = (r.telemetry or {}).get("mean_power_w")
            if isinstance(power, (int, float)) and not isinstance(power, bool) and math.isfinite(power) and power > 0:
                powers.append(float(power))
        return sum(powers) / len(powers) if powers else None


def measured_rows(sweep: SweepDir, configs: List[Config], runs: List[RunRecord]) -> List[SummaryRow]:
    """SummaryRows in plan order, one per configuration; a planned one without runs yet has no mean. From the
    sweep's summary.json when it is current for ``runs`` (hosts pooled, a fleet's are not: pandas then)."""
    summary: dict = {}
    for row in summarize_sweep(sweep, runs, [c[:2] for c in configs]):
        summary.setdefault(config_of(row), row)
    rows = [summary.pop(c, None) or SummaryRow(model=c[0], batch_size=c[1], num_gpus=c[2], data=c[3]) for c in configs]
    return rows + list(summary.values())


def ok_values(runs: List[RunRecord]) -> Dict[ConfigKey, Any]:
    """{(model, batch_size, num_gpus, data): [images/sec of each ok run]} for the statistics of a change."""
    values: dict = {}
    for r in runs:
        if r.value is not None:
            values.setdefault(config_of(r), []).append(r.value)
    return values


def geometric_mean(values: Iterable[float]) -> Optional[float]:
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


# -- which sweeps when none is named ---------------------------------------------------------------------


def newest_sweeps(count: int, root: Union[Path, str, None] = None) -> List[Path]:
    """The ``count`` most recently created sweeps under the results directory that no sweep is still
    writing to, oldest first."""
    root = Path(root) if root is not None else settings.results_dir()
    found, running = finished_sweeps(root)
    if len(found) < count:
        raise UsageError(
            "%s holds %d %ssweep%s%s; compare needs %d there, or name the sweep directories (set %s to "
            "look elsewhere)"
            % (
                root,
                len(found),
                "finished " if running else "",
                "" if len(found) == 1 else "s",
                running_note(running),
                count,
                settings.ENV_RESULTS,
            )
        )
    return found[-count:]
