"""The machine a sweep ran on, recorded once in sweep.json: host, OS, CPU, RAM, both Pythons, TensorFlow,
GPUs, driver, CUDA/cuDNN, upstream checkout, tfcnnwrap version and the command line.

Standard library only, and nothing here raises: a fact that cannot be learned is None.
"""

import os
import platform
import socket
import subprocess
import sys
from dataclasses import dataclass, field, fields
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from tfcnnwrap import __version__
from tfcnnwrap.clock import utc_now
from tfcnnwrap.environment.probe import ProbeAnswer, run_probe
from tfcnnwrap.results.records import JsonObject, Upstream, opt_object, opt_text, opt_whole
from tfcnnwrap.run.procs import format_command
from tfcnnwrap.run.telemetry import query_gpus

_SUBPROCESS_TIMEOUT_S = 10.0

PathText = Union[str, "os.PathLike[str]"]
_T = TypeVar("_T")


def _safe(func: Callable[..., _T], *args: object) -> Optional[_T]:
    try:
        return func(*args)
    except Exception:  # noqa: BLE001 - a missing fact is None, never an error
        return None


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _sysctl(name: str) -> Optional[str]:
    out = (
        subprocess.run(
            ["sysctl", "-n", name],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=_SUBPROCESS_TIMEOUT_S,
        )
        .stdout.decode("utf-8", "replace")
        .strip()
    )
    return out or None


def _cpuinfo_fields() -> List[Dict[str, str]]:
    """Linux /proc/cpuinfo as a list of dicts, one per logical CPU."""
    cpus: List[Dict[str, str]] = []
    current: Dict[str, str] = {}
    for line in _read_text("/proc/cpuinfo").splitlines():
        if not line.strip():
            if current:
                cpus.append(current)
            current = {}
            continue
        key, _, value = line.partition(":")
        current[key.strip()] = value.strip()
    if current:
        cpus.append(current)
    return cpus


def _windows_cpu_model() -> str:
    import winreg  # Windows only

    key = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"HARDWARE\DESCRIPTION\System\CentralProcessor\0")  # type: ignore[attr-defined]  # Windows only
    try:
        return str(winreg.QueryValueEx(key, "ProcessorNameString")[0]).strip()  # type: ignore[attr-defined]  # Windows only
    finally:
        winreg.CloseKey(key)  # type: ignore[attr-defined]  # Windows only


def cpu_model() -> Optional[str]:
    """``'Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz'`` or the closest the OS offers."""
    system = platform.system()
    if system == "Linux":
        cpus = _safe(_cpuinfo_fields) or []
        for key in ("model name", "Model", "Hardware", "cpu model", "Processor"):
            for cpu in cpus:
                if cpu.get(key):
                    return cpu[key]
    elif system == "Darwin":
        model = _safe(_sysctl, "machdep.cpu.brand_string")
        if model:
            return model
    elif system == "Windows":
        model = _safe(_windows_cpu_model) or os.environ.get("PROCESSOR_IDENTIFIER")
        if model:
            return model
    return platform.processor() or None


def physical_cores() -> Optional[int]:
    """Physical cores, or None where the OS does not say cheaply."""
    try:
        import psutil  # optional

        return int(psutil.cpu_count(logical=False))
    except Exception:  # noqa: BLE001
        pass
    system = platform.system()
    if system == "Linux":
        cpus = _safe(_cpuinfo_fields) or []
        cores = {(c.get("physical id"), c.get("core id")) for c in cpus if "core id" in c}
        return len(cores) or None
    if system == "Darwin":
        value = _safe(_sysctl, "hw.physicalcpu")
        return int(value) if value and value.isdigit() else None
    return None


def _windows_ram_bytes() -> Optional[int]:
    import ctypes  # Windows only

    class MemoryStatusEx(ctypes.Structure):
        _fields_ = [
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = MemoryStatusEx()
    status.dwLength = ctypes.sizeof(MemoryStatusEx)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]  # Windows only
        return None
    return int(status.ullTotalPhys)


def _linux_ram_bytes() -> Optional[int]:
    for line in _read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _sysconf_ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def ram_bytes() -> Optional[int]:
    system = platform.system()
    if system == "Windows":
        return _safe(_windows_ram_bytes)
    if system == "Linux":
        found = _safe(_linux_ram_bytes)
        if found:
            return found
    if system == "Darwin":
        value = _safe(_sysctl, "hw.memsize")
        if value and value.isdigit():
            return int(value)
    return _safe(_sysconf_ram_bytes)


def _linux_distribution() -> Optional[str]:
    for line in _read_text("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"') or None
    return None


def os_info() -> "OsInfo":
    system = platform.system() or None
    distribution = None
    if system == "Linux":
        distribution = _safe(_linux_distribution)
    elif system == "Darwin":
        release = _safe(platform.mac_ver)
        distribution = ("macOS " + release[0]) if release and release[0] else None
    elif system == "Windows":
        edition = _safe(platform.win32_edition) if hasattr(platform, "win32_edition") else None
        distribution = " ".join(p for p in ("Windows", platform.release(), edition) if p)
    return OsInfo(
        system=system,
        release=platform.release() or None,
        version=platform.version() or None,
        machine=platform.machine() or None,
        platform=_safe(platform.platform),
        distribution=distribution,
    )


def command_line(argv: Optional[Sequence[object]] = None) -> "CommandLine":
    """The command as typed, as a list and as one string a user could paste back into a shell.

    ``argv``: the full command line, program first (default: ``sys.argv``). ``python -m tfcnnwrap`` shows
    up there as the package's ``__main__.py`` and is written back as ``PYTHON -m tfcnnwrap``.
    """
    args = [str(a) for a in (sys.argv if argv is None else argv)]
    if args and os.path.basename(args[0]) == "__main__.py":
        args = [sys.executable, "-m", "tfcnnwrap"] + args[1:]
    return CommandLine(argv=tuple(args), text=format_command(args), cwd=_safe(os.getcwd))


# -- the records ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OsInfo:
    """The operating system: ``platform``'s answers, and the distribution's own name."""

    system: Optional[str] = None
    release: Optional[str] = None
    version: Optional[str] = None
    machine: Optional[str] = None
    platform: Optional[str] = None
    distribution: Optional[str] = None

    def to_json(self) -> Dict[str, Optional[str]]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: object) -> "OsInfo":
        found = opt_object(data)
        return cls(**{f.name: opt_text(found.get(f.name)) for f in fields(cls)})


@dataclass(frozen=True)
class PythonInfo:
    """An interpreter: its path and version."""

    path: Optional[str] = None
    version: Optional[str] = None

    def to_json(self) -> Dict[str, Optional[str]]:
        return {"path": self.path, "version": self.version}

    @classmethod
    def from_json(cls, data: object) -> "PythonInfo":
        found = opt_object(data)
        return cls(opt_text(found.get("path")), opt_text(found.get("version")))


@dataclass(frozen=True)
class CommandLine:
    """The command as typed: its arguments, one line a user could paste back, and where it ran."""

    argv: Tuple[str, ...] = ()
    text: str = ""
    cwd: Optional[str] = None

    def to_json(self) -> Dict[str, object]:
        return {"argv": list(self.argv), "text": self.text, "cwd": self.cwd}

    @classmethod
    def from_json(cls, data: object) -> "CommandLine":
        found = opt_object(data)
        argv = found.get("argv")
        return cls(
            tuple(str(a) for a in argv) if isinstance(argv, list) else (),
            opt_text(found.get("text")) or "",
            opt_text(found.get("cwd")),
        )


def _optional_json(record: Optional[Union[OsInfo, CommandLine]]) -> Optional[Mapping[str, object]]:
    return record.to_json() if record is not None else None


@dataclass(frozen=True)
class Environment:
    """The machine a sweep ran on, as sweep.json's ``environment`` records it (docs/results-format.md); a fact
    that could not be learned is None. ``nvidia_smi_gpus`` is what ``telemetry.query_gpus`` listed."""

    captured_at: Optional[str] = None
    host: Optional[str] = None
    os: Optional[OsInfo] = None
    cpu_model: Optional[str] = None
    cpu_logical_cores: Optional[int] = None
    cpu_physical_cores: Optional[int] = None
    ram_bytes: Optional[int] = None
    tfcnnwrap_version: Optional[str] = None
    tfcnnwrap_python: PythonInfo = field(default_factory=PythonInfo)
    target_python: PythonInfo = field(default_factory=PythonInfo)
    tensorflow_version: Optional[str] = None
    tensorflow_distribution: Optional[str] = None
    tf_keras: Optional[bool] = None
    gpus: Optional[Tuple[str, ...]] = None  # TensorFlow's view: () none, None cannot tell
    cuda_version: Optional[str] = None
    cudnn_version: Optional[str] = None
    nvidia_driver: Optional[str] = None
    nvidia_smi_gpus: Optional[Tuple[JsonObject, ...]] = None
    upstream: Upstream = field(default_factory=Upstream)
    command_line: Optional[CommandLine] = None
    probe_error: Optional[str] = None  # written only when the probe failed

    def to_json(self) -> Dict[str, object]:
        """sweep.json's ``environment`` object, keys in the order it has always had."""
        out: Dict[str, object] = {
            "captured_at": self.captured_at,
            "host": self.host,
            "os": _optional_json(self.os),
            "cpu_model": self.cpu_model,
            "cpu_logical_cores": self.cpu_logical_cores,
            "cpu_physical_cores": self.cpu_physical_cores,
            "ram_bytes": self.ram_bytes,
            "tfcnnwrap_version": self.tfcnnwrap_version,
            "tfcnnwrap_python": self.tfcnnwrap_python.to_json(),
            "target_python": self.target_python.to_json(),
            "tensorflow_version": self.tensorflow_version,
            "tensorflow_distribution": self.tensorflow_distribution,
            "tf_keras": self.tf_keras,
            "gpus": list(self.gpus) if self.gpus is not None else None,
            "cuda_version": self.cuda_version,
            "cudnn_version": self.cudnn_version,
            "nvidia_driver": self.nvidia_driver,
            "nvidia_smi_gpus": [dict(g) for g in self.nvidia_smi_gpus] if self.nvidia_smi_gpus is not None else None,
            "upstream": {"url": self.upstream.url, "branch": self.upstream.branch, "commit": self.upstream.commit},
            "command_line": _optional_json(self.command_line),
        }
        if self.probe_error:
            out["probe_error"] = self.probe_error
        return out

    @classmethod
    def from_json(cls, data: object) -> "Environment":
        """The record of a recorded ``environment`` (any shape: a fact of the wrong type reads as None)."""
        found = opt_object(data)
        gpus, smi, upstream = found.get("gpus"), found.get("nvidia_smi_gpus"), opt_object(found.get("upstream"))
        return cls(
            captured_at=opt_text(found.get("captured_at")),
            host=opt_text(found.get("host")),
            os=OsInfo.from_json(found["os"]) if isinstance(found.get("os"), Mapping) else None,
            cpu_model=opt_text(found.get("cpu_model")),
            cpu_logical_cores=opt_whole(found.get("cpu_logical_cores")),
            cpu_physical_cores=opt_whole(found.get("cpu_physical_cores")),
            ram_bytes=opt_whole(found.get("ram_bytes")),
            tfcnnwrap_version=opt_text(found.get("tfcnnwrap_version")),
            tfcnnwrap_python=PythonInfo.from_json(found.get("tfcnnwrap_python")),
            target_python=PythonInfo.from_json(found.get("target_python")),
            tensorflow_version=opt_text(found.get("tensorflow_version")),
            tensorflow_distribution=opt_text(found.get("tensorflow_distribution")),
            tf_keras=found.get("tf_keras") if isinstance(found.get("tf_keras"), bool) else None,
            gpus=tuple(str(g) for g in gpus) if isinstance(gpus, list) else None,
            cuda_version=opt_text(found.get("cuda_version")),
            cudnn_version=opt_text(found.get("cudnn_version")),
            nvidia_driver=opt_text(found.get("nvidia_driver")),
            nvidia_smi_gpus=tuple(g for g in smi if isinstance(g, Mapping)) if isinstance(smi, list) else None,
            upstream=Upstream(*(opt_text(upstream.get(k)) for k in ("url", "branch", "commit"))),
            command_line=CommandLine.from_json(found["command_line"])
            if isinstance(found.get("command_line"), Mapping)
            else None,
            probe_error=opt_text(found.get("probe_error")),
        )


def _probe_facts(python: Optional[PathText], probe: Optional[ProbeAnswer]) -> Tuple[ProbeAnswer, Optional[str]]:
    """(ProbeAnswer, error text or None): the answer given, else one asked for in version mode."""
    if probe is None:
        try:
            probe = run_probe(python)
        except Exception as exc:  # noqa: BLE001
            return ProbeAnswer(), getattr(exc, "message", None) or str(exc)
    return probe, None


class _Ask:
    """``smi``'s default: ask nvidia-smi (None is an answer: there is none)."""


_ASK = _Ask()


def _query_smi() -> Optional[JsonObject]:
    return query_gpus()


def capture_environment(
    python: Optional[PathText] = None,
    probe: Optional[ProbeAnswer] = None,
    manifest: object = None,
    argv: Optional[Sequence[object]] = None,
    smi: Union[Optional[JsonObject], _Ask] = _ASK,
) -> Environment:
    """The environment facts for sweep.json (and the base of `doctor`); never raises, missing facts are None.

    ``probe``: the ``ProbeAnswer`` of the target interpreter (asked in version mode when not given).
    ``manifest``: the vendor checkout's manifest (``checkout.read_manifest``). ``argv``: the command line
    (default: ``sys.argv``). ``smi``: what ``telemetry.query_gpus`` answered, when the caller already asked.
    """
    facts, probe_error = _safe(_probe_facts, python, probe) or (None, "the probe could not be run")
    if facts is None:
        facts = ProbeAnswer()
    answered = _safe(_query_smi) if isinstance(smi, _Ask) else smi
    listed = (answered or {}).get("gpus") if answered else None
    upstream = opt_object(manifest)
    return Environment(
        captured_at=utc_now(),
        host=_safe(socket.gethostname),
        os=_safe(os_info),
        cpu_model=_safe(cpu_model),
        cpu_logical_cores=_safe(os.cpu_count),
        cpu_physical_cores=_safe(physical_cores),
        ram_bytes=_safe(ram_bytes),
        tfcnnwrap_version=__version__,
        tfcnnwrap_python=PythonInfo(sys.executable, platform.python_version()),
        target_python=PythonInfo(facts.python or (str(python) if python else sys.executable), facts.python_version),
        tensorflow_version=facts.tf_version,
        tensorflow_distribution=facts.distribution,
        tf_keras=facts.tf_keras,
        gpus=facts.gpus,
        cuda_version=facts.cuda_version,
        cudnn_version=facts.cudnn_version,
        nvidia_driver=(answered or {}).get("driver_version"),
        nvidia_smi_gpus=tuple(listed) if isinstance(listed, list) else None,
        upstream=Upstream(*(opt_text(upstream.get(k)) for k in ("url", "branch", "commit"))),
        command_line=_safe(command_line, argv),
        probe_error=probe_error,
    )
