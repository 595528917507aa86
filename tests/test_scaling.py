"""Scaling sweeps (`sweep --num-gpus 1,2,4`): every model at every count, the count check before anything runs,
speed-up and efficiency in report and summary.csv, the scaling view and chart. Driven through the CLI against
the stand-in tf_cnn_benchmarks, whose totals scale with --num_gpus (FAKE_TFCNN_GPU_EFFICIENCY)."""

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from conftest import assert_clean_error, make_vendor
from sweepdata import run_record

from tfcnnwrap.errors import UsageError
from tfcnnwrap.results import plan as plan_module
from tfcnnwrap.results.aggregate import add_scaling, summarize
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.run import telemetry
from tfcnnwrap.run.logparse import parse_file
from tfcnnwrap.sweep.main import check_gpu_counts

ONE_GPU = {"resnet50": 176.93, "vgg16": 110.23}  # the stand-in's default one-device figures


@pytest.fixture
def tf24(fake_tf):
    return fake_tf("2.4.0")


@pytest.fixture
def vendor(tmp_path):
    """The checkout TensorFlow 2.4 calls for (no branch warning to tell apart from ours)."""
    return make_vendor(tmp_path / "vendor", branch="master", tf_version="2.4.0")


def scaling_env(tmp_path, efficiency="0.9", **extra):
    env = {
        "FAKE_TFCNN_GPU_EFFICIENCY": efficiency,
        "FAKE_TFCNN_STATE": str(tmp_path / "state"),
        telemetry.ENV_NVIDIA_SMI: "none",
    }
    env.update(extra)
    return env


def read_runs(sweep_dir):
    lines = (Path(sweep_dir) / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def scaling_sweep(cli, tmp_path, vendor, python, counts="1,2,4", *more, env=None):
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        python,
        "--out",
        out,
        "--models",
        "resnet50,vgg16",
        "--num-gpus",
        counts,
        "--runs",
        "2",
        "--num-batches",
        "20",
        *more,
        cwd=tmp_path,
        env=env or scaling_env(tmp_path),
    )
    return out, result


# -- the sweep ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_scaling_sweep_runs_every_model_at_every_count_and_reports_speedup(cli, tmp_path, vendor, tf24):
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2,4", "--device", "cpu")
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [(r["model"], r["num_gpus"], r["run"]) for r in runs] == [
        (m, g, k) for m in ("resnet50", "vgg16") for g in (1, 2, 4) for k in (1, 2)
    ]
    for r in runs:
        # weak scaling: the batch size stays per device; the count goes to tf_cnn_benchmarks
        assert r["batch_size"] == {"resnet50": 64, "vgg16": 64}[r["model"]]
        assert "--num_gpus=%d" % r["num_gpus"] in r["command"] and "--device=cpu" in r["command"]
        assert r["log"] == "logs/%s-bs64-g%d-run%d.log" % (r["model"], r["num_gpus"], r["run"])
        parsed = parse_file(str(out / r["log"]))
        assert r["images_per_sec"] == parsed.total_images_per_sec
        assert r["images_per_sec"] == pytest.approx(
            ONE_GPU[r["model"]] * r["num_gpus"] * (0.9 if r["num_gpus"] > 1 else 1), abs=0.01
        )
        log = (out / r["log"]).read_text(encoding="utf-8")
        assert "Devices:     %s" % ["/cpu:%d" % i for i in range(r["num_gpus"])] in log

    report = cli("report", out, "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report
    rows = report.rows()
    assert [(r["model"], r["num_gpus"]) for r in rows] == [(m, g) for m in ("resnet50", "vgg16") for g in (1, 2, 4)]
    for row in rows:
        want = row["num_gpus"] * (0.9 if row["num_gpus"] > 1 else 1)
        assert row["speedup"] == pytest.approx(want, rel=1e-4)
        assert row["efficiency_pct"] == pytest.approx(want / row["num_gpus"] * 100, rel=1e-4)
    summary = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text(encoding="utf-8"))))
    assert [float(r["speedup"]) for r in summary] == pytest.approx([r["speedup"] for r in rows])
    assert [float(r["efficiency_pct"]) for r in summary] == pytest.approx([r["efficiency_pct"] for r in rows])
    # The sweep's own summary ends with the scaling view
    assert re.search(r"resnet50 .*\b4 .*\b3\.60x .*\b90\.0%", result.stdout), result.stdout


@pytest.mark.slow
def test_the_dry_run_lists_every_count(cli, tmp_path, vendor, tf24):
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf24,
        "--device",
        "cpu",
        "--models",
        "resnet50",
        "--num-gpus",
        "1,2,8",
        "--runs",
        "1",
        "--dry-run",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    counts = re.findall(r"--num_gpus=(\d+)", result.stdout)
    assert counts == ["1", "2", "8"] and "# 3 runs" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "counts, needle",
    [
        ("1,1", "lists a value twice"),
        ("0,2", "from 1 to 64"),
        ("1,,2", "no empty item"),
        ("2,65", "from 1 to 64"),
        ("1,x", "from 1 to 64"),
    ],
)
def test_bad_gpu_counts_are_refused_in_one_line(cli, tmp_path, counts, needle):
    result = cli("sweep", "--num-gpus", counts, "--dry-run", cwd=tmp_path)
    assert result.returncode == 2 and needle in result.stderr and "--num-gpus" in result.stderr, result
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_count_above_the_gpus_tensorflow_sees_is_refused_before_anything_runs(cli, tmp_path, vendor, tf24):
    env = scaling_env(tmp_path, FAKE_TF_GPUS="NVIDIA A100,NVIDIA A100")
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2,4", "--device", "gpu", env=env)
    line = assert_clean_error(result, 2, "--num-gpus 1,2,4", "asks for 4 GPUs", "TensorFlow sees 2 GPUs")
    assert "up to 2" in line
    assert not out.exists() and not (tmp_path / "state").exists()  # nothing ran, nothing written

    env = scaling_env(tmp_path, FAKE_TF_GPUS="")
    _, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2", "--device", "gpu", env=env)
    assert_clean_error(result, 2, "asks for 2 GPUs", "TensorFlow sees no GPU")


@pytest.mark.slow
def test_counts_within_the_gpus_seen_run(cli, tmp_path, vendor, tf24):
    env = scaling_env(tmp_path, FAKE_TF_GPUS="NVIDIA A100,NVIDIA A100")
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2", "--device", "gpu", env=env)
    assert result.returncode == 0, result
    assert {r["num_gpus"] for r in read_runs(out)} == {1, 2}
    assert "GPUs" not in result.stderr


@pytest.mark.slow
def test_on_the_cpu_any_count_goes_even_with_no_gpu(cli, tmp_path, vendor, tf24):
    env = scaling_env(tmp_path, FAKE_TF_GPUS="")
    # --device auto without a GPU resolves to the CPU: tf_cnn_benchmarks makes CPU towers
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,8", env=env)
    assert result.returncode == 0, result
    assert [r["num_gpus"] for r in read_runs(out)] == [1, 1, 8, 8, 1, 1, 8, 8]


@pytest.mark.slow
def test_when_tensorflow_cannot_tell_a_count_above_one_warns_and_runs(cli, tmp_path, vendor, fake_tf):
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")  # no device listing: the probe cannot tell
    out, result = scaling_sweep(cli, tmp_path, vendor, tf112, "1,2", "--device", "gpu")
    assert result.returncode == 0, result
    assert "could not say how many GPUs" in result.stderr and "needs 2" in result.stderr
    assert len(read_runs(out)) == 8


def test_check_gpu_counts_tri_state():
    assert check_gpu_counts([1, 2], "cpu", ()) is None
    assert check_gpu_counts([1], "gpu", ()) is None  # --device gpu insists: unchanged
    assert check_gpu_counts([1, 2], "gpu", ("A", "B")) is None
    assert "could not say" in check_gpu_counts([1, 4], "gpu", None)
    with pytest.raises(UsageError, match=r"asks for 4 GPUs but TensorFlow sees 1 GPU \(A\)"):
        check_gpu_counts([4], "gpu", ("A",))


@pytest.mark.slow
def test_resume_re_runs_only_the_failed_run_of_its_own_count(cli, tmp_path, vendor, tf24):
    env = scaling_env(tmp_path, FAKE_TFCNN_FAULTS="#3=crash")  # resnet50 at 2 GPUs, run 1
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2", "--device", "cpu", env=env)
    assert result.returncode == 1, result
    failed = [(r["model"], r["num_gpus"], r["run"]) for r in read_runs(out) if r["status"] != "ok"]
    assert failed == [("resnet50", 2, 1)]
    resumed = cli("sweep", "--resume", out, "--retry-failed", cwd=tmp_path, env=scaling_env(tmp_path))
    assert resumed.returncode == 0, resumed
    runs = read_runs(out)
    assert len(runs) == 9 and (runs[-1]["model"], runs[-1]["num_gpus"], runs[-1]["run"]) == ("resnet50", 2, 1)
    rows = cli("report", out, "--format", "json", cwd=tmp_path).rows()
    assert [r["runs_ok"] for r in rows] == [2, 2, 2, 2] and rows[1]["speedup"] == pytest.approx(1.8, rel=1e-4)


@pytest.mark.slow
def test_without_a_one_gpu_row_speedup_is_null(cli, tmp_path, vendor, tf24):
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "2,4", "--device", "cpu")
    assert result.returncode == 0, result
    rows = cli("report", out, "--format", "json", cwd=tmp_path).rows()
    assert [(r["num_gpus"], r["speedup"], r["efficiency_pct"]) for r in rows] == [(2, None, None), (4, None, None)] * 2


@pytest.mark.slow
def test_a_single_count_sweep_has_no_scaling_columns(cli, tmp_path, vendor, tf24):
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "2", "--device", "cpu")
    assert result.returncode == 0, result
    assert {r["num_gpus"] for r in read_runs(out)} == {2}
    assert read_runs(out)[0]["log"] == "logs/resnet50-bs64-run1.log"  # named as before
    rows = cli("report", out, "--format", "json", cwd=tmp_path).rows()
    assert all("speedup" not in r and "efficiency_pct" not in r for r in rows)
    assert "speedup" not in (out / "summary.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "Scaling" not in result.stdout


# -- report's view -----------------------------------------------------------------------------------------


@pytest.fixture
def scaled(cli, tmp_path, vendor, tf24):
    out, result = scaling_sweep(cli, tmp_path, vendor, tf24, "1,2,4", "--device", "cpu")
    assert result.returncode == 0, result
    return out


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
@pytest.mark.parametrize("columns", [80, 120])
def test_the_scaling_view_fits_the_terminal(scaled, columns):
    from ptyscreen import run_in_pty

    screen = run_in_pty(["report", scaled], columns=columns)
    assert screen.returncode == 0, screen
    assert screen.widest() <= columns, screen
    text = screen.text
    start = text.index("Scaling (batch size per tower)")  # a CPU sweep: its counts are towers (test_cpu_towers)
    view = text[start:]
    for header in ("towers", "img/s", "ideal img/s", "speed-up", "efficiency"):
        assert header in view, screen
    assert re.search(r"vgg16 .*\b2 .*198\.41 .*220\.46 .*1\.80x .*90\.0%", view), screen
    assert re.search(r"resnet50 .*\b1 .*176\.93 .*176\.93 .*1\.00x .*100\.0%", view), screen


@pytest.mark.slow
def test_markdown_and_csv_carry_the_scaling_figures(cli, scaled, tmp_path):
    md = cli("report", scaled, "--format", "markdown", cwd=tmp_path)
    assert md.returncode == 0, md
    assert "### Scaling (batch size per tower)" in md.stdout  # a CPU sweep: towers
    assert "| vgg16 | 64 | 4 | 396.83 | 440.92 | 3.60x | 90.0% |" in md.stdout
    rows = list(csv.DictReader(io.StringIO(cli("report", scaled, "--format", "csv", cwd=tmp_path).stdout)))
    assert [r["num_gpus"] for r in rows] == ["1", "2", "4"] * 2
    assert float(rows[2]["speedup"]) == pytest.approx(3.6, rel=1e-4)


@pytest.mark.slow
def test_report_plot_of_a_scaling_sweep_draws_the_scaling_chart_and_the_runs_beside_it(cli, scaled, tmp_path):
    chart = tmp_path / "scaling.png"
    result = cli("report", scaled, "--plot", chart, cwd=tmp_path)
    assert result.returncode == 0, result
    beside = tmp_path / "scaling-runs.png"
    for png in (chart, beside):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    assert "wrote %s and %s" % (chart, beside) in result.stderr


# -- pure parts ----------------------------------------------------------------------------------------------


def record(model, gpus, run, value, host=None):
    return RunRecord.from_dict(
        dict(run_record(model, 64, run, value).to_dict(), num_gpus=gpus, **({"host": host} if host else {}))
    )


def test_add_scaling_pairs_each_row_with_its_own_models_one_gpu_mean_per_host():
    runs = [
        record("resnet50", 1, 1, 100.0, "a"),
        record("resnet50", 2, 1, 150.0, "a"),
        record("resnet50", 1, 1, 200.0, "b"),
        record("resnet50", 2, 1, 390.0, "b"),
        record("vgg16", 2, 1, 50.0, "a"),
        record("vgg16", 1, 1, "oom", "a"),
    ]
    rows = {(r.model, r.num_gpus, r.host): r for r in summarize(runs)}
    assert rows[("resnet50", 2, "a")].speedup == pytest.approx(1.5)
    assert rows[("resnet50", 2, "a")].efficiency_pct == pytest.approx(75.0)
    assert rows[("resnet50", 2, "b")].speedup == pytest.approx(1.95)
    assert rows[("vgg16", 2, "a")].speedup is None  # its 1-GPU runs all failed
    assert rows[("vgg16", 1, "a")].to_dict()["speedup"] is None
    single = summarize([record("resnet50", 1, 1, 100.0), record("resnet50", 1, 2, 101.0)])
    assert add_scaling(single) == single and "speedup" not in single[0].to_dict()


@pytest.mark.parametrize("value, counts", [([1, 2, 4], [1, 2, 4]), ("1,2", [1, 2]), (2, [2]), ("4", [4]), (None, [1])])
def test_build_plan_reads_gpu_counts(value, counts):
    from test_plan import sweep_args

    assert plan_module.gpu_counts(value) == counts
    given = None if value is None else tuple(plan_module.gpu_counts(value))
    plan = plan_module.build_plan(sweep_args(num_gpus=given))
    assert plan.counts == counts and plan.num_gpus == counts[0]
    assert plan.scaling is (len(counts) > 1)
    assert plan_module.Plan.from_dict(plan.to_dict()).counts == counts


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process
def test_scaling_chart(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from tfcnnwrap.present.plotscaling import plot_scaling, scaling_panel

    runs = [
        record(m, g, k, base * g * (1.0 if g == 1 else 0.8) + k)
        for m, base in ONE_GPU.items()
        for g in (1, 2, 4)
        for k in (1, 2)
    ]
    runs += [record("alexnet", 2, 1, 900.0)]  # no 1-GPU row: no efficiency, named in the title
    rows = summarize(runs)
    ax = Figure().add_subplot()
    scaling_panel(ax, rows)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["ideal", "resnet50", "vgg16"]
    assert list(ax.get_lines()[1].get_ydata()) == pytest.approx([100.0, 80.0, 80.0], abs=0.5)
    assert "no 1-GPU runs: alexnet" in ax.get_title()
    from_dicts = Figure().add_subplot()
    scaling_panel(from_dicts, [row.to_dict() for row in rows])  # report --format json's rows draw the same
    assert [list(line.get_ydata()) for line in from_dicts.get_lines()] == [
        list(line.get_ydata()) for line in ax.get_lines()
    ]
    path = plot_scaling(rows, tmp_path / "scaling.png")
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(UsageError, match="directory"):
        plot_scaling(rows, tmp_path / "missing" / "scaling.png")


def test_a_scaling_sweep_of_both_data_kinds_scales_each_kind_against_its_own_one_gpu_mean():
    from tfcnnwrap.results.records import SummaryRow

    rows = [
        SummaryRow(model="resnet50", batch_size=64, num_gpus=g, data=d, mean=m)
        for g, d, m in ((1, "synthetic", 200.0), (1, "real", 100.0), (2, "synthetic", 380.0), (2, "real", 150.0))
    ]
    scaled = {(r.num_gpus, r.data): r.speedup for r in add_scaling(rows)}
    assert scaled == {(1, "synthetic"): 1.0, (1, "real"): 1.0, (2, "synthetic"): 1.9, (2, "real"): 1.5}
