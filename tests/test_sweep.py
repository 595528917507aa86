"""`sweep` and `report` driven as a user would, against the stand-in tf_cnn_benchmarks."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env, make_vendor, pid_alive, wait_gone

pytestmark = pytest.mark.slow

SEED = [("resnet50", 64), ("resnet152", 32), ("inception3", 64), ("vgg16", 64), ("alexnet", 512)]
IPS = {
    "resnet50": [170.0, 176.93, 181.5],
    "resnet152": [62.22, 61.0, 63.4],
    "inception3": [113.24, 112.0, 114.1],
    "vgg16": [110.23, 109.9, 111.0],
    "alexnet": [2258.94, 2250.0, 2266.6],
}
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and named pipes")


def ips_env(state_dir, **extra):
    env = {
        "FAKE_TFCNN_IPS": ",".join("%s=%s" % (m, "/".join(str(v) for v in vals)) for m, vals in IPS.items()),
        "FAKE_TFCNN_STATE": str(state_dir),
    }
    env.update(extra)
    return env


def read_runs(sweep_dir):
    lines = (Path(sweep_dir) / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep_args(vendor, tf112, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", tf112, "--device", "gpu", "--out", out, *more]


def test_default_sweep_is_the_seeds_fifteen_runs(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(*sweep_args(vendor, tf112, out), cwd=tmp_path, env=ips_env(tmp_path / "state"))
    assert result.returncode == 0, result

    runs = read_runs(out)
    assert len(runs) == 15
    assert [(r["model"], r["batch_size"]) for r in runs] == [p for p in SEED for _ in range(3)]
    assert [r["run"] for r in runs] == [1, 2, 3] * 5
    for r in runs:
        assert r["status"] == "ok"
        assert r["command"][1:3] == ["-u", "tf_cnn_benchmarks.py"]
        assert r["command"][3:] == [
            "--model=%s" % r["model"],
            "--batch_size=%d" % r["batch_size"],
            "--num_gpus=1",
            "--variable_update=parameter_server",
        ]
        log = out / r["log"]
        assert log.is_file()
        assert "total images/sec: %.2f" % r["images_per_sec"] in log.read_text(encoding="utf-8")
        assert r["exit_code"] == 0 and r["duration_s"] >= 0 and r["started_at"].endswith("Z")
    assert runs[1]["images_per_sec"] == 176.93

    meta = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert meta["plan"]["runs"] == 3
    assert meta["plan"]["models"] == [{"model": m, "batch_size": b} for m, b in SEED]
    assert meta["upstream"]["branch"] == "cnn_tf_v1.12_compatible"
    assert meta["tensorflow_version"] == "1.12.0"
    assert meta["command_template"][:3] == ["{python}", "-u", "tf_cnn_benchmarks.py"]
    assert "environment" in meta

    report = cli("report", out, "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report
    rows = report.rows()
    assert [(r["model"], r["batch_size"]) for r in rows] == SEED
    for row in rows:
        vals = IPS[row["model"]]
        assert row["runs_ok"] == 3 and row["runs_failed"] == 0
        assert row["mean"] == pytest.approx(sum(vals) / 3, abs=1e-9)
        assert row["min"] == min(vals) and row["max"] == max(vals)
        assert row["median"] == sorted(vals)[1]
        for key in ("std", "cv_pct"):
            assert row[key] > 0

    summary = (out / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert summary[0].startswith("model,batch_size,runs_ok,runs_failed,mean,std,cv_pct,min,max,median")
    assert len(summary) == 6

    no_results = cli("report", cwd=tmp_path)  # --out put it elsewhere: there is no results/ here
    assert_clean_error(no_results, 2, "no sweep found")


def test_report_defaults_to_newest_sweep_under_results(cli, tmp_path, vendor, tf112):
    env = ips_env(tmp_path / "state")
    first = cli(
        *sweep_args(vendor, tf112, tmp_path / "results" / "a", "--models", "resnet50", "--runs", "1"),
        cwd=tmp_path,
        env=env,
    )
    second = cli(
        *sweep_args(vendor, tf112, tmp_path / "results" / "b", "--models", "vgg16", "--runs", "1"),
        cwd=tmp_path,
        env=env,
    )
    assert first.returncode == 0 and second.returncode == 0, (first, second)
    rows = cli("report", "--format", "json", cwd=tmp_path).rows()
    assert [r["model"] for r in rows] == ["vgg16"]
    md = cli("report", tmp_path / "results" / "a", "--format", "markdown", cwd=tmp_path)
    assert "| resnet50 | 64 | 1 | 0 |" in md.stdout


@pytest.mark.skipif(os.name != "posix", reason="TZ rules are POSIX")
def test_default_out_is_a_local_timestamp_with_its_offset_under_results(cli, tmp_path, vendor, tf112):
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--runs",
        "1",
        cwd=tmp_path,
        env={"TZ": "XYZ-5:30"},
    )
    assert result.returncode == 0, result
    (sweep_dir,) = list((tmp_path / "results").iterdir())
    assert len(sweep_dir.name) == len("20261130-101500+0530") and sweep_dir.name[8] == "-", sweep_dir.name
    assert sweep_dir.name.endswith("+0530") and ":" not in sweep_dir.name
    assert read_runs(sweep_dir)[0]["batch_size"] == 8


def test_dry_run_prints_every_command_and_runs_nothing(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(*sweep_args(vendor, tf112, out, "--dry-run"), cwd=tmp_path, env={"FAKE_TFCNN_STATE": tmp_path / "s"})
    assert result.returncode == 0, result
    commands = [line for line in result.stdout.splitlines() if "tf_cnn_benchmarks.py" in line]
    assert len(commands) == 15
    assert "--model=alexnet --batch_size=512 --num_gpus=1 --variable_update=parameter_server" in commands[-1]
    assert not out.exists()
    assert not (tmp_path / "s").exists()


def test_cpu_quick_plan(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--quick",
        "--batch-size",
        "vgg16=4",
        "--out",
        out,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [(r["model"], r["batch_size"]) for r in runs] == [
        ("resnet50", 8),
        ("resnet152", 4),
        ("inception3", 8),
        ("vgg16", 4),
        ("alexnet", 64),
    ]
    assert runs[0]["command"][3:] == [
        "--model=resnet50",
        "--batch_size=8",
        "--num_gpus=1",
        "--variable_update=parameter_server",
        "--num_batches=10",
        "--num_warmup_batches=2",
        "--device=cpu",
        "--data_format=NHWC",
    ]
    assert "Data format: NHWC" in (out / runs[0]["log"]).read_text(encoding="utf-8")


def test_batch_size_for_a_model_outside_the_defaults_and_pass_through(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(vendor, tf112, out, "--batch-size", "googlenet=16", "--runs", "1", "--", "--use_fp16=True"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert runs[-1]["model"] == "googlenet" and runs[-1]["batch_size"] == 16
    assert all(r["command"][-1] == "--use_fp16=True" for r in runs)


def test_auto_device_falls_back_to_cpu_with_a_warning(cli, tmp_path, vendor, fake_tf):
    tf2 = fake_tf("2.1.3")
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf2,
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--out",
        out,
        cwd=tmp_path,
        env={"FAKE_TF_GPUS": "", "PATH": os.environ["PATH"]},
    )
    assert result.returncode == 0, result
    assert "sees no GPU" in result.stdout + result.stderr
    assert read_runs(out)[0]["command"][-2:] == ["--device=cpu", "--data_format=NHWC"]

    out2 = tmp_path / "sweep2"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf2,
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--out",
        out2,
        cwd=tmp_path,
        env={"FAKE_TF_GPUS": "GeForce RTX 2070"},
    )
    assert result.returncode == 0, result
    assert "--device=cpu" not in read_runs(out2)[0]["command"]
    assert json.loads((out2 / "sweep.json").read_text())["device"] == "gpu"


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--models", "resnet50,resnet5O"], ["unknown model 'resnet5O'", "resnet50"]),
        (["--runs", "0"], ["--runs: must be a whole number from 1 to 1000, got '0'"]),
        (["--runs", "three"], ["--runs: must be a whole number from 1 to 1000, got 'three'"]),
        (["--batch-size", "vgg16=0"], ["--batch-size vgg16: the batch size must be a whole number from 1 to"]),
        (["--batch-size", "vgg16=big"], ["--batch-size vgg16: the batch size must be a whole number from 1 to"]),
        (["--batch-size", "vgg16"], ["MODEL=N"]),
        (["--batch-size", "vgg17=32"], ["unknown model 'vgg17'"]),
        (["--timeout", "-5"], ["--timeout"]),
        (["--variable-update", "magic"], ["--variable-update"]),
        (["--retry-failed"], ["--resume"]),
        (["--", "--model=vgg16"], ["--models"]),
    ],
)
def test_bad_input_is_refused_before_anything_runs(cli, tmp_path, vendor, tf112, args, needles):
    out = tmp_path / "sweep"
    result = cli(*sweep_args(vendor, tf112, out, *args), cwd=tmp_path, env={"FAKE_TFCNN_STATE": tmp_path / "s"})
    assert_clean_error(result, 2, *needles)
    assert not out.exists() and not (tmp_path / "s").exists()


def test_no_checkout_names_setup(cli, tmp_path, tf112):
    result = cli("sweep", "--python", tf112, cwd=tmp_path)
    assert_clean_error(result, 2, "python -m tfcnnwrap setup")


def test_no_tensorflow_in_target_names_python_flag(cli, tmp_path, vendor):
    bare = tmp_path / "bare"
    import venv

    venv.EnvBuilder(with_pip=False).create(str(bare))
    py = bare / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    result = cli("sweep", "--vendor-dir", vendor, "--python", py, cwd=tmp_path)
    assert_clean_error(result, 2, "--python")
    result = cli("sweep", "--vendor-dir", vendor, "--python", tmp_path / "nope" / "python", cwd=tmp_path)
    assert_clean_error(result, 2, "--python")


def test_out_on_an_existing_sweep_is_refused(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path).returncode == 0
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path)
    assert_clean_error(result, 2, "--resume")
    assert len(read_runs(out)) == 1


def test_resume_refuses_plan_flags(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path).returncode == 0
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, "--runs", "5", cwd=tmp_path)
    assert_clean_error(result, 2, "--runs")
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", tmp_path / "missing")
    assert_clean_error(result, 2, "does not exist")
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", vendor)
    assert_clean_error(result, 2, "not a sweep")


def test_failures_are_named_the_sweep_goes_on_and_exits_1(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    faults = "vgg16=oom,resnet152=crash,inception3=no_total,alexnet=garbage,resnet50#2=segv"
    result = cli(
        *sweep_args(vendor, tf112, out, "--runs", "2"),
        cwd=tmp_path,
        env=ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS=faults),
    )
    assert result.returncode == 1, result
    runs = {(r["model"], r["run"]): r for r in read_runs(out)}
    assert len(runs) == 10
    assert runs[("resnet50", 1)]["status"] == "ok"
    assert runs[("resnet50", 2)]["status"] == "crashed"
    if os.name == "posix":
        assert runs[("resnet50", 2)]["exit_code"] == -signal.SIGSEGV
    assert runs[("vgg16", 1)]["status"] == "oom" and "OOM when allocating" in runs[("vgg16", 1)]["failure"]
    assert runs[("resnet152", 1)]["status"] == "crashed"
    assert runs[("inception3", 1)]["status"] == "no_result" and runs[("inception3", 1)]["exit_code"] == 0
    assert runs[("alexnet", 1)]["status"] == "ok" and runs[("alexnet", 1)]["images_per_sec"] == 2258.94
    # after an OOM the configuration's other runs are not started (issue 13)
    assert runs[("vgg16", 2)]["status"] == "skipped" and runs[("vgg16", 2)]["log"] is None
    for r in runs.values():
        if r["status"] not in ("ok", "skipped"):
            assert r["images_per_sec"] is None
            assert (out / r["log"]).is_file()
    assert b"\xff\xfe\x00binary" in (out / runs[("alexnet", 1)]["log"]).read_bytes()
    assert "OOM" in result.stdout and "vgg16-bs64-run1.log" in result.stdout
    rows = {r["model"]: r for r in cli("report", out, "--format", "json").rows()}
    assert rows["vgg16"]["runs_ok"] == 0 and rows["vgg16"]["runs_failed"] == 2 and rows["vgg16"]["mean"] is None
    assert rows["vgg16"]["failures"] == "oom:1 skipped:1"
    assert rows["resnet50"]["runs_ok"] == 1 and rows["resnet50"]["std"] is None


@POSIX
def test_timeout_kills_the_whole_process_tree(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "1", "--timeout", "2"),
        cwd=tmp_path,
        env=ips_env(tmp_path / "state", FAKE_TFCNN_FAULTS="alexnet=hang_tree"),
    )
    assert result.returncode == 1, result
    runs = read_runs(out)
    assert [r["status"] for r in runs] == ["timeout", "ok"]
    assert 2 <= runs[0]["duration_s"] < 30
    log = (out / runs[0]["log"]).read_text()
    child_pid = int(log.split("child pid: ")[1].split()[0])
    assert not _alive(child_pid)


def test_flag_error_on_the_first_run_stops_the_sweep(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(*sweep_args(vendor, tf112, out, "--", "--xla=True"), cwd=tmp_path, env={"FAKE_TFCNN_REJECT": "xla"})
    assert result.returncode == 2, result
    assert "Unknown command line flag 'xla'" in result.stderr
    assert "Traceback" not in result.stderr
    runs = read_runs(out)
    assert len(runs) == 1 and runs[0]["status"] == "crashed"


def test_hundred_megabyte_log_is_kept_and_parsed(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"),
        cwd=tmp_path,
        env={"FAKE_TFCNN_FAULTS": "alexnet=huge", "FAKE_TFCNN_HUGE_MB": "100"},
        timeout=300,
    )
    assert result.returncode == 0, result
    (run,) = read_runs(out)
    assert run["status"] == "ok" and run["images_per_sec"] == 2258.94
    assert (out / run["log"]).stat().st_size > 100 * 1024 * 1024


def test_report_never_reads_outside_the_sweep(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path).returncode == 0
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    bad = {
        "model": "alexnet",
        "batch_size": 512,
        "run": 2,
        "status": "crashed",
        "images_per_sec": None,
        "exit_code": 1,
        "duration_s": 1,
        "started_at": "x",
        "log": "../secret.txt",
        "command": [],
    }
    with open(out / "runs.jsonl", "a") as fh:
        fh.write(json.dumps(bad) + "\n")
    result = cli("report", out)
    assert result.returncode == 0, result
    assert "SECRET-CONTENT" not in result.stdout and "secret.txt" not in result.stdout
    meta = json.loads((out / "sweep.json").read_text())
    meta["plan"]["models"] = [{"model": "../../evil", "batch_size": 1}]
    (out / "sweep.json").write_text(json.dumps(meta))
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out)
    assert_clean_error(result, 2, "unknown model")


def test_torn_last_line_is_tolerated(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "2"), cwd=tmp_path).returncode == 0
    with open(out / "runs.jsonl", "ab") as fh:
        fh.write(b'{"model": "alexnet", "batch_si')
    rows = cli("report", out, "--format", "json").rows()
    assert rows[0]["runs_ok"] == 2


# -- signals, kill and resume (POSIX) ----------------------------------------------------------------


_alive = pid_alive


def _start_sweep(args, cwd, env):
    return subprocess.Popen(
        [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
        cwd=str(cwd),
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_hanging(fifo):
    with open(fifo) as fh:  # blocks until the stand-in is hanging (no sleeps)
        pid, child = fh.read().split()
    return int(pid), int(child)


@POSIX
def test_sigkill_after_the_fourth_run_then_resume(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    state = tmp_path / "state"
    env = ips_env(state, FAKE_TFCNN_FAULTS="#5=hang", FAKE_TFCNN_READY_FIFO=fifo)
    proc = _start_sweep(sweep_args(vendor, tf112, out), tmp_path, env)
    bench_pid, _ = _wait_hanging(fifo)
    assert len(read_runs(out)) == 4

    # A second writer is refused while the first holds the sweep.
    second = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=env)
    assert_clean_error(second, 2, "in use")

    proc.kill()
    proc.communicate()
    first_four = read_runs(out)
    assert len(first_four) == 4 and all(r["status"] == "ok" for r in first_four)
    assert _wait_gone(bench_pid)

    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=ips_env(state))
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert runs[:4] == first_four
    assert len(runs) == 15
    assert len({(r["model"], r["batch_size"], r["run"]) for r in runs}) == 15
    assert all(r["status"] == "ok" for r in runs)
    # 4 finished + 1 killed + 11 resumed invocations: none of the first 4 ran again.
    assert int((state / "all").read_text()) == 16
    meta = json.loads((out / "sweep.json").read_text())
    assert len(meta["resumed"]) == 1


_wait_gone = wait_gone  # the benchmark dies with its parent: conftest's one pid helper waits for it


@POSIX
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_records_the_run_and_exits_130(cli, tmp_path, vendor, tf112, sig):
    out = tmp_path / "sweep"
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    state = tmp_path / "state"
    env = ips_env(state, FAKE_TFCNN_FAULTS="#2=hang_tree", FAKE_TFCNN_READY_FIFO=fifo, PYTHONFAULTHANDLER=1)
    proc = _start_sweep(sweep_args(vendor, tf112, out), tmp_path, env)
    bench_pid, child_pid = _wait_hanging(fifo)
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack goes to stderr
        stdout, stderr = proc.communicate()
        pytest.fail("the sweep did not stop within 60 s of the signal:\n%s\n%s" % (stdout[-2000:], stderr[-2000:]))
    assert proc.returncode == 130, (stdout, stderr)
    assert b"Traceback" not in stderr
    assert b"--resume" in stdout
    runs = read_runs(out)
    assert [r["status"] for r in runs] == ["ok", "interrupted"]
    assert not _alive(bench_pid) and not _alive(child_pid)
    assert (out / "summary.csv").is_file()

    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=ips_env(state))
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert len({(r["model"], r["run"]) for r in runs}) == 15
    rows = cli("report", out, "--format", "json").rows()
    assert sum(r["runs_ok"] for r in rows) == 15


def test_retry_failed_reruns_only_failed_runs(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    state = tmp_path / "state"
    result = cli(
        *sweep_args(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "2"),
        cwd=tmp_path,
        env=ips_env(state, FAKE_TFCNN_FAULTS="vgg16#1=oom"),
    )
    assert result.returncode == 1
    plain = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=ips_env(state))
    assert plain.returncode == 1  # nothing missing; the OOM stays (and vgg16's run 2, skipped after it)
    assert int((state / "all").read_text()) == 3
    retry = cli(
        "sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, "--retry-failed", env=ips_env(state)
    )
    assert retry.returncode == 0, retry
    assert int((state / "all").read_text()) == 5
    rows = {r["model"]: r for r in cli("report", out, "--format", "json").rows()}
    assert rows["vgg16"]["runs_ok"] == 2 and rows["vgg16"]["runs_failed"] == 0


@POSIX
def test_gpu_sweep_samples_telemetry_beside_each_log(cli, tmp_path, vendor, tf112):
    """The stand-in nvidia-smi writes its samples, then opens a FIFO the stand-in benchmark waits on."""
    fake_dir = Path(__file__).resolve().parent / "fake"
    fifo = tmp_path / "nvsmi-ready"
    os.mkfifo(fifo)
    out = tmp_path / "sweep"
    env = {
        "PATH": str(fake_dir) + os.pathsep + os.environ["PATH"],
        "FAKE_NVSMI_READY": fifo,
        "FAKE_TFCNN_WAIT_FIFO": fifo,
        "FAKE_NVSMI_SAMPLES": ";".join(["60,1800"] * 6 + ["83,1500"] * 6),
    }
    result = cli(*sweep_args(vendor, tf112, out, "--models", "resnet50,alexnet", "--runs", "1"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    runs = read_runs(out)
    for r in runs:
        assert (out / "logs" / ("%s-bs%d-run1.gpu.csv" % (r["model"], r["batch_size"]))).is_file()
        tele = r["telemetry"]
        assert tele["samples"] == 12
        assert tele["max_temp_c"] == 83
        assert tele["throttled"] is True
    meta = json.loads((out / "sweep.json").read_text())
    assert "RTX 2070" in json.dumps(meta["environment"])
    assert "RTX 2070" in cli("report", out).stdout


@POSIX
def test_a_gpu_sweep_starts_one_sampling_nvidia_smi_and_cuts_each_runs_samples_from_it(cli, tmp_path, vendor, tf112):
    """Issue 39: nvidia-smi's start is paid once per sweep. The stand-in prints one round of samples per run (as
    each benchmark starts); each run's .gpu.csv holds its round alone, written when the run ends."""
    fake_dir = Path(__file__).resolve().parent / "fake"
    fifo, calls = tmp_path / "nvsmi-ready", tmp_path / "calls.log"
    os.mkfifo(fifo)
    out = tmp_path / "sweep"
    env = {
        "PATH": str(fake_dir) + os.pathsep + os.environ["PATH"],
        "FAKE_NVSMI_READY": fifo,
        "FAKE_TFCNN_WAIT_FIFO": fifo,
        "FAKE_NVSMI_SAMPLES": ";".join(["60,1800"] * 6 + ["83,1500"] * 6),
        "FAKE_NVSMI_ARGS_LOG": calls,
    }
    result = cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "3"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [r["telemetry"]["samples"] for r in runs] == [12, 12, 12]
    for r in runs:
        lines = (out / "logs" / r["telemetry"]["samples_file"]).read_text().splitlines()
        assert len(lines) == 13 and lines[0].startswith("timestamp, index, temperature.gpu")  # its header, its round
    logged = [json.loads(line) for line in calls.read_text().splitlines() if line.startswith("[")]
    assert len([argv for argv in logged if "-lms" in argv]) == 1, logged
    assert "stopped by SIGINT" in calls.read_text()  # ended when the sweep ended, flushing what it buffered


def test_a_checkout_for_another_tensorflow_is_warned_about(cli, tmp_path, fake_tf):
    vendor = make_vendor(tmp_path / "vendor", branch="cnn_tf_v1.12_compatible")
    manifest_path = vendor / "tfcnnwrap-setup.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["upstream_branches"] = ["cnn_tf_v1.12_compatible", "cnn_tf_v2.1_compatible", "master"]
    manifest_path.write_text(json.dumps(manifest))
    args = ["sweep", "--vendor-dir", vendor, "--device", "gpu", "--dry-run", "--models", "alexnet"]
    other = cli(*args, "--python", fake_tf("2.1.3"), cwd=tmp_path)
    assert other.returncode == 0, other
    assert "calls for cnn_tf_v2.1_compatible" in other.stderr
    assert all("tf_cnn_benchmarks.py" in line or line.startswith("#") for line in other.stdout.splitlines())
    same = cli(*args, "--python", fake_tf("1.12.0", dist="tensorflow-gpu"), cwd=tmp_path)
    assert same.returncode == 0 and "calls for" not in same.stderr


def _pids_with_env(marker):
    """Live processes whose environment holds ``marker`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes() and _alive(int(entry.name)):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal and /proc are Linux's")
def test_a_killed_gpu_sweep_leaves_no_benchmark_and_no_nvidia_smi(tmp_path, vendor, tf112):
    fake_dir = Path(__file__).resolve().parent / "fake"
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    marker = "TFCNNWRAP_TEST_MARKER=%s" % tmp_path.name
    env = ips_env(
        tmp_path / "state",
        FAKE_TFCNN_FAULTS="#2=hang",
        FAKE_TFCNN_READY_FIFO=fifo,
        TFCNNWRAP_NVIDIA_SMI=fake_dir / "nvidia-smi",
        TFCNNWRAP_TEST_MARKER=tmp_path.name,
    )
    proc = _start_sweep(sweep_args(vendor, tf112, tmp_path / "sweep"), tmp_path, env)
    bench_pid, _ = _wait_hanging(fifo)
    children = _pids_with_env(marker)
    assert bench_pid in children and len(children) >= 2  # the benchmark and its nvidia-smi
    proc.kill()
    proc.communicate()
    for pid in children:
        assert _wait_gone(pid), "process %d outlived the killed sweep" % pid


def test_device_gpu_still_records_what_tensorflow_sees(cli, tmp_path, vendor, fake_tf):
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("2.1.3"),
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--out",
        out,
        cwd=tmp_path,
        env={"FAKE_TF_GPUS": "GeForce RTX 2070", "TFCNNWRAP_NVIDIA_SMI": "none"},
    )
    assert result.returncode == 0, result
    env = json.loads((out / "sweep.json").read_text())["environment"]
    assert "GeForce RTX 2070" in json.dumps(env["gpus"])
    assert env["cuda_version"] == "11.2" and env["cudnn_version"] == "8"


def test_an_existing_out_is_refused_before_anything_slow(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path).returncode == 0
    # The interpreter does not even exist: the refusal must come first.
    result = cli("sweep", "--vendor-dir", vendor, "--python", tmp_path / "no" / "python", "--out", out)
    assert_clean_error(result, 2, "already holds a sweep")


def test_auto_device_honours_the_configured_nvidia_smi(cli, tmp_path, vendor, tf112):
    fake_smi = Path(__file__).resolve().parent / "fake" / "nvidia-smi"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--models",
        "alexnet",
        "--dry-run",
        cwd=tmp_path,
        env={"TFCNNWRAP_NVIDIA_SMI": fake_smi},
    )
    assert result.returncode == 0, result
    assert "--device=cpu" not in result.stdout and "nvidia-smi is present" in result.stderr


def test_hand_edited_sweep_files_are_refused_or_skipped_cleanly(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert cli(*sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path).returncode == 0
    with open(out / "runs.jsonl", "a") as fh:
        fh.write(json.dumps({"model": "alexnet", "batch_size": "x", "run": 2, "status": "ok"}) + "\n")
    rows = cli("report", out, "--format", "json").rows()
    assert rows[0]["runs_ok"] == 1
    meta = json.loads((out / "sweep.json").read_text())
    (out / "sweep.json").write_text(json.dumps(dict(meta, plan="x")))
    assert_clean_error(cli("report", out), 2, "not a sweep description")
    assert_clean_error(cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out), 2)


def test_keras_3_without_tf_keras_is_refused_with_the_install_command(cli, tmp_path, vendor, fake_tf):
    bare = fake_tf("2.21.0")
    result = cli("sweep", "--vendor-dir", vendor, "--python", bare, "--device", "cpu", "--out", tmp_path / "s")
    line = assert_clean_error(result, 2, "tf-keras", "-m pip install tf-keras")
    assert str(bare) in line
    assert not (tmp_path / "s").exists()
    ready = fake_tf("2.21.0", tf_keras=True)
    ok = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        ready,
        "--device",
        "cpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--out",
        tmp_path / "ok",
    )
    assert ok.returncode == 0, ok
