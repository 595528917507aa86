"""The local cluster backend and the task entry point, against the stand-in tf_cnn_benchmarks."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import realtf
from conftest import FAKE_SCRIPT, cli_env, pid_alive

from tfcnnwrap.cluster import localjob
from tfcnnwrap.errors import UsageError
from tfcnnwrap.run.logparse import LogParser

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and named pipes")
BASE = [sys.executable, "-u", str(FAKE_SCRIPT), "--model=trivial", "--batch_size=8", "--num_batches=20"]


def fake_env(tmp_path, **extra):
    env = cli_env()  # this checkout first on PYTHONPATH, for `python -m tfcnnwrap.cli.node task` from any directory
    for key in [k for k in env if k.startswith("FAKE_TFCNN_")]:
        del env[key]
    env["FAKE_TFCNN_IPS"] = "trivial=50.0"
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir(exist_ok=True)
    env["FAKE_TFCNN_PID_DIR"] = str(pid_dir)
    env.update(extra)
    return env


def job(tmp_path, env, **kw):
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    kw.setdefault("timeout_s", 60)
    return localjob.run_job(BASE, tmp_path, env, logs, "trivial.bs8.run1", relative_to=tmp_path, **kw)


def alive(pid):
    return pid_alive(pid, wait_s=10.0)


def every_pid(outcome, tmp_path):
    pids = {t["pid"] for t in outcome.cluster["tasks"]}
    for path in (tmp_path / "pids").glob("*.pid"):
        pids.add(int(path.read_text()))
    return pids


def assert_nothing_left(outcome, tmp_path, extra=()):
    pids = every_pid(outcome, tmp_path) | set(extra)
    assert pids and not [p for p in pids if alive(p)], outcome.cluster


def total_in(log_path):
    parser = LogParser()
    parser.feed_bytes(Path(log_path).read_bytes(), final=True)
    return parser.result().total_images_per_sec


def by_name(outcome):
    return {"%s%d" % (t["role"], t["index"]): t for t in outcome.cluster["tasks"]}


def test_parameter_server_job_reports_worker0s_total_and_stops_the_ps(tmp_path):
    steps = []
    caller = threading.current_thread()
    outcome = job(
        tmp_path,
        fake_env(tmp_path),
        workers=2,
        ps=1,
        on_step=lambda s: steps.append((s.step, threading.current_thread() is caller)),
    )
    assert outcome.status == "ok" and outcome.exit_code == 0, outcome
    tasks = by_name(outcome)
    assert list(tasks) == ["ps0", "worker0", "worker1"]
    worker0_log = tmp_path / tasks["worker0"]["log"]
    assert tasks["worker0"]["log"] == "logs/trivial.bs8.run1.worker0.log"
    # the figure is worker 0's own total (already workers x its rate), not a sum over workers
    assert outcome.images_per_sec == total_in(worker0_log) == 100.0
    assert outcome.log == worker0_log
    assert tasks["ps0"]["stopped"] and tasks["ps0"]["status"] == "stopped"
    assert b"Running parameter server 0" in (tmp_path / tasks["ps0"]["log"]).read_bytes()
    assert tasks["worker1"]["exit_code"] == 0 and not tasks["worker1"]["stopped"]
    # worker 0's steps (the newest of each chunk read, as the runner reports them), on the calling thread
    assert steps and steps[-1] == (20, True) and all(on_caller for _, on_caller in steps)
    assert outcome.cluster["backend"] == "local" and outcome.cluster["mode"] == "parameter_server"
    json.dumps(outcome.cluster, allow_nan=False)
    assert_nothing_left(outcome, tmp_path)


def test_distributed_all_reduce_controller_reports_while_workers_block(tmp_path):
    outcome = job(tmp_path, fake_env(tmp_path), mode="distributed_all_reduce", workers=2)
    assert outcome.status == "ok", outcome
    tasks = by_name(outcome)
    assert list(tasks) == ["worker0", "worker1", "controller0"]
    assert tasks["controller0"]["reports"] and outcome.images_per_sec == 50.0
    assert tasks["worker0"]["stopped"] and tasks["worker1"]["stopped"]
    assert b"Starting worker 1" in (tmp_path / tasks["worker1"]["log"]).read_bytes()
    assert_nothing_left(outcome, tmp_path)


def test_collective_all_reduce_needs_no_ps(tmp_path):
    outcome = job(tmp_path, fake_env(tmp_path), mode="collective_all_reduce", workers=2)
    assert outcome.status == "ok" and outcome.images_per_sec == 100.0
    assert [t["role"] for t in outcome.cluster["tasks"]] == ["worker", "worker"]
    assert outcome.cluster["all_reduce_spec"] == "collective"


def test_refused_modes_start_nothing(tmp_path):
    with pytest.raises(UsageError):
        job(tmp_path, fake_env(tmp_path), mode="replicated", workers=2)
    assert not list((tmp_path / "logs").iterdir())


def test_a_failing_worker_fails_the_run_with_its_reason(tmp_path):
    env = fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker1=crash")
    outcome = job(tmp_path, env, workers=2, ps=1)
    assert outcome.status == "crashed" and outcome.failed_task == "worker1"
    assert "Invalid data_format" in outcome.failure and outcome.failure.startswith("worker1: ")
    assert outcome.exit_code == 1 and outcome.images_per_sec is None
    assert outcome.log.name == "trivial.bs8.run1.worker1.log"
    assert by_name(outcome)["ps0"]["stopped"]
    assert_nothing_left(outcome, tmp_path)


def test_a_ps_that_dies_fails_the_run_instead_of_leaving_workers_hanging(tmp_path):
    outcome = job(tmp_path, fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="ps0=crash,worker0=hang"), workers=2, ps=1)
    assert outcome.status == "crashed" and outcome.failed_task == "ps0"
    assert "Simulated crash in ps0" in outcome.failure
    outcome = job(tmp_path, fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="ps0=exit0,worker0=hang"), workers=1, ps=1)
    assert outcome.status == "crashed" and outcome.failed_task == "ps0" and outcome.exit_code == 0
    assert outcome.failure == "ps0: Running parameter server 0"  # no failure signature: its last line
    assert_nothing_left(outcome, tmp_path)


def test_oom_in_the_reporting_task_is_oom(tmp_path):
    outcome = job(tmp_path, fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=oom"), workers=1, ps=1)
    assert outcome.status == "oom" and outcome.failed_task == "worker0"
    assert "OOM when allocating" in outcome.failure
    assert_nothing_left(outcome, tmp_path)


def test_a_flag_error_is_seen_as_one(tmp_path):
    outcome = job(tmp_path, fake_env(tmp_path, FAKE_TFCNN_REJECT="num_batches"), workers=2, ps=1)
    assert outcome.status == "crashed" and outcome.parsed.failure_kind == "flag_error"


def test_timeout_stops_every_task(tmp_path):
    env = fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang")
    started = time.monotonic()
    outcome = job(tmp_path, env, workers=2, ps=1, timeout_s=1.5)
    assert outcome.status == "timeout" and not outcome.interrupted
    assert 1.5 <= time.monotonic() - started < 30
    assert all(t["stopped"] for t in outcome.cluster["tasks"] if t["role"] == "ps" or t["index"] == 0)
    assert_nothing_left(outcome, tmp_path)


def _hang_then(tmp_path, action):
    """Make worker 0 hang with a child of its own; once it hangs, run ``action``; returns the pids."""
    fifo = tmp_path / "ready"
    os.mkfifo(str(fifo))
    seen = []

    def wait_for_hang():
        with open(str(fifo)) as fh:
            seen.extend(int(p) for p in fh.read().split())
        action()

    waiter = threading.Thread(target=wait_for_hang, daemon=True)
    waiter.start()
    env = fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang_tree", FAKE_TFCNN_READY_FIFO=str(fifo))
    return env, seen, waiter


@POSIX
def test_stop_signal_interrupts_the_job_and_leaves_no_process(tmp_path):
    stop = localjob.StopSignal()
    env, seen, waiter = _hang_then(tmp_path, stop.set)
    outcome = job(tmp_path, env, workers=2, ps=1, stop=stop)
    waiter.join(10)
    assert outcome.status == "interrupted" and outcome.interrupted
    assert len(seen) == 2 and seen[1] > 0  # worker 0 and the child it started
    assert_nothing_left(outcome, tmp_path, extra=seen)


@POSIX
def test_ctrl_c_interrupts_the_job_and_leaves_no_process(tmp_path):
    env, seen, waiter = _hang_then(tmp_path, lambda: os.kill(os.getpid(), signal.SIGINT))
    outcome = job(tmp_path, env, workers=1, ps=1)
    waiter.join(10)
    assert outcome.status == "interrupted"
    assert_nothing_left(outcome, tmp_path, extra=seen)


def test_a_stop_signal_set_before_the_job_stops_it_at_once(tmp_path):
    stop = localjob.StopSignal()
    stop.set()
    outcome = job(tmp_path, fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang"), workers=1, ps=1, stop=stop)
    assert outcome.status == "interrupted"
    assert_nothing_left(outcome, tmp_path)


def test_a_port_taken_before_tensorflow_binds_it_is_retried_once(tmp_path, monkeypatch):
    import socket

    thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    thief.bind(("", 0))  # bound, not listening: the worker cannot mistake it for its ps
    taken = thief.getsockname()[1]
    real = localjob.free_ports
    calls = []

    def racy(count):
        ports = real(count)
        calls.append(ports)
        return [taken] + ports[1:] if len(calls) == 1 else ports  # ps0 loses its port on the first attempt

    monkeypatch.setattr(localjob, "free_ports", racy)
    try:
        outcome = job(tmp_path, fake_env(tmp_path), workers=1, ps=1)
    finally:
        thief.close()
    assert outcome.status == "ok" and outcome.attempts == 2, outcome.failure
    assert by_name(outcome)["ps0"]["port"] != taken


def test_a_port_taken_twice_fails_the_run_with_the_bind_error(tmp_path, monkeypatch):
    import socket

    thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    thief.bind(("", 0))  # bound, not listening: the worker cannot mistake it for its ps
    taken = thief.getsockname()[1]
    real = localjob.free_ports
    monkeypatch.setattr(localjob, "free_ports", lambda count: [taken] + real(count)[1:])
    try:
        outcome = job(tmp_path, fake_env(tmp_path), workers=1, ps=1)
    finally:
        thief.close()
    assert outcome.status == "crashed" and outcome.attempts == 2
    assert "Could not start gRPC server" in outcome.failure


def test_task_entry_point_runs_each_task_of_a_plan_file(tmp_path):
    """What srun does: the same command on every node, told apart by SLURM_PROCID."""
    plan = localjob.local_plan("parameter_server", workers=2, ps=1)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(), encoding="utf-8")
    env = fake_env(tmp_path)
    procs = []
    try:
        for procid in range(len(plan.tasks)):
            task_env = dict(env, SLURM_PROCID=str(procid))
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tfcnnwrap.cli.node",
                        "task",
                        "--plan",
                        str(plan_file),
                        "--script",
                        str(FAKE_SCRIPT),
                        "--",
                        "--model=trivial",
                        "--num_batches=10",
                        "--variable_update=replicated",
                    ],
                    env=task_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
            )
        worker0 = procs[1].communicate(timeout=60)[0].decode()
        assert procs[1].returncode == 0
        assert "total images/sec: 100.00" in worker0 and "Variables:   parameter_server" in worker0
        assert procs[2].wait(timeout=60) == 0
        assert procs[0].poll() is None  # the ps never exits by itself
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    pids = {int(p.read_text()) for p in (tmp_path / "pids").glob("*.pid")}
    assert pids == {p.pid for p in procs}  # execve: the benchmark is the task process itself


def test_task_entry_point_errors_are_one_line(tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(localjob.local_plan("collective_all_reduce", workers=1).to_json(), encoding="utf-8")
    env = {k: v for k, v in cli_env().items() if k != "SLURM_PROCID"}
    cases = [
        (["--plan", str(plan_file), "--script", str(FAKE_SCRIPT)], "SLURM_PROCID"),
        (["--plan", str(plan_file), "--script", str(FAKE_SCRIPT), "--index", "3"], "--ntasks=1"),
        (["--plan", str(tmp_path / "none.json"), "--script", str(FAKE_SCRIPT), "--index", "0"], "--plan"),
        (["--plan", str(plan_file), "--script", str(tmp_path / "no.py"), "--index", "0"], "--script"),
        (
            ["--plan", str(plan_file), "--script", str(FAKE_SCRIPT), "--index", "0", "--python", "no-such-python"],
            "--python",
        ),
    ]
    for args, needle in cases:
        result = subprocess.run(
            [sys.executable, "-m", "tfcnnwrap.cli.node", "task", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, (args, result.stderr)
        assert needle in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_logs_replace_planted_links_and_record_each_tasks_command(tmp_path):
    (tmp_path / "logs").mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me", encoding="utf-8")
    planted = tmp_path / "logs" / "trivial.bs8.run1.worker0.log"
    try:
        planted.symlink_to(target)
    except (OSError, NotImplementedError):
        pytest.skip("no symbolic links here")
    outcome = job(tmp_path, fake_env(tmp_path), workers=1, ps=1)
    assert outcome.status == "ok"
    assert target.read_text(encoding="utf-8") == "keep me"
    assert not planted.is_symlink() and b"total images/sec" in planted.read_bytes()
    tasks = by_name(outcome)
    assert "--job_name=ps" in tasks["ps0"]["command"] and "--task_index=0" in tasks["worker0"]["command"]
    assert tasks["worker0"]["command"][:3] == BASE[:3]


@realtf.MARKS[0]
@realtf.MARKS[1]
def test_real_tensorflow_one_worker_one_ps(tmp_path):
    """About 10 s on 2 CPU cores: a second worker would add TensorFlow's fixed 30 s non-chief wait."""
    REAL_TF_PYTHON = realtf.REAL_TF_PYTHON
    cwd = realtf.master_checkout(tmp_path / "benchmarks") / "scripts" / "tf_cnn_benchmarks"
    argv = [
        REAL_TF_PYTHON,
        "-u",
        "tf_cnn_benchmarks.py",
        "--model=trivial",
        "--batch_size=8",
        "--num_batches=10",
        "--num_warmup_batches=2",
        "--device=cpu",
        "--data_format=NHWC",
    ]
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", CUDA_VISIBLE_DEVICES="")
    (tmp_path / "logs").mkdir()
    outcome = localjob.run_job(argv, cwd, env, tmp_path / "logs", "real", workers=1, ps=1, timeout_s=300)
    assert outcome.status == "ok", outcome.failure
    tasks = by_name(outcome)
    assert outcome.images_per_sec == total_in(tasks["worker0"]["log"]) > 0
    assert tasks["ps0"]["stopped"]
    assert_nothing_left(outcome, tmp_path)


def test_upstreams_own_refusal_fails_the_run_with_its_reason(tmp_path):
    """A plan made by hand (not by build_plan, which refuses it) meets upstream's ValueError."""
    import dataclasses

    plan = dataclasses.replace(localjob.local_plan("parameter_server", workers=1, ps=1), mode="replicated")
    (tmp_path / "logs").mkdir()
    env = fake_env(tmp_path, FAKE_TFCNN_TASK_FAULTS="worker0=hang")
    outcome = localjob.run_plan(plan, BASE, tmp_path, env, tmp_path / "logs", "r", timeout_s=60)
    assert outcome.status == "crashed" and outcome.failed_task in ("ps0", "worker0")
    assert "Invalid variable_update in distributed mode: replicated" in outcome.failure
    assert_nothing_left(outcome, tmp_path)


SRUN_LIKE = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"  # stays the task's parent


def test_a_launcher_runs_tasks_through_another_program_and_stops_them_too(tmp_path):
    """The hook a Slurm backend needs (srun per task): output, figure and stopping work through it."""
    plan = localjob.local_plan("parameter_server", workers=1, ps=1)
    (tmp_path / "logs").mkdir()
    launched = []

    def launcher(task, argv):
        launched.append(task.name)
        return [sys.executable, "-c", SRUN_LIKE, *argv]

    outcome = localjob.run_plan(
        plan,
        BASE,
        tmp_path,
        fake_env(tmp_path),
        tmp_path / "logs",
        "r",
        timeout_s=60,
        launcher=launcher,
        backend="slurm",
    )
    assert outcome.status == "ok" and outcome.images_per_sec == 50.0 and launched == ["ps0", "worker0"]
    assert outcome.cluster["backend"] == "slurm"
    assert by_name(outcome)["ps0"]["stopped"] and by_name(outcome)["ps0"]["command"][1] == "-c"
    assert_nothing_left(outcome, tmp_path)  # the ps behind its launcher too


def test_task_entry_point_as_the_launcher(tmp_path):
    """srun's view: every task runs `python -m tfcnnwrap.cli.node task --plan F --index i -- base flags`."""
    plan = localjob.local_plan("distributed_all_reduce", workers=2)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(), encoding="utf-8")
    (tmp_path / "logs").mkdir()

    def launcher(task, argv):
        return [
            sys.executable,
            "-m",
            "tfcnnwrap.cli.node",
            "task",
            "--plan",
            str(plan_file),
            "--index",
            str(plan.tasks.index(task)),
            "--script",
            str(FAKE_SCRIPT),
            "--python",
            sys.executable,
            "--",
            *BASE[3:],
        ]

    outcome = localjob.run_plan(
        plan, BASE, tmp_path, fake_env(tmp_path), tmp_path / "logs", "r", timeout_s=60, launcher=launcher
    )
    assert outcome.status == "ok" and by_name(outcome)["controller0"]["reports"], outcome.failure
    assert outcome.images_per_sec == 50.0
    assert_nothing_left(outcome, tmp_path)
