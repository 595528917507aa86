"""The `sweep` verb: plan, probe, run each benchmark in its own process, record, summarise.

Each finished run is on disk (runs.jsonl, fsynced; summary.csv rewritten) before the next one starts.
"""

import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from tfcnnwrap import __version__, checkout, probe, settings
from tfcnnwrap.clock import utc_now
from tfcnnwrap.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNS_FAILED,
    EXIT_USAGE,
    SetupError,
    TfcnnwrapError,
    UsageError,
)
from tfcnnwrap.plan import Plan, build_plan, plan_flags_given
from tfcnnwrap.procs import format_command, pip_install_command
from tfcnnwrap.records import RunRecord, Status
from tfcnnwrap.schedule import Schedule, runs_to_do  # noqa: F401 - runs_to_do: sweep.runs_to_do for callers
from tfcnnwrap.store import FORMAT_VERSION, SweepDir, latest_runs, open_sweep
from tfcnnwrap.versions import needs_legacy_keras

SCRIPT_NAME = "tf_cnn_benchmarks.py"


def sweep_stamp(now=None):
    """The sweep directory's name: local time with its UTC offset, no colons (Windows), e.g.
    20261130-101500+0100."""
    now = now or datetime.now(timezone.utc).astimezone()
    return now.strftime("%Y%m%d-%H%M%S") + now.strftime("%z").replace(":", "")


def default_out_dir(results_dir=None):
    results_dir = results_dir if results_dir is not None else settings.results_dir()
    stamp = sweep_stamp()
    out = Path(results_dir) / stamp
    n = 2
    while out.exists():
        out = Path(results_dir) / ("%s-%d" % (stamp, n))
        n += 1
    return out


def resolve_device(requested, probe_result):
    """(device, warning or None) for --device auto|gpu|cpu."""
    if requested in ("gpu", "cpu"):
        return requested, None
    gpus = probe_result.gpus
    if gpus:
        return "gpu", None
    if gpus is None:
        from tfcnnwrap.telemetry import find_nvidia_smi

        if find_nvidia_smi():
            return "gpu", "TensorFlow could not say whether it sees a GPU; nvidia-smi is present, so using the GPU"
        return "cpu", (
            "TensorFlow could not say whether it sees a GPU and there is no nvidia-smi: running on the CPU "
            "(--device=cpu --data_format=NHWC); pass --device gpu to insist"
        )
    return "cpu", (
        "TensorFlow sees no GPU: running on the CPU (--device=cpu --data_format=NHWC), which is slow; "
        "check `python -m tfcnnwrap doctor`, or pass --device gpu to insist"
    )


def check_gpu_counts(counts, device, gpus):
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
        return ("TensorFlow could not say how many GPUs it sees; %s needs %d: a run on fewer fails" % (shown, most))
    if most > len(gpus):
        seen = "%d GPU%s (%s)" % (len(gpus), "" if len(gpus) == 1 else "s", ", ".join(gpus)) if gpus else "no GPU"
        raise UsageError(
            "%s asks for %d GPUs but TensorFlow sees %s; give counts up to %d, or check "
            "CUDA_VISIBLE_DEVICES and `python -m tfcnnwrap doctor`" % (shown, most, seen, max(len(gpus), 1))
        )
    return None


def child_env(tf_version):
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if tf_version and needs_legacy_keras(tf_version):
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def command_template(plan, device, features=()):
    flags = plan.benchmark_flags("{model}", 0, device, features=features)
    return ["{python}", "-u", SCRIPT_NAME, "--model={model}", "--batch_size={batch_size}"] + flags[2:]


def _install_signal_handlers():
    """SIGINT, SIGTERM (SIGBREAK, SIGHUP) become a stop request: the running benchmark's tree is stopped
    and the loop ends; the handler itself never raises (see ``stopping``)."""
    from tfcnnwrap.stopping import StopRequests

    return StopRequests().install()


def _restore_signal_handlers(stops):
    stops.restore()


@dataclass
class SweepContext:
    """Everything a sweep settles before its first run, handed to each step."""

    console: Any
    warn_console: Any
    sweep: SweepDir
    meta: Optional[dict]
    plan: Plan
    python: str
    vendor_dir: Path
    script: Path
    probe: Any  # probe.ProbeAnswer
    tf_version: str
    manifest: dict
    device: str = "cpu"
    env: dict = field(default_factory=dict)
    retry_failed: bool = False
    features: list = field(default_factory=list)  # --fp16/--xla as the branch spells them
    records: list = field(default_factory=list)
    telemetry: Any = None
    stops: Any = None  # stopping.StopRequests while the runs go
    cooling: Any = None  # cooling.CoolingState: the pause and cool-down between runs

    @property
    def upstream(self):
        return (self.meta or {}).get("upstream") or {}

    @property
    def branch(self):
        """The tf_cnn_benchmarks branch the runs use: as recorded, else as the checkout's manifest says."""
        return self.upstream.get("branch") or self.manifest.get("branch")


def cmd_sweep(args):
    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed works with --resume DIR; add --resume")
    sweep, meta, plan = _resume_target(args) if args.resume else _new_target(args)
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


def _new_target(args):
    plan = build_plan(args)
    sweep = SweepDir(Path(args.out) if args.out else default_out_dir())
    sweep.refuse_existing()
    return sweep, None, plan


def _resume_target(args):
    given = plan_flags_given(args)
    if given:
        raise UsageError("--resume continues the sweep with its own recorded plan; drop %s" % ", ".join(given))
    if Path(args.resume).is_dir():
        SweepDir(args.resume).refuse_links()  # before anything in it is read
    sweep = open_sweep(args.resume)
    return sweep, sweep.meta, Plan.from_dict(sweep.meta.get("plan") or {})


def _where_to_run(args, meta):
    """(python, vendor_dir, where python came from): the flags, else (on --resume) what the sweep recorded,
    else TFCNNWRAP_PYTHON / TFCNNWRAP_VENDOR_DIR, else what the last setup remembered, else the defaults."""
    recorded = meta or {}
    if args.vendor_dir or not recorded.get("vendor_dir"):
        vendor_dir = settings.vendor_dir(args.vendor_dir)[0]
    else:
        vendor_dir = Path(recorded["vendor_dir"])
    if args.python or not recorded.get("python"):
        python, source = settings.target_python(args.python, vendor_dir)
    else:
        python, source = recorded["python"], "the sweep's sweep.json"
    return probe.target_python(python), vendor_dir, source


def _hold_vendor(vendor_dir):
    if not Path(vendor_dir).is_dir():
        return None  # require_script names the fix
    lock = checkout.vendor_lock(vendor_dir, shared=True)
    try:
        lock.acquire()
    except OSError:
        return None  # a read-only shared checkout: setup cannot change it under us either
    return lock


def _prepare(args, sweep, meta, plan, python, vendor_dir, python_from=None):
    """Probe the target, check it against a resumed sweep, settle the device: a SweepContext."""
    from tfcnnwrap import render

    script = checkout.script_path(vendor_dir) if args.dry_run else checkout.require_script(vendor_dir)
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
        console=render.console(), warn_console=render.console(stderr=True), sweep=sweep, meta=meta, plan=plan,
        python=python, vendor_dir=Path(vendor_dir), script=script, probe=probe_result,
        tf_version=_require_tensorflow(python, probe_result, python_from),
        manifest=checkout.read_manifest(vendor_dir) or {}, retry_failed=args.retry_failed,
    )
    if meta is not None:
        _refuse_another_tensorflow(ctx)
        ctx.device = meta.get("device") or plan.device
    else:
        ctx.device, warning = resolve_device(plan.device, probe_result)
        _warn(ctx, warning)
    _warn(ctx, meta is None and check_gpu_counts(plan.counts, ctx.device, probe_result.gpus))  # resumed: checked
    ctx.env = child_env(ctx.tf_version)
    ctx.features = _feature_flags(plan, ctx.manifest, script)
    _warn(ctx, checkout.branch_mismatch(ctx.tf_version, ctx.manifest))
    _check_cluster(ctx)
    return ctx


def _feature_flags(plan, manifest, script):
    """--fp16 / --xla as the checked-out branch spells them (UsageError where it has no such flag)."""
    from tfcnnwrap.features import BRANCH_FLAGS, branch_flags

    wanted = [f for f in ("fp16", "xla") if getattr(plan, f)]
    if not wanted:
        return []
    source = None
    benchmark_cnn = Path(script).parent / "benchmark_cnn.py"
    if manifest.get("branch") not in BRANCH_FLAGS and benchmark_cnn.is_file():  # a fork: judge from its code
        source = benchmark_cnn.read_text(encoding="utf-8", errors="replace")
    return branch_flags(wanted, manifest.get("branch"), source)


def _check_cluster(ctx):
    if ctx.plan.cluster:
        from tfcnnwrap.sweepjob import check

        check(ctx)


def _warn_noisy_machine(ctx):
    """Once, before the first run: what on this machine would make the numbers wander (quiet.py)."""
    from tfcnnwrap.quiet import gather

    for finding in gather(gpu=ctx.device == "gpu"):
        _warn(ctx, "%s: %s" % (finding["what"], finding["fix"]))


def _warn(ctx, warning):
    """One warning: wrapped between words to a terminal's width (a number kept with its unit), else one line."""
    if warning:
        from rich.text import Text

        from tfcnnwrap.prose import fill

        con = ctx.warn_console
        text = "warning: " + warning
        shown = Text(fill(text, con.width) if con.is_terminal else text)
        shown.stylize("yellow", 0, len("warning:"))
        con.print(shown, soft_wrap=True, highlight=False)


def _require_tensorflow(python, probe_result, python_from=None):
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


def _refuse_another_tensorflow(ctx):
    """A resume runs what the sweep ran: its runs are pooled with the earlier ones."""
    meta = ctx.meta
    recorded = meta.get("tensorflow_version")
    if recorded and recorded != ctx.tf_version:
        raise UsageError(
            "%s ran TensorFlow %s but %s has TensorFlow %s; resume with the sweep's own --python (%s), or "
            "start a new sweep" % (ctx.sweep.path, recorded, ctx.python, ctx.tf_version, meta.get("python"))
        )
    commit = ctx.upstream.get("commit")
    if commit and ctx.manifest.get("commit") != commit:
        recorded_dir = meta.get("vendor_dir")
        if recorded_dir and Path(recorded_dir) != ctx.vendor_dir.resolve():
            fix = "resume with the sweep's own --vendor-dir (%s)" % recorded_dir
        else:
            fix = "the checkout changed since the sweep began (setup --update?): runs of both would be pooled"
        raise UsageError(
            "%s ran checkout commit %s but %s holds %s; %s, or start a new sweep"
            % (ctx.sweep.path, commit, ctx.vendor_dir, ctx.manifest.get("commit") or "no checkout", fix)
        )


def _print_dry_run(ctx):
    plan = ctx.plan
    records = latest_runs(ctx.sweep.read_runs(), plan.num_gpus) if ctx.meta is not None else []
    specs = Schedule(plan, records, ctx.retry_failed).planned()
    for spec in specs:
        for argv in _dry_run_argvs(ctx, spec):
            sys.stdout.write("cd %s && %s\n" % (format_command([str(ctx.script.parent)]), format_command(argv)))
    fields = ["%d run%s" % (len(specs), "" if len(specs) == 1 else "s"), "device %s" % ctx.device,
              "TensorFlow %s" % ctx.tf_version,
              "TF_USE_LEGACY_KERAS=1" if "TF_USE_LEGACY_KERAS" in ctx.env else "", _flow_text(ctx)]
    sys.stdout.write("# %s\n" % "; ".join(f for f in fields if f))
    return EXIT_OK


def _new_meta(ctx):
    from tfcnnwrap.envinfo import capture_environment

    return {
        "format": FORMAT_VERSION,
        "tool": "tfcnnwrap",
        "tfcnnwrap_version": __version__,
        "created_at": utc_now(),
        "plan": ctx.plan.to_dict(),
        "device": ctx.device,
        "command_template": command_template(ctx.plan, ctx.device, ctx.features),
        "script_dir": str(ctx.script.parent.resolve()),
        "upstream": {k: ctx.manifest.get(k) for k in ("url", "branch", "commit")},
        "tensorflow_version": ctx.tf_version,
        "python": ctx.python,
        "vendor_dir": str(ctx.vendor_dir.resolve()),
        "argv": list(sys.argv),
        "environment": capture_environment(python=ctx.python, probe=ctx.probe, manifest=ctx.manifest,
                                           argv=sys.argv),
    }


def _open_for_writing(ctx):
    """Create the sweep, or lock the resumed one, check its runs.jsonl and read what it holds."""
    if ctx.meta is None:
        ctx.meta = _new_meta(ctx)
        ctx.sweep.create(ctx.meta)
        ctx.sweep.prepare_for_appending()
    else:
        ctx.sweep.lock()
        ctx.sweep.prepare_for_appending()
        ctx.meta.setdefault("resumed", []).append({
            "at": utc_now(), "python": ctx.python, "vendor_dir": str(ctx.vendor_dir.resolve()),
            "tfcnnwrap_version": __version__, "argv": list(sys.argv),
        })
        ctx.sweep.write_meta(ctx.meta)
    ctx.records = ctx.sweep.read_runs()


def _run_sweep(ctx):
    from tfcnnwrap.live import make_display

    schedule = Schedule(ctx.plan, _latest(ctx), ctx.retry_failed)
    todo = schedule.planned()
    header = _header(ctx, todo)
    _warn_noisy_machine(ctx)
    ctx.telemetry = _telemetry(ctx.device, header)
    display = make_display(ctx.console)
    gpu_source = getattr(display, "set_gpu_source", None)
    if gpu_source is not None and ctx.telemetry is not None:
        gpu_source(ctx.telemetry.latest)  # the live view reads the running sampler's newest tick
    ctx.stops = _install_signal_handlers()
    stop, failure, started = None, None, []
    display.start(len(todo), header)
    display.expect([(spec.model, spec.batch_size, spec.num_gpus) for spec in todo])  # per-model time left
    try:
        stop = _run_loop(ctx, display, schedule, started)
    except KeyboardInterrupt:
        stop = "interrupted"
    except TfcnnwrapError as exc:
        failure = exc
    finally:
        display.stop()
        if ctx.stops.requested and stop is None and failure is None:
            stop = "interrupted"
        _restore_signal_handlers(ctx.stops)
    return _finish(ctx, started, stop, failure)


def _run_loop(ctx, display, schedule, started):
    """Run (or record as skipped) what the schedule says next until it is done; the stop reason or None.
    ``started`` collects the specs that ran, in order."""
    index = 0
    while not ctx.stops.requested:
        step = schedule.next()
        if step is None:
            return None
        spec, skip = step
        index += 1
        if index > getattr(display, "total", index):
            display.total = index  # --until-ci added a run the header did not count
        if skip:
            record = _skipped_record(ctx, spec, skip)
        else:
            started.append(spec)
            extra = _before_run(ctx, display, spec)
            if ctx.stops.requested:
                return "interrupted"  # stopped during the pause: the run never started, so it has no record
            outcome, record = _run_one(ctx, display, index, spec)
            record.update(extra or {})
        _record(ctx, record)
        schedule.finished(ctx.records[-1])
        display.run_finished(index, record, ctx.plan.most_runs)
        stop = None if skip else _stop_reason(len(started), outcome, ctx.stops)
        if stop:
            return stop
    return "interrupted"


def _skipped_record(ctx, spec, reason):
    """The record of a run not started because its configuration ran out of GPU memory."""
    return {
        "model": spec.model, "batch_size": spec.batch_size, "num_gpus": spec.num_gpus, "run": spec.run,
        "status": Status.SKIPPED.value, "images_per_sec": None, "exit_code": None, "duration_s": None,
        "started_at": None, "log": None, "command": _argv(ctx, spec), "failure": reason, "steps_seen": None,
        "last_step_images_per_sec": None, "log_bytes": None, "tensorflow_reported": None, "telemetry": None,
    }


def _counted(n, what):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def _header(ctx, todo):
    plan, upstream = ctx.plan, ctx.upstream
    # the factors multiply to the total, GPU counts included
    factors = [_counted(len(plan.models), "model")] + (
        [_counted(len(plan.counts), "GPU count")] if len(plan.counts) > 1 else []) + [_counted(plan.runs, "run")]
    return [
        "tfcnnwrap sweep -> %s" % ctx.sweep.path,
        "  %d of %d runs to do (%s), device %s, TensorFlow %s, branch %s%s"
        % (
            len(todo),
            len(plan.run_specs()),
            " x ".join(factors),
            ctx.device,
            ctx.tf_version,
            upstream.get("branch") or "?",
            (" @ " + upstream["commit"][:10]) if upstream.get("commit") else "",
        ),
    ] + ["  " + line for line in [_flow_text(ctx)] if line]


def _flow_text(ctx):
    """How this sweep differs from the seed's flow: precision, XLA, adaptive runs, order (or '')."""
    plan = ctx.plan
    parts = []
    if ctx.features:
        parts.append(" ".join(ctx.features))
    if plan.until_ci:
        parts.append("more runs until the 95%% CI is within +-%g%% (at most %d per configuration)"
                     % (plan.until_ci, plan.most_runs))
    if plan.order != "grouped":
        parts.append("%s order" % plan.order)
    return "; ".join(parts)


def _telemetry(device, header):
    """A Telemetry for GPU runs (its start and stop never raise), or None; the header says why not."""
    if device != "gpu":
        return None
    from tfcnnwrap.telemetry import Telemetry

    telemetry = Telemetry()
    if not telemetry.available:
        header.append("  " + (telemetry.note or "no GPU telemetry"))
        return None
    return telemetry


def _run_one(ctx, display, index, spec):
    """Run one benchmark (with its telemetry): (outcome, record)."""
    if ctx.plan.cluster:
        return _run_job(ctx, display, index, spec)
    from tfcnnwrap.runner import run_benchmark

    plan, sweep = ctx.plan, ctx.sweep
    rel_log = sweep.spec_log(spec, plan)
    argv = _argv(ctx, spec)
    started_at, sampler = start_run(ctx, display, index, spec)
    try:
        outcome = run_benchmark(argv, ctx.script.parent, ctx.env, sweep.path / rel_log, timeout_s=plan.timeout_s,
                                on_step=display.step, stops=ctx.stops, on_stage=getattr(display, "stage", None))
    except OSError as exc:
        raise _run_failed(ctx, spec, exc) from None
    finally:
        telemetry_summary = sampler.stop() if sampler is not None else None
    record = _run_record(ctx, spec, outcome, argv, started_at, rel_log, telemetry_summary)
    record.update(_steadiness(sweep.path / rel_log) if outcome.status == "ok" else {})
    return outcome, record


def start_run(ctx, display, index, spec):
    """The live view told, the start time taken, GPU sampling begun: (started_at, sampler or None)."""
    plan = ctx.plan
    display.run_started(index, spec.model, spec.batch_size, spec.run, plan.most_runs, plan.num_batches or 100,
                        spec.num_gpus)
    started_at = utc_now()
    if ctx.telemetry is None:
        return started_at, None
    return started_at, ctx.telemetry.start(ctx.sweep.path / ctx.sweep.spec_log(spec, plan, ".gpu.csv"))


def _before_run(ctx, display, spec) -> dict:
    """What happens right before a run (the pause and cool-down of --cooldown / --cool-to); the dict is
    merged into the run's record."""
    from tfcnnwrap import cooling

    if ctx.cooling is None:
        ctx.cooling = cooling.CoolingState()
    return cooling.before_run(ctx, display, ctx.cooling, lambda text: _warn(ctx, text))


def _steadiness(log_path):
    from tfcnnwrap.cooling import steadiness_fields

    return steadiness_fields(log_path)


def _run_job(ctx, display, index, spec):
    """A distributed job (--cluster) or a fleet run (--fleet): see sweepjob and fleet."""
    if ctx.plan.fleet:
        from tfcnnwrap.fleet import run_fleet

        return run_fleet(ctx, display, index, spec)
    from tfcnnwrap.sweepjob import run_job

    return run_job(ctx, display, index, spec)


def _dry_run_argvs(ctx, spec):
    """The commands of one run: one, or one per task of a distributed job."""
    if ctx.plan.cluster and not ctx.plan.fleet:
        from tfcnnwrap.sweepjob import task_argvs

        return task_argvs(ctx, _argv(ctx, spec))
    return [_argv(ctx, spec)]


def job_files(ctx, spec):
    """(argv, rel_log, run_name, log_dir) of a run that runs as several processes (a distributed job, a fleet
    run): each process logs beside ``rel_log`` as ``<run_name>.<task>.log``; ``log_dir`` exists."""
    rel_log = ctx.sweep.spec_log(spec, ctx.plan)
    run_name = Path(rel_log).name[: -len(".log")]
    log_dir = ctx.sweep.path / Path(rel_log).parent
    log_dir.mkdir(parents=True, exist_ok=True)
    return _argv(ctx, spec), rel_log, run_name, log_dir


def _argv(ctx, spec):
    flags = ctx.plan.benchmark_flags(spec.model, spec.batch_size, ctx.device, spec.num_gpus, ctx.features)
    return [ctx.python, "-u", SCRIPT_NAME] + flags


def _run_failed(ctx, spec, exc):
    """A run that could not start or could not be logged: the user's environment, not the benchmark's."""
    model, bs, run = spec.model, spec.batch_size, spec.run
    if not ctx.script.is_file():
        reason = "the checkout %s is gone (run `python -m tfcnnwrap setup`)" % ctx.script.parent
    else:
        reason = "%s%s" % (getattr(exc, "strerror", None) or exc,
                           ": %s" % exc.filename if getattr(exc, "filename", None) else "")
    return TfcnnwrapError("%s bs%d run %d could not run: %s" % (model, bs, run, reason))


def _run_record(ctx, spec, outcome, argv, started_at, rel_log, telemetry_summary):
    parsed = outcome.parsed
    ok = outcome.status == "ok"
    record = {
        "model": spec.model,
        "batch_size": spec.batch_size,
        "num_gpus": spec.num_gpus,
        "run": spec.run,
        "status": outcome.status,
        "images_per_sec": parsed.total_images_per_sec if ok else None,
        "exit_code": outcome.exit_code,
        "duration_s": round(outcome.duration_s, 3),
        "started_at": started_at,
        "log": rel_log,
        "command": argv,
        "failure": parsed.failure_message if not ok else None,
        "steps_seen": parsed.steps_seen,
        "last_step_images_per_sec": parsed.last_step.images_per_sec if parsed.last_step else None,
        "log_bytes": outcome.log_bytes,
        "tensorflow_reported": parsed.tf_version,
        "telemetry": telemetry_summary,
    }
    if outcome.status == "timeout" and not record["failure"]:
        record["failure"] = "killed after %.0f s (--timeout)" % ctx.plan.timeout_s
    return record


def _record(ctx, record):
    """On disk before the next run starts: the record (fsynced), then the summary over every run so far."""
    ctx.sweep.append_run(record)
    ctx.records.append(RunRecord.from_dict(record))
    _write_summary(ctx)


def _write_summary(ctx):
    from tfcnnwrap.aggregate import summarize, summary_csv_text
    from tfcnnwrap.store import plan_order

    rows = summarize(_latest(ctx), plan_order(ctx.meta))
    ctx.sweep.write_summary_csv(summary_csv_text(rows))
    return rows


def _stop_reason(index, outcome, stops):
    if outcome.interrupted or stops.requested:
        return "interrupted"
    if index == 1 and outcome.parsed.failure_kind == "flag_error":
        return "flag_error"
    return None


def _finish(ctx, started, stop, failure):
    """The summary on screen and on disk, and the exit code (or the error that ended the sweep)."""
    try:
        rows = _write_summary(ctx)
    except TfcnnwrapError as exc:
        failure = failure or exc
        from tfcnnwrap.aggregate import summarize
        from tfcnnwrap.store import plan_order

        rows = summarize(_latest(ctx), plan_order(ctx.meta))
    final = _latest(ctx)
    _print_summary(ctx.console, ctx.sweep, ctx.meta, rows, final)
    _thermal_warning(ctx, final)
    if failure is not None:
        kept = len(final)
        raise TfcnnwrapError(
            "%s; %d finished run%s kept: fix that, then continue with `python -m tfcnnwrap sweep --resume %s`"
            % (failure.message, kept, " is" if kept == 1 else "s are", ctx.sweep.path),
            exit_code=EXIT_RUNS_FAILED if kept else EXIT_USAGE,
        )
    if stop == "flag_error":
        first = started[0]
        flag_error = ctx.records[-1].get("failure") or "tf_cnn_benchmarks rejected a flag"
        raise TfcnnwrapError(
            "tf_cnn_benchmarks rejected its flags on the first run: %s -- the checked-out branch %s may not "
            "know a flag you passed after --; drop it, or run `python -m tfcnnwrap setup` for a newer branch "
            "(log: %s)" % (flag_error, ctx.upstream.get("branch") or "?",
                           ctx.sweep.path / ctx.sweep.spec_log(first, ctx.plan)),
            exit_code=EXIT_USAGE,
        )
    if stop == "interrupted":
        ctx.console.print(
            "[yellow]interrupted[/]: finished runs are kept; continue with "
            "`python -m tfcnnwrap sweep --resume %s`" % ctx.sweep.path,
            highlight=False,
        )
        return EXIT_INTERRUPTED
    if any(r.status != "ok" for r in final):
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _thermal_warning(ctx, runs):
    from tfcnnwrap.cooling import throttle_warning

    _warn(ctx, throttle_warning(runs))


def _latest(ctx):
    return latest_runs(ctx.records, ctx.plan.num_gpus)


def _print_summary(console, sweep, meta, rows, runs):
    from tfcnnwrap.report import print_summary
    from tfcnnwrap.schedule import oom_hints

    print_summary(console, sweep, meta, rows, runs)
    for hint in oom_hints(runs):  # the batch size to try instead (issue 13)
        console.print("[yellow]hint:[/] " + hint, highlight=False)
