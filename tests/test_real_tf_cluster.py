"""`sweep --cluster local|slurm` with real TensorFlow on the CPU and the real tf_cnn_benchmarks (master), as CI
runs it: 1 ps + 2 workers of the trivial model; the recorded value must be worker 0's log total.

Skipped (saying why) unless TFCNNWRAP_REAL_TF_PYTHON names a python with TensorFlow (CI sets it; .ci/run) and a
local copy of tensorflow/benchmarks is found: TFCNNWRAP_BENCHMARKS_REPO, else the bare mirror at
/work/.mirror/tensorflow+benchmarks/repo (the same finder as tests/test_real_tf_scaling.py). The Slurm check also
needs the one-node test cluster (the `slurm` fixture). Nothing here needs the network.

Each job takes about half a minute: with a ps and 2 workers, TensorFlow's Supervisor has the non-chief worker
look every 30 s whether worker 0 has initialised the model (upstream's wait, see docs/usage.md).
"""

import json
import re
import time

import pytest
from realtf import MARKS, REAL_TF_PYTHON, REPO

from tfcnnwrap.run import telemetry

pytestmark = [pytest.mark.slow, *MARKS]
TOTAL = re.compile(r"^total images/sec:\s*(\S+)\s*$", re.MULTILINE)
ENV = {telemetry.ENV_NVIDIA_SMI: "none", "CUDA_VISIBLE_DEVICES": ""}
SWEEP = [
    "--device",
    "cpu",
    "--models",
    "trivial",
    "--batch-size",
    "trivial=8",
    "--num-batches",
    "5",
    "--runs",
    "1",
    "--workers",
    "2",
    "--ps",
    "1",
]


@pytest.fixture(scope="module")
def real_vendor(tmp_path_factory):
    from conftest import run_cli

    if not REPO.exists():
        pytest.fail("TFCNNWRAP_BENCHMARKS_REPO=%s does not exist" % REPO)
    where = tmp_path_factory.mktemp("real-tf-cluster")
    vendor = where / "vendor"
    started = time.perf_counter()
    setup = run_cli(
        "setup", "--repo-url", REPO, "--python", REAL_TF_PYTHON, "--vendor-dir", vendor, cwd=where, env=ENV, timeout=300
    )
    assert setup.returncode == 0, setup
    print("setup took %.1f s" % (time.perf_counter() - started))
    return vendor


def check_run(out, backend):
    [run] = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert run["status"] == "ok", run.get("failure")
    tasks = run["cluster"]["tasks"]
    assert run["cluster"]["backend"] == backend
    assert [(t["role"], t["index"]) for t in tasks] == [("ps", 0), ("worker", 0), ("worker", 1)]
    worker0 = (out / tasks[1]["log"]).read_text(encoding="utf-8")
    assert run["images_per_sec"] == float(TOTAL.search(worker0).group(1)) > 0
    assert run["log"] == tasks[1]["log"]
    return run


def test_real_tf_local_cluster_ps_and_two_workers(cli, tmp_path, real_vendor):
    out = tmp_path / "sweep"
    started = time.perf_counter()
    sweep = cli(
        "sweep",
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        real_vendor,
        "--out",
        out,
        "--cluster",
        "local",
        *SWEEP,
        cwd=tmp_path,
        env=ENV,
        timeout=600,
    )
    took = time.perf_counter() - started
    assert sweep.returncode == 0, sweep
    run = check_run(out, "local")
    print("local 1 ps + 2 workers: sweep %.1f s, job %.1f s" % (took, run["duration_s"]))


@pytest.mark.slurm
def test_real_tf_slurm_cluster_ps_and_two_workers(slurm, tmp_path, real_vendor):
    from test_sweep_cluster import in_sbatch

    out = tmp_path / "sweep"
    argv = [
        "sweep",
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        real_vendor,
        "--out",
        out,
        "--cluster",
        "slurm",
        *SWEEP,
    ]
    started = time.perf_counter()
    done, text = in_sbatch(slurm, tmp_path, 3, argv, ENV)
    took = time.perf_counter() - started
    assert done.returncode == 0 and "sweep-exit=0" in text, (done.stdout, text)
    assert "step-left=" not in text
    run = check_run(out, "slurm")
    print("slurm 1 ps + 2 workers: sbatch %.1f s, job %.1f s" % (took, run["duration_s"]))
