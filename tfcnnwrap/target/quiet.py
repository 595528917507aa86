"""Is the machine quiet? What would make a benchmark's numbers wander, like ``pyperf system show``: other
processes on the GPU, persistence mode off, a power limit below the default, application clocks set, a PCIe
link narrower than its maximum, the CPU frequency governor, a laptop on battery. Each finding says what to do.

Doctor shows them; a sweep warns once at its start. Parsing is pure (tested against published nvidia-smi
output); ``gather`` asks nvidia-smi (two one-shot queries) and reads Linux's /sys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from tfcnnwrap.run.telemetry import _run_smi, find_nvidia_smi

# nvidia-smi --query-gpu fields, in this order (the names every driver since 2013 knows)
GPU_FIELDS = ("index", "persistence_mode", "power.limit", "power.default_limit", "clocks.applications.graphics",
              "clocks.default_applications.graphics", "pcie.link.width.current", "pcie.link.width.max")
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
        apps.append({"pid": int(head[0]), "name": head[1].strip(),
                     "used_mib": used if isinstance(used, float) else None})
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
            found.append(("%s: persistence mode is off (the driver re-initialises before each run)" % name,
                          "`sudo nvidia-smi -pm 1`"))
        limit, default = gpu["power.limit"], gpu["power.default_limit"]
        if isinstance(limit, float) and isinstance(default, float) and limit < default - 0.5:
            found.append(("%s: power limit %.0f W, below its default %.0f W" % (name, limit, default),
                          "`sudo nvidia-smi -i %d -pl %.0f`" % (index, default)))
        app, app_default = gpu["clocks.applications.graphics"], gpu["clocks.default_applications.graphics"]
        if isinstance(app, float) and isinstance(app_default, float) and app != app_default:
            found.append(("%s: application clocks set to %.0f MHz (default %.0f MHz)" % (name, app, app_default),
                          "`sudo nvidia-smi -i %d -rac`, unless you set them on purpose" % index))
        width, most = gpu["pcie.link.width.current"], gpu["pcie.link.width.max"]
        if isinstance(width, float) and isinstance(most, float) and width < most:
            found.append(("%s: PCIe link x%d of x%d" % (name, width, most),
                          "reseat the card or use a full-width slot (an eGPU enclosure may be the limit)"))
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
        found.append(("CPU frequency governor: %s" % ", ".join(slow),
                      "`sudo cpupower frequency-set -g performance` for the benchmark"))
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


def gather(nvidia_smi: Optional[str] = None, root: str = "/", gpu: bool = True) -> List[Dict[str, str]]:
    """Every finding on this machine: [{"what", "fix"}] (``gpu`` False: the CPU's only)."""
    found = []
    path = find_nvidia_smi(nvidia_smi) if gpu else None
    if path is not None:
        code, text = _run_smi([path, "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"])
        gpus = parse_gpu_state(text) if code == 0 else {}
        code, text = _run_smi([path, "--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"])
        apps = parse_compute_apps(text) if code == 0 else []
        found += gpu_findings(gpus, apps, on_linux=os.name == "posix")
    found += cpu_findings(root) if os.name == "posix" else []
    return [{"what": what, "fix": fix} for what, fix in found]
