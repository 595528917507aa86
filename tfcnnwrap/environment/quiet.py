"""Is the machine quiet? What would make a benchmark's numbers wander, like ``pyperf system show``: other
processes on the GPU, persistence mode off, a power limit below the default, application clocks set, a PCIe
link narrower than its maximum, the CPU frequency governor, a laptop on battery, a 1-minute load average high
for the cores (naming the busiest processes). Each finding says what to do.

Doctor shows them; a sweep warns once at its start. Parsing is pure (tested against published nvidia-smi
output); ``gather`` asks nvidia-smi (two one-shot queries) and reads Linux's /sys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from tfcnnwrap.run.telemetry import find_nvidia_smi, run_smi

# nvidia-smi --query-gpu fields, in this order (the names every driver since 2013 knows)
GPU_FIELDS = (
    "index",
    "persistence_mode",
    "power.limit",
    "power.default_limit",
    "clocks.applications.graphics",
    "clocks.default_applications.graphics",
    "pcie.link.width.current",
    "pcie.link.width.max",
)
APP_FIELDS = ("pid", "process_name", "used_memory")


def _value(text: str) -> Optional[Union[float, str]]:
    """A field as nvidia-smi prints it with nounits: a number, a word, or None for [N/A] / [Not Supported]."""
    text = text.strip()
    if not text or text.startswith("[") or text.upper() == "N/A":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def parse_gpu_state(text: str) -> Dict[int, Any]:
    """{index: {field: value}} from ``--query-gpu=GPU_FIELDS --format=csv,noheader,nounits``."""
    gpus = {}
    for line in text.splitlines():
        parts = [p for p in line.split(",")]
        if len(parts) != len(GPU_FIELDS):
            continue
        values = dict(zip(GPU_FIELDS, (_value(p) for p in parts)))
        if isinstance(values["index"], float):
            gpus[int(values["index"])] = values
    return gpus


def parse_compute_apps(text: str) -> List[Any]:
    """[{pid, name, used_mib}] from ``--query-compute-apps=pid,process_name,used_memory
    --format=csv,noheader,nounits`` (nothing, or a "No running processes found" line, when none)."""
    apps = []
    for line in text.splitlines():
        parts = line.rsplit(",", 1)
        head = parts[0].split(",", 1)
        if len(parts) != 2 or len(head) != 2 or not head[0].strip().isdigit():
            continue
        used = _value(parts[1])
        apps.append(
            {"pid": int(head[0]), "name": head[1].strip(), "used_mib": used if isinstance(used, float) else None}
        )
    return apps


def gpu_findings(gpus: Dict[int, Any], apps: List[Any], on_linux: bool = True) -> List[Any]:
    """(what, what to do) for each thing on the GPUs that makes numbers wander."""
    found = []
    if apps:
        named = ", ".join("%s (pid %d)" % (Path(a["name"]).name or "?", a["pid"]) for a in apps[:5])
        found.append(("other processes use the GPU: %s" % named, "stop them before benchmarking"))
    for index, gpu in sorted(gpus.items()):
        name = "GPU %d" % index
        if on_linux and gpu["persistence_mode"] == "Disabled":
            found.append(
                (
                    "%s: persistence mode is off (the driver re-initialises before each run)" % name,
                    "`sudo nvidia-smi -pm 1`",
                )
            )
        limit, default = gpu["power.limit"], gpu["power.default_limit"]
        if isinstance(limit, float) and isinstance(default, float) and limit < default - 0.5:
            found.append(
                (
                    "%s: power limit %.0f W, below its default %.0f W" % (name, limit, default),
                    "`sudo nvidia-smi -i %d -pl %.0f`" % (index, default),
                )
            )
        app, app_default = gpu["clocks.applications.graphics"], gpu["clocks.default_applications.graphics"]
        if isinstance(app, float) and isinstance(app_default, float) and app != app_default:
            found.append(
                (
                    "%s: application clocks set to %.0f MHz (default %.0f MHz)" % (name, app, app_default),
                    "`sudo nvidia-smi -i %d -rac`, unless you set them on purpose" % index,
                )
            )
        width, most = gpu["pcie.link.width.current"], gpu["pcie.link.width.max"]
        if isinstance(width, float) and isinstance(most, float) and width < most:
            found.append(
                (
                    "%s: PCIe link x%d of x%d" % (name, width, most),
                    "reseat the card or use a full-width slot (an eGPU enclosure may be the limit)",
                )
            )
    return found


def cpu_findings(root: str = "/") -> List[Any]:
    """(what, what to do) for the CPU frequency governor and a laptop on battery (Linux /sys; nothing
    elsewhere)."""
    found = []
    sys_dir = Path(root, "sys")
    governors = set()
    for path in sorted((sys_dir / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            governors.add(path.read_text(encoding="ascii", errors="replace").strip())
        except OSError:
            continue
    slow = sorted(g for g in governors if g and g != "performance")
    if slow:
        found.append(
            (
                "CPU frequency governor: %s" % ", ".join(slow),
                "`sudo cpupower frequency-set -g performance` for the benchmark",
            )
        )
    for supply in sorted((sys_dir / "class/power_supply").glob("*")):
        try:
            kind = (supply / "type").read_text(encoding="ascii", errors="replace").strip()
            status = (supply / "status").read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        if kind == "Battery" and status == "Discharging":
            found.append(("running on battery (%s)" % supply.name, "plug in the charger"))
            break
    return found


LOAD_PER_CORE = 0.5  # a 1-minute load average above half the cores (and above 1): something else computes
BUSY_SAMPLE_S = 0.25  # how long the busiest processes are watched, only on a loaded machine
BUSIEST_SHOWN = 3


def load_findings(load1: float, cores: int, busiest: Sequence[Tuple[str, int, float]] = ()) -> List[Any]:
    """(what, what to do) when the 1-minute load average is high for ``cores``, naming the ``busiest``
    processes ((name, pid, % of one core), busiest first)."""
    limit = max(1.0, LOAD_PER_CORE * cores)
    if cores < 1 or load1 <= limit:
        return []
    # ", " between the parts: doctor wraps its value there
    named = ", ".join("%s (pid %d: %.0f%% CPU)" % (name, pid, pct) for name, pid, pct in busiest[:BUSIEST_SHOWN])
    what = "load average %.2f on %d core%s (1 minute)%s" % (
        load1,
        cores,
        "" if cores == 1 else "s",
        ", busiest: " + named if named else "",
    )
    return [
        (
            what,
            "stop %s, or wait until the load is under %g, before benchmarking"
            % ("them" if named else "what else runs", limit),
        )
    ]


def proc_times(root: str = "/") -> Dict[int, Tuple[str, int]]:
    """{pid: (name, CPU ticks used so far)} from Linux's /proc/PID/stat; {} elsewhere."""
    out = {}
    for stat in Path(root, "proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="utf-8", errors="replace")
            name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
            out[int(stat.parent.name)] = (name, int(rest[11]) + int(rest[12]))  # utime + stime: fields 14, 15
        except (OSError, ValueError, IndexError):
            continue  # a process that ended between the listing and the read, or an odd file
    return out


def busiest(
    before: Dict[int, Tuple[str, int]],
    after: Dict[int, Tuple[str, int]],
    seconds: float,
    hz: int,
    skip: Iterable[int] = (),
) -> List[Tuple[str, int, float]]:
    """(name, pid, % of one core) of the processes that used the CPU between two ``proc_times``, busiest first
    (those over 5 %; ``skip``: our own pids)."""
    skipped = set(skip)
    found = []
    for pid, (name, ticks) in after.items():
        if pid in skipped or pid not in before or before[pid][0] != name:
            continue
        pct = (ticks - before[pid][1]) / float(hz) / seconds * 100.0
        if pct > 5.0:
            found.append((name, pid, pct))
    return sorted(found, key=lambda f: (-f[2], f[1]))


def _machine_load(root: str) -> List[Any]:
    """The load finding of this machine: os.getloadavg against os.cpu_count (both system-wide), and on a
    loaded Linux machine the processes that used the CPU over BUSY_SAMPLE_S."""
    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return []
    cores = os.cpu_count() or 1
    if not load_findings(load1, cores):
        return []
    import time  # only on a loaded machine

    before = proc_times(root)
    time.sleep(BUSY_SAMPLE_S)  # a rate needs two readings; a quiet machine never waits
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return load_findings(load1, cores, busiest(before, proc_times(root), BUSY_SAMPLE_S, hz, (os.getpid(),)))


def gather(
    nvidia_smi: Optional[str] = None, root: str = "/", gpu: bool = True, load: bool = False
) -> List[Dict[str, str]]:
    """Every finding on this machine: [{"what", "fix"}] (``gpu`` False: the CPU's only; ``load``: the load
    average too, doctor's question: a sweep starting its own runs would read its own start-up)."""
    found = []
    path = find_nvidia_smi(nvidia_smi) if gpu else None
    if path is not None:
        code, text = run_smi([path, "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"])
        gpus = parse_gpu_state(text) if code == 0 else {}
        code, text = run_smi([path, "--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"])
        apps = parse_compute_apps(text) if code == 0 else []
        found += gpu_findings(gpus, apps, on_linux=os.name == "posix")
    found += cpu_findings(root) if os.name == "posix" else []
    found += _machine_load(root) if load else []
    return [{"what": what, "fix": fix} for what, fix in found]
