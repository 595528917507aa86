"""A reader that leaves (``report | head -1``) ends the output quietly: exit 0, nothing on stderr; a stdout
that is closed or full is still one line on stderr (issue 38.5)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from sweepdata import seed_runs, write_sweep

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="a pipe whose reader left: SIGPIPE/EPIPE")


def _reader_gone(args, cwd):
    """``tfcnnwrap ARGS | head -0``: the pipe's reader has left before the first write (as ``head`` has by the
    time a long output reaches it), so every write meets EPIPE; (exit code, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
            cwd=str(cwd),
            env=cli_env({}),
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr.decode("utf-8", "replace")


@POSIX
@pytest.mark.parametrize(
    "args",
    [
        ["report", "{sweep}"],
        ["report", "{sweep}", "--format", "csv"],
        ["references"],
        ["compare", "{sweep}", "--against", "V100", "--format", "csv"],
        ["list", "{sweep}"],
    ],
)
def test_a_reader_that_leaves_ends_the_output_quietly(tmp_path, args):
    sweep = write_sweep(tmp_path / "s", seed_runs(3))
    argv = [str(a).replace("{sweep}", str(sweep)) for a in args]
    before = sorted(p.name for p in sweep.iterdir())
    code, stderr = _reader_gone(argv, tmp_path)
    assert code == 0 and stderr == "", (code, stderr)
    assert sorted(p.name for p in sweep.iterdir()) == before  # results on disk untouched


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep_args(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "cpu", "--out", out, *more]


def read_runs(out):
    return [json.loads(line) for line in (Path(out) / "runs.jsonl").read_text().splitlines() if line.strip()]


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


@POSIX
@pytest.mark.parametrize("state", ["closed", "full"])
@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("verb", ["report", "compare", "references", "parse", "doctor"])
def test_every_verb_with_stdout_closed_or_full_says_so_once_and_exits_2(tmp_path, finished_sweep, verb, fmt, state):
    code, stderr = run_with_stdout(verb_args(verb, finished_sweep) + ["--format", fmt], state, tmp_path)
    assert code == 2, stderr
    one_stdout_line(stderr)
