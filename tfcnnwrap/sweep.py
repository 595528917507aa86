"""The `sweep` verb: plan, probe, run each benchmark in its own process, record, summarise.

Each finished run is on disk (runs.jsonl, fsynced; summary.csv rewritten) before the next one starts.
"""

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from tfcnnwrap import __version__, checkout, probe
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
from tfcnnwrap.store import FORMAT_VERSION, SweepDir, open_sweep, run_key
from tfcnnwrap.versions import needs_legacy_keras

SCRIPT_NAME = "tf_cnn_benchmarks.py"
RERUN_STATUSES = {"interrupted"}


def default_out_dir(results_dir="results"):
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
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


def child_env(tf_version):
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if tf_version and needs_legacy_keras(tf_version):
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def command_template(plan, device):
    flags = plan.benchmark_flags("{model}", 0, device)
    return ["{python}", "-u", SCRIPT_NAME, "--model={model}", "--batch_size={batch_size}"] + flags[2:]


def _install_signal_handlers():
    """SIGINT, SIGTERM (SIGBREAK, SIGHUP) become a stop request: the running benchmark's tree is stopped
    and the loop ends; the handler itself never raises (see ``stopping``)."""
    from tfcnnwrap.stopping import StopRequests

    return StopRequests().install()


def _restore_signal_handlers(stops):
    stops.restore()


def runs_to_do(plan, records, retry_failed):
    """Specs that have no record yet, or whose record is interrupted (or failed, with --retry-failed)."""
    by_key = {run_key(r): r for r in records}
    todo = []
    for spec in plan.run_specs():
        rec = by_key.get(spec)
        if rec is None:
            todo.append(spec)
        elif rec.get("status") in RERUN_STATUSES:
            todo.append(spec)
        elif retry_failed and rec.get("status") != "ok":
            todo.append(spec)
    return todo


def _capture_environment(python, probe_result, manifest):
    try:
        from tfcnnwrap.envinfo import capture_environment

        return capture_environment(python=python, probe=probe_result, manifest=manifest, argv=sys.argv)
    except Exception as exc:  # noqa: BLE001 - the environment is a record, never a reason to fail a sweep
        return {"error": "%s: %s" % (type(exc).__name__, exc)}


def _telemetry(device):
    if device != "gpu":
        return None
    try:
        from tfcnnwrap.telemetry import Telemetry

        return Telemetry()
    except Exception:  # noqa: BLE001
        return None


def cmd_sweep(args):
    from tfcnnwrap import render

    console = render.console()
    warn_console = render.console(stderr=True)
    python = probe.target_python(args.python)
    vendor_dir = Path(args.vendor_dir)

    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed works with --resume DIR; add --resume")
    if args.resume:
        given = plan_flags_given(args)
        if given:
            raise UsageError(
                "--resume continues the sweep with its own recorded plan; drop %s" % ", ".join(given)
            )
        sweep = open_sweep(args.resume)
        meta = sweep.meta
        plan = Plan.from_dict(meta.get("plan") or {})
    else:
        plan = build_plan(args)
        sweep = SweepDir(Path(args.out) if args.out else default_out_dir())
        sweep.refuse_existing()
        meta = None

    if args.dry_run:
        script = checkout.script_path(vendor_dir)
    else:
        script = checkout.require_script(vendor_dir)

    # A new sweep asks TensorFlow itself (GPUs, CUDA, cuDNN) for the record in sweep.json and for
    # --device auto; a resumed one only needs the version.
    full = meta is None and (plan.device == "auto" or not args.dry_run)
    probe_result = probe.run_probe(python, full=full, partial=True)
    tf_version = probe_result.tf_version
    if not tf_version:
        raise SetupError(
            "no TensorFlow found for %s: pass --python with the interpreter that has it "
            "(e.g. your conda env's python.exe)" % python
        )
    if needs_legacy_keras(tf_version) and probe_result.tf_keras is False:
        raise SetupError(
            "TensorFlow %s ships Keras 3 and tf_cnn_benchmarks needs Keras 2 from the tf-keras package, which "
            "%s lacks: run `%s`" % (tf_version, python, pip_install_command(python, "tf-keras"))
        )
    if meta is not None:
        device = meta.get("device") or plan.device
    else:
        device, warning = resolve_device(plan.device, probe_result)
        if warning:
            warn_console.print("[yellow]warning:[/] " + warning, highlight=False)

    env = child_env(tf_version)
    manifest = checkout.read_manifest(vendor_dir) or {}
    mismatch = checkout.branch_mismatch(tf_version, manifest)
    if mismatch:
        warn_console.print("[yellow]warning:[/] " + mismatch, highlight=False)

    if args.dry_run:
        for model, bs, run in plan.run_specs():
            argv = [python, "-u", SCRIPT_NAME] + plan.benchmark_flags(model, bs, device)
            sys.stdout.write("cd %s && %s\n" % (format_command([str(script.parent)]), format_command(argv)))
        sys.stdout.write(
            "# %d runs; device %s; TensorFlow %s; %s\n"
            % (len(plan.run_specs()), device, tf_version, "TF_USE_LEGACY_KERAS=1" if "TF_USE_LEGACY_KERAS" in env else "")
        )
        return EXIT_OK

    if meta is None:
        meta = {
            "format": FORMAT_VERSION,
            "tool": "tfcnnwrap",
            "tfcnnwrap_version": __version__,
            "created_at": utc_now(),
            "plan": plan.to_dict(),
            "device": device,
            "command_template": command_template(plan, device),
            "script_dir": str(script.parent.resolve()),
            "upstream": {k: manifest.get(k) for k in ("url", "branch", "commit")},
            "tensorflow_version": tf_version,
            "python": python,
            "argv": list(sys.argv),
            "environment": _capture_environment(python, probe_result, manifest),
        }
        sweep.create(meta)
    else:
        sweep.lock()
        meta.setdefault("resumed", []).append(
            {"at": utc_now(), "python": python, "tfcnnwrap_version": __version__, "argv": list(sys.argv)}
        )
        sweep.write_meta(meta)

    try:
        return _run_sweep(console, sweep, meta, plan, device, python, script, env, args.retry_failed, tf_version)
    finally:
        sweep.unlock()


def _run_sweep(console, sweep, meta, plan, device, python, script, env, retry_failed, tf_version):
    from tfcnnwrap.aggregate import summarize, summary_csv_text
    from tfcnnwrap.live import make_display
    from tfcnnwrap.store import plan_order

    records = sweep.read_runs()
    todo = runs_to_do(plan, records, retry_failed)
    order = plan_order(meta)
    upstream = meta.get("upstream") or {}
    header = [
        "tfcnnwrap sweep -> %s" % sweep.path,
        "  %d of %d runs to do (%d models x %d runs), device %s, TensorFlow %s, branch %s%s"
        % (
            len(todo),
            len(plan.run_specs()),
            len(plan.models),
            plan.runs,
            device,
            tf_version,
            upstream.get("branch") or "?",
            (" @ " + upstream["commit"][:10]) if upstream.get("commit") else "",
        ),
    ]
    telemetry = _telemetry(device)
    if telemetry is not None and not getattr(telemetry, "available", False):
        header.append("  " + (getattr(telemetry, "note", "") or "no GPU telemetry"))
        telemetry = None
    display = make_display(console)
    stops = _install_signal_handlers()
    interrupted = False
    flag_error = None
    display.start(len(todo), header)
    try:
        for index, (model, bs, run) in enumerate(todo, 1):
            if stops.requested:
                interrupted = True
                break
            rel_log = sweep.log_relpath(model, bs, run)
            log_path = sweep.path / rel_log
            argv = [python, "-u", SCRIPT_NAME] + plan.benchmark_flags(model, bs, device)
            display.run_started(index, model, bs, run, plan.runs, plan.num_batches or 100)
            started_at = utc_now()
            sampler = None
            if telemetry is not None:
                try:
                    sampler = telemetry.start(sweep.path / sweep.log_relpath(model, bs, run, ".gpu.csv"))
                except Exception:  # noqa: BLE001 - telemetry must never break a run
                    sampler = None
            from tfcnnwrap.runner import run_benchmark

            try:
                outcome = run_benchmark(
                    argv, script.parent, env, log_path, timeout_s=plan.timeout_s, on_step=display.step,
                    stops=stops,
                )
            finally:
                telemetry_summary = None
                if sampler is not None:
                    try:
                        telemetry_summary = sampler.stop()
                    except Exception as exc:  # noqa: BLE001
                        telemetry_summary = {"error": str(exc)}
            parsed = outcome.parsed
            record = {
                "model": model,
                "batch_size": bs,
                "run": run,
                "status": outcome.status,
                "images_per_sec": parsed.total_images_per_sec if outcome.status == "ok" else None,
                "exit_code": outcome.exit_code,
                "duration_s": round(outcome.duration_s, 3),
                "started_at": started_at,
                "log": rel_log,
                "command": argv,
                "failure": parsed.failure_message if outcome.status != "ok" else None,
                "steps_seen": parsed.steps_seen,
                "last_step_images_per_sec": parsed.last_step.images_per_sec if parsed.last_step else None,
                "log_bytes": outcome.log_bytes,
                "tensorflow_reported": parsed.tf_version,
                "telemetry": telemetry_summary,
            }
            if outcome.status == "timeout" and not record["failure"]:
                record["failure"] = "killed after %.0f s (--timeout)" % plan.timeout_s
            sweep.append_run(record)
            records.append(record)
            rows = summarize(_latest(records), order)
            sweep.write_summary_csv(summary_csv_text(rows))
            display.run_finished(index, record, plan.runs)
            if outcome.interrupted or stops.requested:
                interrupted = True
                break
            if index == 1 and parsed.failure_kind == "flag_error":
                flag_error = parsed.failure_message or "tf_cnn_benchmarks rejected a flag"
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        display.stop()
        interrupted = interrupted or stops.requested
        _restore_signal_handlers(stops)

    final = _latest(records)
    rows = summarize(final, order)
    sweep.write_summary_csv(summary_csv_text(rows))
    _print_summary(console, sweep, meta, rows, final)

    if flag_error:
        raise TfcnnwrapError(
            "tf_cnn_benchmarks rejected its flags on the first run: %s -- the checked-out branch %s may not "
            "know a flag you passed after --; drop it, or run `python -m tfcnnwrap setup` for a newer branch "
            "(log: %s)" % (flag_error, upstream.get("branch") or "?", sweep.path / sweep.log_relpath(*todo[0])),
            exit_code=EXIT_USAGE,
        )
    if interrupted:
        console.print(
            "[yellow]interrupted[/]: finished runs are kept; continue with "
            "`python -m tfcnnwrap sweep --resume %s`" % sweep.path,
            highlight=False,
        )
        return EXIT_INTERRUPTED
    if any(r.get("status") != "ok" for r in final):
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _latest(records):
    from tfcnnwrap.store import latest_runs

    return latest_runs(records)


def _print_summary(console, sweep, meta, rows, runs):
    from tfcnnwrap.report import print_summary

    print_summary(console, sweep, meta, rows, runs)
