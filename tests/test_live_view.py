"""The live view never lies (issue 22.2): the progress resets between runs, the time left ticks with the clock
and comes from the durations runs took (per model), a pause counts down and goes when the next run starts,
the running run shows its stage from what its log says, finished runs keep their place."""

import dataclasses
import os
import signal
import sys

import pytest
from conftest import FAKE_SCRIPT, make_vendor
from test_screens import WIDTHS, PtySession, sweep_env, tf112  # noqa: F401 - tf112 is a fixture

from tfcnnwrap.run import logparse
from tfcnnwrap.sweep.live import LiveDisplay, PlainDisplay, TimeLeft, stage_text

STAGES_IN_ORDER = [
    logparse.STAGE_STARTING,
    logparse.STAGE_BUILDING,
    logparse.STAGE_WARMUP,
    logparse.STAGE_TIMED,
    logparse.STAGE_FINISHING,
]


class _Step:
    def __init__(self, step, ips):
        self.step, self.images_per_sec = step, ips


def _record(model, batch_size, run, value, duration_s, status="ok"):
    from tfcnnwrap.results.records import RunRecord

    return RunRecord.from_dict(
        {
            "model": model,
            "batch_size": batch_size,
            "run": run,
            "status": status,
            "images_per_sec": value,
            "exit_code": 0,
            "duration_s": duration_s,
            "started_at": None,
            "log": None,
            "command": [],
        }
    )


def _render(display, width=80):
    from rich.console import Console

    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    console.print(display)
    return console.export_text()


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("tfcnnwrap.sweep.live.time.monotonic", lambda: now[0])
    return now


def _display(clock, plan):
    from rich.console import Console

    display = LiveDisplay(Console(width=80, record=True, force_terminal=False, color_system=None))
    display.total = len(plan)
    display.expect(plan)
    return display


# --- the time left -----------------------------------------------------------------------------------------


def test_time_left_counts_each_model_at_its_own_measured_duration():
    left = TimeLeft()
    left.expect([("resnet50", 64, 1)] * 2 + [("alexnet", 512, 1)] * 2)
    assert left.left(4) is None  # nothing measured yet: no figure rather than a made-up one
    left.started(("resnet50", 64, 1))
    left.finished(("resnet50", 64, 1), 100.0)
    left.started(("alexnet", 512, 1))
    left.finished(("alexnet", 512, 1), 10.0)
    assert left.left(2) == pytest.approx(100.0 + 10.0)  # one of each left, not 2 x the 55 s mean
    left.pause_s = 30.0
    assert left.left(2) == pytest.approx(110.0 + 2 * 30.0)
    assert left.left(2, pause_left=12.0) == pytest.approx(110.0 + 12.0 + 30.0)


def test_a_model_not_measured_yet_counts_as_its_model_then_the_mean():
    left = TimeLeft()
    left.expect([("resnet50", 128, 1), ("vgg16", 64, 1)])
    left.finished(("resnet50", 64, 1), 100.0)
    left.finished(("alexnet", 512, 1), 20.0)
    assert left.run_s(("resnet50", 128, 1)) == 100.0  # same model, another batch size
    assert left.run_s(("vgg16", 64, 1)) == 60.0  # nothing of that model: every run's mean
    assert left.left(2) == pytest.approx(160.0)


def test_the_time_left_ticks_with_the_clock_while_a_run_prints_nothing(clock):
    display = _display(clock, [("resnet50", 64, None)] * 3)
    display.run_started(1, "resnet50", 64, 1, 3, 100)
    clock[0] += 90.0
    display.run_finished(1, _record("resnet50", 64, 1, 176.0, 90.0), 3)
    display.run_started(2, "resnet50", 64, 2, 3, 100)
    assert "~3m00s left" in _render(display)  # this run's 90 s and the last one's
    clock[0] += 30.0  # no step line, no event: only time passes
    assert "~2m30s left" in _render(display)
    clock[0] += 20.0
    assert "~2m10s left" in _render(display)


# --- between runs, a pause, the stage ------------------------------------------------------------------------


def test_between_runs_the_progress_resets_and_the_last_run_is_not_shown_as_running(clock):
    display = _display(clock, [("alexnet", 512, None)] * 2)
    display.run_started(1, "alexnet", 512, 1, 2, 100)
    display.stage(logparse.STAGE_TIMED)
    display.step(_Step(100, 2251.9))
    assert "timed step 100/100" in _render(display)
    clock[0] += 20.0
    display.run_finished(1, _record("alexnet", 512, 1, 2251.87, 20.0), 2)
    text = _render(display)
    assert "step 100/100" not in text and "alexnet bs=512 run 1/2" not in text, text
    assert "run 2 of 2" in text and "~20s left" in text, text


def test_a_pause_counts_down_and_goes_when_the_next_run_starts(clock):
    display = _display(clock, [("alexnet", 512, None)] * 2)
    display.run_started(1, "alexnet", 512, 1, 2, 100)
    clock[0] += 20.0
    display.run_finished(1, _record("alexnet", 512, 1, 2251.87, 20.0), 2)
    display.pause(30)
    text = _render(display)
    assert "pause before the next run: 30s left" in text and "~50s left" in text, text
    clock[0] += 12.0
    text = _render(display)
    assert "pause before the next run: 18s left" in text and "~38s left" in text, text
    display.waiting("cooling: GPU 0 at 71 °C, waiting for <= 60 °C (2s of at most 600s)")
    display.run_started(2, "alexnet", 512, 2, 2, 100)
    display.stage(logparse.STAGE_STARTING)  # what the runner says the moment the process runs
    text = _render(display)
    assert "pause" not in text and "cooling" not in text, text
    assert "alexnet bs=512 run 2/2  starting TensorFlow" in " ".join(text.split("\n")), text


def test_a_pause_that_ran_out_is_not_shown(clock):
    display = LiveDisplay(None)
    display.pause(5.0)
    clock[0] += 5.0
    assert display._pause_parts() == []


def test_the_running_line_of_a_sweep_of_both_data_kinds_names_the_kind_running(clock):
    display = _display(clock, [("resnet50", 64, None)] * 4)
    display.run_started(2, "resnet50", 64, 1, 2, 100, data="real")
    assert "resnet50 bs=64 real data run 1/2" in _render(display)
    clock[0] += 20.0
    display.run_finished(2, dataclasses.replace(_record("resnet50", 64, 1, 150.0, 20.0), data="real"), 2)
    display.run_started(3, "resnet50", 64, 2, 2, 100, data="synthetic")
    assert "resnet50 bs=64 synthetic data run 2/2" in _render(display)


@pytest.mark.parametrize(
    "stage, step, expected",
    [
        (logparse.STAGE_STARTING, 0, "starting TensorFlow"),
        (logparse.STAGE_BUILDING, 0, "building the model"),
        (logparse.STAGE_WARMUP, 0, "warm-up"),
        (logparse.STAGE_TIMED, 0, "timed steps"),
        (logparse.STAGE_TIMED, 40, "timed step 40/100"),
        (logparse.STAGE_FINISHING, 100, "finishing"),
        (None, 40, "step 40/100"),  # a cluster job reports steps, not stages
    ],
)
def test_the_running_line_names_the_stage(stage, step, expected):
    assert stage_text(stage, step, 100) == expected


def test_every_stage_fits_each_width(clock):
    for width in WIDTHS:
        display = _display(clock, [("inception3", 64, 2)] * 15)
        display.run_started(3, "inception3", 64, 3, 3, 100, num_gpus=2)
        for stage in STAGES_IN_ORDER:
            display.stage(stage)
            text = _render(display, width)
            assert max(len(line) for line in text.splitlines()) <= width, text
            assert stage.split()[0] in text, (stage, text)


def test_the_plain_display_prints_one_line_for_a_pause():
    import io

    out = io.StringIO()
    display = PlainDisplay(out)
    display.expect([("resnet50", 64, None)])
    display.pause(30)
    display.stage(logparse.STAGE_WARMUP)
    assert out.getvalue() == "cooling down: 30 s between runs (Ctrl-C stops)\n"


# --- the log's stages ----------------------------------------------------------------------------------------


def _stages_of(text):
    parser = logparse.LogParser()
    seen = [parser.stage]
    for line in text.splitlines():
        parser.feed(line)
        if parser.stage != seen[-1]:
            seen.append(parser.stage)
    return seen


UPSTREAM_LOG = """\
2026-11-30 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports AVX2 FMA
TensorFlow:  2.21
Model:       resnet50
==========
Generating training model
Initializing graph
Running warm up
Done warm up
Step\tImg/sec\ttotal_loss
1\timages/sec: 176.0 +/- 0.3 (jitter = 0.8)\t8.200
10\timages/sec: 176.9 +/- 0.3 (jitter = 0.8)\t8.150
----------------------------------------------------------------
total images/sec: 176.93
----------------------------------------------------------------
"""


def test_the_parser_reads_each_stage_from_upstreams_lines_in_order():
    assert _stages_of(UPSTREAM_LOG) == STAGES_IN_ORDER


def test_a_stage_never_goes_back_and_a_log_without_markers_goes_straight_to_timed():
    assert _stages_of(UPSTREAM_LOG + "Generating training model\nRunning warm up\n")[-1] == logparse.STAGE_FINISHING
    bare = "1\timages/sec: 176.0 +/- 0.3 (jitter = 0.8)\t8.200\ntotal images/sec: 176.93\n"
    assert _stages_of(bare) == [logparse.STAGE_STARTING, logparse.STAGE_TIMED, logparse.STAGE_FINISHING]


@pytest.mark.slow
def test_the_runner_reports_each_change_of_stage_of_a_real_process_once(tmp_path):
    from tfcnnwrap.run.runner import run_benchmark

    seen = []
    argv = [sys.executable, str(FAKE_SCRIPT), "--model=resnet50", "--batch_size=64", "--num_batches=20"]
    outcome = run_benchmark(argv, tmp_path, dict(os.environ), tmp_path / "run.log", timeout_s=60, on_stage=seen.append)
    assert outcome.status == "ok"
    # each change once, in order, from the moment it runs to its total; stages that came out in the same
    # chunk of output are passed over (the parser's own test sees every one)
    assert seen[0] == logparse.STAGE_STARTING and seen[-1] == logparse.STAGE_FINISHING
    assert seen == sorted(set(seen), key=STAGES_IN_ORDER.index), seen


# --- on a real terminal ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_live_sweep_mid_pause_then_mid_run_keeps_finished_lines_in_place(tmp_path, tf112, columns):  # noqa: F811
    vendor = make_vendor(tmp_path / "vendor")
    state = tmp_path / "state"
    state.mkdir()
    args = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--out",
        tmp_path / "out",
        "--models",
        "alexnet",
        "--runs",
        "3",
        "--cooldown",
        "3",
    ]
    session = PtySession(args, columns, tmp_path, sweep_env(state, FAKE_TFCNN_FAULTS="alexnet#3=slow"))
    paused = session.read_until("pause before the next run", "[1/3] alexnet bs=512 run 1/3", timeout=60)
    assert max(len(line) for line in paused) <= columns, paused
    assert not any("starting TensorFlow" in line or "timed step" in line for line in paused), paused
    assert any(" left" in line and "run 2 of 3" in line for line in paused), paused
    running = session.read_until("[2/3] alexnet bs=512 run 2/3", "timed step 100/100", timeout=60)
    assert max(len(line) for line in running) <= columns, running
    assert not any("pause before" in line for line in running), running
    first = [i for i, line in enumerate(running) if line.startswith("[1/3]")]
    second = [i for i, line in enumerate(running) if line.startswith("[2/3]")]
    assert first and second and first[0] == paused.index(next(li for li in paused if li.startswith("[1/3]")))
    assert first[0] < second[0] < next(i for i, line in enumerate(running) if "timed step 100/100" in line)
    os.killpg(session.proc.pid, signal.SIGINT)
    assert session.finish() == 130
