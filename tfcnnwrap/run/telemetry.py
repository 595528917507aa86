"""GPU telemetry through nvidia-smi: what the GPUs are, and how one sampled while a benchmark ran.

One long-lived ``nvidia-smi --query-gpu=... -lms 1000`` process per sweep (``Telemetry``'s feed) writes straight
into a temporary file (no reader thread, no polling); each run takes the lines written between its start and its
end (``RunSamples``: cut by position in that file, a line being written at either edge left out), writes them
into its own samples file when it ends and summarises them; the file is then emptied (POSIX: nvidia-smi
appends). nvidia-smi's start (its driver library's initialisation, the costly part on a GPU machine) is paid
once per sweep, not once or twice per run, and the newest tick gives a run's start temperature without another
query. A feed whose nvidia-smi has exited (a driver that fails) is started again for the next run. Without
nvidia-smi there is one note and no telemetry; nothing here raises.

What the samples mean (fields, throttle rule, reasons, PCIe link) is ``gpusamples``'s, pure and apart.
Which fields are asked for is settled once per sweep (``choose_fields``): drivers before 2023 know
``clocks_throttle_reasons.*``, newer ones ``clocks_event_reasons.*``, very old ones neither nor the PCIe
fields, and nvidia-smi refuses the whole query for one field it does not know.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.run.gpusamples import (  # noqa: F401 - re-exported: the sampler's readers import them from here
    LEGACY_FIELDS,
    PCIE_FIELDS,
    REASON_FIELDS,
    header_fields,
    latest_with_fields,
    parse_sample_line,
    sample_number,
    summarize_samples,
    throttle_verdict,
)
from tfcnnwrap.run.procs import bind_to_our_lifetime, kill_tree, popen_group_kwargs, run_captured

if TYPE_CHECKING:
    from tfcnnwrap.run.procs import ProcessGroup
    from tfcnnwrap.run.stopping import StopRequests

ENV_NVIDIA_SMI = "TFCNNWRAP_NVIDIA_SMI"  # a path to use, or "none" to switch telemetry off
SAMPLE_FIELDS = LEGACY_FIELDS  # what every nvidia-smi knows; more when the driver does (choose_fields)
# The name goes last so that a comma inside it cannot shift the other columns.
INFO_FIELDS = ("index", "driver_version", "memory.total", "name")
QUERY_TIMEOUT_S = 20.0
STOP_WAIT_S = 5.0
INTERRUPT_WAIT_S = 2.0
TAIL_BYTES = 8192  # RunSamples.latest reads this much of the samples file's end

_WINDOWS_CANDIDATES = (
    r"%SystemRoot%\System32\nvidia-smi.exe",
    r"%ProgramFiles%\NVIDIA Corporation\NVSMI\nvidia-smi.exe",  # drivers before 2019 put it here, off PATH
)


def find_nvidia_smi(explicit: Optional[str] = None) -> Optional[str]:
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


def query_gpus(nvidia_smi: Optional[str] = None, timeout: float = QUERY_TIMEOUT_S) -> Optional[Dict[str, Any]]:
    """What nvidia-smi says about the GPUs, or None when there is no nvidia-smi.

    ``{"path", "driver_version", "gpus": [{"index", "name", "driver_version", "memory_total_mib"}]}`` plus
    ``"error"`` when nvidia-smi is there but failed (no driver loaded, no device).
    """
    path = find_nvidia_smi(nvidia_smi)
    if path is None:
        return None
    info: dict = {"path": path, "driver_version": None, "gpus": []}
    args = [path, "--query-gpu=" + ",".join(INFO_FIELDS), "--format=csv,noheader,nounits"]
    returncode, text = run_smi(args, timeout)
    if returncode is None:
        info["error"] = text
        return info
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", len(INFO_FIELDS) - 1)]
        if len(parts) != len(INFO_FIELDS) or sample_number(parts[0]) is None:
            continue
        memory = sample_number(parts[2])
        info["gpus"].append(
            {
                "index": int(sample_number(parts[0])),  # type: ignore[arg-type]  # a number: checked above
                "name": parts[3],
                "driver_version": parts[1] or None,
                "memory_total_mib": int(memory) if memory is not None else None,
            }
        )
    if info["gpus"]:
        info["driver_version"] = info["gpus"][0]["driver_version"]
    if returncode != 0 or not info["gpus"]:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        info["error"] = (lines[0][:300] if lines else "no output") + " (nvidia-smi exit %d)" % returncode
    return info


class _KillAtOnce:
    """What a stop request ends while a one-shot query waits: the query's whole tree, with no grace (an
    nvidia-smi that hangs ignores SIGTERM too)."""

    def __init__(self, group: ProcessGroup) -> None:
        self.exited = group.exited
        self.terminate = group.kill


# nvidia-smi paths whose one-shot query timed out in this process, and why: each later one-shot query of it
# answers at once with that reason instead of costing another QUERY_TIMEOUT_S (a hung driver stays hung).
_HUNG: Dict[str, str] = {}


def run_smi(
    args: List[str], timeout: float = QUERY_TIMEOUT_S, stops: Optional[StopRequests] = None
) -> Tuple[Optional[int], str]:
    """(exit code, text) of a one-shot nvidia-smi call; (None, why) when it could not run, did not answer
    (its whole tree is killed, a wrapper's children too; it is not asked again, see ``_HUNG``) or a stop
    request (Ctrl-C) ended the wait."""
    path = str(args[0])
    if path in _HUNG:
        return None, _HUNG[path]
    if stops is not None and stops.requested:
        return None, "stopped"
    try:
        code, out, err = run_captured(
            [str(a) for a in args],
            timeout,
            guard=(lambda g: stops.guard(_KillAtOnce(g))) if stops is not None else None,
        )
    except OSError as exc:
        return None, "cannot run %s: %s" % (args[0], exc.strerror or exc)
    if stops is not None and stops.requested:
        return None, "stopped"
    if code is None:
        why = "nvidia-smi did not answer within %.0f s" % timeout
        _HUNG[path] = why
        return None, why
    return code, (out + err).decode("utf-8", "replace")


def choose_fields(path: Optional[str]) -> Tuple[str, ...]:
    """The sample fields this nvidia-smi knows: the legacy seven, plus throttle reasons (whichever name the
    driver uses) and the PCIe link. Asked once with ``--help-query-gpu``; a driver whose help cannot be read
    gets one trial query of the full list and, if refused, the legacy fields."""
    code, text = run_smi([str(path), "--help-query-gpu"])
    if code == 0 and "temperature.gpu" in text:
        reasons = [f for f in REASON_FIELDS if '"%s"' % f in text or f in text.split()]
        pcie = [f for f in PCIE_FIELDS if f in text]
        return LEGACY_FIELDS + tuple(reasons[:1]) + (PCIE_FIELDS if len(pcie) == len(PCIE_FIELDS) else ())
    for reason in REASON_FIELDS:
        fields = LEGACY_FIELDS + (reason,) + PCIE_FIELDS
        code, _ = run_smi([str(path), "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
        if code == 0:
            return fields
    return LEGACY_FIELDS


def _printable(text: str) -> str:
    """``text`` with control characters (a terminal escape in a tool's answer) shown as ``?``."""
    return "".join("?" if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in text)


# A GPU reading outside this range is not a temperature (-300 °C, 65535 from a driver that cannot tell).
TEMP_RANGE_C = (-40.0, 150.0)


def query_temps(path: Union[Path, str], timeout: float = QUERY_TIMEOUT_S) -> Dict[Any, Any]:
    """{GPU index: temperature in °C} now, or {} when nvidia-smi cannot tell."""
    return read_temps(path, timeout)[0]


def read_temps(
    path: Union[Path, str], timeout: float = QUERY_TIMEOUT_S, stops: Optional[StopRequests] = None
) -> Tuple[Dict[Any, Any], Optional[str]]:
    """({GPU index: °C}, problem): problem is None, or one line saying what was wrong with nvidia-smi's
    answer (it failed, hung, gave no number; readings out of range or a GPU listed twice are left out)."""
    code, text = run_smi(
        [str(path), "--query-gpu=index,temperature.gpu", "--format=csv,noheader,nounits"], timeout, stops
    )
    if code is None:
        return {}, text
    first = _printable(next((line.strip() for line in text.splitlines() if line.strip()), "no output"))[:200]
    if code != 0:
        return {}, "nvidia-smi failed (exit %d: %s)" % (code, first)
    temps, problems = {}, []
    for line in text.splitlines():
        parts = line.split(",")
        index, temp = (sample_number(parts[0]), sample_number(parts[1])) if len(parts) == 2 else (None, None)
        if index is None or temp is None or not float(index).is_integer() or index < 0:
            continue
        if not TEMP_RANGE_C[0] <= temp <= TEMP_RANGE_C[1]:
            problems.append("GPU %d read %g °C, not a temperature" % (index, temp))
        elif int(index) in temps:
            problems.append("GPU %d listed twice" % index)
        else:
            temps[int(index)] = temp
    if not temps and not problems:
        problems.append("nvidia-smi gave no temperature (%s)" % first)
    return temps, "; ".join(problems) or None


def read_sample_lines(path: Path) -> List[str]:
    """The complete lines of a samples file; a last line without its newline was cut off and is dropped."""
    text = Path(path).read_bytes().decode("utf-8", "replace")
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()
    return lines


def _end_sampling(process: subprocess.Popen[bytes], stops: Optional[StopRequests]) -> None:
    """End a sampling nvidia-smi and its whole group. After a stop request (Ctrl-C) nothing is waited for: an
    nvidia-smi that hangs ignores signals too."""
    hurry = stops is not None and stops.requested
    if not hurry and process.poll() is None and os.name != "nt":
        # Ctrl-C first: nvidia-smi then leaves its loop and exits normally, flushing what it buffered;
        # SIGTERM would end it with a block-buffered file's last lines unwritten.
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=INTERRUPT_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
    # Its whole group, also what a wrapper script started (SIGKILL after the grace, to the group).
    kill_tree(process, grace_s=0 if hurry else STOP_WAIT_S)
    process.wait(timeout=STOP_WAIT_S)


def _summary_of(samples_path: Path, error: Optional[str]) -> Dict[str, Any]:
    """The summary of a samples file (see ``summarize_samples``), ``error`` (or what was wrong) added."""
    try:
        lines = read_sample_lines(samples_path)
        summary = summarize_samples(lines)
        if summary["samples"] == 0:
            complaint = next((line.strip() for line in lines if line.strip() and header_fields(line) is None), None)
            error = error or "nvidia-smi gave no samples" + (": " + complaint[:300] if complaint else "")
    except Exception as exc:  # noqa: BLE001
        summary = {"samples": 0, "throttled": None}
        error = error or "could not read %s: %s" % (samples_path.name, exc)
    summary["samples_file"] = samples_path.name
    if error:
        summary["error"] = error
    return summary


def _complete_lines(text: str) -> List[str]:
    """The lines of ``text``; a last one without its newline is being written and is left out."""
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()
    return lines


class _Feed:
    """One sampling nvidia-smi for a whole sweep, writing into a temporary file that only tfcnnwrap holds (on
    POSIX its name is removed at once: nothing is left behind, even by a killed tfcnnwrap)."""

    def __init__(self, nvidia_smi: str, interval_ms: int, fields: Tuple[str, ...]) -> None:
        import tempfile  # lazy: only a GPU sweep samples

        self.fields = fields
        self.interval_s = interval_ms / 1000.0
        self.args = [
            str(nvidia_smi),
            "--query-gpu=" + ",".join(fields),
            "--format=csv,noheader,nounits",
            "-lms",
            str(int(interval_ms)),
        ]
        fd, name = tempfile.mkstemp(prefix="tfcnnwrap-gpu-", suffix=".csv")
        self._name: Optional[str] = name
        self._out: Optional[IO[bytes]] = None
        self._in: Optional[IO[bytes]] = None
        self._lock = threading.Lock()  # the live view's thread and the sweep's read the same handle
        self._forgotten: Tuple[List[str], float] = ([], 0.0)  # the newest lines before ``forget``, and when
        try:
            self._out = os.fdopen(fd, "wb")
            self._in = open(name, "rb")
            if os.name != "nt":
                import fcntl  # lazy: POSIX only

                os.unlink(name)
                self._name = None
                # nvidia-smi appends wherever the end is: the file can be emptied after each run (``forget``)
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT, **popen_group_kwargs()
            )
            bind_to_our_lifetime(self.process)
        except BaseException:
            self._close_files()
            raise

    def running(self) -> bool:
        return self.process.poll() is None

    def size(self) -> int:
        assert self._in is not None  # open until close
        return os.fstat(self._in.fileno()).st_size

    def newest(self) -> Tuple[List[str], float]:
        """(the file's last complete lines, when nvidia-smi wrote them): those before ``forget`` emptied the file
        until it writes a complete line again."""
        assert self._in is not None  # open until close
        lines, written = self.tail(0), os.fstat(self._in.fileno()).st_mtime
        return (lines, written) if lines else self._forgotten

    def read(self, start: int, end: int) -> bytes:
        with self._lock:
            if self._in is None:
                return b""
            self._in.seek(start)
            return self._in.read(max(0, end - start))

    def forget(self) -> None:
        """Empty the file once a run has taken its samples (POSIX, where nvidia-smi appends): a sweep of days
        keeps no more than the samples since the last run ended."""
        if os.name == "nt":
            return
        lines, written = self.newest()  # the newest tick stays known: the next run's start temperature
        with self._lock:
            if self._out is not None:
                os.ftruncate(self._out.fileno(), 0)
                self._forgotten = (lines, written)

    def tail(self, since: int) -> List[str]:
        """The complete lines of the file's last TAIL_BYTES written at or after position ``since``."""
        end = self.size()
        return _complete_lines(self.read(max(since, end - TAIL_BYTES), end).decode("utf-8", "replace"))

    def close(self, stops: Optional[StopRequests]) -> None:
        try:
            _end_sampling(self.process, stops)
        except Exception:  # noqa: BLE001 - telemetry must never break a sweep; the group was signalled
            pass
        finally:
            self._close_files()

    def _close_files(self) -> None:
        with self._lock:
            for handle in (self._out, self._in):
                if handle is not None:
                    try:
                        handle.close()
                    except OSError:
                        pass
            self._out = self._in = None
        if self._name is not None:
            try:
                os.unlink(self._name)
            except OSError:
                pass


class RunSamples:
    """A run's share of the sweep's samples: the feed's lines from the run's start (``start``, a position in its
    file) to ``stop``, written then into the run's samples file (created with its header row at the start) and
    summarised. Nothing is read or written while the run runs, except ``latest`` for the live view."""

    def __init__(self, feed: _Feed, samples_path: Union[Path, str], start: int) -> None:
        self.feed = feed
        self.samples_path = Path(samples_path)
        self.fields = feed.fields
        self.start = start
        self._summary: Optional[Dict[str, Any]] = None
        self._out = safefs.create_replacing(self.samples_path)  # a planted link is replaced, not followed
        try:
            # Our header row, not nvidia-smi's: its names are the query's, whatever the driver's units.
            self._out.write((", ".join(self.fields) + "\n").encode("ascii"))
            self._out.flush()
        except BaseException:
            self._out.close()
            raise

    def _lines(self) -> bytes:
        """The complete lines the feed wrote since the run started; one it was writing at the start (begun
        before) or at the end (not finished) is left out."""
        end = self.feed.size()
        start = self.start
        data = self.feed.read(start - 1, end) if start > 0 else self.feed.read(0, end)
        if start > 0:
            data = data[1:] if data[:1] == b"\n" else data[data.find(b"\n") + 1 :] if b"\n" in data else b""
        return data[: data.rfind(b"\n") + 1]

    def latest(self) -> Dict[int, Any]:
        """{GPU index: sample} of the newest complete tick since the run started (the live view's figures), read
        from the feed's tail on demand: no reader thread. {} before the first sample or on error."""
        try:
            return latest_with_fields(self.feed.tail(self.start), self.fields)
        except (OSError, ValueError, AssertionError):
            return {}

    def stop(self) -> Optional[Dict[str, Any]]:
        """The run's samples written and summarised (see ``summarize_samples``); never raises, and a second call
        returns the same summary. The feed goes on for the next run."""
        if self._summary is not None:
            return self._summary
        error = None
        try:
            self._out.write(self._lines())
            self.feed.forget()
        except Exception as exc:  # noqa: BLE001 - telemetry must never break a run
            error = "could not write %s: %s" % (self.samples_path.name, exc)
        finally:
            try:
                self._out.close()
            except OSError:
                pass
        self._summary = _summary_of(self.samples_path, error)
        return self._summary

    def __enter__(self) -> "RunSamples":
        return self

    def __exit__(self, *exc_info):
        self.stop()
        return False


class Telemetry:
    """Finds nvidia-smi once; ``start(path)`` gives each run its ``RunSamples`` of the sweep's one sampling
    nvidia-smi (started with the first run, again when it has exited), or None when there is no telemetry
    (``note`` then says why, in one line); ``close`` ends the sampling when the sweep ends."""

    def __init__(self, nvidia_smi: Optional[str] = None, interval_ms: int = 1000):
        self.path = find_nvidia_smi(nvidia_smi)
        self.interval_ms = interval_ms
        self.available = self.path is not None
        self.note = None if self.available else "nvidia-smi not found: no GPU telemetry"
        self.current: Optional[RunSamples] = None  # the running run's samples, for the live view
        self.stops: Optional[StopRequests] = None  # the sweep's StopRequests: no grace for a hung nvidia-smi
        self._fields: Optional[Tuple[str, ...]] = None
        self._feed: Optional[_Feed] = None

    @property
    def fields(self) -> Tuple[str, ...]:
        if self._fields is None:
            self._fields = choose_fields(self.path) if self.available else SAMPLE_FIELDS
        return self._fields

    def latest(self) -> Dict[int, Any]:
        """The running run's newest tick ({} between runs): what ``display.set_gpu_source`` reads."""
        current = self.current
        # A stopped run's figures are the last run's reading: stale during a pause or a cool-down wait.
        return current.latest() if current is not None and current._summary is None else {}

    def temps(self) -> Dict[Any, Any]:
        return self.read_temps()[0]

    def read_temps(self, stops: Optional[StopRequests] = None) -> Tuple[Dict[Any, Any], Optional[str]]:
        """({GPU index: °C}, problem or None), as ``read_temps``; a stop request ends the query at once."""
        if not self.available:
            return {}, self.note or "no nvidia-smi"
        return read_temps(self.path, stops=stops)  # type: ignore[arg-type]  # available: a path

    def temps_now(self, stops: Optional[StopRequests] = None) -> Tuple[Dict[Any, Any], Optional[str]]:
        """As ``read_temps``, from the sampling nvidia-smi's newest tick when it wrote one within two intervals
        (no process started), else by a query."""
        feed, tick = self._feed, {}
        try:
            if feed is not None and feed.running():
                lines, written = feed.newest()
                if time.time() - written <= 2 * max(feed.interval_s, 1.0):
                    tick = latest_with_fields(lines, feed.fields)
        except (OSError, ValueError, AssertionError):
            tick = {}
        temps = {
            int(index): sample["temp_c"]
            for index, sample in tick.items()
            if isinstance(sample.get("temp_c"), (int, float)) and TEMP_RANGE_C[0] <= sample["temp_c"] <= TEMP_RANGE_C[1]
        }
        return (temps, None) if temps else self.read_temps(stops)

    def start(self, samples_path: Union[Path, str]) -> Optional[RunSamples]:
        if not self.available:
            return None
        try:
            feed, start = self._feed, 0
            if feed is not None and feed.running():
                start = feed.size()
            else:
                if feed is not None:  # its nvidia-smi exited (what it said is in the last run's samples)
                    feed.close(self.stops)
                self._feed = feed = _Feed(self.path, self.interval_ms, self.fields)  # type: ignore[arg-type]  # available: a path
            self.current = RunSamples(feed, samples_path, start)
            return self.current
        except Exception as exc:  # noqa: BLE001 - no telemetry, the run goes on
            self.available = False
            self.note = "cannot start nvidia-smi (%s): no GPU telemetry" % exc
            return None

    def close(self) -> None:
        """End the sampling nvidia-smi (the sweep is over); a later ``start`` begins another."""
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.close(self.stops)
