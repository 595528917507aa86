"""The sweep directory's writer under hostile or broken conditions (issue 11): torn lines, planted links,
stale directories, mixed TensorFlow versions on resume, non-finite numbers, full disks and other faults of
the user's environment."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env, make_vendor
from test_sweep import _start_sweep, _wait_hanging, ips_env, read_runs, sweep_args

from tfcnnwrap.results.records import RunRecord, SweepMeta

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX links, FIFOs and rlimits")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def strict_loads(text):
    """json.loads that refuses NaN and Infinity, as strict parsers (JavaScript, Go, Rust) do."""

    def refuse(name):
        raise ValueError("non-standard JSON constant %s" % name)

    return json.loads(text, parse_constant=refuse)


def strict_lines(path):
    return [strict_loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def one_crashed_run(cli, tmp_path, vendor, tf112, out, runs=2):
    """A sweep of alexnet whose last run crashed (so that --resume --retry-failed runs it again)."""
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", str(runs)),
        cwd=tmp_path,
        env=ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="alexnet#%d=crash" % runs),
    )
    assert result.returncode == 1, result
    return out


def retry(cli, vendor, tf112, out, tmp_path, *more, env=None):
    return cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--resume",
        out,
        "--retry-failed",
        *more,
        cwd=tmp_path,
        env=env if env is not None else ips_env(tmp_path / "state"),
    )


# -- 2. a torn last line is repaired before the next append ---------------------------------------------


@pytest.mark.slow
def test_a_torn_last_line_is_set_aside_before_the_next_append(cli, tmp_path, vendor, tf112):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    fragment = b'{"model": "alexnet", "batch_si'
    with open(out / "runs.jsonl", "ab") as fh:
        fh.write(fragment)
    result = retry(cli, vendor, tf112, out, tmp_path)
    assert result.returncode == 0, result
    records = strict_lines(out / "runs.jsonl")  # every line parses: nothing was glued onto the fragment
    assert [(r["run"], r["status"]) for r in records] == [(1, "ok"), (2, "crashed"), (2, "ok")]
    (side,) = out.glob("runs.jsonl.torn-*")
    assert side.read_bytes() == fragment
    rows = cli("report", out, "--format", "json").rows()
    assert rows[0]["runs_ok"] == 2 and rows[0]["runs_failed"] == 0
    assert (out / "summary.csv").read_text().splitlines()[1].startswith("alexnet,512,2,0,")


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    from tfcnnwrap.results.store import SweepDir

    sweep = SweepDir(tmp_path)
    first = {"model": "alexnet", "batch_size": 512, "run": 1, "status": "ok", "images_per_sec": 1.0}
    (tmp_path / "runs.jsonl").write_text(json.dumps(first))  # a hand edit that lost the final newline
    sweep.append_run(RunRecord.from_dict(dict(first, run=2)))
    assert [r["run"] for r in strict_lines(tmp_path / "runs.jsonl")] == [1, 2]
    assert not list(tmp_path.glob("runs.jsonl.torn-*"))


def test_a_failed_append_leaves_no_fragment(tmp_path, monkeypatch):
    """A disk that fills mid-append: the partial line is cut off again and the error says which file."""
    from tfcnnwrap.errors import TfcnnwrapError
    from tfcnnwrap.results import store

    sweep = store.SweepDir(tmp_path)
    rec = {"model": "alexnet", "batch_size": 512, "run": 1, "status": "ok", "images_per_sec": 1.0}
    sweep.append_run(RunRecord.from_dict(rec))
    before = (tmp_path / "runs.jsonl").read_bytes()

    def half_then_full(fd, data):
        os.write(fd, data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_write_all", half_then_full)
    with pytest.raises(TfcnnwrapError) as err:
        sweep.append_run(RunRecord.from_dict(dict(rec, run=2)))
    assert "No space left on device" in err.value.message and "runs.jsonl" in err.value.message
    assert (tmp_path / "runs.jsonl").read_bytes() == before


# -- 3. writes never follow links ------------------------------------------------------------------------


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize(
    "planted", ["logs/alexnet-bs512-run2.log", "logs/alexnet-bs512-run2.gpu.csv", "sweep.json.tmp", "summary.csv.tmp"]
)
def test_a_planted_link_in_the_sweep_is_replaced_never_written_through(cli, tmp_path, vendor, tf112, planted):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = out / planted
    if link.exists():
        link.unlink()
    link.symlink_to(victim)
    env = ips_env(tmp_path / "state", TFCNNWRAP_NVIDIA_SMI=Path(__file__).resolve().parent / "fake" / "nvidia-smi")
    result = retry(cli, vendor, tf112, out, tmp_path, env=env)
    assert result.returncode == 0, result
    assert victim.read_text() == "precious\n"
    if planted.startswith("logs/"):
        assert not link.is_symlink() and link.is_file()  # the run's own file took the link's place


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("part", ["runs.jsonl", "summary.csv", "sweep.json", "logs", ".tfcnnwrap.lock"])
def test_a_sweep_whose_parts_lead_outside_is_refused(cli, tmp_path, vendor, tf112, part):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    victim = tmp_path / "victim"
    original = out / part
    shutil.move(str(original), str(victim))  # the victim holds what the sweep had: it stays readable
    before = victim.read_bytes() if victim.is_file() else sorted(p.name for p in victim.iterdir())
    original.symlink_to(victim)
    result = retry(cli, vendor, tf112, out, tmp_path)
    assert_clean_error(result, 2, part)
    after = victim.read_bytes() if victim.is_file() else sorted(p.name for p in victim.iterdir())
    assert after == before
    assert int((tmp_path / "state" / "all").read_text()) == 2  # nothing ran


@pytest.mark.slow
@POSIX
def test_a_runs_jsonl_link_inside_the_sweep_is_refused_too(cli, tmp_path, vendor, tf112):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    (out / "runs.jsonl").rename(out / "elsewhere.jsonl")
    (out / "runs.jsonl").symlink_to("elsewhere.jsonl")
    before = (out / "elsewhere.jsonl").read_bytes()
    assert_clean_error(retry(cli, vendor, tf112, out, tmp_path), 2, "runs.jsonl")
    assert (out / "elsewhere.jsonl").read_bytes() == before


# -- 4. a new sweep never adopts what a directory already holds ----------------------------------------


@pytest.mark.slow
def test_out_on_a_directory_with_leftover_runs_is_refused(cli, tmp_path, vendor, tf112):
    out = tmp_path / "leftover"
    out.mkdir()
    stale = json.dumps({"model": "alexnet", "batch_size": 512, "run": 1, "status": "ok", "images_per_sec": 9.0})
    (out / "runs.jsonl").write_text(stale + "\n")
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"),
        cwd=tmp_path,
        env=ips_env(tmp_path / "state"),
    )
    assert_clean_error(result, 2, str(out), "not empty")
    assert sorted(p.name for p in out.iterdir()) == ["runs.jsonl"]
    assert (out / "runs.jsonl").read_text() == stale + "\n"
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
def test_out_on_an_empty_directory_is_used(cli, tmp_path, vendor, tf112):
    out = tmp_path / "empty"
    out.mkdir()
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path)
    assert result.returncode == 0, result
    assert len(read_runs(out)) == 1


# -- 5. a resume runs where the sweep ran ----------------------------------------------------------------


@pytest.mark.slow
def test_resume_with_another_tensorflow_is_refused(cli, tmp_path, vendor, tf112, fake_tf):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("2.1.3"),
        "--resume",
        out,
        "--retry-failed",
        cwd=tmp_path,
        env=ips_env(tmp_path / "state"),
    )
    assert_clean_error(result, 2, "1.12.0", "2.1.3")
    assert len(read_runs(out)) == 2


@pytest.mark.slow
def test_resume_with_another_checkout_commit_is_refused(cli, tmp_path, vendor, tf112):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    manifest = json.loads((vendor / "tfcnnwrap-setup.json").read_text())
    manifest["commit"] = "1" * 40
    (vendor / "tfcnnwrap-setup.json").write_text(json.dumps(manifest))
    result = retry(cli, vendor, tf112, out, tmp_path)
    assert_clean_error(result, 2, "0" * 10, "1" * 10)
    assert len(read_runs(out)) == 2


@pytest.mark.slow
def test_resume_without_python_or_vendor_dir_uses_the_recorded_ones(cli, tmp_path, vendor, tf112):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["python"] == str(tf112) and Path(meta["vendor_dir"]) == vendor.resolve()
    elsewhere = tmp_path / "elsewhere"  # no ./vendor here, and this test's python has no TensorFlow
    elsewhere.mkdir()
    result = cli("sweep", "--resume", out, "--retry-failed", cwd=elsewhere, env=ips_env(tmp_path / "state"))
    assert result.returncode == 0, result
    assert [r["command"][0] for r in read_runs(out)] == [str(tf112)] * 3


@pytest.mark.slow
@POSIX
def test_a_running_sweep_holds_the_vendor_lock_shared(tmp_path, vendor, tf112):
    from tfcnnwrap.environment import checkout
    from tfcnnwrap.filelock import LockBusy

    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    env = ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="#1=hang", FAKE_TFCNN_READY_FIFO=fifo)
    proc = _start_sweep(
        sweep_args(vendor, tf112, tmp_path / "sweep", "--models", "alexnet", "--runs", "1"), tmp_path, env
    )
    try:
        _wait_hanging(fifo)
        with pytest.raises(LockBusy):
            checkout.vendor_lock(vendor, shared=False).acquire()
        with checkout.vendor_lock(vendor, shared=True):  # another sweep may share the checkout
            pass
    finally:
        proc.kill()
        proc.communicate()
    with checkout.vendor_lock(vendor, shared=False):
        pass


# -- 10. every JSON written parses strictly ----------------------------------------------------------------


def test_non_finite_numbers_never_reach_disk(tmp_path):
    from tfcnnwrap.results.store import SweepDir

    sweep = SweepDir(tmp_path)
    sweep.append_run(
        RunRecord.from_dict(
            {
                "model": "alexnet",
                "batch_size": 512,
                "run": 1,
                "status": "no_result",
                "images_per_sec": None,
                "last_step_images_per_sec": float("nan"),
                "telemetry": {"mean_power_w": float("inf"), "samples": [1.5, float("-inf")]},
            }
        )
    )
    (rec,) = strict_lines(tmp_path / "runs.jsonl")
    assert rec["last_step_images_per_sec"] is None
    assert rec["telemetry"] == {"mean_power_w": None, "samples": [1.5, None]}
    sweep.write_meta(SweepMeta.from_dict({"format": 1, "plan": {"timeout_s": float("nan")}, "note": math.inf}))
    meta = strict_loads((tmp_path / "sweep.json").read_text())
    assert meta["plan"]["timeout_s"] is None and meta["note"] is None


# -- 12. the user's environment: one line, the right exit code, nothing half-made --------------------------


@pytest.mark.slow
def test_out_under_a_file_is_one_line(cli, tmp_path, vendor, tf112):
    (tmp_path / "afile").write_text("x")
    result = cli(
        *sweep_args(vendor, tf112, tmp_path / "afile" / "sub"),
        cwd=tmp_path,
        env={"FAKE_TFCNN_STATE": tmp_path / "state"},
    )
    assert_clean_error(result, 2, "afile")
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
@POSIX
def test_a_non_utf8_out_is_refused_and_nothing_is_made(tmp_path, vendor, tf112):
    bad = os.fsencode(str(tmp_path)) + b"/out-\xff"
    argv = [os.fsencode(sys.executable), b"-m", b"tfcnnwrap"] + [
        os.fsencode(str(a)) for a in sweep_args(vendor, tf112, "X", "--models", "alexnet", "--runs", "1")
    ]
    argv[-5] = bad
    proc = subprocess.run(argv, cwd=str(tmp_path), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    from conftest import CliResult

    assert_clean_error(CliResult(proc), 2, "UTF-8")
    assert not os.path.exists(bad)


@pytest.mark.slow
def test_runs_jsonl_that_is_a_directory_is_one_line(cli, tmp_path, vendor, tf112):
    out = one_crashed_run(cli, tmp_path, vendor, tf112, tmp_path / "sweep")
    (out / "runs.jsonl").unlink()
    (out / "runs.jsonl").mkdir()
    assert_clean_error(retry(cli, vendor, tf112, out, tmp_path), 2, "runs.jsonl")


@pytest.mark.slow
@pytest.mark.skipif(ROOT or os.name != "posix", reason="root writes into read-only directories")
def test_a_read_only_directory_is_one_line(cli, tmp_path, vendor, tf112):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        result = cli(*sweep_args(vendor, tf112, parent / "sweep"), cwd=tmp_path)
        assert_clean_error(result, 2, str(parent))
    finally:
        parent.chmod(0o755)


def test_a_directory_that_cannot_be_made_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """What a read-only parent does to a non-root user, for the root that runs CI."""
    from tfcnnwrap.errors import TfcnnwrapError
    from tfcnnwrap.results import store

    sweep = store.SweepDir(tmp_path / "new" / "sweep")
    real_mkdir = Path.mkdir

    def refuse_logs(self, *a, **kw):
        if self.name == "logs":
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", refuse_logs)
    with pytest.raises(TfcnnwrapError) as err:
        sweep.create(SweepMeta())
    assert err.value.exit_code == 2 and "Permission denied" in err.value.message
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
@POSIX
def test_disk_full_mid_sweep_keeps_the_runs_so_far(tmp_path, vendor, tf112):
    """RLIMIT_FSIZE (with SIGXFSZ ignored) makes writes past a size fail with EFBIG, like a full disk."""
    import resource
    import signal

    probe = tmp_path / "probe"
    args = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--models",
        "alexnet",
        "--runs",
        "12",
    ]
    full = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args), "--out", str(probe)],
        cwd=str(tmp_path),
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert full.returncode == 0, full.stderr
    biggest_other = max(p.stat().st_size for p in probe.rglob("*") if p.is_file() and p.name != "runs.jsonl")
    limit = biggest_other + 64  # sweep.json, the logs and summary.csv fit; runs.jsonl outgrows it
    assert (probe / "runs.jsonl").stat().st_size > limit + 600

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args), "--out", str(out)],
        cwd=str(tmp_path),
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=small_disk,
    )
    from conftest import CliResult

    line = assert_clean_error(CliResult(proc), 1, "runs.jsonl")
    assert "--resume" in line
    kept = strict_lines(out / "runs.jsonl")
    assert 1 <= len(kept) < 12 and all(r["status"] == "ok" for r in kept)


@pytest.mark.slow
@POSIX
def test_the_vendor_dir_deleted_mid_sweep_is_one_line_and_keeps_the_runs(tmp_path, tf112):
    vendor = make_vendor(tmp_path / "vendor")
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    env = ips_env(tmp_path / "state", FAKE_TFCNN_WAIT_FIFO=fifo)
    out = tmp_path / "sweep"
    proc = _start_sweep(sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "2"), tmp_path, env)
    with open(fifo, "w") as fh:  # opens once the first run is waiting on it
        shutil.rmtree(str(vendor))
        fh.write("go")
    stdout, stderr = proc.communicate(timeout=120)
    from conftest import CliResult

    result = CliResult(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    line = assert_clean_error(result, 1, "run 2")
    assert "--resume" in line
    assert [r["status"] for r in read_runs(out)] == ["ok"]
