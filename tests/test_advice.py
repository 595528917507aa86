"""Issue 38.3: advice that is right. Drift is flagged only when the trend between runs exceeds the run-to-run
noise, and the advice fits the device a sweep ran on (no thermal advice on the CPU)."""

import pytest

from tfcnnwrap.results import aggregate, quality
from tfcnnwrap.results.records import RunRecord

NOISE = [3.88, 5.31, 3.76]  # the CPU runs: CV 20 %, last against first -3.1 %
SOAK = [176.1, 170.8, 165.9]  # a steady fall: heat soak


def rec(run, value):
    return RunRecord.from_dict(
        {"model": "resnet50", "batch_size": 64, "run": run, "status": "ok", "images_per_sec": value}
    )


def test_noise_is_not_drift():
    row = aggregate.summarize([rec(i, v) for i, v in enumerate(NOISE, 1)])[0]
    assert row.trend_pct == pytest.approx(-3.09, abs=0.01)
    assert row.trend_significant is False
    assert "drift" not in row.flags
    assert not any("fell" in line for line in quality.problems(aggregate.verdict(row)))


def test_a_steady_fall_is_drift():
    row = aggregate.summarize([rec(i, v) for i, v in enumerate(SOAK, 1)])[0]
    assert row.trend_significant is True and "drift" in row.flags


@pytest.mark.parametrize(
    "values, significant",
    [
        (NOISE, False),
        (SOAK, True),
        ([100.0, 100.0, 100.0], False),  # no trend at all
        ([100.0, 99.0], None),  # too few runs to tell
        ([100.0, 104.0, 108.0, 112.0], True),  # a perfect line: no noise at all
    ],
)
def test_the_trend_counts_when_its_interval_excludes_zero(values, significant):
    assert quality.trend_significant(values) is significant


def test_the_cpu_gets_no_thermal_advice():
    verdict = quality.Verdict(trend_pct=-5.8, trend_significant=True)
    gpu = quality.problems(verdict)
    cpu = quality.problems(verdict, device="cpu")
    assert "--cool-to" in gpu[0]
    assert len(cpu) == 1 and "--cool-to" not in cpu[0] and "heat" not in cpu[0]
    assert "fell 5.8%" in cpu[0]
