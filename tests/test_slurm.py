"""tfcnnwrap.cluster.slurm against a real Slurm cluster (the one-node cluster `.ci/slurm-up` brings up), plus its pure
parts. Each cluster test runs a small driver program inside an allocation, as a user's batch script would
run tfcnnwrap, and checks what it left behind: task output files, its JSON verdict, Slurm's step list."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import cli_env

from tfcnnwrap.cluster import slurm as slurm_mod
from tfcnnwrap.errors import EXIT_USAGE, SetupError, UsageError

# A stand-in task: says who it is (stdout and stderr), then exits, or reports "<task> <pid>" on a FIFO and
# blocks until a signal ends it.
TASK = textwrap.dedent("""
    import os, signal, sys
    rank = os.environ["SLURM_PROCID"]
    print("task %s of %s on %s" % (rank, os.environ["SLURM_NTASKS"], os.environ["SLURMD_NODENAME"]), flush=True)
    print("stderr of task %s" % rank, file=sys.stderr, flush=True)
    if sys.argv[1] == "block":
        with open(sys.argv[2], "w") as fifo:
            fifo.write("%s %d\\n" % (rank, os.getpid()))
        while True:
            signal.pause()
""")

# Runs inside the allocation: drives tfcnnwrap.cluster.slurm and writes what it saw to OUT/result.json.
DRIVER = textwrap.dedent('''
    import json, os, signal, subprocess, sys
    from pidwait import pid_alive
    from pathlib import Path
    from tfcnnwrap.cluster import slurm

    mode, out, task = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    py = sys.executable
    alloc = slurm.allocation()
    result = {"job_id": alloc.job_id, "nodes": list(alloc.nodes)}

    def alive(pid):
        return pid_alive(pid, wait_s=5)  # tests/pidwait.py, copied beside this script: Slurm has just signalled it

    def blocking_step(ntasks):
        fifo = out / "ready.fifo"
        os.mkfifo(str(fifo))
        # Our own writer end too: no end-of-file between two tasks' reports.
        reports = os.fdopen(os.open(str(fifo), os.O_RDWR), "r")
        step = slurm.launch_step([py, task, "block", str(fifo)], ntasks=ntasks,
                                 output_pattern=str(out / "task-%t.log"), srun_log=out / "srun.log")
        pids = dict(map(int, reports.readline().split()) for _ in range(ntasks))
        return step, pids

    def wait_bounded(step):
        """srun's exit status, or None when it outlived 30 s: only the job's time limit would have ended it."""
        try:
            return step.wait(timeout=30)
        except subprocess.TimeoutExpired:
            step.cancel()
            return None

    if mode == "steps":
        step = slurm.launch_step([py, task, "ok"], ntasks=3, output_pattern=str(out / "task-%t.log"),
                                 srun_log=out / "srun.log")
        result["rc"] = step.wait()
    elif mode == "kill":
        step, pids = blocking_step(3)
        os.kill(pids[1], signal.SIGKILL)
        result["rc"] = wait_bounded(step)
        result["alive"] = [t for t, pid in pids.items() if alive(pid)]
    elif mode == "cancel":
        step, pids = blocking_step(2)
        step_id = step.step_id()
        result["step_id"] = step_id
        result["cancelled"] = slurm.cancel_step(alloc.job_id, step_id)
        result["rc"] = wait_bounded(step)
        result["alive"] = [t for t, pid in pids.items() if alive(pid)]
    elif mode == "stop":
        step, pids = blocking_step(2)
        result["rc"] = step.cancel()
        result["alive"] = [t for t, pid in pids.items() if alive(pid)]
    result["released"] = step.wait_released()
    result["steps_after"] = slurm.running_steps(alloc.job_id)
    (out / "result.json").write_text(json.dumps(result))
''')


@pytest.fixture
def scripts(tmp_path):
    (tmp_path / "task.py").write_text(TASK, encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    shutil.copy(str(Path(__file__).resolve().parent / "pidwait.py"), str(tmp_path / "pidwait.py"))
    out = tmp_path / "out"
    out.mkdir()
    return tmp_path, out


def in_salloc(slurm, tmp_path, out, mode, ntasks):
    """Run the driver as `salloc -n N python driver.py ...` (a user's `salloc` shell); returns its verdict."""
    argv = [
        "salloc",
        "--ntasks=%d" % ntasks,
        "--time=1",
        "--job-name=tfcnnwrap-test",
        sys.executable,
        str(tmp_path / "driver.py"),
        mode,
        str(out),
        str(tmp_path / "task.py"),
    ]
    done = subprocess.run(
        argv,
        cwd=str(tmp_path),
        env=cli_env(slurm.env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    return json.loads((out / "result.json").read_text(encoding="utf-8"))


def read(path):
    return path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_allocation_outside_one_is_a_usage_error_naming_salloc_and_sbatch():
    with pytest.raises(UsageError) as info:
        slurm_mod.allocation({"PATH": os.environ.get("PATH", "")})
    assert info.value.exit_code == EXIT_USAGE
    assert "salloc -N 2" in info.value.message and "sbatch" in info.value.message


@pytest.mark.slow
def test_allocation_without_a_nodelist_or_scontrol_says_what_to_do(monkeypatch, tmp_path):
    with pytest.raises(UsageError) as info:
        slurm_mod.allocation({"SLURM_JOB_ID": "7"})
    assert "SLURM_JOB_NODELIST" in info.value.message
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol there
    with pytest.raises(SetupError) as info:
        slurm_mod.allocation({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-2]"})
    assert info.value.exit_code == EXIT_USAGE and "scontrol not found" in info.value.message


def test_srun_command_kills_the_step_on_a_bad_exit_and_keeps_argv_apart():
    cmd = slurm_mod.srun_command(
        ["python", "-c", "print('a b')"],
        4,
        "tfcnnwrap-1-1",
        job_id="42",
        nodes=2,
        ntasks_per_node=2,
        output_pattern="/shared/sweep/logs/run-%t.log",
    )
    assert cmd[:5] == ["srun", "--kill-on-bad-exit=1", "--job-name=tfcnnwrap-1-1", "--ntasks=4", "--jobid=42"]
    assert "--nodes=2" in cmd and "--ntasks-per-node=2" in cmd
    assert "--output=/shared/sweep/logs/run-%t.log" in cmd
    assert cmd[cmd.index("--") :] == ["--", "python", "-c", "print('a b')"]
    with pytest.raises(UsageError):
        slurm_mod.srun_command(["true"], 0, "x")


@pytest.mark.slow
def test_launch_step_refuses_a_link_planted_where_a_task_writes(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep\n", encoding="utf-8")
    (tmp_path / "task-1.log").symlink_to(target)
    with pytest.raises(UsageError) as info:
        slurm_mod.launch_step(
            ["true"], 2, output_pattern=str(tmp_path / "task-%t.log"), alloc=slurm_mod.Allocation("1", ("n1",))
        )
    assert "task-1.log is a symbolic link" in info.value.message and info.value.exit_code == EXIT_USAGE
    assert read(target) == "keep\n"


@pytest.mark.slow
@pytest.mark.slurm
def test_allocation_expands_the_nodelist_with_scontrol(slurm, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    alloc = slurm_mod.allocation({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "gpu[01-03],big-node"})
    assert alloc == ("7", ("gpu01", "gpu02", "gpu03", "big-node"))


@pytest.mark.slow
@pytest.mark.slurm
def test_three_task_step_in_sbatch_writes_one_output_file_per_task(slurm, scripts):
    tmp_path, out = scripts
    batch = tmp_path / "bench.sbatch"
    batch.write_text(
        "#!/bin/sh\n#SBATCH --ntasks=3\n#SBATCH --time=1\n#SBATCH --job-name=tfcnnwrap-test\n"
        "#SBATCH --output=%s\n"
        % (out / "batch-%j.log")
        + "exec %s\n"
        % shlex.join([sys.executable, str(tmp_path / "driver.py"), "steps", str(out), str(tmp_path / "task.py")]),
        encoding="utf-8",
    )
    done = subprocess.run(
        ["sbatch", "--wait", "--parsable", str(batch)],
        cwd=str(tmp_path),
        env=cli_env(slurm.env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=120,
    )
    job_id = done.stdout.strip().split(";")[0]
    assert done.returncode == 0, (done.stdout, list(out.iterdir()))
    result = json.loads(read(out / "result.json"))
    assert result["rc"] == 0 and result["job_id"] == job_id and result["nodes"] == [slurm.node]
    for t in range(3):
        lines = read(out / ("task-%d.log" % t)).splitlines()
        assert sorted(lines) == sorted(["task %d of 3 on %s" % (t, slurm.node), "stderr of task %d" % t])
    assert not (out / "task-3.log").exists()
    assert result["released"] is True and result["steps_after"] == []


@pytest.mark.slow
@pytest.mark.slurm
def test_a_killed_task_fails_its_step_and_leaves_no_step_running(slurm, scripts):
    tmp_path, out = scripts
    result = in_salloc(slurm, tmp_path, out, "kill", 3)
    assert result["rc"] not in (0, None), read(out / "srun.log")
    assert result["alive"] == []  # --kill-on-bad-exit took tasks 0 and 2 down with task 1
    assert result["released"] is True and result["steps_after"] == []
    assert "task 1" in read(out / "srun.log")


@pytest.mark.slow
@pytest.mark.slurm
def test_cancel_step_ends_a_running_step(slurm, scripts):
    tmp_path, out = scripts
    result = in_salloc(slurm, tmp_path, out, "cancel", 2)
    assert result["step_id"] is not None and result["cancelled"] is True
    assert result["rc"] not in (0, None) and result["alive"] == []
    assert result["released"] is True and result["steps_after"] == []
    assert "CANCELLED" in read(out / "srun.log") or "CANCELLED" in read(out / "task-0.log")


@pytest.mark.slow
@pytest.mark.slurm
def test_step_cancel_stops_a_running_step_through_slurm(slurm, scripts):
    """What a sweep does on Ctrl-C or --timeout: Step.cancel finds the step by name and scancels it."""
    tmp_path, out = scripts
    result = in_salloc(slurm, tmp_path, out, "stop", 2)
    assert result["rc"] not in (0, None) and result["alive"] == []
    assert result["released"] is True and result["steps_after"] == []
    assert "CANCELLED" in read(out / "srun.log") or "CANCELLED" in read(out / "task-0.log")
