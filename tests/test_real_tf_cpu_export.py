"""Issue 38.1 with real TensorFlow on the CPU and the real tf_cnn_benchmarks: a CPU sweep exports, its bundle
names the CPU model (`device: cpu`), and the bundle verifies against its logs.

Skipped (saying why) unless TFCNNWRAP_REAL_TF_PYTHON names a python with TensorFlow and a local copy of
tensorflow/benchmarks is found (tests/realtf.py). Nothing here needs the network.
"""

import gzip
import json

import pytest
from realtf import MARKS, REAL_TF_PYTHON, REPO

from tfcnnwrap.run import telemetry

pytestmark = [pytest.mark.slow, pytest.mark.tf, *MARKS]


def test_a_real_cpu_sweep_exports_and_verifies(cli, tmp_path):
    env = {telemetry.ENV_NVIDIA_SMI: "none", "CUDA_VISIBLE_DEVICES": ""}
    vendor = tmp_path / "vendor"
    setup = cli(
        "setup",
        "--repo-url",
        REPO,
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        vendor,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert setup.returncode == 0, setup
    out = tmp_path / "sweep"
    sweep = cli(
        "sweep",
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        vendor,
        "--out",
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--num-warmup-batches",
        "1",
        "--runs",
        "2",
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert sweep.returncode == 0, sweep
    assert (
        sweep.stdout.strip().splitlines()[-1].startswith("next: python -m tfcnnwrap compare %s --rank --nearest" % out)
    ), sweep
    bundle = tmp_path / "cpu.tfcw.json.gz"
    exported = cli("export", out, "--out", bundle, cwd=tmp_path)
    assert exported.returncode == 0, exported
    conditions = json.loads(gzip.decompress(bundle.read_bytes()))["conditions"]
    assert conditions["device"] == "cpu" and conditions["gpu"] == conditions["cpu_model"], conditions
    verified = cli("verify", bundle, cwd=tmp_path)
    assert verified.returncode == 0 and ": verified (" in verified.stdout, verified
