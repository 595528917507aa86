"""Where the real-TensorFlow tests find what they need: a python with TensorFlow (TFCNNWRAP_REAL_TF_PYTHON, set by
.ci/run) and a local tensorflow/benchmarks (TFCNNWRAP_BENCHMARKS_REPO, else a mirror at the path below when this
machine has one). Without either they skip, saying which is missing."""

import os
import subprocess
from pathlib import Path

import pytest

REAL_TF_PYTHON = os.environ.get("TFCNNWRAP_REAL_TF_PYTHON")
DEFAULT_MIRROR = Path("/work/.mirror/tensorflow+benchmarks/repo")


def benchmarks_repo():
    """The local tensorflow/benchmarks to set up from, or None."""
    given = os.environ.get("TFCNNWRAP_BENCHMARKS_REPO")
    if given:
        return Path(given)
    return DEFAULT_MIRROR if DEFAULT_MIRROR.exists() else None


REPO = benchmarks_repo()
MARKS = [
    pytest.mark.skipif(not REAL_TF_PYTHON, reason="set TFCNNWRAP_REAL_TF_PYTHON to a python with TensorFlow"),
    pytest.mark.skipif(
        REPO is None,
        reason="no local tensorflow/benchmarks: set TFCNNWRAP_BENCHMARKS_REPO to a "
        "clone or mirror of it (%s does not exist)" % DEFAULT_MIRROR,
    ),
]


def master_checkout(where):
    """A depth-1 checkout of master from the local repository, at ``where``."""
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "master", REPO.as_uri(), str(where)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return Path(where)


CPU_ENV = {"TFCNNWRAP_NVIDIA_SMI": "none", "CUDA_VISIBLE_DEVICES": ""}  # telemetry off, no GPU in sight


def real_setup(cli, tmp_path):
    """`setup` of the local tensorflow/benchmarks for the real TensorFlow under ``tmp_path``: its vendor dir."""
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
        env=CPU_ENV,
        timeout=300,
    )
    assert setup.returncode == 0, setup
    return vendor


def real_cpu_sweep(cli, tmp_path, batch_size, batches, *more):
    """Real TensorFlow and tf_cnn_benchmarks (the local repository's branch for it) set up under ``tmp_path``,
    then two short runs of the trivial model on the CPU: (the sweep's result, its directory)."""
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
        "--models",
        "trivial",
        "--batch-size",
        "trivial=%d" % batch_size,
        "--num-batches",
        batches,
        "--num-warmup-batches",
        "1",
        "--runs",
        "2",
        *more,
        cwd=tmp_path,
        env=CPU_ENV,
        timeout=600,
    )
    assert sweep.returncode == 0, sweep
    return sweep, out
