"""`doctor --bandwidth`: host<->/gpu:0 copy bandwidth measured in the target interpreter (issue 22.14).

The stand-in TensorFlow "copies" by copying bytes in host memory, so its figures are real timings of real
work (memory bandwidth, not a link's); the real CPU TensorFlow must say there is no GPU to measure.
"""

import json
import math
import os

import pytest

from tfcnnwrap.environment import _probe, doctor, probe
from tfcnnwrap.run import telemetry

NO_SMI = {telemetry.ENV_NVIDIA_SMI: "none"}
REAL_TF_PYTHON = os.environ.get("TFCNNWRAP_REAL_TF_PYTHON")


def doctor_json(cli, python, *extra, env, cwd):
    result = cli("doctor", "--python", python, "--format", "json", *extra, env=env, cwd=cwd, timeout=300)
    assert result.returncode == 0, result
    assert "Traceback" not in result.stdout + result.stderr, result
    json.loads(result.stdout, parse_constant=lambda name: pytest.fail("non-strict JSON: %s" % name))
    return result.json()


def bandwidth_check(report):
    return next(row for row in report["checks"] if row["check"] == doctor.BANDWIDTH)


@pytest.mark.slow
def test_doctor_bandwidth_measures_both_directions_on_a_gpu(cli, fake_tf, tmp_path):
    report = doctor_json(
        cli, fake_tf("2.4.0"), "--bandwidth", env=dict(NO_SMI, FAKE_TF_GPUS="GeForce RTX 2070"), cwd=tmp_path
    )
    found = report["bandwidth"]
    assert set(found) == {"h2d_gbps", "d2h_gbps", "reason"}
    assert found["reason"] is None
    for key in ("h2d_gbps", "d2h_gbps"):
        assert isinstance(found[key], float) and math.isfinite(found[key]) and found[key] > 0, found
    row = bandwidth_check(report)
    assert row["status"] == "ok"
    assert "host->GPU %.1f GB/s" % found["h2d_gbps"] in row["value"]
    assert "GPU->host %.1f GB/s" % found["d2h_gbps"] in row["value"]
    assert report["matmul"] is None  # not asked


@pytest.mark.slow
def test_doctor_without_bandwidth_has_a_null_key_and_no_check(cli, fake_tf, tmp_path):
    report = doctor_json(cli, fake_tf("2.4.0"), env=dict(NO_SMI, FAKE_TF_GPUS="GeForce RTX 2070"), cwd=tmp_path)
    assert "bandwidth" in report and report["bandwidth"] is None
    assert all(row["check"] != doctor.BANDWIDTH for row in report["checks"])


@pytest.mark.slow
def test_cpu_only_says_there_is_no_gpu_and_gives_no_figure(cli, fake_tf, tmp_path):
    python = fake_tf("2.4.0")
    report = doctor_json(cli, python, "--bandwidth", env=dict(NO_SMI, FAKE_TF_GPUS=""), cwd=tmp_path)
    assert report["bandwidth"]["h2d_gbps"] is None and report["bandwidth"]["d2h_gbps"] is None
    assert "sees no GPU" in report["bandwidth"]["reason"]
    result = cli(
        "doctor",
        "--python",
        python,
        "--bandwidth",
        env=dict(NO_SMI, FAKE_TF_GPUS="", COLUMNS="80"),
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result
    line = next(text for text in result.stdout.splitlines() if doctor.BANDWIDTH in text)
    assert "no figure" in line
    assert "TensorFlow sees no GPU" in result.stdout


@pytest.mark.slow
def test_a_failing_copy_is_a_reason_and_a_warning(cli, fake_tf, tmp_path):
    env = dict(NO_SMI, FAKE_TF_GPUS="GeForce RTX 2070", FAKE_TF_COPY_ERROR="CUDA_ERROR_OUT_OF_MEMORY")
    report = doctor_json(cli, fake_tf("2.4.0"), "--bandwidth", env=env, cwd=tmp_path)
    assert report["bandwidth"]["h2d_gbps"] is None
    assert "copying to /gpu:0 failed: RuntimeError: CUDA_ERROR_OUT_OF_MEMORY" == report["bandwidth"]["reason"]
    assert bandwidth_check(report)["status"] == "warn"
    assert report["bandwidth"]["reason"] in report["warnings"]


@pytest.mark.slow
def test_tensorflow_that_cannot_list_gpus_says_so(fake_tf):
    answer = probe.run_probe(fake_tf("1.12.0", dist="tensorflow-gpu"), bandwidth=True, env=NO_SMI)
    assert answer.gpus is None
    assert answer.bandwidth == probe.Bandwidth(reason="TensorFlow could not list its GPUs")


@pytest.mark.slow
def test_probe_without_tensorflow_gives_a_reason(fake_tf):
    answer = probe.run_probe(fake_tf("2.4.0"), bandwidth=True, env={"FAKE_TF_IMPORT_ERROR": "no module"})
    assert answer.bandwidth.reason == "TensorFlow cannot be imported"


def test_median_of_odd_and_even_counts():
    assert _probe.median([3.0, 1.0, 2.0]) == 2.0
    assert _probe.median([4.0, 1.0, 3.0, 2.0]) == 2.5


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0, True, "12", None])
def test_bandwidth_figures_from_the_probe_are_checked(value):
    found = probe.Bandwidth.from_json({"h2d_gbps": value, "d2h_gbps": 12.5, "reason": None})
    assert found.h2d_gbps is None and found.d2h_gbps == 12.5


def test_bandwidth_row_for_figures_and_reasons():
    row = doctor.bandwidth_row(probe.Bandwidth(2.61, 2.83, None)).to_json()
    assert row["status"] == "ok" and row["value"] == "host->GPU 2.6 GB/s, GPU->host 2.8 GB/s"
    assert (
        doctor.bandwidth_row(
            probe.Bandwidth(None, None, "TensorFlow sees no GPU (CPU only): there is no link to measure")
        ).status
        == "info"
    )


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.skipif(not REAL_TF_PYTHON, reason="set TFCNNWRAP_REAL_TF_PYTHON to a python with TensorFlow")
def test_real_cpu_tensorflow_says_there_is_no_gpu(cli, tmp_path):
    report = doctor_json(cli, REAL_TF_PYTHON, "--bandwidth", env=dict(NO_SMI, CUDA_VISIBLE_DEVICES=""), cwd=tmp_path)
    assert report["gpus"] == []
    assert report["bandwidth"] == {
        "h2d_gbps": None,
        "d2h_gbps": None,
        "reason": "TensorFlow sees no GPU (CPU only): there is no link to measure",
    }
    assert report["probe_complete"] is True
