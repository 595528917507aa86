"""GPU telemetry: the throttle rule on its own, and the sampler against a stand-in nvidia-smi."""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import pid_alive

from tfcnnwrap.run import telemetry
from tfcnnwrap.run.telemetry import Telemetry, summarize_samples, throttle_verdict

FAKE_DIR = Path(__file__).resolve().parent / "fake"
FAKE_NVSMI = FAKE_DIR / "nvidia-smi"
POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="the stand-in nvidia-smi is a shebang script")


def sample(temp=70, clock=1800, util=98, gpu=0, power="180.5", memory="7000"):
    return "2026/11/30 10:00:00.000, %s, %s, %s, %s, %s, %s" % (gpu, temp, clock, power, util, memory)


def run_of(*segments):
    """Lines from (count, clock, util) segments."""
    lines = []
    for count, clock, util in segments:
        lines += [sample(clock=clock, util=util, temp=60 + len(lines) % 20) for _ in range(count)]
    return lines


# --- the rule -------------------------------------------------------------------------------------------


def test_steady_clock_is_not_throttled():
    summary = summarize_samples(run_of((30, 1800, 98)))
    assert summary["throttled"] is False
    assert summary["early_sm_clock_mhz"] == 1800
    assert summary["mean_sm_clock_mhz"] == 1800
    assert summary["samples"] == summary["busy_samples"] == 30


def test_sustained_drop_below_ninety_percent_is_throttling():
    summary = summarize_samples(run_of((20, 1800, 98), (10, 1500, 98)))
    assert summary["throttled"] is True
    assert summary["early_sm_clock_mhz"] == 1800
    assert summary["min_sm_clock_mhz"] == 1500
    assert summary["low_sm_clock_mhz"] == 1500
    assert summary["mean_sm_clock_mhz"] == 1700


def test_idle_start_and_end_are_not_mistaken_for_throttling():
    summary = summarize_samples(run_of((8, 300, 0), (30, 1800, 97), (5, 300, 0)))
    assert summary["throttled"] is False
    assert summary["busy_samples"] == 30
    assert summary["early_sm_clock_mhz"] == 1800
    assert summary["samples"] == 43


def test_a_single_dip_is_not_throttling():
    summary = summarize_samples(run_of((15, 1800, 98), (1, 1000, 98), (14, 1800, 98)))
    assert summary["throttled"] is False
    assert summary["min_sm_clock_mhz"] == 1000


@pytest.mark.parametrize(
    "clocks, throttled",
    [
        ([1800] * 10 + [1600] * 5, True),  # 11 % below
        ([1800] * 10 + [1650] * 5, False),  # 8 % below
        ([1800] * 9, None),  # too short for an early level and one later window
    ],
)
def test_throttle_verdict_boundaries(clocks, throttled):
    assert throttle_verdict(clocks)[0] is throttled


def test_early_window_grows_with_long_runs():
    # 200 busy samples: the early level is the median of the first 20, so a slow first 8 do not count.
    clocks = [1500] * 8 + [1800] * 192
    throttled, early, lowest = throttle_verdict(clocks)
    assert early == 1800 and throttled is False


def test_not_available_values_and_junk_are_tolerated():
    lines = [sample(power="[N/A]", memory="[Not Supported]") for _ in range(12)] + [
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        "2026/11/30, 0, 7",
    ]
    summary = summarize_samples(lines)
    assert summary["samples"] == 12
    assert summary["skipped_lines"] == 2
    assert summary["max_power_w"] is None and summary["max_memory_used_mib"] is None
    assert summary["max_temp_c"] is not None


def test_without_utilization_every_sample_counts():
    lines = [sample(util="[N/A]", clock=c) for c in [1800] * 10 + [1400] * 5]
    summary = summarize_samples(lines)
    assert summary["mean_util_pct"] is None
    assert summary["busy_samples"] == 15
    assert summary["throttled"] is True


def test_several_gpus_report_the_busy_one():
    lines = []
    for i in range(20):
        lines.append(sample(gpu=0, clock=300, util=0, temp=35))
        lines.append(sample(gpu=1, clock=1800 if i < 10 else 1500, util=99, temp=80))
    summary = summarize_samples(lines)
    assert summary["gpu_index"] == 1
    assert summary["throttled"] is True
    assert summary["samples"] == 40
    assert summary["max_temp_c"] == 80
    assert set(summary["per_gpu"]) == {"0", "1"}
    assert summary["per_gpu"]["0"]["throttled"] is None  # never busy


def test_no_samples_at_all():
    summary = summarize_samples([])
    assert summary["samples"] == 0 and summary["throttled"] is None and summary["max_temp_c"] is None


def test_a_cut_off_last_line_is_dropped(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(sample() + "\n" + sample() + "\n" + "2026/11/30 10:00:02.000, 0, 7", encoding="utf-8")
    assert len(telemetry.read_sample_lines(path)) == 2


# --- the stand-in nvidia-smi ----------------------------------------------------------------------------


@pytest.fixture
def fake_nvsmi_on_path(monkeypatch):
    monkeypatch.setenv("PATH", str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv(telemetry.ENV_NVIDIA_SMI, raising=False)
    for name in ("FAKE_NVSMI_SAMPLES", "FAKE_NVSMI_RAW", "FAKE_NVSMI_FAIL", "FAKE_NVSMI_GPUS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def ready_fifo(tmp_path, monkeypatch):
    """The stand-in writes into this FIFO once its samples are out; ``wait()`` blocks until then."""
    path = tmp_path / "ready.fifo"
    os.mkfifo(str(path))
    monkeypatch.setenv("FAKE_NVSMI_READY", str(path))

    class Ready:
        def wait(self):
            got = {}

            def read():
                with open(path) as fh:
                    got["text"] = fh.readline()  # one line: the stand-in hands the next one to the next reader

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            reader.join(30)
            assert got.get("text") == "ready\n", "the stand-in nvidia-smi never got its samples out"

    return Ready()


@pytest.mark.slow
@POSIX_ONLY
def test_sampler_writes_samples_and_stop_summarises(fake_nvsmi_on_path, ready_fifo, tmp_path):
    tele = Telemetry()
    assert tele.available and tele.note is None
    assert Path(tele.path) == FAKE_NVSMI
    sampler = tele.start(tmp_path / "resnet50-bs64-run1.gpu.csv")
    ready_fifo.wait()
    process = sampler.feed.process
    assert process.poll() is None  # long-lived until the sweep ends
    assert os.getpgid(process.pid) == process.pid  # its own group: Ctrl-C is ours alone
    assert sampler.feed.args[-2:] == ["-lms", "1000"]
    wanted = telemetry.SAMPLE_FIELDS + ("clocks_event_reasons.active",) + telemetry.PCIE_FIELDS
    assert "--query-gpu=" + ",".join(wanted) in sampler.feed.args
    summary = sampler.stop()
    assert process.poll() is None  # the run's end is not the sampler's: the next run takes its share
    tele.close()
    assert process.returncode is not None
    # the stand-in's default run: 4 idle, 20 busy at 1800 MHz, 10 busy at 1500 MHz, 3 idle
    assert summary["samples"] == 37 and summary["busy_samples"] == 30
    assert summary["throttled"] is True
    assert summary["max_temp_c"] == 84
    assert summary["samples_file"] == "resnet50-bs64-run1.gpu.csv"
    assert "error" not in summary
    assert sampler.stop() is summary  # idempotent
    lines = (tmp_path / "resnet50-bs64-run1.gpu.csv").read_text().splitlines()
    assert len(lines) == 38 and lines[0] == ", ".join(wanted)  # a header row, then the samples


@pytest.mark.slow
@POSIX_ONLY
def test_sampler_with_a_cool_gpu_is_stopped_like_ctrl_c(fake_nvsmi_on_path, ready_fifo, tmp_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_SAMPLES", ";".join(["65,1900,99"] * 12))
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_ARGS_LOG", str(tmp_path / "calls.log"))
    tele = Telemetry(interval_ms=500)
    with tele.start(tmp_path / "s.csv") as sampler:
        ready_fifo.wait()
        assert sampler.feed.args[-1] == "500"
    summary = sampler.stop()
    tele.close()
    assert summary["throttled"] is False and summary["samples"] == 12 and summary["mean_sm_clock_mhz"] == 1900
    # SIGINT lets a real nvidia-smi flush its buffered last lines; SIGTERM would drop them
    assert (tmp_path / "calls.log").read_text().splitlines()[-1] == "stopped by SIGINT"


@pytest.mark.slow
@POSIX_ONLY
def test_an_nvidia_smi_deaf_to_ctrl_c_is_terminated(fake_nvsmi_on_path, ready_fifo, tmp_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_IGNORE_SIGINT", "1")
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_ARGS_LOG", str(tmp_path / "calls.log"))
    fake_nvsmi_on_path.setattr(telemetry, "INTERRUPT_WAIT_S", 0.2)
    tele = Telemetry()
    sampler = tele.start(tmp_path / "s.csv")
    ready_fifo.wait()
    summary = sampler.stop()
    tele.close()
    assert summary["samples"] == 37
    assert (tmp_path / "calls.log").read_text().splitlines()[-1] == "stopped by SIGTERM"


@pytest.mark.slow
@POSIX_ONLY
def test_malformed_output_and_a_cut_off_line(fake_nvsmi_on_path, ready_fifo, tmp_path):
    raw = "\\n".join([sample(power="[N/A]")] * 11 + ["[Unknown Error]", "2026/11/30 10:00:09.000, 0, 6"])
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_RAW", raw)
    tele = Telemetry()
    sampler = tele.start(tmp_path / "s.csv")
    ready_fifo.wait()
    summary = sampler.stop()
    tele.close()
    assert summary["samples"] == 11 and summary["skipped_lines"] == 1
    assert summary["max_power_w"] is None and "error" not in summary


@pytest.mark.slow
@POSIX_ONLY
def test_nvidia_smi_that_fails_gives_an_error_not_an_exception(fake_nvsmi_on_path, tmp_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_FAIL", "No devices were found")
    tele = Telemetry()
    sampler = tele.start(tmp_path / "s.csv")
    sampler.feed.process.wait(timeout=30)
    summary = sampler.stop()
    again = tele.start(tmp_path / "t.csv")  # an nvidia-smi that exited is started again for the next run
    assert again.feed is not sampler.feed
    again.feed.process.wait(timeout=30)
    assert "No devices were found" in again.stop()["error"]
    tele.close()
    assert summary["samples"] == 0
    assert "No devices were found" in summary["error"]


@pytest.mark.slow
@POSIX_ONLY
def test_stop_never_raises_when_the_samples_file_is_gone(fake_nvsmi_on_path, ready_fifo, tmp_path):
    tele = Telemetry()
    sampler = tele.start(tmp_path / "s.csv")
    ready_fifo.wait()
    (tmp_path / "s.csv").unlink()
    summary = sampler.stop()
    assert summary["samples"] == 0 and "could not read s.csv" in summary["error"]
    tele.close()
    assert sampler.feed.process.returncode is not None


@pytest.mark.slow
@POSIX_ONLY
def test_one_sampling_nvidia_smi_serves_every_run_each_with_its_own_samples(fake_nvsmi_on_path, ready_fifo, tmp_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_ARGS_LOG", str(tmp_path / "calls.log"))
    tele = Telemetry()
    first = tele.start(tmp_path / "run1.gpu.csv")
    ready_fifo.wait()  # the stand-in's round of samples for this run
    assert first.stop()["samples"] == 37
    assert first.feed.size() == 0  # emptied once the run took its samples: a long sweep keeps no more
    second = tele.start(tmp_path / "run2.gpu.csv")
    assert second.feed is first.feed
    ready_fifo.wait()
    assert second.stop()["samples"] == 37
    for name in ("run1.gpu.csv", "run2.gpu.csv"):
        assert len((tmp_path / name).read_text().splitlines()) == 38  # a header row, then its own round only
    tele.close()
    assert first.feed.process.returncode is not None
    logged = (tmp_path / "calls.log").read_text().splitlines()
    assert len([line for line in logged if "-lms" in line]) == 1, logged


class _Bytes:
    """A feed's file, as RunSamples reads it."""

    fields = telemetry.LEGACY_FIELDS

    def __init__(self, data):
        self.data = data

    def size(self):
        return len(self.data)

    def read(self, start, end):
        return self.data[start:end]


def test_a_runs_samples_leave_out_the_lines_being_written_at_its_start_and_end(tmp_path):
    before, half = sample(temp=50) + "\n" + sample(temp=51)[:10], sample(temp=51)[10:] + "\n"
    feed = _Bytes(before.encode())
    run = telemetry.RunSamples(feed, tmp_path / "run.gpu.csv", feed.size())  # it starts mid-line
    feed.data += (half + sample(temp=60) + "\n" + sample(temp=61) + "\n" + sample(temp=62)[:7]).encode()
    summary = run.stop()
    lines = (tmp_path / "run.gpu.csv").read_text().splitlines()
    assert lines[1:] == [sample(temp=60), sample(temp=61)]
    assert summary["samples"] == 2 and summary["max_temp_c"] == 61
    on_a_line = telemetry.RunSamples(feed, tmp_path / "next.gpu.csv", len(before) + len(half))
    assert on_a_line._lines().decode().splitlines() == [sample(temp=60), sample(temp=61)]
    on_a_line.stop()


@pytest.mark.slow
@POSIX_ONLY
def test_the_start_temperature_is_the_samplers_newest_tick_without_a_query(fake_nvsmi_on_path, ready_fifo, tmp_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_ARGS_LOG", str(tmp_path / "calls.log"))
    tele = Telemetry(interval_ms=60000)  # a tick is fresh for two intervals: no race with this machine's load
    assert tele.temps_now() == ({0: 40}, None)  # no sampler yet: asked (the stand-in's one-shot answer)
    run = tele.start(tmp_path / "run1.gpu.csv")
    ready_fifo.wait()
    run.stop()
    asked = (tmp_path / "calls.log").read_text()
    assert tele.temps_now() == ({0: 60}, None)  # the default round's last sample, between runs
    assert (tmp_path / "calls.log").read_text() == asked  # no process started for it
    tele.close()
    assert tele.temps_now() == ({0: 40}, None)


@pytest.mark.slow
def test_no_nvidia_smi_is_one_note_and_no_sampler(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(telemetry.ENV_NVIDIA_SMI, raising=False)
    monkeypatch.setattr(telemetry, "_WINDOWS_CANDIDATES", ())
    tele = Telemetry()
    assert tele.available is False
    assert tele.note == "nvidia-smi not found: no GPU telemetry"
    assert tele.start(tmp_path / "s.csv") is None
    assert not (tmp_path / "s.csv").exists()
    assert telemetry.query_gpus() is None


@pytest.mark.slow
@POSIX_ONLY
def test_the_environment_variable_switches_telemetry_off_or_points_at_it(fake_nvsmi_on_path, tmp_path):
    fake_nvsmi_on_path.setenv(telemetry.ENV_NVIDIA_SMI, "none")
    assert Telemetry().available is False
    fake_nvsmi_on_path.setenv("PATH", str(tmp_path))
    fake_nvsmi_on_path.setenv(telemetry.ENV_NVIDIA_SMI, str(FAKE_NVSMI))
    assert Telemetry().path == str(FAKE_NVSMI)
    fake_nvsmi_on_path.delenv(telemetry.ENV_NVIDIA_SMI)
    assert Telemetry(nvidia_smi=str(FAKE_NVSMI)).available is True


@pytest.mark.slow
@POSIX_ONLY
def test_an_nvidia_smi_that_cannot_start_leaves_a_note(tmp_path):
    broken = tmp_path / "nvidia-smi"
    broken.write_bytes(b"\x00\x01 not a program")
    broken.chmod(0o755)
    tele = Telemetry(nvidia_smi=str(broken))
    assert tele.available
    assert tele.start(tmp_path / "s.csv") is None
    assert tele.available is False and tele.note.startswith("cannot start nvidia-smi")


@pytest.mark.slow
@POSIX_ONLY
def test_query_gpus_reads_name_driver_and_memory(fake_nvsmi_on_path):
    fake_nvsmi_on_path.setenv("FAKE_NVSMI_GPUS", "NVIDIA GeForce RTX 2070;NVIDIA A100-SXM4, 80GB")
    info = telemetry.query_gpus()
    assert info["driver_version"] == "417.35"
    assert [g["name"] for g in info["gpus"]] == ["NVIDIA GeForce RTX 2070", "NVIDIA A100-SXM4, 80GB"]
    assert info["gpus"][0] == {
        "index": 0,
        "name": "NVIDIA GeForce RTX 2070",
        "driver_version": "417.35",
        "memory_total_mib": 8192,
    }
    assert "error" not in info


@pytest.mark.slow
@POSIX_ONLY
def test_query_gpus_when_the_driver_is_not_loaded(fake_nvsmi_on_path):
    fake_nvsmi_on_path.setenv(
        "FAKE_NVSMI_FAIL", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    info = telemetry.query_gpus()
    assert info["gpus"] == []
    assert "couldn't communicate" in info["error"] and "exit 9" in info["error"]


# --- issue 11, item 15: one bad sample must not drop the whole summary ------------------------------------


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-inf", "", "[N/A]", "[Unknown Error]"])
def test_a_bad_value_is_skipped_for_its_field_only(bad):
    lines = [sample(temp=60 + i) for i in range(12)]
    lines.append(sample(temp=bad, clock=bad, power=bad, util=bad, memory=bad))
    lines.append(sample(gpu=bad))  # no GPU index: the line is no sample
    summary = summarize_samples(lines)
    assert summary["samples"] == 13 and summary["skipped_lines"] == 1
    assert summary["max_temp_c"] == 71 and summary["max_power_w"] == 180.5
    assert summary["mean_sm_clock_mhz"] == 1800 and summary["mean_util_pct"] == 98
    import json

    json.dumps(summary, allow_nan=False)  # strict JSON: no NaN or Infinity anywhere


POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX pipes, sessions and signals")


def gone(pid):
    return not pid_alive(pid, wait_s=10.0)


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
    feed = telemetry._Feed(str(FAKE_DIR / "nvidia-smi"), 1000, tuple(telemetry.LEGACY_FIELDS))  # the sweep's one
    deadline = time.monotonic() + 30
    while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < deadline:
        threading.Event().wait(0.05)  # the stand-in writes its pids as it starts; bounded
    started = time.monotonic()
    feed.close(_Stopped() if stopped else None)
    took = time.monotonic() - started
    assert not fifo.exists()
    assert took < (2 if stopped else 15), took
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), "the hung nvidia-smi's child outlived the sampler"
