"""`sweep --cluster local|slurm --workers W --ps P` driven as a user would, against the stand-in, which speaks
the distributed flags (tests/fake/tf_cnn_benchmarks.py)."""

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env, pid_alive

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and named pipes")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def env_for(tmp_path, **extra):
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    env = {"FAKE_TFCNN_IPS": "trivial=50.0", "FAKE_TFCNN_PID_DIR": str(pids)}
    env.update(extra)
    return env


def sweep_args(vendor, tf112, out, *more):
    return [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--out",
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--runs",
        "1",
        *more,
    ]


def read_runs(out):
    return [json.loads(line) for line in (Path(out) / "runs.jsonl").read_text().splitlines() if line.strip()]


def total_in(log):
    for line in Path(log).read_text().splitlines():
        if line.startswith("total images/sec:"):
            return float(line.split(":")[1])
    return None


def task_pids(tmp_path):
    return [int(p.read_text()) for p in (tmp_path / "pids").glob("*.pid")]


def alive(pid):
    return pid_alive(pid, wait_s=10.0)


@pytest.mark.slow
def test_ps_and_two_workers_record_worker0s_total_and_every_tasks_log(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2", "--ps", "1"),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    [run] = read_runs(out)
    assert run["status"] == "ok"
    assert run["log"] == "logs/trivial-bs8-run1.worker0.log" or run["log"].endswith(".worker0.log")
    tasks = run["cluster"]["tasks"]
    assert run["cluster"]["backend"] == "local"
    assert [(t["role"], t["index"]) for t in tasks] == [("ps", 0), ("worker", 0), ("worker", 1)]
    for t in tasks:
        assert set(t) >= {"role", "index", "host", "port", "exit_code", "log", "images_per_sec"}
        assert (out / t["log"]).is_file() and t["log"].startswith("logs/")
    # the value is worker 0's own total (already the cluster's: workers x its rate), never a sum
    assert run["images_per_sec"] == total_in(out / tasks[1]["log"]) == 100.0
    assert tasks[0]["stopped"] is True  # the ps never ends by itself
    plan = json.loads((out / "sweep.json").read_text())["plan"]
    assert (plan["cluster"], plan["workers"], plan["ps"], plan["fleet"]) == ("local", 2, 1, None)
    assert not [p for p in task_pids(tmp_path) if alive(p)]

    report = cli("report", out, "--format", "json")
    assert report.returncode == 0 and report.rows()[0]["mean"] == 100.0
    table = cli("report", out)
    assert "parameter_server" in table.stdout and "1 ps + 2 workers" in table.stdout, table.stdout


@pytest.mark.slow
def test_a_failing_task_fails_the_run_with_that_tasks_reason(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = env_for(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker1=crash")
    result = cli(*sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2"), cwd=tmp_path, env=env)
    assert result.returncode == 1, result
    [run] = read_runs(out)
    assert run["status"] == "crashed" and run["images_per_sec"] is None
    assert run["failure"].startswith("worker1: ")
    assert run["log"].endswith(".worker1.log")
    assert not [p for p in task_pids(tmp_path) if alive(p)]


@pytest.mark.slow
def test_timeout_stops_every_task(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = env_for(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang")
    result = cli(
        *sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2", "--timeout", "2"), cwd=tmp_path, env=env
    )
    assert result.returncode == 1, result
    [run] = read_runs(out)
    assert run["status"] == "timeout" and "--timeout" in run["failure"]
    pids = task_pids(tmp_path)
    assert len(pids) == 3 and not [p for p in pids if alive(p)]


@pytest.mark.slow
@POSIX
def test_ctrl_c_stops_every_task_and_records_interrupted(tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    fifo = tmp_path / "ready"
    os.mkfifo(str(fifo))
    env = env_for(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang_tree", FAKE_TFCNN_READY_FIFO=str(fifo))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfcnnwrap",
            *map(str, sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2")),
        ],
        cwd=str(tmp_path),
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with open(str(fifo)) as fh:  # blocks until worker 0 hangs (no sleeps)
        hung = [int(p) for p in fh.read().split()]
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    [run] = read_runs(out)
    assert run["status"] == "interrupted"
    pids = task_pids(tmp_path) + hung
    assert not [p for p in pids if alive(p)]

    # --resume re-runs it as the same distributed job, from the sweep's own recorded plan
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfcnnwrap",
            "sweep",
            "--vendor-dir",
            str(vendor),
            "--python",
            str(tf112),
            "--resume",
            str(out),
        ],
        cwd=str(tmp_path),
        env=cli_env(env_for(tmp_path)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    runs = read_runs(out)
    assert [r["status"] for r in runs] == ["interrupted", "ok"]
    assert [t["role"] for t in runs[-1]["cluster"]["tasks"]] == ["ps", "worker", "worker"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--cluster", "local", "--workers", "2", "--variable-update", "replicated"], "parameter_server"),
        (
            ["--cluster", "local", "--workers", "2", "--variable-update", "collective_all_reduce", "--ps", "1"],
            "drop --ps",
        ),
        (["--cluster", "local"], "--workers N"),
        (["--workers", "2"], "--cluster"),
        (["--cluster", "local", "--fleet"], "--cluster slurm --fleet"),
        (["--cluster", "local", "--workers", "0"], "--workers"),
    ],
)
def test_invalid_jobs_are_refused_before_anything_runs(cli, tmp_path, vendor, tf112, flags, needle):
    out = tmp_path / "sweep"
    result = cli(*sweep_args(vendor, tf112, out, *flags), cwd=tmp_path, env=env_for(tmp_path))
    assert_clean_error(result, 2, needle)
    assert not out.exists()


@pytest.mark.slow
def test_collective_all_reduce_on_an_old_branch_names_the_fix(cli, tmp_path, fake_tf):
    from conftest import make_vendor

    tf112 = fake_tf("1.5.0")
    vendor = tmp_path / "vendor"
    make_vendor(vendor, branch="cnn_tf_v1.5_compatible", tf_version="1.5.0")
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(
            vendor, tf112, out, "--cluster", "local", "--workers", "2", "--variable-update", "collective_all_reduce"
        ),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert_clean_error(result, 2, "setup --branch master")
    assert not (out / "runs.jsonl").exists()


@pytest.mark.slow
def test_slurm_outside_an_allocation_says_how_to_get_one(cli, tmp_path, vendor, tf112):
    env = env_for(tmp_path)
    env = {k: v for k, v in cli_env(env).items() if not k.startswith("SLURM_JOB")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfcnnwrap",
            *map(str, sweep_args(vendor, tf112, tmp_path / "sweep", "--cluster", "slurm", "--workers", "2")),
        ],
        cwd=str(tmp_path),
        env={k: v for k, v in env.items() if k not in ("SLURM_JOB_ID", "SLURM_JOBID")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "salloc -N 2" in proc.stderr and "sbatch" in proc.stderr and "Traceback" not in proc.stderr


def test_resume_refuses_cluster_flags_and_old_plans_read_as_none():
    from tfcnnwrap.results.plan import Plan

    plan = Plan.from_dict({"models": [{"model": "trivial", "batch_size": 8}], "runs": 1})
    assert (plan.cluster, plan.workers, plan.ps, plan.fleet) == (None, None, None, None)
    again = Plan.from_dict(Plan(cluster="slurm", workers=2, ps=1).to_dict())
    assert (again.cluster, again.workers, again.ps, again.fleet) == ("slurm", 2, 1, None)


# -- Slurm: the real one-node cluster (tests/conftest.py `slurm` fixture) ---------------------------------


def in_sbatch(slurm, tmp_path, ntasks, argv, env):
    """``sbatch --wait`` a script running ``python -m tfcnnwrap ARGV``; returns (sbatch result, its output)."""
    batch = tmp_path / "sweep.sbatch"
    output = tmp_path / "batch.out"
    lines = [
        "#!/bin/sh",
        "#SBATCH --ntasks=%d" % ntasks,
        "#SBATCH --time=2",
        "#SBATCH --job-name=tfcnnwrap-test",
        "#SBATCH --output=%s" % output,
        "cd %s" % shlex.quote(str(tmp_path)),
        "%s -m tfcnnwrap %s" % (shlex.quote(sys.executable), " ".join(shlex.quote(str(a)) for a in argv)),
        "echo sweep-exit=$?",
        "squeue --noheader --steps --jobs=$SLURM_JOB_ID --format=%i:%j | "
        "grep -v -e batch -e extern | sed 's/^/step-left=/'",
    ]
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        ["sbatch", "--wait", "--parsable", str(batch)],
        cwd=str(tmp_path),
        env=cli_env(dict(env, **slurm.env)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=300,
    )
    text = output.read_text(encoding="utf-8") if output.exists() else ""
    return done, text


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_ps_and_two_workers_are_srun_steps_recorded_as_local_records(slurm, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    done, text = in_sbatch(
        slurm,
        tmp_path,
        3,
        sweep_args(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1"),
        env_for(tmp_path),
    )
    assert done.returncode == 0 and "sweep-exit=0" in text, (done.stdout, text)
    assert "step-left=" not in text
    [run] = read_runs(out)
    assert run["status"] == "ok" and run["cluster"]["backend"] == "slurm"
    tasks = run["cluster"]["tasks"]
    assert [(t["role"], t["index"], t["host"]) for t in tasks] == [
        ("ps", 0, slurm.node),
        ("worker", 0, slurm.node),
        ("worker", 1, slurm.node),
    ]
    assert run["images_per_sec"] == total_in(out / tasks[1]["log"]) == 100.0
    assert run["log"] == tasks[1]["log"]
    assert all((out / t["log"]).is_file() for t in tasks)
    assert all(t["command"][0] == "srun" and "tfcnnwrap.cli.node" in t["command"] for t in tasks)
    assert (out / "cluster").is_dir() and list((out / "cluster").glob("*.plan.json"))


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_task_killed_mid_run_fails_the_run_and_leaves_no_step(slurm, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = env_for(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker1=segv")
    done, text = in_sbatch(
        slurm, tmp_path, 3, sweep_args(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1"), env
    )
    assert done.returncode == 0 and "sweep-exit=1" in text, (done.stdout, text)
    assert "step-left=" not in text
    [run] = read_runs(out)
    assert run["status"] == "crashed" and run["failure"].startswith("worker1: "), run
    assert not [p for p in task_pids(tmp_path) if alive(p)]


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_timeout_cancels_every_step(slurm, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    env = env_for(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang")
    done, text = in_sbatch(
        slurm,
        tmp_path,
        3,
        sweep_args(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1", "--timeout", "3"),
        env,
    )
    assert done.returncode == 0 and "sweep-exit=1" in text, (done.stdout, text)
    assert "step-left=" not in text
    [run] = read_runs(out)
    assert run["status"] == "timeout"
    pids = task_pids(tmp_path)
    assert len(pids) == 3 and not [p for p in pids if alive(p)]


@pytest.mark.slow
def test_dry_run_prints_every_tasks_command(cli, tmp_path, vendor, tf112):
    result = cli(
        *sweep_args(vendor, tf112, tmp_path / "sweep", "--cluster", "local", "--workers", "2", "--dry-run"),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    lines = [line for line in result.stdout.splitlines() if line.startswith("cd ")]
    assert len(lines) == 3
    assert ["--job_name=ps" in lines[0], "--job_name=worker" in lines[1], "--task_index=1" in lines[2]] == [True] * 3
    assert all(line.count("--variable_update=") == 1 for line in lines)


@pytest.mark.slow
def test_parse_of_a_good_cluster_sweep_counts_its_serving_tasks_as_no_failure(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2", "--ps", "1"),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    parsed = cli("parse", out / "logs", "--format", "json")
    assert parsed.returncode == 0, parsed  # the ps has no total by design: no failure
    roles = {Path(r["path"]).name.split(".")[-2]: (r["status"], r["task_role"]) for r in parsed.rows()}
    assert roles["ps0"] == ("no_result", "ps")
    assert roles["worker0"] == ("ok", None) and roles["worker1"] == ("ok", None)
    table = cli("parse", out / "logs")
    assert table.returncode == 0 and "1 serving task(s)" in table.stdout, table
