"""A scaling sweep (`--num-gpus 1,2`) with real TensorFlow on the CPU and the real tf_cnn_benchmarks (master),
as CI runs it: tf_cnn_benchmarks builds one tower per count on /cpu:0, /cpu:1, and each run's recorded
images/sec must be the `total images/sec` its log shows.

Skipped (saying why) unless TFCNNWRAP_REAL_TF_PYTHON names a python with TensorFlow (CI sets it; .ci/run) and
a local copy of tensorflow/benchmarks is found: TFCNNWRAP_BENCHMARKS_REPO, else the bare mirror at
/work/.mirror/tensorflow+benchmarks/repo. Nothing here needs the network.
"""

import json
import re
import time

import pytest
from realtf import CPU_ENV, MARKS, REAL_TF_PYTHON, REPO, real_setup

pytestmark = [pytest.mark.slow, *MARKS]

TOTAL = re.compile(r"^total images/sec:\s*(\S+)\s*$", re.MULTILINE)
DEVICES = re.compile(r"^Devices:\s*(.*)$", re.MULTILINE)


def test_a_cpu_scaling_sweep_records_each_logs_total(cli, tmp_path):
    if not REPO.exists():
        pytest.fail("TFCNNWRAP_BENCHMARKS_REPO=%s does not exist" % REPO)
    env = CPU_ENV
    started = time.perf_counter()
    vendor = real_setup(cli, tmp_path)
    out = tmp_path / "sweep"
    sweep = cli(
        "sweep",
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        vendor,
        "--out",
        out,
        "--device",
        "cpu",
        "--models",
        "resnet50",
        "--batch-size",
        "resnet50=2",
        "--num-batches",
        "3",
        "--num-warmup-batches",
        "1",
        "--num-gpus",
        "1,2",
        "--runs",
        "1",
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    took = time.perf_counter() - started
    assert sweep.returncode == 0, sweep

    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert [(r["model"], r["batch_size"], r["num_gpus"], r["status"]) for r in runs] == [
        ("resnet50", 2, 1, "ok"),
        ("resnet50", 2, 2, "ok"),
    ]
    for run in runs:
        log = (out / run["log"]).read_text(encoding="utf-8", errors="replace")
        assert run["log"] == "logs/resnet50-bs2-g%d-run1.log" % run["num_gpus"]
        totals = TOTAL.findall(log)
        assert len(totals) == 1, log[-2000:]
        assert run["images_per_sec"] == float(totals[0])
        # one tower per count on the CPU, the batch size per device
        assert DEVICES.search(log).group(1) == str(["/cpu:%d" % i for i in range(run["num_gpus"])])
        assert "Batch size:  %d global" % (2 * run["num_gpus"]) in log

    rows = cli("report", out, "--format", "json", cwd=tmp_path).rows()
    assert [r["num_gpus"] for r in rows] == [1, 2]
    assert rows[0]["speedup"] == 1.0 and rows[1]["speedup"] == pytest.approx(
        runs[1]["images_per_sec"] / runs[0]["images_per_sec"]
    )
    print(
        "setup + scaling sweep (resnet50 bs2, 3 batches, 1 and 2 CPU towers) took %.1f s: %s images/sec"
        % (took, ", ".join("%g" % r["images_per_sec"] for r in runs))
    )
