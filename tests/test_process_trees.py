"""Issue 11: process trees that outlive their leader, signals that must stop a sweep, orphans after SIGKILL,
and probes that misbehave (children holding stdout, answers that are not JSON objects)."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env, make_fake_tf_env, pid_alive, site_packages, wait_gone

from tfcnnwrap.environment import probe

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and named pipes")
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and pidfd are Linux's")


_alive = pid_alive


_wait_gone = wait_gone


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep_args(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "gpu", "--out", out, *more]


def read_runs(sweep_dir):
    lines = (Path(sweep_dir) / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _start_sweep(args, cwd, env):
    return subprocess.Popen(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
        cwd=str(cwd),
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_fifo(fifo):
    with open(fifo) as fh:  # blocks until the stand-in writes (no sleeps)
        return [int(x) for x in fh.read().split()]


# -- 1. a child that keeps the benchmark's stdout open ---------------------------------------------------


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("timeout", [None, "600"])
def test_a_child_holding_stdout_does_not_hang_the_sweep(cli, tmp_path, vendor, tf112, timeout):
    out = tmp_path / "sweep"
    more = ["--models", "alexnet", "--runs", "2"] + (["--timeout", timeout] if timeout else [])
    result = cli(
        *sweep_args(vendor, tf112, out, *more),
        cwd=tmp_path,
        env={"FAKE_TFCNN_FAULTS": "alexnet#1=leave_child", "FAKE_TFCNN_STATE": tmp_path / "state"},
        timeout=40,
    )
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [r["status"] for r in runs] == ["ok", "ok"]
    log = (out / runs[0]["log"]).read_text()
    child = int(log.split("child pid: ")[1].split()[0])
    assert _wait_gone(child), "the benchmark's child outlived its run"


@pytest.mark.slow
@POSIX
def test_ctrl_c_after_the_benchmark_finished_keeps_its_run_ok(tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    env = {"FAKE_TFCNN_FAULTS": "#1=leave_child", "FAKE_TFCNN_READY_FIFO": fifo, "FAKE_TFCNN_STATE": tmp_path / "state"}
    proc = _start_sweep(sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "3"), tmp_path, env)
    bench, child = _read_fifo(fifo)  # written by the child once the benchmark has exited
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=40)
    assert proc.returncode == 130, (stdout, stderr)
    assert b"--resume" in stdout
    assert [r["status"] for r in read_runs(out)] == ["ok"]
    assert _wait_gone(child)


# -- 8. no orphans when tfcnnwrap itself is killed -------------------------------------------------------


@pytest.mark.slow
@LINUX
def test_sigkill_of_the_sweep_takes_the_benchmarks_children_too(tmp_path, vendor, tf112):
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    env = {"FAKE_TFCNN_FAULTS": "#1=hang_tree", "FAKE_TFCNN_READY_FIFO": fifo, "FAKE_TFCNN_STATE": tmp_path / "s"}
    proc = _start_sweep(sweep_args(vendor, tf112, tmp_path / "sweep", "--models", "alexnet"), tmp_path, env)
    bench, child = _read_fifo(fifo)
    proc.kill()
    proc.communicate()
    assert _wait_gone(bench), "the benchmark outlived the killed sweep"
    assert _wait_gone(child), "the benchmark's child outlived the killed sweep"


# -- 7. signals always stop the sweep --------------------------------------------------------------------

# 200 tries (TFCNNWRAP_STRESS_TRIES=200) take ~2 min on 2 cores, as each sweep imports pandas for its summary;
# the suite runs 30 (each run of it other random moments) so that it stays quick.
STRESS_TRIES = int(os.environ.get("TFCNNWRAP_STRESS_TRIES", "30"))
STRESS_PARALLEL = 6


def _one_signalled_sweep(n, tmp_path, vendor, python, rng):
    out = tmp_path / ("sweep%d" % n)
    env = {"FAKE_TFCNN_STATE": tmp_path / ("state%d" % n), "TFCNNWRAP_TEST_MARKER": "%s-%d" % (tmp_path.name, n)}
    args = sweep_args(
        vendor, python, out, "--models", "alexnet", "--runs", "40", "--num-batches", "1", "--num-warmup-batches", "0"
    )
    proc = _start_sweep(args, tmp_path, env)
    # The header line is printed once the run loop (and its signal handling) is in place.
    proc.stdout.readline()
    sig = rng.choice([signal.SIGINT, signal.SIGTERM])
    fire = threading.Timer(rng.uniform(0, 0.4), proc.send_signal, (sig,))  # a random moment, not a wait
    fire.start()
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    fire.join()
    return proc.returncode, sig, stderr.decode("utf-8", "replace")[-500:]


@pytest.mark.slow
@LINUX
def test_random_signals_always_stop_the_sweep_with_130_and_no_orphans(tmp_path, vendor, tf112):
    from concurrent.futures import ThreadPoolExecutor

    seed = random.randrange(1 << 30)
    rngs = [random.Random(seed + n) for n in range(STRESS_TRIES)]
    with ThreadPoolExecutor(STRESS_PARALLEL) as pool:
        results = list(
            pool.map(lambda n: _one_signalled_sweep(n, tmp_path, vendor, tf112, rngs[n]), range(STRESS_TRIES))
        )
    codes = [rc for rc, _, _ in results]
    tally = {code: codes.count(code) for code in set(codes)}
    sys.stderr.write("stress tally (seed %d): %s\n" % (seed, tally))
    bad = [(rc, sig.name, err) for rc, sig, err in results if rc != 130]
    assert not bad, "seed %d, tally %s, first failures: %s" % (seed, tally, bad[:3])
    marker = tmp_path.name.encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"TFCNNWRAP_TEST_MARKER=" + marker in env:
                assert not _alive(int(entry.name)) or _wait_gone(int(entry.name)), "orphan %s" % entry.name


# -- probes: own process group, children killed, answers checked -----------------------------------------


def stand_in_tf(env_dir, version, body):
    python = make_fake_tf_env(env_dir, version)
    (site_packages(env_dir) / "tensorflow" / "__init__.py").write_text(body, encoding="utf-8")
    return python


SPAWN_CHILD = (
    "import os, subprocess, sys\n"
    "_child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)']{extra})\n"
    "with open(os.environ['TFCNNWRAP_TEST_PIDFILE'], 'w') as _fh:\n"
    "    _fh.write('%d %d' % (os.getpid(), _child.pid))\n"
)


@pytest.mark.slow
@LINUX
def test_a_probe_timeout_kills_the_probes_children(tmp_path):
    body = SPAWN_CHILD.format(extra=", stdout=subprocess.DEVNULL") + "import threading\nthreading.Event().wait()\n"
    python = stand_in_tf(tmp_path / "env", "2.4.0", body)
    pidfile = tmp_path / "pids"
    answer = probe.run_probe(python, full=True, partial=True, timeout=3, env={"TFCNNWRAP_TEST_PIDFILE": str(pidfile)})
    assert answer.complete is False and "no answer within 3 s" in answer.warnings[-1]
    leader, child = map(int, pidfile.read_text().split())
    assert _wait_gone(leader) and _wait_gone(child), "the probe's child outlived its timeout"


@pytest.mark.slow
@LINUX
def test_a_probe_child_holding_stdout_ends_with_its_leader(tmp_path):
    python = stand_in_tf(tmp_path / "env", "2.4.0", SPAWN_CHILD.format(extra=""))
    pidfile = tmp_path / "pids"
    answer = probe.run_probe(python, full=True, timeout=30, env={"TFCNNWRAP_TEST_PIDFILE": str(pidfile)})
    assert answer.complete is True and answer.tf_version == "2.4.0"
    _, child = map(int, pidfile.read_text().split())
    assert _wait_gone(child)


@pytest.mark.slow
@LINUX
def test_doctor_reports_a_probe_that_died_leaving_a_child(cli, tmp_path):
    body = SPAWN_CHILD.format(extra="") + "sys.stdout.flush()\nos._exit(3)\n"
    python = stand_in_tf(tmp_path / "env", "2.4.0", body)
    pidfile = tmp_path / "pids"
    result = cli(
        "doctor",
        "--python",
        python,
        "--format",
        "json",
        "--vendor-dir",
        tmp_path / "none",
        env={"TFCNNWRAP_TEST_PIDFILE": pidfile, "TFCNNWRAP_NVIDIA_SMI": "none"},
        timeout=60,
    )
    report = result.json()
    assert report["probe_complete"] is False and report["tensorflow_version"] == "2.4.0"
    assert any("exit code 3" in w and "importing tensorflow" in w for w in report["warnings"]), report["warnings"]
    tf_row = [r for r in report["checks"] if r["check"] == "TensorFlow"][0]
    assert tf_row["status"] == "fail"
    assert _wait_gone(int(pidfile.read_text().split()[1]))


NOT_AN_OBJECT = "import sys\nsys.stdout.write('\\n%s[1, 2]\\n')\nsys.stdout.flush()\nimport os\nos._exit(0)\n"


@pytest.mark.slow
@pytest.mark.parametrize("verb", ["doctor", "sweep"])
def test_a_probe_answer_that_is_not_an_object_is_a_setup_error(cli, tmp_path, vendor, verb):
    python = stand_in_tf(tmp_path / "env", "2.4.0", NOT_AN_OBJECT % probe.MARKER)
    if verb == "doctor":
        result = cli("doctor", "--python", python, "--vendor-dir", vendor)
    else:
        result = cli(*sweep_args(vendor, python, tmp_path / "sweep"), cwd=tmp_path)
    assert_clean_error(result, 2, "not a JSON object")
