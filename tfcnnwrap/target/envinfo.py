"""The machine a sweep ran on, recorded once in sweep.json: host, OS, CPU, RAM, both Pythons, TensorFlow,
GPUs, driver, CUDA/cuDNN, upstream checkout, tfcnnwrap version and the command line.

Standard library only, and nothing here raises: a fact that cannot be learned is None.
"""

import os
import platform
import socket
import subprocess
import sys

from tfcnnwrap import __version__
from tfcnnwrap.clock import utc_now
from tfcnnwrap.run.procs import format_command
from tfcnnwrap.run.telemetry import query_gpus
from tfcnnwrap.target.probe import ProbeAnswer, run_probe

_SUBPROCESS_TIMEOUT_S = 10.0


def _safe(func, *args):
    try:
        return func(*args)
    except Exception:  # noqa: BLE001 - a missing fact is None, never an error
        return None


def _read_text(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _sysctl(name):
    out = subprocess.run(
        ["sysctl", "-n", name],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        timeout=_SUBPROCESS_TIMEOUT_S,
    ).stdout.decode("utf-8", "replace").strip()
    return out or None


def _cpuinfo_fields():
    """Linux /proc/cpuinfo as a list of dicts, one per logical CPU."""
    cpus: list = []
    current: dict = {}
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


def _windows_cpu_model():
    import winreg  # Windows only

    key = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"HARDWARE\DESCRIPTION\System\CentralProcessor\0")  # type: ignore[attr-defined]  # Windows only
    try:
        return str(winreg.QueryValueEx(key, "ProcessorNameString")[0]).strip()  # type: ignore[attr-defined]  # Windows only
    finally:
        winreg.CloseKey(key)  # type: ignore[attr-defined]  # Windows only


def cpu_model():
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


def physical_cores():
    """Physical cores, or None where the OS does not say cheaply."""
    try:
        import psutil  # optional

        return psutil.cpu_count(logical=False)
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


def _windows_ram_bytes():
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


def _linux_ram_bytes():
    for line in _read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _sysconf_ram_bytes():
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def ram_bytes():
    system = platform.system()
    if system == "Windows":
        return _safe(_windows_ram_bytes)
    if system == "Linux":
        value = _safe(_linux_ram_bytes)
        if value:
            return value
    if system == "Darwin":
        value = _safe(_sysctl, "hw.memsize")
        if value and value.isdigit():
            return int(value)
    return _safe(_sysconf_ram_bytes)


def _linux_distribution():
    for line in _read_text("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"') or None
    return None


def os_info():
    info = {
        "system": platform.system() or None,
        "release": platform.release() or None,
        "version": platform.version() or None,
        "machine": platform.machine() or None,
        "platform": _safe(platform.platform),
        "distribution": None,
    }
    if info["system"] == "Linux":
        info["distribution"] = _safe(_linux_distribution)
    elif info["system"] == "Darwin":
        release = _safe(platform.mac_ver)
        info["distribution"] = ("macOS " + release[0]) if release and release[0] else None
    elif info["system"] == "Windows":
        edition = _safe(platform.win32_edition) if hasattr(platform, "win32_edition") else None
        info["distribution"] = " ".join(p for p in ("Windows", platform.release(), edition) if p)
    return info


def command_line(argv=None):
    """The command as typed, as a list and as one string a user could paste back into a shell.

    ``argv``: the full command line, program first (default: ``sys.argv``). ``python -m tfcnnwrap`` shows
    up there as the package's ``__main__.py`` and is written back as ``PYTHON -m tfcnnwrap``.
    """
    args = [str(a) for a in (sys.argv if argv is None else argv)]
    if args and os.path.basename(args[0]) == "__main__.py":
        args = [sys.executable, "-m", "tfcnnwrap"] + args[1:]
    text = format_command(args)
    return {"argv": args, "text": text, "cwd": _safe(os.getcwd)}


def _probe_facts(python, probe):
    """(ProbeAnswer, error text or None): the answer given, else one asked for in version mode."""
    if probe is None:
        try:
            probe = run_probe(python)
        except Exception as exc:  # noqa: BLE001
            return ProbeAnswer(), getattr(exc, "message", None) or str(exc)
    return probe, None


_ASK = object()


def _query_smi():
    return query_gpus()


def capture_environment(python=None, probe=None, manifest=None, argv=None, smi=_ASK):
    """A dict of environment facts for sweep.json (and the base of `doctor`); never raises, missing facts
    are None.

    ``probe``: the ``ProbeAnswer`` of the target interpreter (asked in version mode when not given).
    ``manifest``: the vendor checkout's manifest (``checkout.read_manifest``). ``argv``: the command line
    (default: ``sys.argv``). ``smi``: what ``telemetry.query_gpus`` answered, when the caller already asked.
    """
    facts, probe_error = _safe(_probe_facts, python, probe) or (None, "the probe could not be run")
    if facts is None:
        facts = ProbeAnswer()
    if smi is _ASK:
        smi = _safe(_query_smi)
    manifest = manifest if isinstance(manifest, dict) else {}
    env = {
        "captured_at": utc_now(),
        "host": _safe(socket.gethostname),
        "os": _safe(os_info),
        "cpu_model": _safe(cpu_model),
        "cpu_logical_cores": _safe(os.cpu_count),
        "cpu_physical_cores": _safe(physical_cores),
        "ram_bytes": _safe(ram_bytes),
        "tfcnnwrap_version": __version__,
        "tfcnnwrap_python": {"path": sys.executable, "version": platform.python_version()},
        "target_python": {
            "path": facts.python or (str(python) if python else sys.executable),
            "version": facts.python_version,
        },
        "tensorflow_version": facts.tf_version,
        "tensorflow_distribution": facts.distribution,
        "tf_keras": facts.tf_keras,
        "gpus": facts.gpu_list(),
        "cuda_version": facts.cuda_version,
        "cudnn_version": facts.cudnn_version,
        "nvidia_driver": (smi or {}).get("driver_version"),
        "nvidia_smi_gpus": (smi or {}).get("gpus") if smi else None,
        "upstream": {
            "url": manifest.get("url"),
            "branch": manifest.get("branch"),
            "commit": manifest.get("commit"),
        },
        "command_line": _safe(command_line, argv),
    }
    if probe_error:
        env["probe_error"] = probe_error
    return env
