"""Issue 38.3: advice that is right. Drift is flagged only when the trend between runs exceeds the run-to-run
noise, and the advice fits the device a sweep ran on (no thermal advice on the CPU)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import cli_env

from tfcnnwrap.environment import quiet
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


# -- doctor: is the machine quiet? ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_load_average_high_for_the_cores_is_a_finding():
    assert quiet.load_findings(0.3, 2) == []
    assert quiet.load_findings(1.0, 2) == []  # one core's worth on two: at the limit
    found = quiet.load_findings(6.02, 2, [("python3", 4242, 97.5), ("cc1plus", 77, 60.0)])
    assert found == [
        (
            "load average 6.02 on 2 cores (1 minute), busiest: python3 (pid 4242: 98% CPU), cc1plus (pid 77: 60% CPU)",
            "stop them, or wait until the load is under 1, before benchmarking",
        )
    ]
    assert quiet.load_findings(20.0, 32) == [
        (
            "load average 20.00 on 32 cores (1 minute)",
            "stop what else runs, or wait until the load is under 16, before benchmarking",
        )
    ]


def test_the_busiest_processes_from_proc(tmp_path):
    def stat(pid, name, ticks):
        folder = tmp_path / "proc" / str(pid)
        folder.mkdir(parents=True, exist_ok=True)
        rest = ["S"] + ["0"] * 10 + [str(ticks), "0"] + ["0"] * 30
        (folder / "stat").write_text("%d (%s) %s\n" % (pid, name, " ".join(rest)))

    stat(10, "tf worker (x)", 100)
    stat(11, "idle", 5)
    before = quiet.proc_times(str(tmp_path))
    assert before == {10: ("tf worker (x)", 100), 11: ("idle", 5)}  # a name with brackets and spaces
    stat(10, "tf worker (x)", 150)
    stat(11, "idle", 6)
    after = quiet.proc_times(str(tmp_path))
    assert quiet.busiest(before, after, 0.5, 100) == [("tf worker (x)", 10, 100.0)]
    assert quiet.busiest(before, after, 0.5, 100, skip=[10]) == []


BUSY = (
    "import os, sys; os.getloadavg = lambda: (6.02, 5.0, 4.0); os.cpu_count = lambda: 2; "
    "from tfcnnwrap.cli import main; sys.exit(main())"
)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals and load averages are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_doctor_notices_a_machine_busy_on_every_core(fake_tf, tmp_path, columns):
    from conftest import make_vendor
    from ptyscreen import run_in_pty

    # a TensorFlow that sees no GPU, and its checkout: ready, on the CPU
    python = fake_tf("2.4.0")
    vendor = make_vendor(tmp_path / "vendor", branch="master", tf_version="2.4.0")
    argv = [sys.executable, "-c", BUSY, "doctor", "--python", str(python), "--vendor-dir", str(vendor)]
    screen = run_in_pty([], columns=columns, argv=argv, env={"TFCNNWRAP_NVIDIA_SMI": "none"}, cwd=tmp_path)
    assert screen.widest() <= columns, screen
    text = " ".join(screen.text.split())
    assert "load average 6.02 on 2 cores (1 minute)" in text, screen
    assert not [line for line in screen.lines if line.rstrip().endswith("(pid")], screen  # wrapped between parts
    assert "✓ machine quiet" not in text, screen
    assert "TensorFlow sees no GPU: running on the CPU" in text, screen  # the device note is shown
    assert "tfcnnwrap doctor`" not in text, screen  # and never sends you to the command you are reading
    as_json = subprocess.run(
        argv + ["--format", "json"],
        env=cli_env({"TFCNNWRAP_NVIDIA_SMI": "none"}),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=True,
    )
    report = json.loads(as_json.stdout)
    assert any(f["what"].startswith("load average 6.02") and f["fix"] for f in report["quiet"]), report["quiet"]


# -- --cool-to fits a GPU ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_cool_to_is_refused_on_a_cpu_sweep(fake_tf, vendor, tmp_path, columns):
    from ptyscreen import run_in_pty

    out = tmp_path / "out"
    screen = run_in_pty(
        [
            "sweep",
            "--vendor-dir",
            vendor,
            "--python",
            fake_tf("1.12.0"),
            "--device",
            "cpu",
            "--models",
            "alexnet",
            "--runs",
            "1",
            "--cool-to",
            "60",
            "--out",
            out,
        ],
        columns=columns,
        cwd=tmp_path,
    )
    assert screen.returncode == 2, screen
    text = " ".join(screen.text.split())
    assert "--cool-to waits for GPU temperatures" in text and "drop --cool-to" in text, screen
    assert "Traceback" not in text and not (out / "runs.jsonl").exists(), screen


# -- A/B: intervals bounded by what is possible, and a verdict per candidate --------------------------------


def _ab_sweep(path, values, model="trivial"):
    from sweepdata import sweep_dir

    path.mkdir(parents=True)
    return sweep_dir(path / "s", values, model=model)


def test_a_change_interval_never_goes_below_minus_100():
    from tfcnnwrap.compare.ab import change_interval, welch

    low, high = change_interval(NOISE, [1.0, 6.0, 0.2])  # a candidate whose mean is not clearly above zero
    assert low == -100.0 and high > 100.0
    assert welch(NOISE, [1.0, 6.0, 0.2])[1] is False  # and the interval holds 0%, as the test says
    assert change_interval([0.1, 10.0], [5.0, 5.1]) == (None, None)  # a baseline not clearly above zero


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_each_candidate_gets_a_verdict_and_no_impossible_interval(tmp_path, columns):
    import re

    from ptyscreen import run_in_pty

    base = _ab_sweep(tmp_path / "base", [100.0, 101.0, 99.0])
    faster = _ab_sweep(tmp_path / "faster", [152.0, 151.0, 153.0])
    noisy = _ab_sweep(tmp_path / "noisy", [1.0, 160.0, 0.2])
    unbounded = _ab_sweep(tmp_path / "unbounded", [100.0, 101.0])
    screen = run_in_pty(["compare", base, faster, noisy], columns=columns)
    assert screen.returncode == 0 and screen.widest() <= columns, screen
    text = " ".join(screen.text.split())
    assert "Verdict: s ran 1.52 ± 0.02 times faster than s (geomean of 1 configuration, 95% CI +" in text, screen
    assert "Verdict: no clear change: s ran 0.54 ± 0.92 times as fast as s" in text, screen
    assert not [p for p in re.findall(r"-(\d+\.\d)%", text) if float(p) > 100.0], screen
    near_zero = _ab_sweep(tmp_path / "zero", [0.1, 10.0])
    shown = run_in_pty(["compare", near_zero, unbounded], columns=columns)
    assert "unbounded" in " ".join(shown.text.split()), shown


@pytest.mark.slow
def test_the_geomean_carries_its_interval_and_verdict(cli, tmp_path):
    base = _ab_sweep(tmp_path / "base", [100.0, 101.0, 99.0])
    cand = _ab_sweep(tmp_path / "cand", [90.0, 91.0, 89.5])
    data = cli("compare", base, cand, "--format", "json").json()
    geomean = data["geomean"][0]
    assert geomean["change_pct"] == pytest.approx(-9.83, abs=0.01) and geomean["significant"] is True
    assert -100.0 < geomean["change_ci95_low"] < geomean["change_pct"] < geomean["change_ci95_high"] < 0
    assert geomean["verdict"].startswith("s ran 1.11 ± 0.01 times slower than s (geomean of 1 configuration")
    row = data["rows"][0]
    assert {"change_pct", "change_ci95_low", "change_ci95_high", "significant"} <= set(row)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_a_cpu_report_flags_no_noise_as_drift_and_gives_no_thermal_advice(tmp_path, columns):
    from ptyscreen import run_in_pty
    from test_cpu_device import cpu_sweep

    sweep = cpu_sweep(tmp_path / "20261201-101500", {"resnet50": 3.88})
    runs = sweep / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    for record, value in zip(records, NOISE):
        record["images_per_sec"] = value
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    screen = run_in_pty(["report", sweep], columns=columns)
    assert screen.returncode == 0 and screen.widest() <= columns, screen
    text = " ".join(screen.text.split())
    assert "wide CI" in text, screen  # the noise is named for what it is
    for wrong in ("drift", "fell", "heat", "--cool-to"):
        assert wrong not in text, screen
