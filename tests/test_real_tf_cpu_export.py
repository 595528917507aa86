"""Issue 38.1 with real TensorFlow on the CPU and the real tf_cnn_benchmarks: a CPU sweep exports, its bundle
names the CPU model (`device: cpu`), and the bundle verifies against its logs.

Skipped (saying why) unless TFCNNWRAP_REAL_TF_PYTHON names a python with TensorFlow and a local copy of
tensorflow/benchmarks is found (tests/realtf.py). Nothing here needs the network.
"""

import gzip
import json

import pytest
from realtf import MARKS, real_cpu_sweep

pytestmark = [pytest.mark.slow, pytest.mark.tf, *MARKS]


def test_a_real_cpu_sweep_exports_and_verifies(cli, tmp_path):
    sweep, out = real_cpu_sweep(cli, tmp_path, 8, "10")
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
