"""Issue 27 (round three), processes, pipes and streams: children that hold a run's output (in the group or in a
session of their own, single runs and cluster tasks alike), runs that hang after their total, stdout that is
closed, full or cut off, COLUMNS nonsense, and an nvidia-smi that fails or hangs under --cool-to."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
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


# -- 1, 2: a child that keeps the output open, in the group or in a session of its own ----------------------


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


# -- 10: a run whose log holds its total and then hangs keeps its figure --------------------------------------


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


# -- 3, 4: stdout cut off, closed or full ------------------------------------------------------------------


def _tfcnnwrap(args, stdout_state):
    """argv that runs tfcnnwrap with its stdout ``closed`` (>&-) or ``full`` (> /dev/full)."""
    argv = [sys.executable, "-m", "tfcnnwrap", *map(str, args)]
    if stdout_state == "full":
        return argv, open(os.devnull if not Path("/dev/full").exists() else "/dev/full", "w")
    prelude = "import os, sys; os.close(1); os.execv(sys.executable, [sys.executable] + sys.argv[1:])"
    return [sys.executable, "-c", prelude] + argv[1:], None


def run_with_stdout(args, stdout_state, cwd, env=None, timeout=120):
    argv, sink = _tfcnnwrap(args, stdout_state)
    try:
        done = subprocess.run(
            argv,
            cwd=str(cwd),
            env=cli_env(env),
            stdout=sink,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    finally:
        if sink is not None:
            sink.close()
    return done.returncode, done.stderr.decode("utf-8", "replace")


def one_stdout_line(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "standard output cannot be written" in lines[0], stderr
    assert "Traceback" not in stderr


@pytest.mark.slow
@POSIX
def test_a_sweep_cut_off_by_head_runs_and_records_every_run_and_keeps_its_status(tmp_path, vendor, tf112):
    """`sweep | head -1`: the reader leaves after one line; the sweep goes on quietly, exits 1 as run 2 crashed."""
    out = tmp_path / "sweep"
    env = cli_env({"FAKE_TFCNN_FAULTS": "#2=crash", "FAKE_TFCNN_STATE": tmp_path / "state"})
    args = sweep_args(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout.readline()  # head -1
    proc.stdout.close()
    try:
        stderr = proc.stderr.read().decode("utf-8", "replace")
        assert proc.wait(timeout=120) == 1, stderr
    finally:
        proc.kill()
    runs = read_runs(out)
    assert len(runs) == 6 and [r["status"] for r in runs].count("crashed") == 1, runs
    # the reader took what it wanted: nothing to report (issue 38.5), the status is the sweep's own
    assert "standard output cannot be written" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("state", ["closed", "full"])
def test_a_sweep_with_stdout_closed_or_full_records_every_run(tmp_path, vendor, tf112, state):
    out = tmp_path / "sweep"
    env = {"FAKE_TFCNN_STATE": tmp_path / "state"}
    code, stderr = run_with_stdout(
        sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "2"), state, tmp_path, env
    )
    assert code == 0, stderr
    one_stdout_line(stderr)
    assert [r["status"] for r in read_runs(out)] == ["ok", "ok"]


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    from sweepdata import seed_runs, write_sweep

    path = tmp_path_factory.mktemp("done") / "sweep"
    write_sweep(path, seed_runs())
    log = path.parent / "one.log"
    log.write_text("Model:       resnet50\ntotal images/sec: 176.93\n")
    return path


def verb_args(verb, sweep):
    return {
        "report": ["report", sweep],
        "compare": ["compare", sweep, "--against", "V100"],
        "references": ["references"],
        "parse": ["parse", sweep.parent / "one.log"],
        "doctor": ["doctor", "--python", sys.executable, "--vendor-dir", sweep.parent / "novendor"],
    }[verb]


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("state", ["closed", "full"])
@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("verb", ["report", "compare", "references", "parse", "doctor"])
def test_every_verb_with_stdout_closed_or_full_says_so_once_and_exits_2(tmp_path, finished_sweep, verb, fmt, state):
    code, stderr = run_with_stdout(verb_args(verb, finished_sweep) + ["--format", fmt], state, tmp_path)
    assert code == 2, stderr
    one_stdout_line(stderr)


# -- 5: a COLUMNS no table fits in ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("columns", ["0", "3", "-1", "x"])
def test_a_nonsense_columns_is_ignored_like_an_unset_one(cli, columns):
    wide = cli("references", env={"COLUMNS": "160"})
    result = cli("references", env={"COLUMNS": columns})
    assert result.returncode == 0 and result.stdout == wide.stdout, result
    assert len(result.stdout.splitlines()) > 8, result  # rows, not an empty table


# -- 8 and the minor items: an nvidia-smi that fails, lies, vanishes or hangs under --cool-to -------------------

FAKE_DIR = Path(FAKE_SCRIPT).parent


def smi_env(tmp_path, temps, smi_dir=FAKE_DIR, **more):
    script = tmp_path / "smi.json"
    script.write_text(json.dumps(dict({"temps": temps}, **more)))
    return {
        "PATH": str(smi_dir) + os.pathsep + os.environ["PATH"],
        "FAKE_NVSMI_SCRIPT": script,
        "TFCNNWRAP_COOL_POLL_S": "0.01",
        "FAKE_NVSMI_SAMPLES": "50,1800",
        "FAKE_TFCNN_STATE": tmp_path / "st",
    }


def cool_sweep(cli, tmp_path, vendor, python, env, runs="2"):
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        python,
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        runs,
        "--cool-to",
        "60",
        "--out",
        out,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    return result, (read_runs(out) if (out / "runs.jsonl").exists() else [])


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize(
    "answer, needle",
    [
        ("garbage out", "nvidia-smi gave no temperature (garbage out)"),
        ("0, nan", "nvidia-smi gave no temperature (0, nan)"),
        ("0, -300", "GPU 0 read -300 °C, not a temperature"),
    ],
)
def test_cool_to_with_no_usable_temperature_says_so_once_and_marks_every_run(
    cli, tmp_path, vendor, tf112, answer, needle
):
    result, runs = cool_sweep(cli, tmp_path, vendor, tf112, smi_env(tmp_path, [answer]))
    assert result.returncode == 0, result
    assert result.stderr.count("--cool-to: ") == 1 and needle in result.stderr, result
    assert "not waiting for the GPUs to cool" in result.stderr
    assert [r["status"] for r in runs] == ["ok", "ok"]
    assert all(r["cool_to_problem"].startswith(needle) and r.get("start_temp_c") is None for r in runs), runs


@pytest.mark.slow
@POSIX
def test_cool_to_ignores_a_gpu_listed_twice_and_says_so(cli, tmp_path, vendor, tf112):
    result, runs = cool_sweep(cli, tmp_path, vendor, tf112, smi_env(tmp_path, ["0, 50\\n0, 95\\n1, 55"]))
    assert result.returncode == 0, result
    assert result.stderr.count("GPU 0 listed twice") == 1 and "those readings are ignored" in result.stderr
    assert [r["start_temp_c"] for r in runs] == [55, 55]  # the 95 of the duplicate never made anyone wait


@pytest.mark.slow
@POSIX
def test_cool_to_with_a_failing_nvidia_smi_says_so_once(cli, tmp_path, vendor, tf112):
    env = smi_env(tmp_path, [[40]])
    env["FAKE_NVSMI_FAIL"] = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    result, runs = cool_sweep(cli, tmp_path, vendor, tf112, env)
    assert result.returncode == 0, result
    assert result.stderr.count("--cool-to: nvidia-smi failed (exit 9: NVIDIA-SMI has failed") == 1, result
    assert all("exit 9" in r["cool_to_problem"] for r in runs)


@pytest.mark.slow
@POSIX
def test_cool_to_when_nvidia_smi_vanishes_mid_sweep(cli, tmp_path, vendor, tf112):
    smi_dir = tmp_path / "bin"
    smi_dir.mkdir()
    copy = smi_dir / "nvidia-smi"
    copy.write_bytes((FAKE_DIR / "nvidia-smi").read_bytes())
    copy.chmod(0o755)
    result, runs = cool_sweep(
        cli, tmp_path, vendor, tf112, smi_env(tmp_path, [[45]], smi_dir, vanish_after=1), runs="3"
    )
    assert [r["status"] for r in runs] == ["ok", "ok", "ok"], result
    assert runs[0]["start_temp_c"] == 45 and "cool_to_problem" not in runs[0]
    assert all("No such file" in r["cool_to_problem"] for r in runs[1:]), runs
    assert result.stderr.count("--cool-to: ") == 1, result


@pytest.mark.slow
def test_a_hanging_nvidia_smi_is_asked_once_and_its_whole_tree_is_killed(tmp_path, monkeypatch):
    from tfcnnwrap.run import telemetry

    pids = tmp_path / "pids"
    monkeypatch.setattr(telemetry, "_HUNG", {})  # this process's memory of a hung nvidia-smi, fresh
    monkeypatch.setenv("FAKE_NVSMI_HANG", "1")
    monkeypatch.setenv("FAKE_NVSMI_HANG_PIDS", str(pids))
    tele = telemetry.Telemetry(str(FAKE_DIR / "nvidia-smi"))
    started = time.monotonic()
    temps, problem = tele.read_temps()
    assert temps == {} and problem == "nvidia-smi did not answer within 20 s"
    assert time.monotonic() - started < 40
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), "the nvidia-smi wrapper's child outlived the timeout"
    again = time.monotonic()
    assert tele.read_temps() == ({}, problem) and time.monotonic() - again < 1  # not another 20 s
    assert telemetry.query_gpus(str(FAKE_DIR / "nvidia-smi"))["error"] == problem  # nor any other query


@pytest.mark.slow
@POSIX
def test_ctrl_c_ends_a_hanging_temperature_query_at_once(tmp_path, monkeypatch):
    from tfcnnwrap.run import telemetry
    from tfcnnwrap.run.stopping import StopRequests

    pids = tmp_path / "pids"
    monkeypatch.setattr(telemetry, "_HUNG", {})  # this process's memory of a hung nvidia-smi, fresh
    monkeypatch.setenv("FAKE_NVSMI_HANG", "1")
    monkeypatch.setenv("FAKE_NVSMI_HANG_PIDS", str(pids))
    tele = telemetry.Telemetry(str(FAKE_DIR / "nvidia-smi"))
    stops = StopRequests().install()
    fifo = tmp_path / "hanging"
    try:

        def interrupt_once_hanging():
            deadline = time.monotonic() + 30
            while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
                threading.Event().wait(0.05)  # the stand-in starts in a moment; bounded
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt_once_hanging, daemon=True).start()
        started = time.monotonic()
        temps, problem = tele.read_temps(stops)
        took = time.monotonic() - started
    finally:
        stops.restore()
    assert not fifo.exists()
    assert temps == {} and problem == "stopped"
    assert took < 10, took  # the 20 s query timeout never ran out
    for pid in map(int, pids.read_text().split()):
        assert gone(pid)


HANGING_TOOL = """#!{python}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open({pids!r}, "w") as fh:
    fh.write("%d %d" % (os.getpid(), child.pid))
time.sleep(3600)
"""


@pytest.mark.slow
@POSIX
def test_a_squeue_that_times_out_takes_its_wrappers_children_along(tmp_path, monkeypatch):
    from tfcnnwrap.cluster import slurm
    from tfcnnwrap.errors import SetupError

    pids = tmp_path / "pids"
    tool = tmp_path / "squeue"
    tool.write_text(HANGING_TOOL.format(python=sys.executable, pids=str(pids)))
    tool.chmod(0o755)
    monkeypatch.setattr(slurm, "QUERY_TIMEOUT_S", 2)
    with pytest.raises(SetupError, match="did not answer within 2 s"):
        slurm.run_slurm([tool, "--noheader"], "squeue")
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), "the wrapper's child outlived the squeue timeout"


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer, temps, problem",
    [
        ("0, 50\\n1, 40\\n0, 90", {0: 50, 1: 40}, "GPU 0 listed twice"),
        ("0, 65535", {}, "GPU 0 read 65535 °C, not a temperature"),
        ("0, 1e308", {}, "GPU 0 read 1e+308 °C, not a temperature"),
        ("0, inf", {}, "nvidia-smi gave no temperature (0, inf)"),
        ("-1, 50", {}, "nvidia-smi gave no temperature (-1, 50)"),
        ("\x1b[31m0, 50", {}, "nvidia-smi gave no temperature (?[31m0, 50)"),  # no escape reaches the terminal
        ("", {}, "nvidia-smi gave no temperature (no output)"),
        ("0, 41", {0: 41}, None),
    ],
)
def test_temperature_answers_are_checked(tmp_path, monkeypatch, answer, temps, problem):
    from tfcnnwrap.run import telemetry

    script = tmp_path / "smi.json"
    script.write_text(json.dumps({"temps": [answer]}))
    monkeypatch.setenv("FAKE_NVSMI_SCRIPT", str(script))
    assert telemetry.read_temps(str(FAKE_DIR / "nvidia-smi")) == (temps, problem)


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


class _Stopped:
    requested = True


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("stopped", [False, True])
def test_a_hung_sampler_is_ended_with_its_children_and_at_once_after_ctrl_c(tmp_path, monkeypatch, stopped):
    from tfcnnwrap.run import telemetry

    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_NVSMI_HANG", "all")
    monkeypatch.setenv("FAKE_NVSMI_HANG_PIDS", str(pids))
    fifo = tmp_path / "started"
    sampler = telemetry.Sampler(FAKE_DIR / "nvidia-smi", tmp_path / "gpu.csv", fields=telemetry.LEGACY_FIELDS)
    sampler.stops = _Stopped() if stopped else None
    deadline = time.monotonic() + 30
    while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < deadline:
        threading.Event().wait(0.05)  # the stand-in writes its pids as it starts; bounded
    started = time.monotonic()
    sampler.stop()
    took = time.monotonic() - started
    assert not fifo.exists()
    assert took < (2 if stopped else 15), took
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), "the hung nvidia-smi's child outlived the sampler"
