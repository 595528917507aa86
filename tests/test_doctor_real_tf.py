"""`doctor` against a real TensorFlow (CPU) in another virtual environment, as a user with a conda env runs it.

Skipped unless TFCNNWRAP_REAL_TF_PYTHON names that environment's python (CI sets it; see .ci/run).
"""

import os
import subprocess
import time

import pytest

from tfcnnwrap.run import telemetry

REAL_TF_PYTHON = os.environ.get("TFCNNWRAP_REAL_TF_PYTHON")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REAL_TF_PYTHON, reason="set TFCNNWRAP_REAL_TF_PYTHON to a python with TensorFlow"),
]

INSTALLED_VERSION = """
import importlib.metadata as md
for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly"):
    try:
        print(dist, md.version(dist))
        break
    except md.PackageNotFoundError:
        pass
"""


def installed_tensorflow():
    out = (
        subprocess.run([REAL_TF_PYTHON, "-c", INSTALLED_VERSION], stdout=subprocess.PIPE, check=True, timeout=60)
        .stdout.decode()
        .split()
    )
    return out[0], out[1]


def test_doctor_matmul_against_real_tensorflow(cli, tmp_path):
    dist, version = installed_tensorflow()
    started = time.perf_counter()
    result = cli(
        "doctor",
        "--python",
        REAL_TF_PYTHON,
        "--matmul",
        "--format",
        "json",
        env={telemetry.ENV_NVIDIA_SMI: "none", "CUDA_VISIBLE_DEVICES": ""},
        cwd=tmp_path,
        timeout=600,
    )
    took = time.perf_counter() - started
    assert result.returncode == 0, result
    assert "Traceback" not in result.stdout + result.stderr
    report = result.json()
    assert report["tensorflow_version"] == version
    assert report["tensorflow_distribution"] == dist
    assert report["tensorflow_importable"] is True and report["probe_complete"] is True
    assert report["gpus"] == []
    assert report["recommended_branch"] == "master"
    assert report["matmul"]["cpu_gflops"] > 0
    assert report["matmul"]["gpu_gflops"] is None
    assert "cuda_version" in report and "cudnn_version" in report
    assert report["legacy_keras_needed"] is (tuple(int(p) for p in version.split(".")[:2]) >= (2, 16))
    print(
        "doctor --matmul against TensorFlow %s took %.1f s; CPU %.1f GFLOP/s"
        % (version, took, report["matmul"]["cpu_gflops"])
    )


def test_doctor_table_against_real_tensorflow(cli, tmp_path):
    _, version = installed_tensorflow()
    result = cli("doctor", "--python", REAL_TF_PYTHON, env={"CUDA_VISIBLE_DEVICES": ""}, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result
    assert version in result.stdout and "master" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
