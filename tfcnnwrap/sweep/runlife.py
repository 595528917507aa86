"""A run's life in a sweep, the same for a single run, a distributed job (sweep.job) and a fleet run (fleet):
its command, its start (the live view told, its cut of the sweep's GPU samples begun), its RunRecord, the
error when it cannot run, and its write (runs.jsonl fsynced) before the next run starts. summary.csv is
aggregated once, when the sweep ends (``write_summary``, from ``sweep._finish``): aggregating after every run
cost pandas' import and ~10 ms of CPU a run between benchmarks, and runs.jsonl is the record that readers
aggregate again when summary.csv is not current (a sweep killed mid-way).

``SweepContext`` is what a sweep settles before its first run; every step of the sweep is handed it.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from tfcnnwrap.clock import utc_now
from tfcnnwrap.environment.probe import ProbeAnswer
from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.results.aggregate import config_rows, order_rows, summary_csv_text
from tfcnnwrap.results.plan import Plan, RunSpec
from tfcnnwrap.results.records import JsonObject, RunRecord, Status, SummaryRow, SweepMeta, Upstream
from tfcnnwrap.results.store import SweepDir, as_written, latest_runs
from tfcnnwrap.results.summarycache import summarize_sweep, write_summary_json
from tfcnnwrap.run.logparse import Step

if TYPE_CHECKING:  # only for annotations: rich and the samplers load when a sweep starts them
    from rich.console import Console

    from tfcnnwrap.run.runner import RunOutcome
    from tfcnnwrap.run.stopping import StopRequests
    from tfcnnwrap.run.telemetry import RunSamples, Telemetry

SCRIPT_NAME = "tf_cnn_benchmarks.py"


class Display(Protocol):
    """What the sweep tells its view: ``live.LiveDisplay`` on a terminal, ``live.PlainDisplay`` otherwise."""

    total: int

    def start(self, total: int, header: List[str]) -> None: ...

    def set_gpu_source(self, source: Callable[[], Mapping[int, JsonObject]]) -> None: ...

    def expect(self, keys: Sequence[Tuple[str, int, int]]) -> None: ...

    def waiting(self, text: Optional[str]) -> None: ...

    def pause(self, seconds: float) -> None: ...

    def run_started(
        self,
        index: int,
        model: str,
        batch_size: int,
        run: int,
        runs: int,
        num_batches: int,
        num_gpus: Optional[int] = None,
        data: Optional[str] = None,
    ) -> None: ...

    def stage(self, stage: str) -> None: ...

    def step(self, step: Step) -> None: ...

    def run_finished(self, index: int, record: RunRecord, runs: int) -> None: ...

    def stop(self) -> None: ...


def _text(value: object) -> Optional[str]:
    return value if isinstance(value, str) and value else None


@dataclass
class CoolingState:
    """Per sweep: how many runs have started (no pause before the first), and notes given once."""

    started: int = 0
    warned_no_smi: bool = False
    warned: set = field(default_factory=set)  # the nvidia-smi problem said (once per sweep)


@dataclass
class SweepContext:
    """Everything a sweep settles before its first run, handed to each step."""

    console: "Console"
    warn_console: "Console"
    sweep: SweepDir
    meta: Optional[SweepMeta]  # sweep.json: a resumed sweep's from the start, a new one's once it is created
    plan: Plan
    python: str
    vendor_dir: Path
    script: Path
    probe: ProbeAnswer
    tf_version: str
    manifest: JsonObject  # the checkout's manifest (vendor/tfcnnwrap-setup.json), {} without one
    device: str = "cpu"
    env: Dict[str, str] = field(default_factory=dict)
    retry_failed: bool = False
    features: List[str] = field(default_factory=list)  # --fp16/--xla as the branch spells them
    records: List[RunRecord] = field(default_factory=list)
    telemetry: "Optional[Telemetry]" = None
    stops: "Optional[StopRequests]" = None  # while the runs go
    cooling: Optional[CoolingState] = None  # the pause and cool-down between runs

    @property
    def upstream(self) -> Upstream:
        """The checkout the sweep recorded (empty before a new sweep is created)."""
        return self.meta.upstream if self.meta is not None else Upstream()

    @property
    def checkout(self) -> Upstream:
        """The checkout on disk now, as its manifest says."""
        return Upstream(*(_text(self.manifest.get(k)) for k in ("url", "branch", "commit")))

    @property
    def branch(self) -> Optional[str]:
        """The tf_cnn_benchmarks branch the runs use: as recorded, else as the checkout's manifest says."""
        return self.upstream.branch or self.checkout.branch

    @property
    def written_meta(self) -> SweepMeta:
        """sweep.json once the sweep is open for writing (every step from the first run on)."""
        if self.meta is None:
            raise RuntimeError("the sweep's sweep.json is not written yet")
        return self.meta


def argv(ctx: SweepContext, spec: RunSpec) -> List[str]:
    flags = ctx.plan.benchmark_flags(spec.model, spec.batch_size, ctx.device, spec.num_gpus, ctx.features, spec.data)
    return [ctx.python, "-u", SCRIPT_NAME] + flags


def start_run(ctx: SweepContext, display: Display, index: int, spec: RunSpec) -> "Tuple[str, Optional[RunSamples]]":
    """The live view told, the start time taken, the run's share of the sweep's GPU samples begun: (started_at,
    its RunSamples or None)."""
    plan = ctx.plan
    display.run_started(
        index, spec.model, spec.batch_size, spec.run, plan.most_runs, plan.num_batches or 100, spec.num_gpus, spec.data
    )
    started_at = utc_now()
    if ctx.telemetry is None:
        return started_at, None
    return started_at, ctx.telemetry.start(ctx.sweep.path / ctx.sweep.spec_log(spec, plan, ".gpu.csv"))


def job_files(ctx: SweepContext, spec: RunSpec) -> Tuple[List[str], str, str, Path]:
    """(argv, rel_log, run_name, log_dir) of a run that runs as several processes (a distributed job, a fleet
    run): each process logs beside ``rel_log`` as ``<run_name>.<task>.log``; ``log_dir`` exists."""
    rel_log = ctx.sweep.spec_log(spec, ctx.plan)
    run_name = Path(rel_log).name[: -len(".log")]
    log_dir = ctx.sweep.path / Path(rel_log).parent
    log_dir.mkdir(parents=True, exist_ok=True)
    return argv(ctx, spec), rel_log, run_name, log_dir


def run_failed(ctx: SweepContext, spec: RunSpec, exc: OSError) -> TfcnnwrapError:
    """A run that could not start or could not be logged: the user's environment, not the benchmark's."""
    model, bs, run = spec.model, spec.batch_size, spec.run
    if not ctx.script.is_file():
        reason = "the checkout %s is gone (run `python -m tfcnnwrap setup`)" % ctx.script.parent
    else:
        reason = "%s%s" % (exc.strerror or exc, ": %s" % exc.filename if exc.filename else "")
    return TfcnnwrapError("%s bs%d run %d could not run: %s" % (model, bs, run, reason))


def run_record(
    ctx: SweepContext,
    spec: RunSpec,
    outcome: "RunOutcome",
    command: List[str],
    started_at: str,
    rel_log: str,
    telemetry_summary: Optional[JsonObject],
) -> RunRecord:
    """The record of a run that ran (whatever its status)."""
    parsed = outcome.parsed
    ok = outcome.status == Status.OK
    failure = parsed.failure_message if not ok else None
    if outcome.status == Status.TIMEOUT and not failure:
        failure = "killed after %.0f s (--timeout)" % (ctx.plan.timeout_s or 0)
    return RunRecord(
        model=spec.model,
        batch_size=spec.batch_size,
        num_gpus=spec.num_gpus,
        run=spec.run,
        data=spec.data,
        status=Status.read(outcome.status),
        images_per_sec=parsed.total_images_per_sec if ok else None,
        exit_code=outcome.exit_code,
        duration_s=round(outcome.duration_s, 3),
        started_at=started_at,
        log=rel_log,
        command=tuple(command),
        failure=failure,
        steps_seen=parsed.steps_seen,
        last_step_images_per_sec=parsed.last_step.images_per_sec if parsed.last_step else None,
        log_bytes=outcome.log_bytes,
        tensorflow_reported=parsed.tf_version,
        telemetry=telemetry_summary,
        # the total was in its log; it hung afterwards until --timeout (runner.verdict)
        extra={"hung_after_total": True} if outcome.hung_after_total else {},
    )


def skipped_record(ctx: SweepContext, spec: RunSpec, reason: str) -> RunRecord:
    """The record of a run not started because its configuration ran out of GPU memory."""
    return RunRecord(
        model=spec.model,
        batch_size=spec.batch_size,
        num_gpus=spec.num_gpus,
        run=spec.run,
        data=spec.data,
        status=Status.SKIPPED,
        command=tuple(argv(ctx, spec)),
        failure=reason,
    )


def record(ctx: SweepContext, run: RunRecord) -> None:
    """On disk before the next run starts: the record, fsynced. No aggregation here (see the module's note):
    the harness does no work between runs that the end of the sweep can do once."""
    ctx.sweep.append_run(run)
    ctx.records.append(as_written(run))  # as report will read it back: summary.json's key and rows are its


def latest(ctx: SweepContext) -> List[RunRecord]:
    return latest_runs(ctx.records)


def summary_rows(ctx: SweepContext) -> List[SummaryRow]:
    return summarize_sweep(ctx.sweep, latest(ctx), ctx.written_meta.plan_order)


def write_summary(ctx: SweepContext) -> List[SummaryRow]:
    """summary.csv and summary.json over every run so far (pandas: imported here, after the last run, never
    during one)."""
    runs = latest(ctx)
    unordered = config_rows(runs) if runs else []
    rows = order_rows(unordered, ctx.written_meta.plan_order)
    ctx.sweep.write_summary_csv(summary_csv_text(rows))
    write_summary_json(ctx.sweep, runs, unordered)  # report and compare read these instead of importing pandas
    return rows
