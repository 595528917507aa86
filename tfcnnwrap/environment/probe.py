"""Ask the target interpreter about its TensorFlow, in a subprocess with a timeout.

The questions themselves live in ``_probe.py``, which runs inside the target interpreter (possibly
Python 3.5 with TF 1.x) and answers with JSON lines: a snapshot after each stage and a last one marked
``"complete": true``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union

from tfcnnwrap.errors import SetupError
from tfcnnwrap.run.logparse import last_line_of
from tfcnnwrap.run.procs import run_captured
from tfcnnwrap.run.telemetry import find_nvidia_smi

PROBE_SCRIPT = Path(__file__).with_name("_probe.py")
MARKER = "TFCNNWRAP-PROBE-JSON: "

# Metadata answers in ~0.1 s; importing TensorFlow takes seconds, a first CUDA init can take a minute.
VERSION_TIMEOUT_S = 60.0
FULL_TIMEOUT_S = 300.0
MATMUL_TIMEOUT_S = 600.0

# What the stage after each snapshot was doing, for "the probe stopped while ..." messages.
NEXT_STEP: Dict[Optional[str], str] = {
    "metadata": "importing tensorflow",
    "import": "reading CUDA/cuDNN build info",
    "build_info": "listing GPUs",
    "devices": "timing what was asked (copies to /gpu:0, the matmul on /cpu:0)",
    "bandwidth": "timing the matmul on /cpu:0",
    "matmul_cpu": "timing the matmul on /gpu:0",
    "matmul_gpu": "finishing",
}


class InterpreterNotFound(SetupError):
    """--python names nothing that can be started."""


class ProbeTimeout(SetupError):
    """The probe gave no complete answer within the timeout."""


class ProbeFailed(SetupError):
    """The interpreter ran but gave no complete answer (crashed, or is not a Python that runs the probe)."""


def target_python(python: Optional[Union[str, os.PathLike[str]]]) -> str:
    """The interpreter to question: ``--python`` or the one running tfcnnwrap, as an absolute path.

    Absolute, because benchmarks run with the script's directory as their working directory: a relative
    ``--python envs/tf/bin/python`` must still name the same file there. A bare name is looked up on PATH.
    """
    if not python:
        return sys.executable
    text = str(python)
    if os.sep in text or (os.altsep and os.altsep in text):
        return str(Path(text).absolute())

    return shutil.which(text) or text


def quiet_tf_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def parse_answer(stdout_text: str) -> Optional[Union[List[int], Dict[str, Any]]]:
    """The last snapshot the probe printed (as JSON decoded it: not necessarily an object), or None."""
    for line in reversed(stdout_text.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER) :])
            except ValueError:
                continue  # a line cut short by a crash
    return None


def _text(value: Optional[str]) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _flag(value: Optional[Union[bool, str]]) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def _gflops(value: Optional[Union[float, str]]) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Matmul:
    cpu_gflops: Optional[float] = None
    gpu_gflops: Optional[float] = None


@dataclass(frozen=True)
class Bandwidth:
    """Copy bandwidth between host and /gpu:0 in GB/s; ``reason`` says why a figure is missing."""

    h2d_gbps: Optional[float] = None
    d2h_gbps: Optional[float] = None
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, data: Optional[Dict[str, Any]]) -> Optional[Bandwidth]:
        if not isinstance(data, dict):
            return None
        figures = [_gflops(data.get(k)) for k in ("h2d_gbps", "d2h_gbps")]
        figures = [f if f is not None and 0 < f < 1e6 else None for f in figures]  # finite and plausible
        reason = _text(data.get("reason"))
        return cls(figures[0], figures[1], reason[:300] if reason else None)

    def to_dict(self) -> Dict[str, Any]:
        return {"h2d_gbps": self.h2d_gbps, "d2h_gbps": self.d2h_gbps, "reason": self.reason}


@dataclass(frozen=True)
class ProbeAnswer:
    """What the target interpreter said about its TensorFlow, read once from the probe's JSON.

    ``gpus``: the names TensorFlow sees, ``()`` when it sees none, ``None`` when it cannot tell (not asked, or
    TensorFlow could not list its devices). ``matmul`` is None unless it was asked for.
    """

    python: Optional[str] = None
    python_version: Optional[str] = None
    tf_version: Optional[str] = None
    distribution: Optional[str] = None
    location: Optional[str] = None
    version_source: Optional[str] = None
    tf_keras: Optional[bool] = None
    importable: Optional[bool] = None
    gpus: Optional[Tuple[str, ...]] = None
    cuda_version: Optional[str] = None
    cudnn_version: Optional[str] = None
    is_cuda_build: Optional[bool] = None
    matmul: Optional[Matmul] = None
    bandwidth: Optional[Bandwidth] = None  # None unless asked for
    warnings: Tuple[str, ...] = ()
    stage: Optional[str] = None
    complete: bool = False

    @classmethod
    def from_json(cls, data: Any) -> Optional[ProbeAnswer]:
        """From one decoded snapshot; None when it is not a JSON object (a wrong probe, or a wrong python)."""
        if not isinstance(data, dict):
            return None
        gpus = data.get("gpus")
        if isinstance(gpus, list):
            gpus = tuple(str(g.get("name") if isinstance(g, dict) else g) for g in gpus)
        else:
            gpus = None
        matmul = data.get("matmul")
        if isinstance(matmul, dict):
            matmul = Matmul(_gflops(matmul.get("cpu_gflops")), _gflops(matmul.get("gpu_gflops")))
        else:
            matmul = None
        warnings = data.get("warnings")
        version = data.get("tensorflow_version")
        return cls(
            python=_text(data.get("python")),
            python_version=_text(data.get("python_version")),
            tf_version=str(version) if isinstance(version, (str, int, float)) and str(version) else None,
            distribution=_text(data.get("tensorflow_distribution")),
            location=_text(data.get("tensorflow_location")),
            version_source=_text(data.get("version_source")),
            tf_keras=_flag(data.get("tf_keras")),
            importable=_flag(data.get("tensorflow_importable")),
            gpus=gpus,
            cuda_version=_version_text(data.get("cuda_version")),
            cudnn_version=_version_text(data.get("cudnn_version")),
            is_cuda_build=_flag(data.get("is_cuda_build")),
            matmul=matmul,
            bandwidth=Bandwidth.from_json(data.get("bandwidth")),
            warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
            stage=_text(data.get("stage")),
            complete=data.get("complete", True) is True,
        )

    def with_warning(self, text: str) -> "ProbeAnswer":
        return replace(self, warnings=self.warnings + (text,))

    def gpu_list(self) -> Optional[List[str]]:
        """``gpus`` as JSON wants it: a list, or None."""
        return None if self.gpus is None else list(self.gpus)


def _version_text(value: Optional[str]) -> Optional[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return _text(value)


def describe_exit(returncode: int) -> str:
    """``-4`` -> ``'killed by signal SIGILL'``; Windows NTSTATUS codes in hex."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return "killed by signal %s" % signal.Signals(-returncode).name
        except (ValueError, AttributeError):
            return "killed by signal %d" % -returncode
    if returncode > 0xFFFF:  # Windows: 0xC000001D is an illegal instruction, 0xC0000005 an access violation
        return "exit code 0x%08X" % returncode
    return "exit code %d" % returncode


def crash_hint(returncode: int) -> str:
    """A likely cause for a well-known crash code, or ''."""
    illegal = returncode in (-getattr(signal, "SIGILL", 4), 0xC000001D, 132)
    if illegal:
        return (
            " (an illegal instruction: this TensorFlow build needs CPU instructions, usually AVX, that this CPU "
            "lacks; install a build made for it, e.g. from conda)"
        )
    return ""


def run_probe(
    python: Optional[Union[str, os.PathLike[str]]] = None,
    full: bool = False,
    matmul: bool = False,
    timeout: Optional[float] = None,
    env: Optional[Dict[str, str]] = None,
    partial: bool = False,
    bandwidth: bool = False,
) -> ProbeAnswer:
    """Run the probe and return its ``ProbeAnswer``.

    Raises SetupError (``InterpreterNotFound``) when the interpreter cannot be started. When the probe
    crashes or times out, raises ``ProbeFailed`` / ``ProbeTimeout`` (both SetupError) -- unless ``partial``
    is true and some stage answered: then that snapshot comes back with ``complete`` false and a warning
    saying where and why the probe stopped. The probe runs in a process group of its own; whatever it
    started is killed with it, and children holding its output get a short grace once it has exited.
    """
    exe = target_python(python)
    args = [exe, str(PROBE_SCRIPT)]
    if full:
        args.append("--full")
    if matmul:
        args.append("--matmul")
    if bandwidth:
        args.append("--bandwidth")
    if timeout is None:
        timeout = MATMUL_TIMEOUT_S if matmul or bandwidth else FULL_TIMEOUT_S if full else VERSION_TIMEOUT_S
    returncode, stdout, stderr = _run_interpreter(exe, args, timeout, env)
    answer = _answer(exe, stdout)
    if returncode is None:
        if partial and answer is not None:
            return answer.with_warning(
                "the probe gave no answer within %.0f s while %s; what it learned before is shown"
                % (timeout, NEXT_STEP.get(answer.stage, "running"))
            )
        raise ProbeTimeout(
            'the TensorFlow probe in %s did not answer within %.0f s; check that `%s -c "import tensorflow"` '
            "works, or skip probing with --tf-version" % (exe, timeout, exe)
        )
    if answer is not None and answer.complete:
        return answer
    how = describe_exit(returncode)
    err = last_line_of((stderr or b"").decode("utf-8", "replace"), 300) or ""
    if partial and answer is not None:
        return answer.with_warning(
            "the probe stopped (%s) while %s%s%s; what it learned before is shown"
            % (how, NEXT_STEP.get(answer.stage, "running"), ": " + err if err else "", crash_hint(returncode))
        )
    raise ProbeFailed(
        "%s did not run the TensorFlow probe (%s: %s)%s; check --python"
        % (exe, how, err or "no output", crash_hint(returncode))
    )


def _run_interpreter(
    exe: str, args: List[str], timeout: float, env: Optional[Dict[str, str]]
) -> Tuple[Optional[int], Optional[bytes], Optional[bytes]]:
    """(exit status or None on a timeout, stdout, stderr) of the probe; InterpreterNotFound when ``exe`` does not
    start."""
    try:
        return run_captured(args, timeout, env=quiet_tf_env(env))
    except FileNotFoundError:
        raise InterpreterNotFound(
            "cannot start the Python interpreter %r: give the full path of the python that has TensorFlow "
            "with --python (e.g. C:\\Anaconda3\\envs\\tf\\python.exe)" % exe
        ) from None
    except (PermissionError, IsADirectoryError, NotADirectoryError):
        raise InterpreterNotFound("%r is not an executable Python interpreter; check --python" % exe) from None
    except OSError as exc:  # e.g. ENOEXEC: a file that is not a program
        raise InterpreterNotFound("cannot run %r (%s); check --python" % (exe, exc.strerror or exc)) from None


def _answer(exe: str, stdout: Optional[bytes]) -> Optional[ProbeAnswer]:
    """The last snapshot as a ProbeAnswer; None when there is none; ProbeFailed when it is not an object."""
    data = parse_answer((stdout or b"").decode("utf-8", "replace"))
    if data is None:
        return None
    answer = ProbeAnswer.from_json(data)
    if answer is None:
        raise ProbeFailed(
            "%s answered the TensorFlow probe with a JSON %s, not a JSON object: is --python the interpreter "
            "that has TensorFlow, and is tfcnnwrap's _probe.py unmodified?" % (exe, type(data).__name__)
        )
    return answer


class HasGpus(Protocol):
    """What the device rule reads of a probe: ``gpus``, a tuple of names, () for none, None for cannot tell."""

    @property
    def gpus(self) -> Optional[Tuple[str, ...]]: ...  # read-only: frozen records (ProbeAnswer, DoctorReport)


def resolve_device(requested: str, probe_result: "HasGpus", doctor_hint: bool = True) -> Tuple[str, Optional[str]]:
    """(device, warning or None) for --device auto|gpu|cpu: the device rule, one for sweep and doctor
    (``doctor_hint`` False: the warning does not send you to doctor, for doctor's own)."""
    if requested in ("gpu", "cpu"):
        return requested, None
    gpus = probe_result.gpus
    if gpus:
        return "gpu", None
    if gpus is None:
        if find_nvidia_smi():
            return "gpu", "TensorFlow could not say whether it sees a GPU; nvidia-smi is present, so using the GPU"
        return "cpu", (
            "TensorFlow could not say whether it sees a GPU and there is no nvidia-smi: running on the CPU "
            "(--device=cpu --data_format=NHWC); pass --device gpu to insist"
        )
    return "cpu", (
        "TensorFlow sees no GPU: running on the CPU (--device=cpu --data_format=NHWC), which is slow; %s"
        "pass --device gpu to insist" % ("check `python -m tfcnnwrap doctor`, or " if doctor_hint else "")
    )
