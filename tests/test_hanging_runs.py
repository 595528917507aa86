"""Runs that do not end as they should: a child that holds the run's output (in the process group or in a
session of its own, single runs and cluster tasks alike), and a run that hangs after printing its total
(the figure is kept, the run marked)."""

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from conftest import FAKE_SCRIPT, cli_env, pid_alive

from tfcnnwrap.cluster import localjob

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX pipes, sessions and signals")


LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper and /proc are Linux's")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep_args(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "cpu", "--out", out, *more]


def cluster_args(vendor, python, out, *more):
    return sweep_args(
        vendor,
        python,
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--runs",
        "1",
        "--cluster",
        "local",
        *more,
    )


def read_runs(out):
    return [json.loads(line) for line in (Path(out) / "runs.jsonl").read_text().splitlines() if line.strip()]


def child_of(log_path):
    text = Path(log_path).read_text()
    return int(text.split("child pid: ")[1].split()[0])


def gone(pid):
    return not pid_alive(pid, wait_s=10.0)


def pids_in(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    return pids


@pytest.mark.slow
@LINUX
def test_a_setsid_child_holding_stdout_does_not_hang_a_single_run_and_is_ended(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = {"FAKE_TFCNN_FAULTS": "alexnet#1=leave_child_setsid", "FAKE_TFCNN_STATE": tmp_path / "state"}
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "2"), cwd=tmp_path, env=env, timeout=60
    )
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [r["status"] for r in runs] == ["ok", "ok"]
    assert gone(child_of(out / runs[0]["log"])), "the setsid child outlived its run"


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("fault", ["leave_child", "leave_child_setsid"])
def test_a_cluster_task_whose_child_holds_stdout_ends_with_its_figure(cli, tmp_path, vendor, tf112, fault):
    out = tmp_path / "sweep"
    env = {
        "FAKE_TFCNN_IPS": "trivial=50.0",
        "FAKE_TFCNN_PID_DIR": pids_in(tmp_path),
        "FAKE_TFCNN_TASK_FAULTS": "worker0=" + fault,
    }
    result = cli(
        *cluster_args(vendor, tf112, out, "--workers", "1", "--ps", "1", "--timeout", "60"),
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result
    [run] = read_runs(out)
    assert run["status"] == "ok" and run["images_per_sec"] == 50.0, run
    if sys.platform.startswith("linux") or fault == "leave_child":
        assert gone(child_of(out / run["log"])), "the task's child outlived the job"


@pytest.mark.slow
@LINUX
def test_a_cluster_timeout_with_a_setsid_child_holding_stdout_ends_the_job(tmp_path):
    """`--timeout` reaches a job whose ps never ends and whose hanging worker started a child in a session of
    its own that holds the pipe: nothing is left running, and the job ends."""
    base = [sys.executable, "-u", str(FAKE_SCRIPT), "--model=trivial", "--batch_size=8", "--num_batches=20"]
    env = cli_env(
        {
            "FAKE_TFCNN_IPS": "trivial=50.0",
            "FAKE_TFCNN_PID_DIR": pids_in(tmp_path),
            "FAKE_TFCNN_TASK_FAULTS": "worker0=hang_tree_setsid",
        }
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    found = {}
    worker = threading.Thread(
        target=lambda: found.setdefault(
            "outcome",
            localjob.run_job(
                base, tmp_path, env, logs, "trivial.bs8.run1", workers=1, ps=1, timeout_s=3, relative_to=tmp_path
            ),
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the job outlived its --timeout by a minute"
    outcome = found["outcome"]
    assert outcome.status == "timeout", outcome
    tasks = {"%s%d" % (t["role"], t["index"]): t for t in outcome.cluster["tasks"]}
    assert gone(child_of(tmp_path / tasks["worker0"]["log"]))
    assert all(gone(t["pid"]) for t in tasks.values())


@pytest.mark.slow
@POSIX
def test_a_single_run_that_hangs_after_its_total_keeps_the_figure(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = {"FAKE_TFCNN_FAULTS": "#1=hang_after_total", "FAKE_TFCNN_STATE": tmp_path / "state"}
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "2", "--timeout", "3"),
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result
    first, second = read_runs(out)
    assert first["status"] == "ok" and first["images_per_sec"] == 2258.94 and first["hung_after_total"] is True
    assert second["status"] == "ok" and "hung_after_total" not in second
    assert "1 run printed its total and then hung until --timeout" in result.stdout


@pytest.mark.slow
@POSIX
def test_a_cluster_timeout_in_the_finish_grace_keeps_worker0s_result(cli, tmp_path, vendor, tf112):
    """Worker 0 printed its total and exited 0; worker 1 hangs in the finish grace when --timeout fires."""
    out = tmp_path / "sweep"
    env = {
        "FAKE_TFCNN_IPS": "trivial=50.0",
        "FAKE_TFCNN_PID_DIR": pids_in(tmp_path),
        "FAKE_TFCNN_TASK_FAULTS": "worker1=hang_after_total",
    }
    result = cli(
        *cluster_args(vendor, tf112, out, "--workers", "2", "--ps", "1", "--timeout", "8"),
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result
    [run] = read_runs(out)
    assert run["status"] == "ok" and run["images_per_sec"] == 100.0, run
    assert "hung_after_total" not in run  # worker 0 itself finished


@pytest.mark.slow
@POSIX
def test_a_cluster_reporter_that_hangs_after_its_total_keeps_the_figure(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = {
        "FAKE_TFCNN_IPS": "trivial=50.0",
        "FAKE_TFCNN_PID_DIR": pids_in(tmp_path),
        "FAKE_TFCNN_TASK_FAULTS": "worker0=hang_after_total",
    }
    result = cli(
        *cluster_args(vendor, tf112, out, "--workers", "1", "--ps", "1", "--timeout", "3"),
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result
    [run] = read_runs(out)
    assert run["status"] == "ok" and run["images_per_sec"] == 50.0 and run["hung_after_total"] is True, run
    assert "hung until --timeout" in result.stdout


def test_the_verdict_of_a_run_stopped_at_its_timeout():
    """runner.verdict, shared by single runs, cluster jobs' reporting tasks and fleet hosts."""
    from tfcnnwrap.run.logparse import ParsedLog
    from tfcnnwrap.run.runner import verdict

    with_total, without = ParsedLog(total_images_per_sec=200.0), ParsedLog()
    assert verdict(with_total, -15, timed_out=True) == ("ok", True)
    assert verdict(without, -15, timed_out=True) == ("timeout", False)
    assert verdict(ParsedLog(total_images_per_sec=float("nan")), -15, timed_out=True) == ("timeout", False)
    assert verdict(with_total, -15, timed_out=True, interrupted=True) == ("interrupted", False)
    assert verdict(with_total, 0, timed_out=False) == ("ok", False)
