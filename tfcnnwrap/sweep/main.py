"""The `sweep` verb: plan, probe, run each benchmark in its own process, record, summarise.

Each finished run is on disk (runs.jsonl, fsynced) before the next one starts; summary.csv is written once,
when the sweep ends (finished, interrupted or failed), so pandas is imported after the last run.
"""

import os
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from tfcnnwrap import __version__, render, settings
from tfcnnwrap.clock import utc_now
from tfcnnwrap.environment import checkout, probe
from tfcnnwrap.environment.envinfo import capture_environment
from tfcnnwrap.environment.features import BRANCH_FLAGS, branch_flags
from tfcnnwrap.environment.probe import ProbeAnswer, resolve_device
from tfcnnwrap.environment.quiet import gather
from tfcnnwrap.environment.versions import needs_legacy_keras
from tfcnnwrap.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNS_FAILED,
    EXIT_USAGE,
    SetupError,
    TfcnnwrapError,
    UsageError,
)
from tfcnnwrap.filelock import FileLock
from tfcnnwrap.present.report import next_compare, print_summary
from tfcnnwrap.prose import fill
from tfcnnwrap.results.plan import Plan, RunSpec, SweepArgs, build_plan, plan_flags_given
from tfcnnwrap.results.quality import throttle_warning
from tfcnnwrap.results.records import JsonObject, Resumption, RunRecord, Status, SummaryRow, SweepMeta
from tfcnnwrap.results.store import FORMAT_VERSION, SweepDir, open_sweep
from tfcnnwrap.run.procs import SharedSupervisor, format_command, pip_install_command
from tfcnnwrap.run.runner import RunOutcome, run_benchmark
from tfcnnwrap.run.stopping import StopRequests
from tfcnnwrap.run.telemetry import Telemetry
from tfcnnwrap.sweep import cooling, hostdata, runlife
from tfcnnwrap.sweep.fleet import run_fleet
from tfcnnwrap.sweep.job import check, run_job, task_argvs
from tfcnnwrap.sweep.live import make_display
from tfcnnwrap.sweep.runlife import SCRIPT_NAME, Display, SweepContext, latest
from tfcnnwrap.sweep.schedule import Schedule, oom_hints

if TYPE_CHECKING:  # only for annotations: rich loads when a sweep draws
    from rich.console import Console


def sweep_stamp(now: Optional[datetime] = None) -> str:
    """The sweep directory's name: local time with its UTC offset, no colons (Windows), e.g.
    20261130-101500+0100."""
    now = now or datetime.now(timezone.utc).astimezone()
    return now.strftime("%Y%m%d-%H%M%S") + now.strftime("%z").replace(":", "")


def default_out_dir(results_dir: Optional[Path] = None) -> Path:
    results_dir = results_dir if results_dir is not None else settings.results_dir()
    stamp = sweep_stamp()
    out = Path(results_dir) / stamp
    n = 2
    while out.exists():
        out = Path(results_dir) / ("%s-%d" % (stamp, n))
        n += 1
    return out


def check_gpu_counts(counts: Sequence[int], device: str, gpus: Optional[Sequence[str]]) -> Optional[str]:
    """A warning (or None) about ``--num-gpus``; UsageError for a count above the GPUs TensorFlow sees.

    ``gpus``: the probe's tri-state; None when TensorFlow could not say: then a count above 1 only warns, as
    the run itself fails plainly (crashed, with its log) if the GPUs are not there. A count of 1 is never
    refused (``--device gpu`` insists on a GPU TensorFlow does not list).
    On the CPU any count goes: tf_cnn_benchmarks builds one tower per count on /cpu:0, /cpu:1, ...
    """
    most = max(counts)
    if device != "gpu" or most <= 1:
        return None
    shown = "--num-gpus %s" % ",".join(str(c) for c in counts)
    if gpus is None:
        return "TensorFlow could not say how many GPUs it sees; %s needs %d: a run on fewer fails" % (shown, most)
    if most > len(gpus):
        seen = "%d GPU%s (%s)" % (len(gpus), "" if len(gpus) == 1 else "s", ", ".join(gpus)) if gpus else "no GPU"
        raise UsageError(
            "%s asks for %d GPUs but TensorFlow sees %s; give counts up to %d, or check "
            "CUDA_VISIBLE_DEVICES and `python -m tfcnnwrap doctor`" % (shown, most, seen, max(len(gpus), 1))
        )
    return None


def child_env(tf_version: Optional[str]) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if tf_version and needs_legacy_keras(tf_version):
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def command_template(plan: Plan, device: str, features: Sequence[str] = ()) -> List[str]:
    flags = plan.benchmark_flags("{model}", 0, device, features=features)
    return ["{python}", "-u", SCRIPT_NAME, "--model={model}", "--batch_size={batch_size}"] + flags[2:]


def _install_signal_handlers() -> StopRequests:
    """SIGINT, SIGTERM (SIGBREAK, SIGHUP) become a stop request: the running benchmark's tree is stopped
    and the loop ends; the handler itself never raises (see ``stopping``)."""
    return StopRequests().install()


def _restore_signal_handlers(stops: StopRequests) -> None:
    stops.restore()


def cmd_sweep(args: SweepArgs) -> int:
    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed works with --resume DIR; add --resume")
    sweep, meta, plan = _resume_target(args, args.resume) if args.resume else _new_target(args)
    python, vendor_dir, python_from = _where_to_run(args, meta)
    # Held shared from before the checkout is read until the sweep ends: setup (exclusive) cannot swap it.
    vendor_lock = None if args.dry_run else _hold_vendor(vendor_dir)
    try:
        ctx = _prepare(args, sweep, meta, plan, python, vendor_dir, python_from)
        if args.dry_run:
            return _print_dry_run(ctx)
        _open_for_writing(ctx)
        try:
            return _run_sweep(ctx)
        finally:
            sweep.unlock()
    finally:
        if vendor_lock is not None:
            vendor_lock.release()


def _new_target(args: SweepArgs) -> Tuple[SweepDir, Optional[SweepMeta], Plan]:
    plan = build_plan(args)
    sweep = SweepDir(Path(args.out) if args.out else default_out_dir())
    sweep.refuse_existing()
    return sweep, None, plan


def _resume_target(args: SweepArgs, resume: str) -> Tuple[SweepDir, Optional[SweepMeta], Plan]:
    given = plan_flags_given(args)
    if given:
        raise UsageError("--resume continues the sweep with its own recorded plan; drop %s" % ", ".join(given))
    if Path(resume).is_dir():
        SweepDir(resume).refuse_links()  # before anything in it is read
    sweep = open_sweep(resume)
    meta = sweep.read_meta() if sweep.meta is None else sweep.meta
    return sweep, meta, Plan.from_dict(meta.plan)


def _where_to_run(args: SweepArgs, meta: Optional[SweepMeta]) -> Tuple[str, Path, Optional[str]]:
    """(python, vendor_dir, where python came from): the flags, else (on --resume) what the sweep recorded,
    else TFCNNWRAP_PYTHON / TFCNNWRAP_VENDOR_DIR, else what the last setup remembered, else the defaults."""
    recorded = meta or SweepMeta()
    if args.vendor_dir or not recorded.vendor_dir:
        vendor_dir = settings.vendor_dir(args.vendor_dir)[0]
    else:
        vendor_dir = Path(recorded.vendor_dir)
    if args.python or not recorded.python:
        python, source = checkout.target_python(args.python, vendor_dir)
    else:
        python, source = recorded.python, "the sweep's sweep.json"
    return probe.target_python(python), vendor_dir, source


def _hold_vendor(vendor_dir: Path) -> Optional[FileLock]:
    if not Path(vendor_dir).is_dir():
        return None  # require_script names the fix
    lock = checkout.vendor_lock(vendor_dir, shared=True)
    try:
        lock.acquire()
    except OSError:
        return None  # a read-only shared checkout: setup cannot change it under us either
    return lock


def _prepare(
    args: SweepArgs,
    sweep: SweepDir,
    meta: Optional[SweepMeta],
    plan: Plan,
    python: str,
    vendor_dir: Path,
    python_from: Optional[str] = None,
) -> SweepContext:
    """Probe the target, check it against a resumed sweep, settle the device: a SweepContext."""
    # a dry run too: it prints commands to run, and without a checkout none of them can (exit 2 as the sweep)
    script = checkout.require_script(vendor_dir)
    # A new sweep asks TensorFlow itself (GPUs, CUDA, cuDNN) for the record in sweep.json and for
    # --device auto; a resumed one only needs the version.
    full = meta is None and (plan.device == "auto" or not args.dry_run)
    try:
        probe_result = probe.run_probe(python, full=full, partial=True)
    except SetupError as exc:
        if python_from in (None, "--python"):
            raise
        raise SetupError("%s (that interpreter came from %s)" % (exc.message, python_from)) from None
    ctx = SweepContext(
        console=render.console(),
        warn_console=render.console(stderr=True),
        sweep=sweep,
        meta=meta,
        plan=plan,
        python=python,
        vendor_dir=Path(vendor_dir),
        script=script,
        probe=probe_result,
        tf_version=_require_tensorflow(python, probe_result, python_from),
        manifest=checkout.read_manifest(vendor_dir) or {},
        retry_failed=args.retry_failed,
    )
    if meta is not None:
        _refuse_another_tensorflow(ctx)
        ctx.device = meta.device or plan.device
    else:
        ctx.device, warning = resolve_device(plan.device, probe_result)
        _warn(ctx, warning)
    _refuse_cool_to_on_cpu(ctx)
    if meta is None:  # a resumed sweep's counts were checked when it began
        _warn(ctx, check_gpu_counts(plan.counts, ctx.device, probe_result.gpus))
    ctx.env = child_env(ctx.tf_version)
    ctx.features = _feature_flags(plan, ctx.checkout.branch, script)
    _warn(ctx, checkout.branch_mismatch(ctx.tf_version, ctx.manifest))
    _check_cluster(ctx)
    hostdata.prepare_data(ctx, dry_run=args.dry_run)
    return ctx


def _refuse_cool_to_on_cpu(ctx: SweepContext) -> None:
    """--cool-to on the CPU would be accepted and never wait: a new sweep is refused before its first run (a
    resumed one keeps its recorded plan, and the run-time warning that there is no telemetry says it)."""
    if ctx.meta is None and ctx.device == "cpu" and ctx.plan.cool_to_c is not None:
        raise UsageError(
            "--cool-to waits for GPU temperatures (nvidia-smi's), and a CPU sweep has none: drop "
            "--cool-to (--cooldown SEC pauses between runs on any device)"
        )


def _feature_flags(plan: Plan, branch: Optional[str], script: Path) -> List[str]:
    """--fp16 / --xla as the checked-out branch spells them (UsageError where it has no such flag)."""
    wanted = plan.features
    if not wanted:
        return []
    source = None
    benchmark_cnn = Path(script).parent / "benchmark_cnn.py"
    if branch not in BRANCH_FLAGS and benchmark_cnn.is_file():  # a fork: judge from its code
        source = benchmark_cnn.read_text(encoding="utf-8", errors="replace")
    return branch_flags(wanted, branch, source)


def _check_cluster(ctx: SweepContext) -> None:
    if ctx.plan.cluster:
        check(ctx)


def _warn_noisy_machine(ctx: SweepContext) -> None:
    """Once, before the first run: what on this machine would make the numbers wander (quiet.py)."""
    for finding in gather(gpu=ctx.device == "gpu"):
        _warn(ctx, "%s: %s" % (finding["what"], finding["fix"]))


def _warn(ctx: SweepContext, warning: Optional[str]) -> None:
    """One warning: wrapped between words to a terminal's width (a number kept with its unit), else one line."""
    if warning:
        from rich.text import Text  # rich: only when there is a warning to show

        con = ctx.warn_console
        text = "warning: " + warning
        shown = Text(fill(text, con.width) if con.is_terminal else text)
        shown.stylize("yellow", 0, len("warning:"))
        con.print(shown, soft_wrap=True, highlight=False)


def _require_tensorflow(python: str, probe_result: ProbeAnswer, python_from: Optional[str] = None) -> str:
    tf_version = probe_result.tf_version
    if not tf_version:
        came = " (that interpreter came from %s)" % python_from if python_from not in (None, "--python") else ""
        raise SetupError(
            "no TensorFlow found for %s%s: pass --python with the interpreter that has it "
            "(e.g. your conda env's python.exe)" % (python, came)
        )
    if needs_legacy_keras(tf_version) and probe_result.tf_keras is False:
        raise SetupError(
            "TensorFlow %s ships Keras 3 and tf_cnn_benchmarks needs Keras 2 from the tf-keras package, which "
            "%s lacks: run `%s`" % (tf_version, python, pip_install_command(python, "tf-keras"))
        )
    return tf_version


def _refuse_another_tensorflow(ctx: SweepContext) -> None:
    """A resume runs what the sweep ran: its runs are pooled with the earlier ones."""
    meta = ctx.written_meta
    recorded = meta.tensorflow_version
    if recorded and recorded != ctx.tf_version:
        raise UsageError(
            "%s ran TensorFlow %s but %s has TensorFlow %s; resume with the sweep's own --python (%s), or "
            "start a new sweep" % (ctx.sweep.path, recorded, ctx.python, ctx.tf_version, meta.python)
        )
    commit = ctx.upstream.commit
    if commit and ctx.checkout.commit != commit:
        recorded_dir = meta.vendor_dir
        if recorded_dir and Path(recorded_dir) != ctx.vendor_dir.resolve():
            fix = "resume with the sweep's own --vendor-dir (%s)" % recorded_dir
        else:
            fix = "the checkout changed since the sweep began (setup --update?): runs of both would be pooled"
        raise UsageError(
            "%s ran checkout commit %s but %s holds %s; %s, or start a new sweep"
            % (ctx.sweep.path, commit, ctx.vendor_dir, ctx.checkout.commit or "no checkout", fix)
        )


def _print_dry_run(ctx: SweepContext) -> int:
    plan = ctx.plan
    records = ctx.sweep.read_runs() if ctx.meta is not None else []
    specs = Schedule(plan, records, ctx.retry_failed).planned()
    for spec in specs:
        for env, argv in _dry_run_argvs(ctx, spec):
            sys.stdout.write(shell_lines(ctx.script.parent, env, argv))
    fields = [
        "%d run%s" % (len(specs), "" if len(specs) == 1 else "s"),
        "device %s" % ctx.device,
        "TensorFlow %s" % ctx.tf_version,
        "TF_USE_LEGACY_KERAS=1" if "TF_USE_LEGACY_KERAS" in ctx.env else "",
        _flow_text(ctx),
    ]
    sys.stdout.write("# %s\n" % "; ".join(f for f in fields if f))
    return EXIT_OK


def _new_meta(ctx: SweepContext) -> SweepMeta:
    environment = capture_environment(python=ctx.python, probe=ctx.probe, manifest=ctx.manifest, argv=sys.argv)
    return SweepMeta(
        format=FORMAT_VERSION,
        tool="tfcnnwrap",
        tfcnnwrap_version=__version__,
        created_at=utc_now(),
        plan=ctx.plan.to_dict(),
        device=ctx.device,
        command_template=tuple(command_template(ctx.plan, ctx.device, ctx.features)),
        script_dir=str(ctx.script.parent.resolve()),
        upstream=ctx.checkout,
        tensorflow_version=ctx.tf_version,
        python=ctx.python,
        vendor_dir=str(ctx.vendor_dir.resolve()),
        argv=tuple(sys.argv),
        environment=dict(environment.to_json(), link_bandwidth=hostdata.measure_link(ctx)),
    )


def _open_for_writing(ctx: SweepContext) -> None:
    """Create the sweep, or lock the resumed one, check its runs.jsonl and read what it holds."""
    if ctx.meta is None:
        ctx.meta = _new_meta(ctx)
        ctx.sweep.create(ctx.meta)
        ctx.sweep.prepare_for_appending()
    else:
        ctx.sweep.lock()
        ctx.sweep.prepare_for_appending()
        ctx.meta = ctx.meta.resumed_by(
            Resumption(
                at=utc_now(),
                python=ctx.python,
                vendor_dir=str(ctx.vendor_dir.resolve()),
                tfcnnwrap_version=__version__,
                argv=tuple(sys.argv),
            )
        )
        ctx.sweep.write_meta(ctx.meta)
    ctx.records = ctx.sweep.read_runs()


def _run_sweep(ctx: SweepContext) -> int:
    schedule = Schedule(ctx.plan, latest(ctx), ctx.retry_failed)
    todo = schedule.planned()
    header = _header(ctx, todo)
    _warn_noisy_machine(ctx)
    ctx.telemetry = _telemetry(ctx.device, header)
    display = make_display(ctx.console)
    if ctx.telemetry is not None:
        display.set_gpu_source(ctx.telemetry.latest)  # the live view reads the running sampler's newest tick
    ctx.stops = stops = _install_signal_handlers()
    if ctx.telemetry is not None:
        ctx.telemetry.stops = ctx.stops  # Ctrl-C: no grace for a hung nvidia-smi sampler
    stop: Optional[str] = None
    failure: Optional[TfcnnwrapError] = None
    started: List[RunSpec] = []
    display.start(len(todo), header)
    display.expect([(spec.model, spec.batch_size, spec.num_gpus) for spec in todo])  # per-model time left
    shared = SharedSupervisor.start()  # one supervisor process for every run: no interpreter start per run
    try:
        stop = _run_loop(ctx, display, schedule, started, stops)
    except KeyboardInterrupt:
        stop = "interrupted"
    except TfcnnwrapError as exc:
        failure = exc
    finally:
        display.stop()
        if stops.requested and stop is None and failure is None:
            stop = "interrupted"
        _restore_signal_handlers(stops)
        if shared is not None:
            shared.close()
        if ctx.telemetry is not None:
            ctx.telemetry.close()  # the sweep's one sampling nvidia-smi
    return _finish(ctx, started, stop, failure)


def _run_loop(
    ctx: SweepContext, display: Display, schedule: Schedule, started: List[RunSpec], stops: StopRequests
) -> Optional[str]:
    """Run (or record as skipped) what the schedule says next until it is done; the stop reason or None.
    ``started`` collects the specs that ran, in order."""
    index = 0
    while not stops.requested:
        step = schedule.next()
        if step is None:
            return None
        spec, skip = step
        index += 1
        if index > display.total:
            display.total = index  # --until-ci added a run the header did not count
        if skip:
            record = runlife.skipped_record(ctx, spec, skip)
        else:
            started.append(spec)
            extra = _before_run(ctx, display, spec)
            if stops.requested:
                return "interrupted"  # stopped during the pause: the run never started, so it has no record
            outcome, record = _run_one(ctx, display, index, spec)
            record = record.updated(extra)
        runlife.record(ctx, record)
        schedule.finished(ctx.records[-1])
        display.run_finished(index, record, ctx.plan.most_runs)
        stop = None if skip else _stop_reason(len(started), outcome, stops)
        if stop:
            return stop
    return "interrupted"


def _counted(n: int, what: str) -> str:
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def _header(ctx: SweepContext, todo: List[RunSpec]) -> List[str]:
    plan, upstream = ctx.plan, ctx.upstream
    # the factors multiply to the total, GPU counts included
    factors = (
        [_counted(len(plan.models), "model")]
        + ([_counted(len(plan.counts), "GPU count")] if len(plan.counts) > 1 else [])
        + ([_counted(len(plan.kinds), "data kind")] if plan.data_kinds else [])
        + [_counted(plan.runs, "run")]
    )
    return [
        "tfcnnwrap sweep -> %s" % ctx.sweep.path,
        "  %d of %d runs to do (%s), device %s, TensorFlow %s, branch %s%s"
        % (
            len(todo),
            len(plan.run_specs()),
            " x ".join(factors),
            ctx.device,
            ctx.tf_version,
            upstream.branch or "?",
            (" @ " + upstream.commit[:10]) if upstream.commit else "",
        ),
    ] + ["  " + line for line in [_flow_text(ctx), hostdata.header_text(ctx)] if line]


def _flow_text(ctx: SweepContext) -> str:
    """How this sweep differs from the seed's flow: precision, XLA, adaptive runs, order (or '')."""
    plan = ctx.plan
    parts = []
    if ctx.features:
        parts.append(" ".join(ctx.features))
    if plan.until_ci:
        parts.append(
            "more runs until the 95%% CI is within +-%g%% (at most %d per configuration)"
            % (plan.until_ci, plan.most_runs)
        )
    if plan.order != "grouped":
        parts.append("%s order" % plan.order)
    return "; ".join(parts)


def _telemetry(device: str, header: List[str]) -> Optional[Telemetry]:
    """A Telemetry for GPU runs (its start and stop never raise), or None; the header says why not."""
    if device != "gpu":
        return None

    telemetry = Telemetry()
    if not telemetry.available:
        header.append("  " + (telemetry.note or "no GPU telemetry"))
        return None
    return telemetry


def _run_one(ctx: SweepContext, display: Display, index: int, spec: RunSpec) -> Tuple[RunOutcome, RunRecord]:
    """Run one benchmark (with its telemetry): (outcome, record)."""
    if ctx.plan.cluster:
        return _run_job(ctx, display, index, spec)

    plan, sweep = ctx.plan, ctx.sweep
    rel_log = sweep.spec_log(spec, plan)
    argv = runlife.argv(ctx, spec)
    started_at, sampler = runlife.start_run(ctx, display, index, spec)
    try:
        outcome = run_benchmark(
            argv,
            ctx.script.parent,
            ctx.env,
            sweep.path / rel_log,
            timeout_s=plan.timeout_s,
            on_step=display.step,
            stops=ctx.stops,
            on_stage=display.stage,
        )
    except OSError as exc:
        raise runlife.run_failed(ctx, spec, exc) from None
    finally:
        telemetry_summary = sampler.stop() if sampler is not None else None
    record = runlife.run_record(ctx, spec, outcome, argv, started_at, rel_log, telemetry_summary)
    if outcome.status == Status.OK:
        record = replace(record, **cooling.steadiness_fields(sweep.path / rel_log))
    return outcome, record


def _before_run(ctx: SweepContext, display: Display, spec: RunSpec) -> JsonObject:
    """What happens right before a run (the pause and cool-down of --cooldown / --cool-to); the dict is
    merged into the run's record."""
    if ctx.cooling is None:
        ctx.cooling = runlife.CoolingState()
    return cooling.before_run(ctx, display, ctx.cooling, lambda text: _warn(ctx, text))


def _run_job(ctx: SweepContext, display: Display, index: int, spec: RunSpec) -> Tuple[RunOutcome, RunRecord]:
    """A distributed job (--cluster) or a fleet run (--fleet): see sweep.job and fleet."""
    if ctx.plan.fleet:
        return run_fleet(ctx, display, index, spec)

    return run_job(ctx, display, index, spec)


def _dry_run_argvs(ctx: SweepContext, spec: RunSpec) -> List[Tuple[Dict[str, str], List[str]]]:
    """(environment, command) of one run: one, or one per task of a distributed job; the environment is
    what tfcnnwrap sets on top of the user's (TF_USE_LEGACY_KERAS, a task's CUDA_VISIBLE_DEVICES)."""
    env = {k: ctx.env[k] for k in SET_ENV if k in ctx.env}
    if ctx.plan.cluster and not ctx.plan.fleet:
        return [(dict(env, **task_env), argv) for task_env, argv in task_argvs(ctx, runlife.argv(ctx, spec))]
    return [(env, runlife.argv(ctx, spec))]


# What a run's environment gets from tfcnnwrap beyond the user's own (PYTHONUNBUFFERED is the -u it also passes)
SET_ENV = ("TF_USE_LEGACY_KERAS",)


def shell_lines(cwd: Path, env: Mapping[str, str], argv: Sequence[str], windows: Optional[bool] = None) -> str:
    """A run as a person pastes it into this system's shell, so that it runs as tfcnnwrap runs it: POSIX
    ``cd DIR && env A=B CMD``; Windows (cmd) ``cd /d DIR``, a ``set A=B`` line per variable, then CMD."""
    windows = os.name == "nt" if windows is None else windows
    if windows:
        lines = ["cd /d %s" % format_command([str(cwd)])]
        lines += ["set %s=%s" % (k, v) for k, v in env.items()]
        return "\n".join(lines + [format_command(argv)]) + "\n"
    prefix = ["env"] + ["%s=%s" % (k, v) for k, v in env.items()] if env else []
    return "cd %s && %s\n" % (format_command([str(cwd)]), format_command(prefix + list(argv)))


def _stop_reason(index: int, outcome: RunOutcome, stops: StopRequests) -> Optional[str]:
    if outcome.interrupted or stops.requested:
        return "interrupted"
    if index == 1 and outcome.parsed.failure_kind == "flag_error":
        return "flag_error"
    return None


def _finish(ctx: SweepContext, started: List[RunSpec], stop: Optional[str], failure: Optional[TfcnnwrapError]) -> int:
    """The summary on screen and on disk, and the exit code (or the error that ended the sweep)."""
    try:
        rows = runlife.write_summary(ctx)
    except TfcnnwrapError as exc:
        failure = failure or exc
        rows = runlife.summary_rows(ctx)
    final = latest(ctx)
    _print_summary(ctx.console, ctx.sweep, ctx.written_meta, rows, final)
    _thermal_warning(ctx, final)
    _hung_note(ctx, final)
    if stop == "interrupted" and failure is None:  # what to do about the stop first, then what comes after
        ctx.console.print(
            "[yellow]interrupted[/]: finished runs are kept; continue with "
            "`python -m tfcnnwrap sweep --resume %s`" % ctx.sweep.path,
            highlight=False,
        )
    _next_line(ctx, final)
    if failure is not None:
        kept = len(final)
        raise TfcnnwrapError(
            "%s; %d finished run%s kept: fix that, then continue with `python -m tfcnnwrap sweep --resume %s`"
            % (failure.message, kept, " is" if kept == 1 else "s are", ctx.sweep.path),
            exit_code=EXIT_RUNS_FAILED if kept else EXIT_USAGE,
        )
    if stop == "flag_error":
        first = started[0]
        flag_error = ctx.records[-1].failure or "tf_cnn_benchmarks rejected a flag"
        raise TfcnnwrapError(
            "tf_cnn_benchmarks rejected its flags on the first run: %s -- the checked-out branch %s may not "
            "know a flag you passed after --; drop it, or run `python -m tfcnnwrap setup` for a newer branch "
            "(log: %s)"
            % (flag_error, ctx.upstream.branch or "?", ctx.sweep.path / ctx.sweep.spec_log(first, ctx.plan)),
            exit_code=EXIT_USAGE,
        )
    if stop == "interrupted":
        return EXIT_INTERRUPTED
    if any(r.status != Status.OK for r in final):
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _hung_note(ctx: SweepContext, runs: List[RunRecord]) -> None:
    hung = [r for r in runs if r.extra.get("hung_after_total")]
    if hung:
        ctx.console.print(
            "[yellow]note:[/] %s printed %s total and then hung until --timeout; %s figure%s kept "
            "(hung_after_total in runs.jsonl)"
            % (
                _counted(len(hung), "run"),
                "its" if len(hung) == 1 else "their",
                "its" if len(hung) == 1 else "their",
                "" if len(hung) == 1 else "s",
            ),
            highlight=False,
        )


def _next_line(ctx: SweepContext, runs: List[RunRecord]) -> None:
    """What to run next: the compare that fits the sweep's GPU, once some run gave a figure."""
    line = next_compare(ctx.sweep.path, ctx.written_meta) if any(r.ok for r in runs) else None
    if line:
        ctx.console.print("next: " + line, markup=False, highlight=False, soft_wrap=True)  # a command, unbroken


def _thermal_warning(ctx: SweepContext, runs: List[RunRecord]) -> None:
    _warn(ctx, throttle_warning(runs))


def _print_summary(
    console: "Console", sweep: SweepDir, meta: SweepMeta, rows: List[SummaryRow], runs: List[RunRecord]
) -> None:
    print_summary(console, sweep, meta, rows, runs)
    for hint in oom_hints(runs):  # the batch size to try instead (issue 13)
        console.print("[yellow]hint:[/] " + hint, highlight=False)
