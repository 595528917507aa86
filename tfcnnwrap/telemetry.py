"""GPU telemetry through nvidia-smi: what the GPUs are, and how one sampled while a benchmark ran.

One long-lived ``nvidia-smi --query-gpu=... -lms 1000`` process per run writes straight into the samples
file (no reader thread, no polling); ``Sampler.stop`` ends it and summarises the file. Without nvidia-smi
there is one note and no telemetry; nothing here raises.

Throttle rule (``summarize_samples``): only *busy* samples count, those with utilization.gpu >= 50 % (all
samples when utilization is not reported), so that the idle start (TensorFlow importing, building the
graph) and the idle end do not look like clock drops. The early-run level is the median SM clock of the
first ``k`` busy samples, ``k = max(5, ceil(10 % of the busy samples))``. The run counts as throttled when
the median of any later window of ``k`` consecutive busy samples is more than 10 % below that level; a
single-sample dip does not count. With fewer than ``2 k`` busy samples there is no verdict (``None``).
"""

import math
import os
import shutil
import signal
import statistics
import subprocess
from pathlib import Path

from tfcnnwrap import safefs
from tfcnnwrap.procs import bind_to_our_lifetime, popen_group_kwargs

ENV_NVIDIA_SMI = "TFCNNWRAP_NVIDIA_SMI"  # a path to use, or "none" to switch telemetry off
SAMPLE_FIELDS = (
    "timestamp",
    "index",
    "temperature.gpu",
    "clocks.sm",
    "power.draw",
    "utilization.gpu",
    "memory.used",
)
# The name goes last so that a comma inside it cannot shift the other columns.
INFO_FIELDS = ("index", "driver_version", "memory.total", "name")
BUSY_UTIL_PCT = 50.0
THROTTLE_DROP = 0.10
EARLY_MIN_SAMPLES = 5
EARLY_FRACTION = 0.10
QUERY_TIMEOUT_S = 20.0
STOP_WAIT_S = 5.0
INTERRUPT_WAIT_S = 2.0

_MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[gpu is lost]"}
_WINDOWS_CANDIDATES = (
    r"%SystemRoot%\System32\nvidia-smi.exe",
    r"%ProgramFiles%\NVIDIA Corporation\NVSMI\nvidia-smi.exe",  # drivers before 2019 put it here, off PATH
)


def find_nvidia_smi(explicit=None):
    """Path of nvidia-smi: ``explicit``, else $TFCNNWRAP_NVIDIA_SMI, else PATH (and the usual Windows
    folders). None when there is none, or when the variable says ``none``."""
    wanted = explicit or os.environ.get(ENV_NVIDIA_SMI)
    if wanted:
        if str(wanted).strip().lower() in ("none", "off", "0"):
            return None
        found = shutil.which(str(wanted))
        return found if found else None
    found = shutil.which("nvidia-smi")
    if found:
        return found
    if os.name == "nt":
        for candidate in _WINDOWS_CANDIDATES:
            path = Path(os.path.expandvars(candidate))
            if path.is_file():
                return str(path)
    return None


def _number(text):
    text = text.strip()
    if text.lower() in _MISSING:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):  # "nan" from a GPU that cannot tell: skipped for this field only
        return None
    return int(value) if value.is_integer() else value


def query_gpus(nvidia_smi=None, timeout=QUERY_TIMEOUT_S):
    """What nvidia-smi says about the GPUs, or None when there is no nvidia-smi.

    ``{"path", "driver_version", "gpus": [{"index", "name", "driver_version", "memory_total_mib"}]}`` plus
    ``"error"`` when nvidia-smi is there but failed (no driver loaded, no device).
    """
    path = find_nvidia_smi(nvidia_smi)
    if path is None:
        return None
    info = {"path": path, "driver_version": None, "gpus": []}
    args = [path, "--query-gpu=" + ",".join(INFO_FIELDS), "--format=csv,noheader,nounits"]
    try:
        proc = subprocess.run(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        info["error"] = "nvidia-smi did not answer within %.0f s" % timeout
        return info
    except OSError as exc:
        info["error"] = "cannot run %s: %s" % (path, exc.strerror or exc)
        return info
    text = proc.stdout.decode("utf-8", "replace")
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", len(INFO_FIELDS) - 1)]
        if len(parts) != len(INFO_FIELDS) or _number(parts[0]) is None:
            continue
        memory = _number(parts[2])
        info["gpus"].append(
            {
                "index": int(_number(parts[0])),
                "name": parts[3],
                "driver_version": parts[1] or None,
                "memory_total_mib": int(memory) if memory is not None else None,
            }
        )
    if info["gpus"]:
        info["driver_version"] = info["gpus"][0]["driver_version"]
    if proc.returncode != 0 or not info["gpus"]:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        info["error"] = (lines[0][:300] if lines else "no output") + " (nvidia-smi exit %d)" % proc.returncode
    return info


def parse_sample_line(line):
    """One CSV line of the sampler -> dict of numbers (None where nvidia-smi says N/A), or None if the line
    is not a sample (a cut-off last line, an error message)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(SAMPLE_FIELDS):
        return None
    index = _number(parts[1])
    if index is None:
        return None
    return {
        "timestamp": parts[0],
        "index": int(index),
        "temp_c": _number(parts[2]),
        "sm_clock_mhz": _number(parts[3]),
        "power_w": _number(parts[4]),
        "util_pct": _number(parts[5]),
        "memory_used_mib": _number(parts[6]),
    }


def _values(samples, key):
    return [s[key] for s in samples if s[key] is not None]


def _rounded(value, digits=1):
    return None if value is None else round(value, digits)


def _max(values):
    return max(values) if values else None


def _mean(values):
    return statistics.mean(values) if values else None


def throttle_verdict(clocks):
    """``(throttled, early_level, lowest_window_median)`` for the SM clocks of the busy samples, in order.

    ``throttled`` is None when there are too few samples to tell (see the module docstring).
    """
    k = max(EARLY_MIN_SAMPLES, int(math.ceil(EARLY_FRACTION * len(clocks))))
    if len(clocks) < k:
        return None, None, None
    early = statistics.median(clocks[:k])
    later = clocks[k:]
    if len(later) < k:
        return None, early, None
    lowest = min(statistics.median(later[i:i + k]) for i in range(len(later) - k + 1))
    return lowest < (1.0 - THROTTLE_DROP) * early, early, lowest


def _summarize_gpu(samples):
    utils = _values(samples, "util_pct")
    busy = [s for s in samples if s["util_pct"] is not None and s["util_pct"] >= BUSY_UTIL_PCT] if utils else samples
    clocks = _values(busy, "sm_clock_mhz")
    throttled, early, lowest = throttle_verdict(clocks)
    return {
        "samples": len(samples),
        "busy_samples": len(busy),
        "max_temp_c": _max(_values(samples, "temp_c")),
        "mean_sm_clock_mhz": _rounded(_mean(clocks)),
        "early_sm_clock_mhz": _rounded(early),
        "min_sm_clock_mhz": min(clocks) if clocks else None,
        "low_sm_clock_mhz": _rounded(lowest),
        "max_power_w": _rounded(_max(_values(samples, "power_w")), 2),
        "mean_util_pct": _rounded(_mean(utils)),
        "max_memory_used_mib": _max(_values(samples, "memory_used_mib")),
        "throttled": throttled,
    }


def summarize_samples(lines):
    """Summary of the sampler's CSV lines (a list, or the text's lines).

    Clock figures are over busy samples, utilization over all samples. With several GPUs the clock,
    utilization and throttle figures are those of the busiest GPU (highest mean utilization; the one the
    benchmark ran on) while temperature, power and memory are the maxima over all GPUs; ``per_gpu`` then
    holds each GPU's own summary.
    """
    by_gpu = {}
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        sample = parse_sample_line(line)
        if sample is None:
            skipped += 1
            continue
        by_gpu.setdefault(sample["index"], []).append(sample)
    if not by_gpu:
        summary = _summarize_gpu([])
        summary.update(gpu_index=None, skipped_lines=skipped)
        return summary
    per_gpu = {index: _summarize_gpu(samples) for index, samples in sorted(by_gpu.items())}
    busiest = max(per_gpu, key=lambda i: (per_gpu[i]["mean_util_pct"] or 0.0, -i))
    summary = dict(per_gpu[busiest])
    summary["samples"] = sum(s["samples"] for s in per_gpu.values())
    for key in ("max_temp_c", "max_power_w", "max_memory_used_mib"):
        summary[key] = _max([s[key] for s in per_gpu.values() if s[key] is not None])
    summary["gpu_index"] = busiest
    summary["skipped_lines"] = skipped
    if len(per_gpu) > 1:
        summary["per_gpu"] = {str(i): s for i, s in per_gpu.items()}
    return summary


def read_sample_lines(path):
    """The complete lines of a samples file; a last line without its newline was cut off and is dropped."""
    text = Path(path).read_bytes().decode("utf-8", "replace")
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()
    return lines


class Sampler:
    """One nvidia-smi sampling process writing into ``samples_path``; ``stop()`` ends it and summarises."""

    def __init__(self, nvidia_smi, samples_path, interval_ms=1000):
        self.samples_path = Path(samples_path)
        self.args = [
            str(nvidia_smi),
            "--query-gpu=" + ",".join(SAMPLE_FIELDS),
            "--format=csv,noheader,nounits",
            "-lms",
            str(int(interval_ms)),
        ]
        self._summary = None
        self._out = safefs.create_replacing(self.samples_path)  # a planted link is replaced, not followed
        try:
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT,
                **popen_group_kwargs()
            )
            bind_to_our_lifetime(self.process)
        except BaseException:
            self._out.close()
            raise

    def _end_process(self):
        if self.process.poll() is None and os.name != "nt":
            # Ctrl-C first: nvidia-smi then leaves its loop and exits normally, flushing what it buffered;
            # SIGTERM would end it with a block-buffered file's last lines unwritten.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=INTERRUPT_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_WAIT_S)

    def stop(self):
        """End sampling and return the summary (see ``summarize_samples``); never raises, and a second call
        returns the same summary."""
        if self._summary is not None:
            return self._summary
        error = None
        try:
            self._end_process()
        except Exception as exc:  # noqa: BLE001 - telemetry must never break a run
            error = "could not stop nvidia-smi: %s" % exc
        finally:
            try:
                self._out.close()
            except OSError:
                pass
        try:
            lines = read_sample_lines(self.samples_path)
            summary = summarize_samples(lines)
            if summary["samples"] == 0:
                complaint = next((line.strip() for line in lines if line.strip()), None)
                error = error or "nvidia-smi gave no samples" + (": " + complaint[:300] if complaint else "")
        except Exception as exc:  # noqa: BLE001
            summary = {"samples": 0, "throttled": None}
            error = error or "could not read %s: %s" % (self.samples_path.name, exc)
        summary["samples_file"] = self.samples_path.name
        if error:
            summary["error"] = error
        self._summary = summary
        return summary

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()
        return False


class Telemetry:
    """Finds nvidia-smi once; ``start(path)`` gives one Sampler per run, or None when there is no telemetry
    (``note`` then says why, in one line)."""

    def __init__(self, nvidia_smi=None, interval_ms=1000):
        self.path = find_nvidia_smi(nvidia_smi)
        self.interval_ms = interval_ms
        self.available = self.path is not None
        self.note = None if self.available else "nvidia-smi not found: no GPU telemetry"

    def start(self, samples_path):
        if not self.available:
            return None
        try:
            return Sampler(self.path, samples_path, self.interval_ms)
        except Exception as exc:  # noqa: BLE001 - no telemetry, the run goes on
            self.available = False
            self.note = "cannot start nvidia-smi (%s): no GPU telemetry" % exc
            return None
