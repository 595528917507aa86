"""Which run comes next: the plan's order, what a resume still owes, --until-ci's extra runs, the OOM rule.

Pure: it sees the records the sweep has written and says what to run (or to record as skipped) next.

- grouped (default): a configuration's runs back to back, as the seed ran them; interleaved: one run of
  every configuration per round, so a slow drift (heat, a background job) spreads over all of them.
- ``--until-ci PCT``: once a configuration has had its ``--runs``, it gets one more run at a time while the
  95% confidence interval of its mean is wider than +-PCT% and it has had fewer than ``--max-runs``; a
  configuration with a failed run gets no extra runs (its CI would describe the failures, not the GPU).
- OOM: after an ``oom`` run the configuration's remaining runs are not started but recorded ``skipped``;
  ``--resume --retry-failed`` runs them (and the OOM run) again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Set, Tuple

from tfcnnwrap.results.aggregate import ci95_pct
from tfcnnwrap.results.plan import RunSpec
from tfcnnwrap.results.records import Status

if TYPE_CHECKING:
    from tfcnnwrap.results.plan import Config, Plan
    from tfcnnwrap.results.records import RunRecord

RERUN_STATUSES = {Status.INTERRUPTED}  # Status members hash by name: compare members, not texts


def _needs_run(record: Optional[RunRecord], retry_failed: bool) -> bool:
    return record is None or record.status in RERUN_STATUSES or (retry_failed and record.status != Status.OK)


def ci_pct(values: List[float]) -> Optional[float]:
    """The 95% CI half-width of the mean of ``values`` as % of it (Student t), None under 2 values."""
    if len(values) < 2:
        return None
    import statistics  # lazy: with fractions, decimal, random: ~3 ms of `list`'s start

    return ci95_pct(statistics.stdev(values), len(values), statistics.mean(values))


def skip_reason(spec: RunSpec, oom_run: int) -> str:
    half = spec.batch_size // 2
    if half < 1:
        fix = "even batch size 1 does not fit: a smaller model or a GPU with more memory"
    else:
        fix = "try --batch-size %s=%d" % (spec.model, half)
    return "not started: run %d of %s bs=%d ran out of GPU memory; %s" % (oom_run, spec.model, spec.batch_size, fix)


class _Config:
    def __init__(self, key: Config) -> None:
        self.key = key  # (model, batch_size, num_gpus, data)
        self.pending: List[int] = []  # run numbers still to run, in order
        self.latest: Dict[int, RunRecord] = {}  # run number -> its latest RunRecord
        self.oom_run: Optional[int] = None  # the run that ran out of memory (its other runs are skipped)

    def spec(self, run: int) -> RunSpec:
        return RunSpec(self.key[0], self.key[1], self.key[2], run, self.key[3])

    def failed(self) -> bool:
        return any(r.status != Status.OK for r in self.latest.values())

    def wants_more(self, plan: Plan) -> bool:
        """An extra run for --until-ci: its runs so far all ok, fewer than --max-runs, CI too wide."""
        if not plan.until_ci or self.pending or self.oom_run is not None or self.failed():
            return False
        if len(self.latest) < plan.runs or len(self.latest) >= plan.most_runs:
            return False
        pct = ci_pct([r.images_per_sec for r in self.latest.values() if r.images_per_sec is not None])
        return pct is None or pct > plan.until_ci

    def next_run(self) -> int:
        return max(list(self.latest) + list(self.pending) + [0]) + 1


class Schedule:
    """``next()`` -> (RunSpec, skip reason or None), or None when the sweep is done; ``finished(record)``
    after each run is recorded."""

    def __init__(self, plan: Plan, records: Iterable[RunRecord], retry_failed: bool = False) -> None:
        self.plan = plan
        self.configs = [_Config(key) for key in plan.configs()]
        # a record's num_gpus is Optional (filled for format-1 sweeps where runs are read): no match is no config
        by_key: Dict[Tuple[str, int, Optional[int], Optional[str]], _Config] = {c.key: c for c in self.configs}
        for rec in records:  # latest_runs(): one per run (in a fleet, one per run and host)
            config = by_key.get(_key(rec))
            prior = None if config is None else config.latest.get(rec.run)
            # A fleet's run is owed while any host's record of it is (the host whose node failed mid-run).
            if config is not None and (prior is None or not _needs_run(prior, retry_failed)):
                config.latest[rec.run] = rec
        for config in self.configs:
            planned = set(range(1, plan.runs + 1)) | set(config.latest)
            config.pending = [k for k in sorted(planned) if _needs_run(config.latest.get(k), retry_failed)]
            ooms = [k for k, r in sorted(config.latest.items()) if r.status == Status.OOM and k not in config.pending]
            config.oom_run = ooms[0] if ooms else None
        self._cursor = 0

    def planned(self) -> List[Any]:
        """The runs known to be owed now (extra --until-ci runs come on top), in order."""
        if self.plan.order == "interleaved":
            rounds = max([len(c.pending) for c in self.configs] + [0])
            return [c.spec(c.pending[i]) for i in range(rounds) for c in self.configs if i < len(c.pending)]
        return [c.spec(k) for c in self.configs for k in c.pending]

    def next(self) -> Optional[Tuple[RunSpec, Optional[str]]]:
        for config in self.configs:  # an OOM's leftovers are recorded at once, whatever the order
            if config.oom_run is not None and config.pending:
                spec = config.spec(config.pending.pop(0))
                return spec, skip_reason(spec, config.oom_run)
        n = len(self.configs)
        if self.plan.order == "interleaved":
            candidates = [self.configs[(self._cursor + i) % n] for i in range(n)]
        else:
            candidates = self.configs
        for config in candidates:
            if not config.pending and config.wants_more(self.plan):
                config.pending.append(config.next_run())
            if config.pending:
                self._cursor = (self.configs.index(config) + 1) % n
                return config.spec(config.pending.pop(0)), None
        return None

    def finished(self, record: RunRecord) -> None:
        """Take a run's record into account (its configuration's statistics, an OOM)."""
        for config in self.configs:
            if config.key == _key(record):
                config.latest[record.run] = record
                if record.status == Status.OOM and config.oom_run is None:
                    config.oom_run = record.run


def _key(record: RunRecord) -> Tuple[str, int, Optional[int], Optional[str]]:
    """The configuration a record belongs to, as the plan's configs() name it."""
    return (record.model, record.batch_size, record.num_gpus, record.data)


def runs_to_do(plan: Plan, records: List[RunRecord], retry_failed: bool) -> List[RunSpec]:
    """The planned runs still owed: missing, interrupted (or failed, with --retry-failed), in plan order."""
    return Schedule(plan, records, retry_failed).planned()


def oom_hints(runs: List[RunRecord]) -> List[str]:
    """One line per model and batch size (per device) that ran out of GPU memory: the batch size to try
    instead. A scaling sweep that ran out at several GPU counts gets one line naming them: the fix is one."""
    lines = []
    counts: Dict[Tuple[str, int], Set[int]] = {}
    for run in runs:
        if run.status == Status.OOM:
            counts.setdefault((run.model, run.batch_size), set()).add(run.num_gpus or 1)
    for (model, batch_size), gpus in counts.items():
        skipped = sum(1 for r in runs if (r.model, r.batch_size) == (model, batch_size) and r.status == Status.SKIPPED)
        half = batch_size // 2
        fix = (
            ("try --batch-size %s=%d in a new sweep" % (model, half))
            if half
            else "batch size 1 does not fit: a smaller model or a GPU with more memory"
        )
        where = " at %s GPUs" % " and ".join(str(g) for g in sorted(gpus)) if len(gpus) > 1 else ""
        lines.append(
            "%s bs=%d ran out of GPU memory%s (%d run%s skipped): %s; or free GPU memory and resume "
            "with --retry-failed" % (model, batch_size, where, skipped, "" if skipped == 1 else "s", fix)
        )
    return lines
