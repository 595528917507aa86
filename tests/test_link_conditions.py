"""The link in every result (issue 36): a GPU sweep times host->GPU and GPU->host copies with the target's
TensorFlow before its first run (sweep.json's environment.link_bandwidth), its runs' telemetry records the PCIe
link under load, and a bundle's conditions.link carries both: {pcie_gen, pcie_width, pcie_max_gen,
pcie_max_width, h2d_gbps, d2h_gbps}, null where unknown (a CPU sweep)."""

import gzip
import json
import os
from pathlib import Path

import pytest

from tfcnnwrap.results.linkinfo import LINK_KEYS, link_text, sweep_link
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.run import telemetry

FAKE_DIR = Path(__file__).resolve().parent / "fake"
POSIX = pytest.mark.skipif(os.name == "nt", reason="the stand-in nvidia-smi is a shebang script; FIFOs")


def gpu_env(tmp_path, pcie):
    """The stand-in nvidia-smi on PATH sampling a busy GPU at ``pcie`` (gen, gen max, width, width max)."""
    fifo = tmp_path / "nvsmi-ready"
    os.mkfifo(str(fifo))
    script = tmp_path / "script.json"
    idle = [{"temp": 40, "clock": 300, "util": 0, "pcie": [1, pcie[1], pcie[2], pcie[3]]}] * 2
    script.write_text(json.dumps({"samples": idle + [{"temp": 70, "clock": 1800, "util": 98, "pcie": pcie}] * 6}))
    return {
        "PATH": str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        "FAKE_NVSMI_READY": str(fifo),
        "FAKE_TFCNN_WAIT_FIFO": str(fifo),
        "FAKE_NVSMI_SCRIPT": str(script),
        "FAKE_TF_GPUS": "GeForce RTX 2070",
    }


def exported(cli, tmp_path, out, env):
    bundle = tmp_path / "b.tfcw.json.gz"
    result = cli("export", out, "--out", bundle, cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    verified = cli("verify", bundle, cwd=tmp_path, env=env)
    assert verified.returncode == 0, verified  # the new conditions are part of what the id covers
    return json.loads(gzip.decompress(bundle.read_bytes()))


@pytest.mark.slow
@POSIX
def test_a_gpu_sweep_at_gen3_x4_of_x16_exports_that_link_and_the_timed_copies(cli, tmp_path, vendor, fake_tf):
    env = gpu_env(tmp_path, [3, 3, 4, 16])
    out = tmp_path / "s"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("2.4.0"),
        "--device",
        "gpu",
        "--models",
        "resnet50",
        "--runs",
        "1",
        "--out",
        out,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result
    timed = json.loads((out / "sweep.json").read_text())["environment"]["link_bandwidth"]
    assert timed["reason"] is None and timed["h2d_gbps"] > 0 and timed["d2h_gbps"] > 0, timed
    assert "link: host->GPU %.1f GB/s, GPU->host %.1f GB/s" % (timed["h2d_gbps"], timed["d2h_gbps"]) in result.stdout
    link = exported(cli, tmp_path, out, env)["conditions"]["link"]
    assert tuple(link) == LINK_KEYS
    assert (link["pcie_gen"], link["pcie_width"], link["pcie_max_gen"], link["pcie_max_width"]) == (3, 4, 3, 16)
    assert (link["h2d_gbps"], link["d2h_gbps"]) == (timed["h2d_gbps"], timed["d2h_gbps"])
    assert link_text(link) == "gen3 x4 of x16"


@pytest.mark.slow
def test_a_cpu_sweep_times_no_copies_and_exports_a_link_of_nulls(cli, tmp_path, vendor, fake_tf):
    out = tmp_path / "s"
    env = {telemetry.ENV_NVIDIA_SMI: "none", "FAKE_TF_GPUS": "GeForce RTX 2070"}
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("2.4.0"),
        "--device",
        "cpu",
        "--models",
        "resnet50",
        "--runs",
        "1",
        "--out",
        out,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result
    timed = json.loads((out / "sweep.json").read_text())["environment"]["link_bandwidth"]
    assert timed == {"h2d_gbps": None, "d2h_gbps": None, "reason": "a CPU sweep: no link to measure"}
    assert "link:" not in result.stdout
    bundle = exported(cli, tmp_path, out, dict(env, **{}))  # the CPU's model names the bundle's device
    assert bundle["conditions"]["link"] == dict.fromkeys(LINK_KEYS)
    assert bundle["conditions"]["data"] == "synthetic" and bundle["conditions"]["data_source"] == "synthetic"


def record(link, status="ok"):
    return RunRecord.from_dict(
        {
            "model": "resnet50",
            "batch_size": 64,
            "run": 1,
            "status": status,
            "images_per_sec": 100.0 if status == "ok" else None,
            "telemetry": {"pcie_link": link},
        }
    )


def test_the_link_is_the_widest_any_ok_run_trained_to_and_junk_is_unknown():
    runs = [
        record({"gen": 3, "gen_max": 3, "width": 4, "width_max": 16}),
        record({"gen": 1, "gen_max": 3, "width": 4, "width_max": 16}),
        record({"gen": 4, "gen_max": 4, "width": 16, "width_max": 16}, status="crashed"),
    ]
    link = sweep_link({"link_bandwidth": {"h2d_gbps": 2.71, "d2h_gbps": 3.1}}, runs)
    assert link == {
        "pcie_gen": 3,
        "pcie_width": 4,
        "pcie_max_gen": 3,
        "pcie_max_width": 16,
        "h2d_gbps": 2.71,
        "d2h_gbps": 3.1,
    }
    junk = [record({"gen": "3", "gen_max": 99, "width": 4.5, "width_max": True}), record("x4")]
    assert sweep_link({"link_bandwidth": {"h2d_gbps": float("inf"), "d2h_gbps": -1}}, junk) == dict.fromkeys(LINK_KEYS)
    assert sweep_link({"link_bandwidth": "fast"}, []) == dict.fromkeys(LINK_KEYS)
    assert link_text(dict.fromkeys(LINK_KEYS)) is None
    assert link_text(dict(link, pcie_max_width=4)) == "gen3 x4"
