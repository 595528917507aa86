"""Ask the target interpreter about its TensorFlow, in a subprocess with a timeout.

The questions themselves live in ``_probe.py``, which runs inside the target interpreter (possibly
Python 3.5 with TF 1.x) and answers with JSON lines: a snapshot after each stage and a last one marked
``"complete": true``.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tfcnnwrap.errors import SetupError

PROBE_SCRIPT = Path(__file__).with_name("_probe.py")
MARKER = "TFCNNWRAP-PROBE-JSON: "

# Metadata answers in ~0.1 s; importing TensorFlow takes seconds, a first CUDA init can take a minute.
VERSION_TIMEOUT_S = 60.0
FULL_TIMEOUT_S = 300.0
MATMUL_TIMEOUT_S = 600.0

# What the stage after each snapshot was doing, for "the probe stopped while ..." messages.
NEXT_STEP = {
    "metadata": "importing tensorflow",
    "import": "reading CUDA/cuDNN build info",
    "build_info": "listing GPUs",
    "devices": "timing the matmul on /cpu:0",
    "matmul_cpu": "timing the matmul on /gpu:0",
    "matmul_gpu": "finishing",
}


class InterpreterNotFound(SetupError):
    """--python names nothing that can be started."""


class ProbeTimeout(SetupError):
    """The probe gave no complete answer within the timeout."""


class ProbeFailed(SetupError):
    """The interpreter ran but gave no complete answer (crashed, or is not a Python that runs the probe)."""


def target_python(python):
    """The interpreter to question: ``--python`` or the one running tfcnnwrap, as an absolute path.

    Absolute, because benchmarks run with the script's directory as their working directory: a relative
    ``--python envs/tf/bin/python`` must still name the same file there. A bare name is looked up on PATH.
    """
    if not python:
        return sys.executable
    text = str(python)
    if os.sep in text or (os.altsep and os.altsep in text):
        return str(Path(text).absolute())
    import shutil

    return shutil.which(text) or text


def quiet_tf_env(extra=None):
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def parse_answer(stdout_text):
    """The last snapshot the probe printed, or None."""
    for line in reversed(stdout_text.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                continue  # a line cut short by a crash
    return None


def describe_exit(returncode):
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


def crash_hint(returncode):
    """A likely cause for a well-known crash code, or ''."""
    illegal = returncode in (-getattr(signal, "SIGILL", 4), 0xC000001D, 132)
    if illegal:
        return (
            " (an illegal instruction: this TensorFlow build needs CPU instructions, usually AVX, that this CPU "
            "lacks; install a build made for it, e.g. from conda)"
        )
    return ""


def _last_line(data):
    text = (data or b"").decode("utf-8", "replace").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_probe(python=None, full=False, matmul=False, timeout=None, env=None, partial=False):
    """Run the probe and return its answer as a dict (see ``_probe.main`` for the keys).

    Raises SetupError (``InterpreterNotFound``) when the interpreter cannot be started. When the probe
    crashes or times out, raises ``ProbeFailed`` / ``ProbeTimeout`` (both SetupError) -- unless ``partial``
    is true and some stage answered: then that snapshot comes back with ``"complete": false`` and a warning
    saying where and why the probe stopped.
    """
    exe = target_python(python)
    args = [exe, str(PROBE_SCRIPT)]
    if full:
        args.append("--full")
    if matmul:
        args.append("--matmul")
    if timeout is None:
        timeout = MATMUL_TIMEOUT_S if matmul else FULL_TIMEOUT_S if full else VERSION_TIMEOUT_S
    try:
        proc = subprocess.run(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
            env=quiet_tf_env(env),
        )
    except FileNotFoundError:
        raise InterpreterNotFound(
            "cannot start the Python interpreter %r: give the full path of the python that has TensorFlow "
            "with --python (e.g. C:\\Anaconda3\\envs\\tf\\python.exe)" % exe
        ) from None
    except (PermissionError, IsADirectoryError, NotADirectoryError):
        raise InterpreterNotFound("%r is not an executable Python interpreter; check --python" % exe) from None
    except OSError as exc:  # e.g. ENOEXEC: a file that is not a program
        raise InterpreterNotFound("cannot run %r (%s); check --python" % (exe, exc.strerror or exc)) from None
    except subprocess.TimeoutExpired as exc:
        answer = parse_answer((exc.stdout or b"").decode("utf-8", "replace"))
        if partial and answer is not None:
            answer.setdefault("warnings", []).append(
                "the probe gave no answer within %.0f s while %s; what it learned before is shown"
                % (timeout, NEXT_STEP.get(answer.get("stage"), "running"))
            )
            return answer
        raise ProbeTimeout(
            "the TensorFlow probe in %s did not answer within %.0f s; check that `%s -c \"import tensorflow\"` "
            "works, or skip probing with --tf-version" % (exe, timeout, exe)
        ) from None
    answer = parse_answer(proc.stdout.decode("utf-8", "replace"))
    if answer is not None and answer.get("complete", True):
        return answer
    how = describe_exit(proc.returncode)
    err = _last_line(proc.stderr)
    if partial and answer is not None:
        answer.setdefault("warnings", []).append(
            "the probe stopped (%s) while %s%s%s; what it learned before is shown"
            % (how, NEXT_STEP.get(answer.get("stage"), "running"), ": " + err if err else "",
               crash_hint(proc.returncode))
        )
        return answer
    raise ProbeFailed(
        "%s did not run the TensorFlow probe (%s: %s)%s; check --python"
        % (exe, how, err or "no output", crash_hint(proc.returncode))
    )
