"""`doctor`: what a careful person checks before trusting a benchmark.

TensorFlow's version and build, the GPUs it sees, CUDA/cuDNN, tf-keras, the branch setup would pick, the
vendor checkout, git, nvidia-smi and (``--matmul``) the seed's matmul speed on /cpu:0 and /gpu:0. The
TensorFlow questions run in the target interpreter (``probe``); a TensorFlow that cannot answer them all
yields what could be learned plus warnings. It ends with a decision: ``ready`` (a sweep would run as asked,
on the device ``sweep --device auto`` would pick) or not, and why. Exit 0 whenever the interpreter runs
(``--strict``: 1 when not ready); 2 when it cannot be started or is not a Python.
"""

import os
import shutil
import sys
from types import SimpleNamespace

from tfcnnwrap import __version__, settings
from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.jsontext import FORMAT
from tfcnnwrap.render import console, to_json
from tfcnnwrap.run.procs import pip_install_command
from tfcnnwrap.run.telemetry import query_gpus
from tfcnnwrap.target import checkout, versions
from tfcnnwrap.target.checkout import branch_for, branch_mismatch, read_manifest, script_path
from tfcnnwrap.target.envinfo import capture_environment
from tfcnnwrap.target.gpusetup import install_hint
from tfcnnwrap.target.probe import Bandwidth, resolve_device, run_probe
from tfcnnwrap.target.quiet import gather

# CUDA and cuDNN of the official GPU pip builds (tensorflow.org "tested build configurations"), for the
# TensorFlow versions that cannot say themselves (tf.sysconfig.get_build_info arrived in 2.3).
OFFICIAL_CUDA = {}
for _minor in (0, 1, 2):
    OFFICIAL_CUDA[(1, _minor)] = ("8", "5.1")
for _minor in (3, 4):
    OFFICIAL_CUDA[(1, _minor)] = ("8", "6")
for _minor in range(5, 13):
    OFFICIAL_CUDA[(1, _minor)] = ("9", "7")
for _version in ((1, 13), (1, 14), (1, 15), (2, 0)):
    OFFICIAL_CUDA[_version] = ("10.0", "7.4")
for _version in ((2, 1), (2, 2)):
    OFFICIAL_CUDA[_version] = ("10.1", "7.6")

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"
MATMUL = "matmul CPU vs GPU"
VENDOR = "vendor checkout"


def _parsed(version):
    try:
        return versions.parse_tf_version(version) if version else None
    except TfcnnwrapError:
        return None


def git_info():
    """(version string, executable path) of the git GitPython would use; (None, None) without git."""
    try:
        import git  # GitPython: only when git is needed

        version = ".".join(str(part) for part in git.Git().version_info)
        executable = git.Git.GIT_PYTHON_GIT_EXECUTABLE
        return version or None, shutil.which(executable or "git") or executable
    except Exception:  # noqa: BLE001 - ImportError "Bad git executable", GitCommandNotFound, ...
        return None, None


def vendor_info(vendor_dir, manifest, tf_version):
    if manifest is None:
        return None
    return {
        "dir": str(vendor_dir),
        "branch": manifest.get("branch"),
        "commit": manifest.get("commit"),
        "url": manifest.get("url"),
        "tf_version": manifest.get("tf_version"),
        "script_present": script_path(vendor_dir).is_file(),
        "branch_source": manifest.get("branch_source"),
        "branch_warning": branch_mismatch(tf_version, manifest) if tf_version else None,
    }


def recommend_branch(tf_version, manifest=None):
    """(branch, reason) setup would choose offline, or (None, why not)."""
    if not tf_version:
        return None, "no TensorFlow version"
    try:
        return branch_for(tf_version, manifest)
    except TfcnnwrapError as exc:
        return None, exc.message


def _cuda_facts(probe, parsed, warnings):
    """(cuda, cudnn, source): from the build info, else the official build's for old GPU builds."""
    cuda, cudnn = probe.cuda_version, probe.cudnn_version
    if cuda or cudnn:
        return cuda, cudnn, "tensorflow build info"
    dist = probe.distribution or ""
    gpu_build = "gpu" in dist or (dist == "tensorflow" and parsed is not None and parsed >= (2, 1))
    if parsed in OFFICIAL_CUDA and gpu_build and probe.is_cuda_build is not False:
        cuda, cudnn = OFFICIAL_CUDA[parsed]
        warnings[:] = [w for w in warnings if "does not say which CUDA" not in w]
        return cuda, cudnn, "official %s %d.%d build (TensorFlow does not report it)" % ((dist,) + parsed)
    return None, None, None


def collect(python=None, vendor_dir="vendor", matmul=False, timeout=None, bandwidth=False):
    """Everything doctor reports, as the JSON dict. Raises SetupError only when the interpreter cannot be
    started or answers nothing at all. The facts come from ``envinfo``, the same snapshot a sweep records."""
    probe = run_probe(python, full=True, matmul=matmul, timeout=timeout, partial=True, bandwidth=bandwidth)
    manifest = read_manifest(vendor_dir)
    smi = query_gpus()
    env = capture_environment(python, probe=probe, manifest=manifest, smi=smi)
    warnings = list(probe.warnings)
    tf_version = env["tensorflow_version"]
    parsed = _parsed(tf_version)
    target = env["target_python"]["path"]
    if not tf_version and probe.complete:
        warnings.append(
            "no TensorFlow in %s: install it there (`%s`) or point --python at the "
            "interpreter of the environment that has it" % (target, pip_install_command(target, "tensorflow"))
        )
    branch, reason = recommend_branch(tf_version, manifest)
    if tf_version and branch is None:
        warnings.append(reason)
    cuda, cudnn, cuda_source = _cuda_facts(probe, parsed, warnings)
    report = {
        "python": target,
        "python_version": env["target_python"]["version"],
        "tensorflow_version": tf_version,
        "tensorflow_distribution": env["tensorflow_distribution"],
        "tensorflow_location": probe.location,
        "tensorflow_importable": probe.importable,
        "version_source": probe.version_source,
        "gpus": env["gpus"],
        "cuda_version": cuda,
        "cudnn_version": cudnn,
        "cuda_source": cuda_source,
        "is_cuda_build": probe.is_cuda_build,
        "tf_keras": env["tf_keras"],
        "legacy_keras_needed": _needs_legacy_keras(parsed),
        "recommended_branch": branch,
        "branch_reason": reason,
        "nvidia_smi": smi,
        "vendor": vendor_info(vendor_dir, manifest, tf_version),
        "matmul": _matmul_timings(probe) if matmul else None,
        "bandwidth": copy_bandwidth(probe) if bandwidth else None,
        "probe_complete": probe.complete,
        "probe_stage": probe.stage,
        "tfcnnwrap_version": __version__,
        "warnings": warnings,
    }
    report["git"], report["git_path"] = git_info()

    report["quiet"] = gather()  # [{what, fix}]: what would make the numbers wander (quiet.py)
    report["machine"] = {key: env[key] for key in MACHINE_KEYS}
    report["checks"] = checks(report)
    report.update(readiness(report))
    return report


def auto_device(report):
    """(device, note) that `sweep --device auto` would run on: sweep's own rule, not a second copy."""
    return resolve_device("auto", SimpleNamespace(gpus=report["gpus"]))


def blockers(report):
    """The checks that stop a sweep from running as asked: every failed one, and a checkout that is missing
    or was fetched for another TensorFlow."""
    return [row["check"] for row in report["checks"]
            if row["status"] == FAIL or (row["check"] == VENDOR and row["status"] != OK)]


def readiness(report):
    """``ready``, why not (``blockers``), the ``device`` a sweep would use and the one-line ``verdict``."""
    device, note = auto_device(report)
    found = blockers(report)
    facts = {"ready": not found, "blockers": found, "device": device, "device_note": note}
    facts["verdict"] = verdict(dict(report, **facts))
    return facts


# What doctor shows of the machine, from the environment snapshot a sweep records.
MACHINE_KEYS = ("host", "os", "cpu_model", "cpu_logical_cores", "cpu_physical_cores", "ram_bytes",
                "tfcnnwrap_python", "nvidia_driver")


def _needs_legacy_keras(parsed):
    return versions.needs_legacy_keras(parsed) if parsed else None


def _matmul_timings(probe):
    cpu = probe.matmul.cpu_gflops if probe.matmul else None
    gpu = probe.matmul.gpu_gflops if probe.matmul else None
    return {"cpu_gflops": cpu, "gpu_gflops": gpu, "speedup": round(gpu / cpu, 1) if cpu and gpu else None}


def copy_bandwidth(probe):
    """``{h2d_gbps, d2h_gbps, reason}``: the probe's figures, or why there are none."""
    found = probe.bandwidth or Bandwidth(reason="the probe stopped before timing copies (see the warnings)")
    if found.reason is None and (found.h2d_gbps is None or found.d2h_gbps is None):
        found = Bandwidth(found.h2d_gbps, found.d2h_gbps, "a copy took no measurable time")
    return found.to_dict()


# --- verdicts -------------------------------------------------------------------------------------------


def _row(check, status, value, hint=""):
    return {"check": check, "status": status, "value": value, "hint": hint}


def _install(report, package):
    return "`%s`" % pip_install_command(report["python"], package)


def _gpu_row(report):
    gpus, smi = report["gpus"], report["nvidia_smi"]
    smi_names = [g["name"] for g in (smi or {}).get("gpus", [])]
    if gpus:
        return _row("GPUs TensorFlow sees", OK, ", ".join(gpus))
    if gpus is None:
        if not report["tensorflow_version"]:
            return _row("GPUs TensorFlow sees", INFO, "-", "needs TensorFlow")
        return _row("GPUs TensorFlow sees", WARN, "cannot tell", "this TensorFlow could not list its devices")
    if smi_names:
        fix = install_hint(_parsed(report["tensorflow_version"]), report["tensorflow_distribution"],
                           report["python"], os.name == "nt", report["is_cuda_build"], report["cuda_version"],
                           report["cudnn_version"])
        hint = "nvidia-smi sees %s but TensorFlow does not: %s" % (", ".join(smi_names), fix)
        return _row("GPUs TensorFlow sees", FAIL, "none", hint)
    return _row("GPUs TensorFlow sees", WARN, "none", "sweeps run on the CPU (--device cpu); no GPU to benchmark")


def _cuda_row(report):
    cuda, cudnn = report["cuda_version"], report["cudnn_version"]
    if cuda or cudnn:
        hint = "" if report["cuda_source"] == "tensorflow build info" else report["cuda_source"]
        return _row("CUDA / cuDNN (build)", OK, "CUDA %s / cuDNN %s" % (cuda or "?", cudnn or "?"), hint)
    if report["is_cuda_build"] is False:
        return _row("CUDA / cuDNN (build)", INFO, "CPU-only build", "")
    if not report["tensorflow_version"]:
        return _row("CUDA / cuDNN (build)", INFO, "-", "needs TensorFlow")
    return _row("CUDA / cuDNN (build)", INFO, "unknown", "this TensorFlow does not report its CUDA build")


def _keras_row(report):
    needed, present = report["legacy_keras_needed"], report["tf_keras"]
    if needed is None:
        return _row("tf-keras", INFO, "-", "needs a TensorFlow version")
    if not needed:
        return _row("tf-keras", OK, "not needed", "TensorFlow before 2.16 has its own Keras 2")
    if present:
        return _row("tf-keras", OK, "installed", "sweep runs tf_cnn_benchmarks with TF_USE_LEGACY_KERAS=1")
    return _row(
        "tf-keras", FAIL, "missing",
        "TensorFlow >= 2.16 ships Keras 3; tf_cnn_benchmarks needs Keras 2: %s" % _install(report, "tf-keras"),
    )


def _vendor_row(report):
    vendor = report["vendor"]
    if vendor is None:
        return _row(VENDOR, WARN, "none", "run `python -m tfcnnwrap setup` (or pass --vendor-dir)")
    value = "%s @ %s" % (vendor["branch"], (vendor["commit"] or "?")[:10])
    if not vendor["script_present"]:
        return _row("vendor checkout", FAIL, value, "tf_cnn_benchmarks.py is missing: run setup again")
    if vendor["branch_warning"]:
        return _row("vendor checkout", WARN, value, vendor["branch_warning"])
    if vendor["branch_source"] == "--branch":
        return _row("vendor checkout", OK, value, "chosen with setup --branch")
    return _row("vendor checkout", OK, value, vendor["url"] or "")


def _smi_row(report):
    smi = report["nvidia_smi"]
    if smi is None:
        hint = "no GPU telemetry in sweeps"
        if report["gpus"]:
            hint += "; it comes with the NVIDIA driver (or set TFCNNWRAP_NVIDIA_SMI to its path)"
        return _row("nvidia-smi", INFO, "not found", hint)
    gpus = smi.get("gpus") or []
    if not gpus:
        return _row("nvidia-smi", WARN, "no GPU", smi.get("error") or "")
    value = "; ".join(
        "%s, driver %s, %s MiB" % (g["name"], g["driver_version"] or "?", g["memory_total_mib"] or "?") for g in gpus
    )
    return _row("nvidia-smi", OK, value, smi["path"])


def _matmul_row(report):
    timings = report["matmul"]
    if timings is None:
        return _row(MATMUL, INFO, "not run", "add --matmul")
    cpu, gpu, speedup = timings.get("cpu_gflops"), timings.get("gpu_gflops"), timings.get("speedup")
    parts = ["CPU %s GFLOP/s" % (cpu if cpu is not None else "?")]
    if gpu is not None:
        parts.append("GPU %s GFLOP/s" % gpu)
    if speedup:
        parts.append("GPU %.1fx faster" % speedup)
    value = ", ".join(parts)
    if cpu is None and not report["tensorflow_version"]:
        return _row(MATMUL, INFO, "-", "needs TensorFlow")
    if cpu is None or (report["gpus"] and gpu is None):
        return _row(MATMUL, FAIL, value, "see the warnings below")
    if speedup is not None and speedup < 2:
        return _row(MATMUL, WARN, value, "the GPU is hardly faster than the CPU")
    return _row(MATMUL, OK, value, "" if gpu is not None else "no GPU to compare with")


BANDWIDTH = "copy bandwidth"


def bandwidth_row(found):
    """The ``--bandwidth`` check: both directions in GB/s, or why there is no figure."""
    h2d, d2h = found.get("h2d_gbps"), found.get("d2h_gbps")
    if h2d is None or d2h is None:
        reason = found.get("reason") or ""
        no_gpu = "sees no GPU" in reason
        return _row(BANDWIDTH, INFO if no_gpu else WARN, "no figure", reason)
    return _row(BANDWIDTH, OK, "host->GPU %.1f GB/s, GPU->host %.1f GB/s" % (h2d, d2h),
                "128 MiB copies, median of 7; for scale, PCIe 3.0 x16 peaks near 13, x4 (Thunderbolt 3) near 3")


def checks(report):
    """One verdict row per check: check, status (ok, warn, fail, info), value, hint."""
    rows = [_row("Python", OK, report["python_version"] or "?", report["python"] or "")]
    if report["tensorflow_version"]:
        source = {"metadata": "package metadata", "import": "import tensorflow"}.get(report["version_source"], "")
        value = "%s (%s)" % (report["tensorflow_version"], report["tensorflow_distribution"] or source or "?")
        unfinished = not report["probe_complete"] and report["tensorflow_importable"] is None
        if unfinished:
            rows.append(_row("TensorFlow", FAIL, value, "`import tensorflow` crashed or hung: see the warnings below"))
        elif report["tensorflow_importable"] is False:
            hint = "installed but `import tensorflow` fails: see the warnings below"
            if any("DLL load failed" in w for w in report["warnings"]):
                hint += "; run tfcnnwrap from the activated environment (`conda activate NAME`) so that " \
                        "TensorFlow finds its CUDA DLLs"
            rows.append(_row("TensorFlow", FAIL, value, hint))
        else:
            rows.append(_row("TensorFlow", OK, value, report["tensorflow_location"] or ""))
    elif not report["probe_complete"]:
        rows.append(_row("TensorFlow", FAIL, "unknown", "the probe stopped: see the warnings below"))
    else:
        rows.append(_row("TensorFlow", FAIL, "not found",
                         "install it: %s, or use --python" % _install(report, "tensorflow")))
    rows += [_gpu_row(report), _cuda_row(report), _keras_row(report)]
    if report["recommended_branch"]:
        rows.append(_row("branch setup would pick", OK, report["recommended_branch"], report["branch_reason"]))
    else:
        rows.append(_row("branch setup would pick", WARN if report["tensorflow_version"] else INFO, "-",
                         report["branch_reason"] or ""))
    rows.append(_vendor_row(report))
    if report["git"]:
        rows.append(_row("git", OK, report["git"], report["git_path"] or ""))
    else:
        usable = rows[-1]["status"] == OK  # the checkout: sweeps need no git, only setup does
        rows.append(_row("git", WARN if usable else FAIL, "not found",
                         "setup needs git: install it (https://git-scm.com) or set GIT_PYTHON_GIT_EXECUTABLE"))
    rows += [_smi_row(report), _matmul_row(report)]
    if report.get("bandwidth") is not None:
        rows.append(bandwidth_row(report["bandwidth"]))
    rows.append(_quiet_row(report))
    return rows


def _quiet_row(report):
    found = report.get("quiet") or []
    if not found:
        return _row("machine quiet", OK, "nothing found", "GPU processes, clocks, power limit, PCIe, CPU governor")
    return _row("machine quiet", WARN, "; ".join(f["what"] for f in found), "; ".join(f["fix"] for f in found))


# --- output ---------------------------------------------------------------------------------------------

_SYMBOLS = {OK: ("✓", "green"), WARN: ("!", "yellow"), FAIL: ("✗", "red"), INFO: ("–", "dim")}
_ASCII = {OK: "ok", WARN: "warn", FAIL: "FAIL", INFO: "-"}


def _unicode_ok(stream):
    try:
        "✓✗–".encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _device_text(report, device):
    smi_names = [g["name"] for g in (report.get("nvidia_smi") or {}).get("gpus") or []]
    if device == "gpu":
        if report["gpus"]:
            return "the GPU (%s)" % ", ".join(report["gpus"])
        return "the GPU (%s; TensorFlow could not say)" % (
            "nvidia-smi sees %s" % ", ".join(smi_names) if smi_names else "nvidia-smi is present")
    if report["gpus"] is None:
        return "the CPU (TensorFlow could not say whether it sees a GPU)"
    return "the CPU (TensorFlow sees no GPU)"


def verdict(report):
    """The decision: ``ready: a sweep would run on ...`` or ``not ready: CHECK, ...``."""
    found = report["blockers"] if "blockers" in report else blockers(report)
    if found:
        return "not ready: %s" % ", ".join(found)
    device = report.get("device") or auto_device(report)[0]
    return "ready: a sweep would run on %s" % _device_text(report, device)


def _check_lines(row, mark, name_width, width):
    """One check as renderables: mark, name, value (wrapped between its comma-separated parts), then its
    hint indented under it."""
    from rich.padding import Padding  # rich: only when something is drawn
    from rich.text import Text  # rich: only when something is drawn

    from tfcnnwrap.fit import wrap_parts  # fit loads rich: only when a table is drawn

    symbol, colour = mark
    lead = len(symbol) + 1 + name_width + 1
    value_width = max(width - lead, 12)
    parts = [p for p in str(row["value"]).split(", ") if p]
    values = wrap_parts(parts, value_width, sep=", ") or [""]
    lines: list = [Text.assemble((symbol, colour), " ", (row["check"].ljust(name_width), "bold"), " ", values[0],
                           overflow="fold")]
    lines += [Text(" " * lead + more, overflow="fold") for more in values[1:]]
    if row["hint"]:
        lines.append(Padding(Text(str(row["hint"]), style="dim", overflow="fold"), (0, 0, 0, 4), expand=False))
    return lines


def print_table(report, stream=None):
    """One line per check (hints wrapped under it), the warnings, and the verdict: fits 60 columns in about
    a screen."""
    from rich.text import Text  # rich: only when something is drawn

    stream = stream or sys.stdout
    fancy = _unicode_ok(stream)
    out = console()
    out.file = stream
    width = out.width
    name_width = min(max(len(r["check"]) for r in report["checks"]), max(width - 36, 8))
    out.print(Text("tfcnnwrap doctor", style="bold"))
    for row in report["checks"]:
        symbol, colour = _SYMBOLS[row["status"]]
        mark = (symbol if fancy else _ASCII[row["status"]].ljust(4), colour)
        for line in _check_lines(row, mark, name_width, width):
            out.print(line)
    for warning in report["warnings"]:
        out.print(Text("warning: " + warning, style="yellow"))
    found = report["blockers"] if "blockers" in report else blockers(report)
    if report.get("device_note") and report.get("device") == "cpu" and not found:
        out.print(Text(report["device_note"], style="yellow"))
    out.print(Text(verdict(report), style="bold red" if found else "bold green"))


def cmd_doctor(args):
    vendor_dir = settings.vendor_dir(args.vendor_dir)[0]
    python = checkout.target_python(args.python, vendor_dir)[0]
    fmt = args.format or "table"
    matmul = bool(args.matmul)
    bandwidth = bool(args.bandwidth)
    err = console(stderr=True)
    what = "timing the matmul" if matmul else "timing copies to /gpu:0" if bandwidth else "questioning TensorFlow"
    with err.status("%s in %s ..." % (what, python or sys.executable)):
        report = collect(python, str(vendor_dir), matmul, bandwidth=bandwidth)
    if fmt == "json":
        # one object with its own keys, plus the envelope's version and kind (every --format json has both)
        sys.stdout.write(to_json(dict(report, format=FORMAT, kind="doctor")) + "\n")
    else:
        print_table(report)
    return 1 if args.strict and not report["ready"] else 0
