"""What a sweep costs between runs (issue 39): no aggregation (pandas) while benchmarks are still to run, one
supervisor process per sweep whose forks supervise the runs (no interpreter start per run), and a supervisor
that starts on the bare interpreter where a command has one of its own. The figures are in docs/performance.md
("Sweep overhead, round two" and "round three"); these tests keep the causes from coming back."""

import ast
import csv
import io
import json
import os
import signal
import sys

import pytest
from conftest import wait_gone
from test_sweep import _start_sweep, _wait_hanging, ips_env, read_runs, sweep_args

from tfcnnwrap.run import procs

pytestmark = pytest.mark.slow

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the harness's /proc/PID/maps")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


@LINUX
def test_pandas_is_not_loaded_while_any_run_runs_and_the_summary_is_whole_at_the_end(cli, tmp_path, vendor, tf112):
    out, seen = tmp_path / "sweep", tmp_path / "harness.txt"
    env = ips_env(tmp_path / "state", FAKE_TFCNN_HARNESS_OUT=seen)
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "2"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    assert seen.read_text().splitlines() == ["no pandas"] * 4  # each run saw a harness without pandas
    assert len(read_runs(out)) == 4
    rows = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text(encoding="utf-8"))))
    assert [(r["model"], r["runs_ok"]) for r in rows] == [("alexnet", "2"), ("vgg16", "2")]


@LINUX
def test_a_sweep_that_ends_with_a_failed_run_writes_the_summary_on_its_way_out(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="vgg16=crash")
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "1"), cwd=tmp_path, env=env)
    assert result.returncode == 1, result
    rows = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text(encoding="utf-8"))))
    assert [(r["model"], r["runs_ok"], r["runs_failed"]) for r in rows] == [("alexnet", "1", "0"), ("vgg16", "0", "1")]


@LINUX
def test_a_sweep_killed_outright_has_its_runs_on_disk_and_report_aggregates_them(cli, tmp_path, vendor, tf112):
    """SIGKILL during the third run: no summary.csv yet (it is written when a sweep ends), but every finished run
    is in runs.jsonl and report reads them from there; --resume writes the summary."""
    out, fifo = tmp_path / "sweep", tmp_path / "ready"
    os.mkfifo(fifo)
    env = ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="#3=hang", FAKE_TFCNN_READY_FIFO=fifo)
    proc = _start_sweep(sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "3"), tmp_path, env)
    bench_pid, _ = _wait_hanging(fifo)
    proc.kill()
    proc.communicate()
    assert wait_gone(bench_pid)
    assert [r["status"] for r in read_runs(out)] == ["ok", "ok"]
    rows = cli("report", out, "--format", "json").rows()
    assert [(r["model"], r["runs_ok"]) for r in rows] == [("alexnet", 2)]
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=ips_env(tmp_path / "state"))
    assert result.returncode == 0, result
    rows = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text(encoding="utf-8"))))
    assert [(r["model"], r["runs_ok"]) for r in rows] == [("alexnet", "3")]


def _imported_modules(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_supervisor_imports_only_the_interpreters_built_in_halves():
    """Each run starts one supervisor: `signal` (which imports enum) and `ctypes` were most of its start-up."""
    imported = _imported_modules(procs._SUPERVISOR)
    assert imported <= {"os", "sys", "_thread", "_signal", "_ctypes"}, imported


@LINUX
def test_report_after_a_resume_killed_outright_counts_the_runs_the_stale_summary_does_not(cli, tmp_path, vendor, tf112):
    """A finished sweep's summary.csv says run 2 crashed; its retry succeeds and is fsynced, then the sweep is
    killed while retrying run 4: summary.csv is now older than runs.jsonl, and report must go by runs.jsonl."""
    out, fifo, state = tmp_path / "sweep", tmp_path / "ready", tmp_path / "state"
    os.mkfifo(fifo)
    first = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "4"),
        cwd=tmp_path,
        env=ips_env(state, FAKE_TFCNN_FAULTS="#2=crash,#4=crash"),
    )
    assert first.returncode == 1, first
    stale = (out / "summary.csv").read_text(encoding="utf-8")
    # invocations 1-4 were the first sweep; 5 retries run 2 (ok), 6 retries run 4 and hangs
    env = ips_env(state, FAKE_TFCNN_FAULTS="#6=hang", FAKE_TFCNN_READY_FIFO=fifo)
    proc = _start_sweep(
        ["sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, "--retry-failed"], tmp_path, env
    )
    bench_pid, _ = _wait_hanging(fifo)
    proc.kill()
    proc.communicate()
    assert wait_gone(bench_pid)
    assert (out / "summary.csv").read_text(encoding="utf-8") == stale
    rows = cli("report", out, "--format", "json").rows()
    assert [(r["model"], r["runs_ok"], r["runs_failed"]) for r in rows] == [("alexnet", 3, 1)]


def _parent(pid):
    with open("/proc/%d/stat" % pid, "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


@LINUX
def test_a_three_run_sweep_starts_one_supervisor_whose_forks_supervise_the_runs(cli, tmp_path, vendor, tf112):
    out, chains = tmp_path / "sweep", tmp_path / "chains.jsonl"
    env = ips_env(tmp_path / "state", FAKE_TFCNN_ANCESTRY_OUT=chains)
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "3"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    found = [json.loads(line) for line in chains.read_text().splitlines()]
    # each benchmark's ancestors: its run's supervisor, the sweep's one supervisor, tfcnnwrap
    assert len(found) == 3 and all(len(chain) == 3 for chain in found), found
    assert len({chain[0] for chain in found}) == 3  # a supervisor for each run (its own session and group) ...
    assert len({chain[1] for chain in found}) == 1  # ... each a fork of the one process the sweep started
    assert len({chain[2] for chain in found}) == 1
    assert wait_gone(found[0][1]), "the sweep's supervisor outlived the sweep"


@LINUX
def test_sigkill_of_the_sweep_ends_its_shared_supervisor_the_runs_supervisor_and_the_benchmark(tmp_path, vendor, tf112):
    out, fifo = tmp_path / "sweep", tmp_path / "ready"
    os.mkfifo(fifo)
    env = ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="#2=hang_tree", FAKE_TFCNN_READY_FIFO=fifo)
    proc = _start_sweep(sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "3"), tmp_path, env)
    bench, child = _wait_hanging(fifo)
    run_supervisor = _parent(bench)
    shared = _parent(run_supervisor)
    assert _parent(shared) == proc.pid
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    for pid in (bench, child, run_supervisor, shared):
        assert wait_gone(pid), "%d outlived the killed sweep" % pid
    assert [r["status"] for r in read_runs(out)] == ["ok"]
