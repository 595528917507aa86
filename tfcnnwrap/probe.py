"""Ask the target interpreter about its TensorFlow, in a subprocess with a timeout.

The questions themselves live in ``_probe.py``, which runs inside the target interpreter (possibly
Python 3.5 with TF 1.x) and answers with one JSON line.
"""

import json
import os
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


def target_python(python):
    """The interpreter to question: ``--python`` or the one running tfcnnwrap."""
    return str(python) if python else sys.executable


def quiet_tf_env(extra=None):
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def run_probe(python=None, full=False, matmul=False, timeout=None, env=None):
    """Run the probe and return its answer as a dict (see ``_probe.main`` for the keys).

    Raises SetupError when the interpreter cannot be started or gives no answer.
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
        raise SetupError(
            "cannot start the Python interpreter %r: give the full path of the python that has TensorFlow "
            "with --python (e.g. C:\\Anaconda3\\envs\\tf\\python.exe)" % exe
        ) from None
    except PermissionError:
        raise SetupError("%r is not an executable Python interpreter; check --python" % exe) from None
    except subprocess.TimeoutExpired:
        raise SetupError(
            "the TensorFlow probe in %s did not answer within %.0f s; check that `%s -c \"import tensorflow\"` "
            "works, or skip probing with --tf-version" % (exe, timeout, exe)
        ) from None
    out = proc.stdout.decode("utf-8", "replace")
    for line in reversed(out.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    err_tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    raise SetupError(
        "%s did not run the TensorFlow probe (exit %s: %s); check --python"
        % (exe, proc.returncode, err_tail[0][:200])
    )
