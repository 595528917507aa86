"""Issue 14: thermals visible (telemetry fields, the warning), controlled (--cooldown, --cool-to), runs judged
for steadiness and outliers, and old sweeps still reported."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env

from tfcnnwrap.results import aggregate, quality
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.run import gpusamples, logparse, telemetry
from tfcnnwrap.sweep import cooling

FAKE_DIR = Path(__file__).resolve().parent / "fake"
FAKE_SMI = FAKE_DIR / "nvidia-smi"
POSIX = pytest.mark.skipif(os.name == "nt", reason="stand-ins are shebang scripts; FIFOs")
FULL = gpusamples.LEGACY_FIELDS + ("clocks_event_reasons.active",) + gpusamples.PCIE_FIELDS


def line(temp=70, clock=1800, power=200.0, util=98, reasons="0x0000000000000000", pcie=(3, 3, 16, 16), gpu=0):
    return "2026/11/30 10:00:00.000, %d, %s, %s, %s, %s, 7000, %s, %d, %d, %d, %d" % (
        (gpu, temp, clock, power, util, reasons) + tuple(pcie)
    )


HEADER = ", ".join(FULL)


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


# --- what the samples say ---------------------------------------------------------------------------------


def test_thermal_slowdown_is_named_and_makes_the_run_throttled_even_at_steady_clocks():
    lines = [HEADER] + [line()] * 10 + [line(temp=87, reasons="0x0000000000000020")] * 5
    summary = gpusamples.summarize_samples(lines)
    assert summary["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert summary["throttled"] is True and summary["clock_drop"] is False
    assert summary["max_temp_c"] == 87 and summary["skipped_lines"] == 0  # the header is no junk line


def test_power_cap_alone_is_listed_but_not_throttling_and_idle_bits_are_ignored():
    lines = [HEADER] + [line(reasons="0x4", power=250)] * 12 + [line(util=0, reasons="0x1", power=20)] * 4
    summary = gpusamples.summarize_samples(lines)
    assert summary["throttle_reasons"] == ["sw_power_cap"]
    assert summary["throttled"] is False
    assert summary["mean_power_w"] == 250  # over busy samples: the idle tail does not pull it down
    assert summary["max_power_w"] == 250


def test_pcie_link_shows_what_the_card_trained_to_against_what_it_could():
    lines = [HEADER] + [line(pcie=(1, 3, 4, 16), util=0)] * 3 + [line(pcie=(3, 3, 4, 16))] * 10
    link = gpusamples.summarize_samples(lines)["pcie_link"]
    assert link["text"] == "gen3 x4 of gen3 x16" and link["degraded"] is True


def test_an_older_driver_names_the_reasons_clocks_throttle_reasons():
    header = HEADER.replace("clocks_event_reasons", "clocks_throttle_reasons")
    summary = gpusamples.summarize_samples([header] + [line(reasons="0x40")] * 6)
    assert summary["throttle_reasons"] == ["hw_thermal_slowdown"] and summary["throttled"] is True


def test_a_file_without_header_is_read_with_the_legacy_fields():
    old = ["2026/11/30 10:00:00.000, 0, 66, 1800, 180.5, 97, 7000"] * 12
    summary = gpusamples.summarize_samples(old)
    assert summary["samples"] == 12 and summary["throttle_reasons"] == [] and summary["pcie_link"] is None
    assert summary["throttled"] is False


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize(
    "knows, reason",
    [
        ("event", "clocks_event_reasons.active"),
        ("throttle", "clocks_throttle_reasons.active"),
        ("nohelp", "clocks_throttle_reasons.active"),
        ("legacy", None),
    ],
)
def test_fields_are_chosen_from_what_the_driver_knows(monkeypatch, knows, reason):
    monkeypatch.setenv("FAKE_NVSMI_KNOWS", knows)
    fields = telemetry.choose_fields(FAKE_SMI)
    assert fields[:7] == gpusamples.LEGACY_FIELDS
    if reason is None:
        assert fields == gpusamples.LEGACY_FIELDS
    else:
        # without readable help, the trial query asks for the newer name first and falls back when refused
        wanted = "clocks_event_reasons.active" if knows == "nohelp" else reason
        assert fields == gpusamples.LEGACY_FIELDS + (wanted,) + gpusamples.PCIE_FIELDS


@pytest.mark.slow
@POSIX
def test_sampler_latest_reads_the_newest_tick_of_every_gpu(tmp_path, monkeypatch):
    script = tmp_path / "script.json"
    samples = [{"gpu": g, "temp": 50 + i * 10 + g, "clock": 1800} for i in range(3) for g in (0, 1)]
    script.write_text(json.dumps({"samples": samples}))
    fifo = tmp_path / "ready"
    os.mkfifo(str(fifo))
    monkeypatch.setenv("FAKE_NVSMI_SCRIPT", str(script))
    monkeypatch.setenv("FAKE_NVSMI_READY", str(fifo))
    tele = telemetry.Telemetry(nvidia_smi=str(FAKE_SMI))
    assert tele.latest() == {}
    sampler = tele.start(tmp_path / "s.gpu.csv")
    with open(str(fifo)) as fh:  # blocks until the stand-in has written every sample
        assert fh.readline() == "ready\n"
    latest = tele.latest()
    assert {i: s["temp_c"] for i, s in latest.items()} == {0: 70, 1: 71}
    sampler.stop()
    tele.close()


# --- within-run steadiness and outliers ---------------------------------------------------------------------


def test_step_rates_are_the_step_lines_not_the_total():
    log = (
        b"Step\tImg/sec\ttotal_loss\n1\timages/sec: 100.0 +/- 0.0 (jitter = 0.0)\t7.9\n"
        b"I1130 12:00:00.1 x.py:1] 10\timages/sec: 99.0 +/- 0.2 (jitter = 0.1)\t7.8\n"
        b"20\timages/sec: 98.0 +/- 0.2 (jitter = 0.1)\t7.7\ntotal images/sec: 98.50\n"
    )
    assert logparse.step_rates(log) == [100.0, 99.0, 98.0]


@pytest.mark.parametrize(
    "rates, drifting, drift",
    [
        ([100.0] * 9, False, 0.0),
        ([100, 100, 100, 99, 99, 99, 98, 98, 98], False, -2.0),
        ([100, 100, 100, 96, 96, 96, 90, 90, 90], True, -10.0),
    ],
)
def test_drift_compares_the_last_third_with_the_first(rates, drifting, drift):
    found = logparse.steadiness(rates)
    assert found.drifting is drifting and found.drift_pct == pytest.approx(drift)


def test_too_few_steps_give_no_verdict():
    assert logparse.steadiness([100.0, 99.0]) is None


def rec(run, ips, **kw):
    return RunRecord.from_dict(
        dict({"model": "resnet50", "batch_size": 64, "run": run, "status": "ok", "images_per_sec": ips}, **kw)
    )


def test_an_outlier_run_is_flagged_never_dropped():
    runs = [rec(1, 100.0), rec(2, 100.4), rec(3, 99.7), rec(4, 100.2), rec(5, 80.0)]
    row = aggregate.summarize(runs)[0]
    assert row.outlier_runs == (5,) and row.runs_ok == 5 and row.min == 80.0
    assert row.ci95_wide is True  # one slow run makes the interval wider than +-2 %
    steady = aggregate.summarize(runs[:4])[0]
    assert steady.outlier_runs == () and steady.ci95_wide is False


def test_summary_columns_from_telemetry_and_steadiness():
    tele = {
        "throttled": True,
        "max_temp_c": 86,
        "mean_power_w": 240.0,
        "mean_sm_clock_mhz": 1600,
        "throttle_reasons": ["sw_thermal_slowdown"],
        "pcie_link": {"text": "gen3 x4 of gen3 x16"},
    }
    runs = [
        rec(1, 100.0, telemetry=tele, drifting=True),
        rec(2, 101.0, telemetry=dict(tele, mean_power_w=260.0), drifting=False),
    ]
    row = aggregate.summarize(runs)[0].to_dict()
    assert row["mean_power_w"] == 250.0 and row["mean_sm_clock_mhz"] == 1600
    assert row["throttle_reasons"] == {"sw_thermal_slowdown": 2} and row["pcie_link"] == "gen3 x4 of gen3 x16"
    assert row["drifting_runs"] == 1 and row["throttled_runs"] == 2
    json.dumps(row, allow_nan=False)


def test_the_throttle_warning_names_the_reason_and_the_fix():
    tele = {"throttled": True, "max_temp_c": 84, "throttle_reasons": ["sw_thermal_slowdown"]}
    runs = [
        rec(1, 1.0, telemetry=tele),
        rec(2, 1.0, telemetry=dict(tele, max_temp_c=80)),
        rec(3, 1.0, telemetry={"throttled": False, "max_temp_c": 70}),
    ]
    assert quality.throttle_warning(runs) == (
        "2 of 3 runs throttled (thermal slowdown: sw_thermal_slowdown) — max 84 °C; try --cool-to 60 or better airflow"
    )
    assert quality.throttle_warning(runs[2:]) is None and quality.throttle_warning([rec(1, 1.0)]) is None


# --- waiting for a cool GPU ---------------------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeStops:
    """StopRequests' wait: advances the fake clock instead of sleeping; stops after ``stop_after`` waits."""

    def __init__(self, clock, stop_after=None):
        self.clock, self.waits, self.stop_after, self.requested = clock, [], stop_after, False

    def wait(self, seconds):
        self.waits.append(seconds)
        self.clock.now += seconds
        self.requested = self.stop_after is not None and len(self.waits) >= self.stop_after
        return self.requested


def test_cool_to_polls_until_every_gpu_is_cool_enough():
    clock = FakeClock()
    stops = FakeStops(clock)
    answers = iter([{0: 85, 1: 60}, {0: 70, 1: 58}, {0: 60, 1: 59}])
    shown = []
    waited, temps, reached = cooling.wait_until_cool(
        lambda: next(answers), 60, stops, shown.append, poll_s=2, clock=clock
    )
    assert reached and waited == 4 and temps == {0: 60, 1: 59} and stops.waits == [2, 2]
    assert shown[0] == "cooling: GPU 0 at 85 °C, waiting for <= 60 °C (0s of at most 600s)"


def test_cool_to_gives_up_after_ten_minutes_and_a_stop_ends_it_at_once():
    clock = FakeClock()
    waited, temps, reached = cooling.wait_until_cool(lambda: {0: 90}, 60, FakeStops(clock), poll_s=2, clock=clock)
    assert not reached and waited == 600 and temps == {0: 90}
    clock = FakeClock()
    stops = FakeStops(clock, stop_after=1)
    waited, _, reached = cooling.wait_until_cool(lambda: {0: 90}, 60, stops, poll_s=2, clock=clock)
    assert not reached and waited == 2


# --- through the CLI ----------------------------------------------------------------------------------------


def gpu_sweep_env(tmp_path, script):
    fifo = tmp_path / "nvsmi-ready"
    os.mkfifo(str(fifo))
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return {
        "PATH": str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        "FAKE_NVSMI_READY": fifo,
        "FAKE_TFCNN_WAIT_FIFO": fifo,
        "FAKE_NVSMI_SCRIPT": path,
        "TFCNNWRAP_COOL_POLL_S": "0.01",
    }


HOT = [{"temp": 70 + i, "clock": 1800, "power": 240.5, "util": 98, "pcie": [3, 3, 4, 16]} for i in range(8)]
HOT += [{"temp": 84, "clock": 1790, "power": 250.5, "util": 98, "reasons": "0x20", "pcie": [3, 3, 4, 16]}] * 6


@pytest.mark.slow
@POSIX
def test_a_throttling_sweep_is_visible_in_records_summary_and_warning(cli, tmp_path, vendor, fake_tf):
    out = tmp_path / "sweep"
    env = gpu_sweep_env(tmp_path, {"samples": HOT, "temps": [[84], [75], [58]]})
    env["FAKE_TFCNN_DRIFT"] = "-9"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("1.12.0", dist="tensorflow-gpu"),
        "--device",
        "gpu",
        "--models",
        "resnet50",
        "--runs",
        "2",
        "--cool-to",
        "60",
        "--out",
        out,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result
    assert (
        "2 of 2 runs throttled (thermal slowdown: sw_thermal_slowdown) — max 84 °C; try --cool-to 60" in result.stderr
    )
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    first = runs[0]
    assert first["start_temp_c"] == 58 and first["cooldown_s"] >= 0  # waited through 84 and 75 to 58
    tele = first["telemetry"]
    assert tele["throttle_reasons"] == ["sw_thermal_slowdown"] and tele["throttled"] is True
    assert tele["mean_power_w"] == pytest.approx((8 * 240.5 + 6 * 250.5) / 14, abs=0.01)
    assert tele["pcie_link"]["text"] == "gen3 x4 of gen3 x16"
    assert first["drifting"] is True and first["drift_pct"] < -3 and first["steady_images_per_sec"] > 0
    header = (out / "logs" / "resnet50-bs64-run1.gpu.csv").read_text().splitlines()[0]
    assert header.startswith("timestamp, index, temperature.gpu")
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["plan"]["cool_to_c"] == 60 and meta["plan"]["cooldown_s"] is None
    row = cli("report", out, "--format", "json").rows()[0]
    assert row["throttle_reasons"] == {"sw_thermal_slowdown": 2} and row["pcie_link"] == "gen3 x4 of gen3 x16"
    assert row["drifting_runs"] == 2 and row["mean_power_w"] > 240
    assert "throttle_reasons" in (out / "summary.csv").read_text().splitlines()[0]


@pytest.mark.slow
def test_cool_to_without_telemetry_is_one_warning(cli, tmp_path, vendor, tf112):
    # a GPU sweep without nvidia-smi (on the CPU --cool-to is refused: tests/test_advice.py)
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "2",
        "--cool-to",
        "60",
        "--cooldown",
        "0.2",
        "--out",
        tmp_path / "s",
        cwd=tmp_path,
        env={"TFCNNWRAP_NVIDIA_SMI": "none"},
    )
    assert result.returncode == 0, result
    assert result.stderr.count("--cool-to needs GPU telemetry") == 1
    runs = [json.loads(x) for x in (tmp_path / "s" / "runs.jsonl").read_text().splitlines()]
    assert [("start_temp_c" in r) for r in runs] == [False, False]
    assert runs[0]["cooldown_s"] < 0.2 <= runs[1]["cooldown_s"]  # no pause before the first run


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--cool-to", "5"], "--cool-to: must be a number from 20 to 100"),
        (["--cooldown", "-1"], "--cooldown: must be a number from 0"),
        (["--cooldown", "nan"], "--cooldown"),
    ],
)
def test_thermal_flags_are_bounded(cli, tmp_path, flags, needle):
    assert_clean_error(cli("sweep", "--dry-run", *flags, cwd=tmp_path), 2, needle)


@pytest.mark.slow
def test_a_resume_takes_its_cooling_from_the_plan(cli, tmp_path, vendor, tf112):
    out = tmp_path / "s"
    assert (
        cli(
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
            "1",
            "--cooldown",
            "2",
            "--out",
            out,
            cwd=tmp_path,
        ).returncode
        == 0
    )
    assert json.loads((out / "sweep.json").read_text())["plan"]["cooldown_s"] == 2
    assert_clean_error(cli("sweep", "--resume", out, "--cooldown", "5", cwd=tmp_path), 2, "drop --cooldown")


@pytest.mark.slow
@POSIX
def test_ctrl_c_ends_a_cooldown_pause_at_once(tmp_path, vendor, tf112):
    out = tmp_path / "s"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfcnnwrap",
            "sweep",
            "--vendor-dir",
            str(vendor),
            "--python",
            str(tf112),
            "--device",
            "cpu",
            "--models",
            "alexnet",
            "--runs",
            "2",
            "--cooldown",
            "3600",
            "--out",
            str(out),
        ],
        cwd=str(tmp_path),
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    for raw in proc.stdout:  # the plain display's line for run 1: the pause has begun (or is about to)
        if raw.startswith(b"[1/2]"):
            break
    proc.send_signal(signal.SIGINT)
    timer = threading.Timer(60, proc.kill)
    timer.start()
    try:
        proc.communicate()
    finally:
        timer.cancel()
    assert proc.returncode == 130
    assert len((out / "runs.jsonl").read_text().splitlines()) == 1  # run 2 never started


@pytest.mark.slow
def test_an_old_sweep_without_the_new_fields_still_reports(cli, tmp_path):
    src = Path(__file__).resolve().parent / "data" / "format1" / "base"
    shutil.copytree(str(src), str(tmp_path / "base"))
    result = cli("report", tmp_path / "base", "--format", "json")
    assert result.returncode == 0, result
    for row in result.rows():
        assert row["throttle_reasons"] == {} and row["mean_power_w"] is None and row["drifting_runs"] is None
        assert row["ci95_wide"] in (True, False, None) and row["outlier_runs"] == []
    assert cli("report", tmp_path / "base").returncode == 0


# --- report --plot ------------------------------------------------------------------------------------------


@pytest.mark.slow
@POSIX
def test_report_plot_draws_steps_and_gpu_readings(cli, tmp_path, vendor, fake_tf):
    out = tmp_path / "sweep"
    env = gpu_sweep_env(tmp_path, {"samples": HOT})
    env["FAKE_TFCNN_DRIFT"] = "-9"
    assert (
        cli(
            "sweep",
            "--vendor-dir",
            vendor,
            "--python",
            fake_tf("1.12.0", dist="tensorflow-gpu"),
            "--device",
            "gpu",
            "--models",
            "resnet50,alexnet",
            "--runs",
            "2",
            "--out",
            out,
            cwd=tmp_path,
            env=env,
        ).returncode
        == 0
    )
    png, svg = tmp_path / "runs.png", tmp_path / "runs.svg"
    result = cli("report", out, "--plot", png, "--format", "json")
    assert result.returncode == 0, result
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "wrote %s" % png in result.stderr
    assert len(result.rows()) == 2  # the report itself is unchanged
    assert cli("report", out, "--plot", svg).returncode == 0
    text = svg.read_text()
    assert "resnet50 bs=64" in text and "temperature" in text and "SM clock" in text and "power" in text
    if os.environ.get("TFCNNWRAP_KEEP_PLOT"):
        shutil.copy(str(png), os.environ["TFCNNWRAP_KEEP_PLOT"])


@pytest.mark.slow
def test_report_plot_into_a_missing_directory_is_refused_before_anything(cli, tmp_path):
    result = cli("report", tmp_path / "no-such-sweep", "--plot", tmp_path / "missing" / "runs.png")
    assert_clean_error(result, 2, "does not exist; create it first")


@pytest.mark.slow
def test_report_plot_of_an_old_cpu_sweep_has_step_panels_only(cli, tmp_path):
    src = Path(__file__).resolve().parent / "data" / "format1" / "base"
    shutil.copytree(str(src), str(tmp_path / "base"))
    result = cli("report", tmp_path / "base", "--plot", tmp_path / "old.svg")
    assert result.returncode == 0, result
    assert "temperature" not in (tmp_path / "old.svg").read_text()


def read_runs(out):
    return [json.loads(line) for line in (Path(out) / "runs.jsonl").read_text().splitlines() if line.strip()]


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
