"""`doctor`: what a careful person checks before trusting a benchmark.

TensorFlow's version and build, the GPUs it sees, CUDA/cuDNN, tf-keras, the branch setup would pick, the
vendor checkout, git, nvidia-smi and (``--matmul``) the seed's matmul speed on /cpu:0 and /gpu:0. The
TensorFlow questions run in the target interpreter (``probe``); a TensorFlow that cannot answer them all
yields what could be learned plus warnings. It ends with a decision: ``ready`` (a sweep would run as asked,
on the device ``sweep --device auto`` would pick) or not, and why. Exit 0 whenever the interpreter runs
(``--strict``: 1 when not ready); 2 when it cannot be started or is not a Python.

What it found is a ``DoctorReport``, a frozen record that writes (and reads back) the contract's JSON.
"""

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from typing import IO, Any, Dict, List, Literal, Mapping, Optional, Tuple

from tfcnnwrap import __version__, settings
from tfcnnwrap.environment import checkout, versions
from tfcnnwrap.environment.checkout import branch_for, branch_mismatch, read_manifest, script_path
from tfcnnwrap.environment.envinfo import Environment, capture_environment
from tfcnnwrap.environment.gpusetup import install_hint
from tfcnnwrap.environment.probe import Bandwidth, ProbeAnswer, resolve_device, run_probe
from tfcnnwrap.environment.quiet import gather
from tfcnnwrap.errors import TfcnnwrapError
from tfcnnwrap.jsontext import FORMAT
from tfcnnwrap.render import console, to_json
from tfcnnwrap.results.records import JsonObject, opt_object, opt_text
from tfcnnwrap.run.procs import pip_install_command
from tfcnnwrap.run.telemetry import query_gpus

# CUDA and cuDNN of the official GPU pip builds (tensorflow.org "tested build configurations"), for the
# TensorFlow versions that cannot say themselves (tf.sysconfig.get_build_info arrived in 2.3).
OFFICIAL_CUDA: Dict[Tuple[int, int], Tuple[str, str]] = {}
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

# What doctor shows of the machine, from the environment snapshot a sweep records.
MACHINE_KEYS = (
    "host",
    "os",
    "cpu_model",
    "cpu_logical_cores",
    "cpu_physical_cores",
    "ram_bytes",
    "tfcnnwrap_python",
    "nvidia_driver",
)


# --- the records ----------------------------------------------------------------------------------------


def _flag(value: object) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def _number(value: object) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _texts(value: object) -> Tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class Check:
    """One verdict row: the check, its status (ok, warn, fail, info), what was found and a hint under it."""

    check: str
    status: str
    value: str
    hint: str = ""

    def to_json(self) -> Dict[str, str]:
        return {"check": self.check, "status": self.status, "value": self.value, "hint": self.hint}

    @classmethod
    def from_json(cls, data: object) -> "Check":
        found = opt_object(data)
        return cls(
            str(found.get("check", "")),
            str(found.get("status", INFO)),
            str(found.get("value", "")),
            str(found.get("hint") or ""),
        )


@dataclass(frozen=True)
class VendorInfo:
    """The vendor checkout as its manifest describes it, and whether it suits this TensorFlow."""

    dir: str
    branch: Optional[str] = None
    commit: Optional[str] = None
    url: Optional[str] = None
    tf_version: Optional[str] = None
    script_present: bool = False
    branch_source: Optional[str] = None
    branch_warning: Optional[str] = None

    def to_json(self) -> Dict[str, object]:
        return {
            "dir": self.dir,
            "branch": self.branch,
            "commit": self.commit,
            "url": self.url,
            "tf_version": self.tf_version,
            "script_present": self.script_present,
            "branch_source": self.branch_source,
            "branch_warning": self.branch_warning,
        }

    @classmethod
    def from_json(cls, data: object) -> "VendorInfo":
        found = opt_object(data)
        return cls(
            str(found.get("dir", "")),
            opt_text(found.get("branch")),
            opt_text(found.get("commit")),
            opt_text(found.get("url")),
            opt_text(found.get("tf_version")),
            found.get("script_present") is True,
            opt_text(found.get("branch_source")),
            opt_text(found.get("branch_warning")),
        )


@dataclass(frozen=True)
class MatmulTimings:
    """``--matmul``: the seed's product on /cpu:0 and /gpu:0 in GFLOP/s, and how much faster the GPU was."""

    cpu_gflops: Optional[float] = None
    gpu_gflops: Optional[float] = None
    speedup: Optional[float] = None

    def to_json(self) -> Dict[str, Optional[float]]:
        return {"cpu_gflops": self.cpu_gflops, "gpu_gflops": self.gpu_gflops, "speedup": self.speedup}

    @classmethod
    def from_json(cls, data: object) -> "MatmulTimings":
        found = opt_object(data)
        return cls(*(_number(found.get(k)) for k in ("cpu_gflops", "gpu_gflops", "speedup")))


@dataclass(frozen=True)
class Finding:
    """What would make the numbers wander, and its fix (``quiet.gather``)."""

    what: str
    fix: str


@dataclass(frozen=True)
class Readiness:
    """The decision: ``ready``, why not (``blockers``), the ``device`` a sweep would use, the ``verdict`` line."""

    ready: bool
    blockers: List[str]
    device: str
    device_note: Optional[str]
    verdict: str

    def to_json(self) -> Dict[str, object]:
        return {
            "ready": self.ready,
            "blockers": list(self.blockers),
            "device": self.device,
            "device_note": self.device_note,
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> "Readiness":
        return cls(
            data.get("ready") is True,
            list(_texts(data.get("blockers"))),
            str(data.get("device") or "cpu"),
            opt_text(data.get("device_note")),
            str(data.get("verdict") or ""),
        )


@dataclass(frozen=True)
class DoctorReport:
    """Everything doctor found; ``to_json`` is `doctor --format json` (contract: one object with these keys)."""

    python: Optional[str] = None
    python_version: Optional[str] = None
    tensorflow_version: Optional[str] = None
    tensorflow_distribution: Optional[str] = None
    tensorflow_location: Optional[str] = None
    tensorflow_importable: Optional[bool] = None
    version_source: Optional[str] = None
    gpus: Optional[Tuple[str, ...]] = None  # () TensorFlow sees none, None it cannot tell
    cuda_version: Optional[str] = None
    cudnn_version: Optional[str] = None
    cuda_source: Optional[str] = None
    is_cuda_build: Optional[bool] = None
    tf_keras: Optional[bool] = None
    legacy_keras_needed: Optional[bool] = None
    recommended_branch: Optional[str] = None
    branch_reason: Optional[str] = None
    nvidia_smi: Optional[JsonObject] = None  # what telemetry.query_gpus answered, shown as it is
    vendor: Optional[VendorInfo] = None
    matmul: Optional[MatmulTimings] = None
    bandwidth: Optional[Bandwidth] = None
    probe_complete: bool = False
    probe_stage: Optional[str] = None
    tfcnnwrap_version: Optional[str] = None
    warnings: Tuple[str, ...] = ()
    git: Optional[str] = None
    git_path: Optional[str] = None
    quiet: Tuple[Finding, ...] = ()
    machine: Environment = field(default_factory=Environment)  # MACHINE_KEYS of it are shown
    checks: Tuple[Check, ...] = ()
    readiness: Optional[Readiness] = None

    @property
    def smi_names(self) -> List[str]:
        """The GPU names nvidia-smi listed."""
        listed = opt_object(self.nvidia_smi).get("gpus")
        return [str(opt_object(g).get("name")) for g in listed] if isinstance(listed, list) else []

    def with_checks(self) -> "DoctorReport":
        """This report with its verdict rows."""
        return replace(self, checks=tuple(checks(self)))

    def with_readiness(self) -> "DoctorReport":
        """This report with its decision (its rows first, when it has none)."""
        report = self if self.checks else self.with_checks()
        return replace(report, readiness=readiness(report))

    def to_json(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "python": self.python,
            "python_version": self.python_version,
            "tensorflow_version": self.tensorflow_version,
            "tensorflow_distribution": self.tensorflow_distribution,
            "tensorflow_location": self.tensorflow_location,
            "tensorflow_importable": self.tensorflow_importable,
            "version_source": self.version_source,
            "gpus": list(self.gpus) if self.gpus is not None else None,
            "cuda_version": self.cuda_version,
            "cudnn_version": self.cudnn_version,
            "cuda_source": self.cuda_source,
            "is_cuda_build": self.is_cuda_build,
            "tf_keras": self.tf_keras,
            "legacy_keras_needed": self.legacy_keras_needed,
            "recommended_branch": self.recommended_branch,
            "branch_reason": self.branch_reason,
            "nvidia_smi": self.nvidia_smi,
            "vendor": self.vendor.to_json() if self.vendor else None,
            "matmul": self.matmul.to_json() if self.matmul else None,
            "bandwidth": self.bandwidth.to_dict() if self.bandwidth else None,
            "probe_complete": self.probe_complete,
            "probe_stage": self.probe_stage,
            "tfcnnwrap_version": self.tfcnnwrap_version,
            "warnings": list(self.warnings),
            "git": self.git,
            "git_path": self.git_path,
            "quiet": [{"what": f.what, "fix": f.fix} for f in self.quiet],
        }
        environment = self.machine.to_json()
        out["machine"] = {key: environment[key] for key in MACHINE_KEYS}
        out["checks"] = [row.to_json() for row in self.checks]
        if self.readiness is not None:
            out.update(self.readiness.to_json())
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> "DoctorReport":
        """The report of a `doctor --format json` object (keys it lacks read as not known)."""
        gpus, quiet = data.get("gpus"), data.get("quiet")
        facts: Dict[str, Any] = {key: opt_text(data.get(key)) for key in _TEXT_KEYS}  # Any: splatted into fields
        facts.update((key, _flag(data.get(key))) for key in _FLAG_KEYS)
        return cls(
            **facts,
            gpus=_texts(gpus) if isinstance(gpus, list) else None,
            nvidia_smi=data["nvidia_smi"] if isinstance(data.get("nvidia_smi"), Mapping) else None,
            vendor=VendorInfo.from_json(data["vendor"]) if isinstance(data.get("vendor"), Mapping) else None,
            matmul=MatmulTimings.from_json(data["matmul"]) if isinstance(data.get("matmul"), Mapping) else None,
            bandwidth=Bandwidth.from_json(data.get("bandwidth")),
            probe_complete=data.get("probe_complete") is True,
            warnings=_texts(data.get("warnings")),
            quiet=tuple(Finding(str(opt_object(f).get("what")), str(opt_object(f).get("fix"))) for f in quiet)
            if isinstance(quiet, list)
            else (),
            machine=Environment.from_json(data.get("machine")),
            checks=tuple(Check.from_json(row) for row in data.get("checks") or []),
            readiness=Readiness.from_json(data) if "ready" in data else None,
        )


_TEXT_KEYS = (
    "python",
    "python_version",
    "tensorflow_version",
    "tensorflow_distribution",
    "tensorflow_location",
    "version_source",
    "cuda_version",
    "cudnn_version",
    "cuda_source",
    "recommended_branch",
    "branch_reason",
    "probe_stage",
    "tfcnnwrap_version",
    "git",
    "git_path",
)
_FLAG_KEYS = ("tensorflow_importable", "is_cuda_build", "tf_keras", "legacy_keras_needed")


# --- what doctor learns ---------------------------------------------------------------------------------


def _parsed(version: Optional[str]) -> Optional[Tuple[int, int]]:
    try:
        return versions.parse_tf_version(version) if version else None
    except TfcnnwrapError:
        return None


def git_info() -> Tuple[Optional[str], Optional[str]]:
    """(version string, executable path) of the git GitPython would use; (None, None) without git."""
    try:
        import git  # GitPython: only when git is needed

        version = ".".join(str(part) for part in git.Git().version_info)
        executable = git.Git.GIT_PYTHON_GIT_EXECUTABLE
        return version or None, shutil.which(executable or "git") or executable
    except Exception:  # noqa: BLE001 - ImportError "Bad git executable", GitCommandNotFound, ...
        return None, None


def vendor_info(vendor_dir: str, manifest: Optional[JsonObject], tf_version: Optional[str]) -> Optional[VendorInfo]:
    if manifest is None:
        return None
    return VendorInfo(
        dir=str(vendor_dir),
        branch=opt_text(manifest.get("branch")),
        commit=opt_text(manifest.get("commit")),
        url=opt_text(manifest.get("url")),
        tf_version=opt_text(manifest.get("tf_version")),
        script_present=script_path(vendor_dir).is_file(),
        branch_source=opt_text(manifest.get("branch_source")),
        branch_warning=branch_mismatch(tf_version, manifest) if tf_version else None,
    )


def recommend_branch(
    tf_version: Optional[str], manifest: Optional[JsonObject] = None
) -> Tuple[Optional[str], Optional[str]]:
    """(branch, reason) setup would choose offline, or (None, why not)."""
    if not tf_version:
        return None, "no TensorFlow version"
    try:
        return branch_for(tf_version, manifest)
    except TfcnnwrapError as exc:
        return None, exc.message


def _cuda_facts(
    probe: ProbeAnswer, parsed: Optional[Tuple[int, int]], warnings: List[str]
) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(cuda, cudnn, source): from the build info, else the official build's for old GPU builds."""
    cuda, cudnn = probe.cuda_version, probe.cudnn_version
    if cuda or cudnn:
        return cuda, cudnn, "tensorflow build info"
    dist = probe.distribution or ""
    gpu_build = "gpu" in dist or (dist == "tensorflow" and parsed is not None and parsed >= (2, 1))
    if parsed is not None and parsed in OFFICIAL_CUDA and gpu_build and probe.is_cuda_build is not False:
        cuda, cudnn = OFFICIAL_CUDA[parsed]
        warnings[:] = [w for w in warnings if "does not say which CUDA" not in w]
        return cuda, cudnn, "official %s %d.%d build (TensorFlow does not report it)" % ((dist,) + parsed)
    return None, None, None


def collect(
    python: Optional[str] = None,
    vendor_dir: str = "vendor",
    matmul: bool = False,
    timeout: Optional[float] = None,
    bandwidth: bool = False,
) -> DoctorReport:
    """Everything doctor reports, decided. Raises SetupError only when the interpreter cannot be started or
    answers nothing at all. The facts come from ``envinfo``, the same snapshot a sweep records."""
    probe = run_probe(python, full=True, matmul=matmul, timeout=timeout, partial=True, bandwidth=bandwidth)
    manifest = read_manifest(vendor_dir)
    smi = query_gpus()
    env = capture_environment(python, probe=probe, manifest=manifest, smi=smi)
    warnings = list(probe.warnings)
    tf_version = env.tensorflow_version
    parsed = _parsed(tf_version)
    target = env.target_python.path
    if not tf_version and probe.complete:
        warnings.append(
            "no TensorFlow in %s: install it there (`%s`) or point --python at the "
            "interpreter of the environment that has it" % (target, pip_install_command(target, "tensorflow"))
        )
    branch, reason = recommend_branch(tf_version, manifest)
    if tf_version and branch is None and reason:
        warnings.append(reason)
    cuda, cudnn, cuda_source = _cuda_facts(probe, parsed, warnings)
    git, git_path = git_info()
    report = DoctorReport(
        python=target,
        python_version=env.target_python.version,
        tensorflow_version=tf_version,
        tensorflow_distribution=env.tensorflow_distribution,
        tensorflow_location=probe.location,
        tensorflow_importable=probe.importable,
        version_source=probe.version_source,
        gpus=env.gpus,
        cuda_version=cuda,
        cudnn_version=cudnn,
        cuda_source=cuda_source,
        is_cuda_build=probe.is_cuda_build,
        tf_keras=env.tf_keras,
        legacy_keras_needed=_needs_legacy_keras(parsed),
        recommended_branch=branch,
        branch_reason=reason,
        nvidia_smi=smi,
        vendor=vendor_info(vendor_dir, manifest, tf_version),
        matmul=_matmul_timings(probe) if matmul else None,
        bandwidth=copy_bandwidth(probe) if bandwidth else None,
        probe_complete=probe.complete,
        probe_stage=probe.stage,
        tfcnnwrap_version=__version__,
        warnings=tuple(warnings),
        git=git,
        git_path=git_path,
        quiet=tuple(Finding(f["what"], f["fix"]) for f in gather(load=True)),  # what would make the numbers wander
        machine=env,
    )
    return report.with_readiness()


def auto_device(report: DoctorReport) -> Tuple[str, Optional[str]]:
    """(device, note) that `sweep --device auto` would run on: sweep's own rule, not a second copy."""
    return resolve_device("auto", report, doctor_hint=False)  # doctor never points to itself


def blockers(report: DoctorReport) -> List[str]:
    """The checks that stop a sweep from running as asked: every failed one, and a checkout that is missing
    or was fetched for another TensorFlow."""
    return [row.check for row in report.checks if row.status == FAIL or (row.check == VENDOR and row.status != OK)]


def readiness(report: DoctorReport) -> Readiness:
    """``ready``, why not (``blockers``), the ``device`` a sweep would use and the one-line ``verdict``."""
    device, note = auto_device(report)
    found = blockers(report)
    return Readiness(
        ready=not found, blockers=found, device=device, device_note=note, verdict=_verdict(report, found, device)
    )


def _needs_legacy_keras(parsed: Optional[Tuple[int, int]]) -> Optional[bool]:
    return versions.needs_legacy_keras(parsed) if parsed else None


def _matmul_timings(probe: ProbeAnswer) -> MatmulTimings:
    cpu = probe.matmul.cpu_gflops if probe.matmul else None
    gpu = probe.matmul.gpu_gflops if probe.matmul else None
    return MatmulTimings(cpu, gpu, round(gpu / cpu, 1) if cpu and gpu else None)


def copy_bandwidth(probe: ProbeAnswer) -> Bandwidth:
    """The probe's figures, or why there are none."""
    found = probe.bandwidth or Bandwidth(reason="the probe stopped before timing copies (see the warnings)")
    if found.reason is None and (found.h2d_gbps is None or found.d2h_gbps is None):
        found = Bandwidth(found.h2d_gbps, found.d2h_gbps, "a copy took no measurable time")
    return found


# --- verdicts -------------------------------------------------------------------------------------------


def _row(check: str, status: str, value: str, hint: Optional[str] = "") -> Check:
    return Check(check, status, value, hint or "")


def _install(report: DoctorReport, package: str) -> str:
    return "`%s`" % pip_install_command(report.python, package)


def _gpu_row(report: DoctorReport) -> Check:
    gpus, smi_names = report.gpus, report.smi_names
    if gpus:
        return _row("GPUs TensorFlow sees", OK, ", ".join(gpus))
    if gpus is None:
        if not report.tensorflow_version:
            return _row("GPUs TensorFlow sees", INFO, "-", "needs TensorFlow")
        return _row("GPUs TensorFlow sees", WARN, "cannot tell", "this TensorFlow could not list its devices")
    if smi_names:
        fix = install_hint(
            _parsed(report.tensorflow_version),
            report.tensorflow_distribution,
            report.python,
            os.name == "nt",
            report.is_cuda_build,
            report.cuda_version,
            report.cudnn_version,
        )
        hint = "nvidia-smi sees %s but TensorFlow does not: %s" % (", ".join(smi_names), fix)
        return _row("GPUs TensorFlow sees", FAIL, "none", hint)
    return _row("GPUs TensorFlow sees", WARN, "none", "sweeps run on the CPU (--device cpu); no GPU to benchmark")


def _cuda_row(report: DoctorReport) -> Check:
    cuda, cudnn = report.cuda_version, report.cudnn_version
    if cuda or cudnn:
        hint = "" if report.cuda_source == "tensorflow build info" else report.cuda_source
        return _row("CUDA / cuDNN (build)", OK, "CUDA %s / cuDNN %s" % (cuda or "?", cudnn or "?"), hint)
    if report.is_cuda_build is False:
        return _row("CUDA / cuDNN (build)", INFO, "CPU-only build", "")
    if not report.tensorflow_version:
        return _row("CUDA / cuDNN (build)", INFO, "-", "needs TensorFlow")
    return _row("CUDA / cuDNN (build)", INFO, "unknown", "this TensorFlow does not report its CUDA build")


def _keras_row(report: DoctorReport) -> Check:
    needed, present = report.legacy_keras_needed, report.tf_keras
    if needed is None:
        return _row("tf-keras", INFO, "-", "needs a TensorFlow version")
    if not needed:
        return _row("tf-keras", OK, "not needed", "TensorFlow before 2.16 has its own Keras 2")
    if present:
        return _row("tf-keras", OK, "installed", "sweep runs tf_cnn_benchmarks with TF_USE_LEGACY_KERAS=1")
    return _row(
        "tf-keras",
        FAIL,
        "missing",
        "TensorFlow >= 2.16 ships Keras 3; tf_cnn_benchmarks needs Keras 2: %s" % _install(report, "tf-keras"),
    )


def _vendor_row(report: DoctorReport) -> Check:
    vendor = report.vendor
    if vendor is None:
        return _row(VENDOR, WARN, "none", "run `python -m tfcnnwrap setup` (or pass --vendor-dir)")
    value = "%s @ %s" % (vendor.branch, (vendor.commit or "?")[:10])
    if not vendor.script_present:
        return _row("vendor checkout", FAIL, value, "tf_cnn_benchmarks.py is missing: run setup again")
    if vendor.branch_warning:
        return _row("vendor checkout", WARN, value, vendor.branch_warning)
    if vendor.branch_source == "--branch":
        return _row("vendor checkout", OK, value, "chosen with setup --branch")
    return _row("vendor checkout", OK, value, vendor.url or "")


def _smi_row(report: DoctorReport) -> Check:
    smi = report.nvidia_smi
    if smi is None:
        hint = "no GPU telemetry in sweeps"
        if report.gpus:
            hint += "; it comes with the NVIDIA driver (or set TFCNNWRAP_NVIDIA_SMI to its path)"
        return _row("nvidia-smi", INFO, "not found", hint)
    gpus = smi.get("gpus") or []
    if not gpus:
        return _row("nvidia-smi", WARN, "no GPU", smi.get("error") or "")
    value = "; ".join(
        "%s, driver %s, %s MiB" % (g["name"], g["driver_version"] or "?", g["memory_total_mib"] or "?") for g in gpus
    )
    return _row("nvidia-smi", OK, value, smi["path"])


def _matmul_row(report: DoctorReport) -> Check:
    timings = report.matmul
    if timings is None:
        return _row(MATMUL, INFO, "not run", "add --matmul")
    cpu, gpu, speedup = timings.cpu_gflops, timings.gpu_gflops, timings.speedup
    parts = ["CPU %s GFLOP/s" % (cpu if cpu is not None else "?")]
    if gpu is not None:
        parts.append("GPU %s GFLOP/s" % gpu)
    if speedup:
        parts.append("GPU %.1fx faster" % speedup)
    value = ", ".join(parts)
    if cpu is None and not report.tensorflow_version:
        return _row(MATMUL, INFO, "-", "needs TensorFlow")
    if cpu is None or (report.gpus and gpu is None):
        return _row(MATMUL, FAIL, value, "see the warnings below")
    if speedup is not None and speedup < 2:
        return _row(MATMUL, WARN, value, "the GPU is hardly faster than the CPU")
    return _row(MATMUL, OK, value, "" if gpu is not None else "no GPU to compare with")


BANDWIDTH = "copy bandwidth"


def bandwidth_row(found: Bandwidth) -> Check:
    """The ``--bandwidth`` check: both directions in GB/s, or why there is no figure."""
    h2d, d2h = found.h2d_gbps, found.d2h_gbps
    if h2d is None or d2h is None:
        reason = found.reason or ""
        no_gpu = "sees no GPU" in reason
        return _row(BANDWIDTH, INFO if no_gpu else WARN, "no figure", reason)
    return _row(
        BANDWIDTH,
        OK,
        "host->GPU %.1f GB/s, GPU->host %.1f GB/s" % (h2d, d2h),
        "128 MiB copies, median of 7; for scale, PCIe 3.0 x16 peaks near 13, x4 (Thunderbolt 3) near 3",
    )


def _tensorflow_row(report: DoctorReport) -> Check:
    if report.tensorflow_version:
        source = {"metadata": "package metadata", "import": "import tensorflow"}.get(report.version_source or "", "")
        value = "%s (%s)" % (report.tensorflow_version, report.tensorflow_distribution or source or "?")
        if not report.probe_complete and report.tensorflow_importable is None:
            return _row("TensorFlow", FAIL, value, "`import tensorflow` crashed or hung: see the warnings below")
        if report.tensorflow_importable is False:
            hint = "installed but `import tensorflow` fails: see the warnings below"
            if any("DLL load failed" in w for w in report.warnings):
                hint += (
                    "; run tfcnnwrap from the activated environment (`conda activate NAME`) so that "
                    "TensorFlow finds its CUDA DLLs"
                )
            return _row("TensorFlow", FAIL, value, hint)
        return _row("TensorFlow", OK, value, report.tensorflow_location or "")
    if not report.probe_complete:
        return _row("TensorFlow", FAIL, "unknown", "the probe stopped: see the warnings below")
    return _row("TensorFlow", FAIL, "not found", "install it: %s, or use --python" % _install(report, "tensorflow"))


def checks(report: DoctorReport) -> List[Check]:
    """One verdict row per check: check, status (ok, warn, fail, info), value, hint."""
    rows = [_row("Python", OK, report.python_version or "?", report.python or ""), _tensorflow_row(report)]
    rows += [_gpu_row(report), _cuda_row(report), _keras_row(report)]
    if report.recommended_branch:
        rows.append(_row("branch setup would pick", OK, report.recommended_branch, report.branch_reason))
    else:
        rows.append(
            _row(
                "branch setup would pick", WARN if report.tensorflow_version else INFO, "-", report.branch_reason or ""
            )
        )
    rows.append(_vendor_row(report))
    if report.git:
        rows.append(_row("git", OK, report.git, report.git_path or ""))
    else:
        usable = rows[-1].status == OK  # the checkout: sweeps need no git, only setup does
        rows.append(
            _row(
                "git",
                WARN if usable else FAIL,
                "not found",
                "setup needs git: install it (https://git-scm.com) or set GIT_PYTHON_GIT_EXECUTABLE",
            )
        )
    rows += [_smi_row(report), _matmul_row(report)]
    if report.bandwidth is not None:
        rows.append(bandwidth_row(report.bandwidth))
    rows.append(_quiet_row(report))
    return rows


def _quiet_row(report: DoctorReport) -> Check:
    found = report.quiet
    if not found:
        return _row(
            "machine quiet", OK, "nothing found", "GPU processes, clocks, power limit, PCIe, CPU governor, load average"
        )
    return _row("machine quiet", WARN, "; ".join(f.what for f in found), "; ".join(f.fix for f in found))


# --- output ---------------------------------------------------------------------------------------------

_SYMBOLS = {OK: ("✓", "green"), WARN: ("!", "yellow"), FAIL: ("✗", "red"), INFO: ("–", "dim")}
_ASCII = {OK: "ok", WARN: "warn", FAIL: "FAIL", INFO: "-"}


def _unicode_ok(stream: IO[str]) -> bool:
    try:
        "✓✗–".encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _device_text(report: DoctorReport, device: str) -> str:
    smi_names = report.smi_names
    if device == "gpu":
        if report.gpus:
            return "the GPU (%s)" % ", ".join(report.gpus)
        return "the GPU (%s; TensorFlow could not say)" % (
            "nvidia-smi sees %s" % ", ".join(smi_names) if smi_names else "nvidia-smi is present"
        )
    if report.gpus is None:
        return "the CPU (TensorFlow could not say whether it sees a GPU)"
    return "the CPU (TensorFlow sees no GPU)"


def _verdict(report: DoctorReport, found: List[str], device: str) -> str:
    if found:
        return "not ready: %s" % ", ".join(found)
    return "ready: a sweep would run on %s" % _device_text(report, device)


def verdict(report: DoctorReport) -> str:
    """The decision: ``ready: a sweep would run on ...`` or ``not ready: CHECK, ...``."""
    if report.readiness is not None:
        return report.readiness.verdict
    return _verdict(report, blockers(report), auto_device(report)[0])


def _check_lines(row: Check, mark: Tuple[str, str], name_width: int, width: int) -> List[object]:
    """One check as renderables: mark, name, value (wrapped between its comma-separated parts), then its
    hint indented under it."""
    from rich.padding import Padding  # rich: only when something is drawn
    from rich.text import Text  # rich: only when something is drawn

    from tfcnnwrap.fit import wrap_parts  # fit loads rich: only when a table is drawn

    symbol, colour = mark
    lead = len(symbol) + 1 + name_width + 1
    value_width = max(width - lead, 12)
    parts = [p for p in row.value.split(", ") if p]
    values = wrap_parts(parts, value_width, sep=", ") or [""]
    lines: List[object] = [
        Text.assemble((symbol, colour), " ", (row.check.ljust(name_width), "bold"), " ", values[0], overflow="fold")
    ]
    lines += [Text(" " * lead + more, overflow="fold") for more in values[1:]]
    if row.hint:
        lines.append(Padding(Text(row.hint, style="dim", overflow="fold"), (0, 0, 0, 4), expand=False))
    return lines


def print_table(report: DoctorReport, stream: Optional[IO[str]] = None) -> None:
    """One line per check (hints wrapped under it), the warnings, and the verdict: fits 60 columns in about
    a screen."""
    from rich.text import Text  # rich: only when something is drawn

    stream = stream or sys.stdout
    fancy = _unicode_ok(stream)
    out = console()
    out.file = stream
    width = out.width
    name_width = min(max(len(r.check) for r in report.checks), max(width - 36, 8))
    out.print(Text("tfcnnwrap doctor", style="bold"))
    for row in report.checks:
        symbol, colour = _SYMBOLS[row.status]
        mark = (symbol if fancy else _ASCII[row.status].ljust(4), colour)
        for line in _check_lines(row, mark, name_width, width):
            out.print(line)
    for warning in report.warnings:
        out.print(Text("warning: " + warning, style="yellow"))
    decided = report.readiness
    found = decided.blockers if decided is not None else blockers(report)
    if decided is not None and decided.device_note and decided.device == "cpu" and not found:
        out.print(Text(decided.device_note, style="yellow"))
    out.print(Text(verdict(report), style="bold red" if found else "bold green"))


@dataclass(frozen=True)
class DoctorArgs:
    """What `doctor` was asked (cli/doctor.py builds it); None: the flag was not typed."""

    python: Optional[str]
    vendor_dir: Optional[str]
    matmul: bool
    bandwidth: bool
    strict: bool
    format: Literal["table", "json"]


def cmd_doctor(args: DoctorArgs) -> int:
    vendor_dir = settings.vendor_dir(args.vendor_dir)[0]
    python = checkout.target_python(args.python, vendor_dir)[0]
    fmt = args.format
    matmul = args.matmul
    bandwidth = args.bandwidth
    err = console(stderr=True)
    what = "timing the matmul" if matmul else "timing copies to /gpu:0" if bandwidth else "questioning TensorFlow"
    with err.status("%s in %s ..." % (what, python or sys.executable)):
        report = collect(python, str(vendor_dir), matmul, bandwidth=bandwidth)
    if fmt == "json":
        # one object with its own keys, plus the envelope's version and kind (every --format json has both)
        sys.stdout.write(to_json(dict(report.to_json(), format=FORMAT, kind="doctor")) + "\n")
    else:
        print_table(report)
    return 1 if args.strict and not (report.readiness and report.readiness.ready) else 0
