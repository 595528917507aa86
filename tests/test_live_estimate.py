"""An honest live view (issue 38.2): between upstream's step lines (one every 10 steps) the step is
extrapolated from the step rate and marked ``~``; a run that outlasts its estimate says so and the time left
grows with it instead of freezing, so the figure never jumps when that run ends; on Ctrl-C the resume hint
comes before the ``next:`` line."""

import os
import signal

import pytest
from test_live_view import _display, _record, _render, _Step
from test_screens import WIDTHS, pty_sweep, tf112  # noqa: F401 - tf112 is a fixture

from tfcnnwrap.run import logparse
from tfcnnwrap.sweep.live import TimeLeft, next_step_line


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("tfcnnwrap.sweep.live.time.monotonic", lambda: now[0])
    return now


def _flat(text):
    return " ".join(text.split())


# --- the step between upstream's lines -------------------------------------------------------------------


def test_upstream_prints_step_one_then_every_tenth():
    assert [next_step_line(s, 100) for s in (1, 10, 20, 95)] == [10, 20, 30, 100]
    assert next_step_line(1, 10) == 10 and next_step_line(10, 10) is None


def test_between_step_lines_the_step_is_extrapolated_from_upstreams_rate(clock):
    display = _display(clock, [("resnet50", 64, None)] * 2)
    display.run_started(1, "resnet50", 64, 1, 2, 10)
    display.stage(logparse.STAGE_TIMED)
    display.step(_Step(1, 32.0))  # 32 images/sec at 64 a step: a step every 2 s
    assert "timed step 1/10" in _flat(_render(display))
    clock[0] += 10.0
    assert "timed ~step 6/10" in _flat(_render(display))
    clock[0] += 100.0  # far past its rate: never beyond the step whose line has not come
    assert "timed ~step 9/10" in _flat(_render(display))
    display.step(_Step(10, 32.0))
    assert "timed step 10/10" in _flat(_render(display))


def test_after_two_step_lines_the_rate_is_the_one_the_lines_came_at(clock):
    display = _display(clock, [("resnet50", 64, 2)] * 2)
    display.run_started(1, "resnet50", 64, 1, 2, 100, num_gpus=2)
    display.stage(logparse.STAGE_TIMED)
    display.step(_Step(10, 6400.0))  # upstream's own figure says 50 steps/s (64 x 2 images a step)...
    clock[0] += 20.0
    display.step(_Step(20, 6400.0))  # ...but its lines came 10 steps in 20 s: that is the rate that counts
    clock[0] += 10.0
    assert "timed ~step 25/100" in _flat(_render(display))


# --- the time left ------------------------------------------------------------------------------------------


def test_a_run_over_its_estimate_says_so_and_the_figure_grows_instead_of_freezing(clock):
    display = _display(clock, [("resnet50", 64, None)] * 3)
    display.run_started(1, "resnet50", 64, 1, 3, 100)
    clock[0] += 100.0
    display.run_finished(1, _record("resnet50", 64, 1, 176.0, 100.0), 3)
    display.run_started(2, "resnet50", 64, 2, 3, 100)
    clock[0] += 100.0
    assert "~1m40s left" in _flat(_render(display))
    clock[0] += 60.0  # 60 s over the 100 s the first run took
    text = _flat(_render(display))
    assert "1m00s over its estimate" in text, text
    assert "~2m10s left" in text, text  # the last run at the mean of 100 s and this run's 160 s so far
    clock[0] += 20.0
    assert "~2m20s left" in _flat(_render(display))


def test_the_time_left_does_not_jump_when_a_late_run_ends():
    left = TimeLeft()
    left.expect([("resnet50", 64, None)] * 3)
    left.started(("resnet50", 64, None))
    left.finished(("resnet50", 64, None), 100.0)
    left.started(("resnet50", 64, None))
    key = ("resnet50", 64, None)
    before = [left.left(1, key, elapsed) for elapsed in range(0, 301, 5)]
    assert all(abs(b - a) <= 5.0 for a, b in zip(before, before[1:])), before  # no step bigger than the clock's
    left.finished(key, 300.0)
    assert left.left(1) == pytest.approx(before[-1])  # the run that ended late was already counted
    assert left.over(key, 150.0) is None and left.over(key, 260.0) == pytest.approx(60.0)
    assert TimeLeft().over(key, 5.0) is None  # nothing measured: nothing to be over


# --- Ctrl-C on a real terminal ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_on_ctrl_c_the_resume_hint_comes_before_the_next_line(tmp_path, tf112, columns):  # noqa: F811
    session = pty_sweep(tmp_path, tf112, columns, "alexnet", 2, FAKE_TFCNN_FAULTS="alexnet#2=slow")
    session.read_until("[1/2] alexnet bs=512 run 1/2", "timed step 100/100", timeout=60)
    os.killpg(session.proc.pid, signal.SIGINT)
    assert session.finish() == 130
    lines = session.lines()
    assert max(len(line) for line in lines) <= columns, lines
    resume = next(i for i, line in enumerate(lines) if line.startswith("interrupted"))
    after = next(i for i, line in enumerate(lines) if line.startswith("next:"))
    assert resume < after, "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_between_step_lines_a_real_sweep_shows_the_extrapolated_step(tmp_path, tf112, columns):  # noqa: F811
    # a step line every 3 s; upstream's 176 images/sec at 64 a step says 2.75 steps a second in between
    session = pty_sweep(tmp_path, tf112, columns, "resnet50", 1, "--num-batches", "30", FAKE_TFCNN_STEP_DELAY="3")
    screen = session.read_until("~step", timeout=60)
    os.killpg(session.proc.pid, signal.SIGINT)
    session.finish()
    line = next(line for line in screen if "~step" in line)
    assert "timed ~step " in line and "/30" in line, screen
    assert max(len(line) for line in screen) <= columns, screen
