"""`report --format html` and `compare --format html`: one self-contained page with the JSON's numbers as
text, hostile names as text, safe --out; and the pure parts (the number rule, chart geometry)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, assert_clean_error, cli_env
from htmldata import HOSTILE_GPU, missing_numbers, page_text, seed_sweep

from tfcnnwrap.pages import svgcharts
from tfcnnwrap.pages.reportpage import num

AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100"


def assert_self_contained(html):
    """No script, no stylesheet or font from elsewhere, nothing that fetches: the page works offline and with
    JavaScript off."""
    lowered = html.lower()
    assert "<script" not in lowered
    assert "<link" not in lowered and "@import" not in lowered and "url(" not in lowered
    _, links = page_text(html)
    assert not [u for u in links if u.startswith(("http:", "https:", "//"))], links
    assert "default-src 'none'" in html  # and a CSP that would block any fetch a hostile name smuggled in


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    return {
        "seed": seed_sweep(root / "seed", logs=True),
        "b": seed_sweep(root / "b", seed=2),
        "c": seed_sweep(root / "c", 1.04, seed=3),
        "d": seed_sweep(root / "d", 0.97, seed=4, gpus=[HOSTILE_GPU]),
    }


@pytest.mark.slow
def test_report_html_shows_every_number_of_the_json(cli, sweeps, tmp_path):
    page = cli("report", sweeps["seed"], "--format", "html")
    assert page.returncode == 0, page
    data = json.loads(cli("report", sweeps["seed"], "--format", "json").stdout)
    text, _ = page_text(page.stdout)
    assert not missing_numbers(data, text)
    assert_self_contained(page.stdout)
    for part in (
        "GeForce RTX 2070",
        "fp32",
        "no XLA",
        "1 GPU",
        "parameter_server",
        "synthetic data",
        "cnn_tf_v1.12_compatible",
    ):
        assert part in text
    assert "<table" in page.stdout and '<th scope="col">' in page.stdout
    assert page.stdout.count("<title id=") >= 1 and "<desc id=" in page.stdout  # charts: title + text


@pytest.mark.slow
@pytest.mark.parametrize("view", ["against", "rank", "ab"])
def test_compare_html_shows_every_number_of_the_json(cli, sweeps, view):
    args = {
        "against": [sweeps["seed"], "--against", AGAINST],
        "rank": [sweeps["seed"], "--rank"],
        "ab": [sweeps["b"], sweeps["c"], sweeps["d"]],
    }[view]
    page = cli("compare", *args, "--format", "html")
    assert page.returncode == 0, page
    data = json.loads(cli("compare", *args, "--format", "json").stdout)
    text, _ = page_text(page.stdout)
    if view == "against":  # each reference cell as the contract writes it, `203.99 (86.7%)`, in every format
        cells = [r["cell"] for row in data["rows"] for r in row["references"] if r.get("cell")]
        cells += [g["cell"] for g in data["geomean"] if g.get("cell")]
        assert cells and [c for c in cells if c not in text] == []
        data = {"rows": [{k: v for k, v in row.items() if k != "references"} for row in data["rows"]]}
    assert not missing_numbers(data, text)
    assert_self_contained(page.stdout)


@pytest.mark.slow
def test_hostile_gpu_name_is_text(cli, sweeps):
    page = cli("compare", sweeps["b"], sweeps["d"], "--format", "html").stdout
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert HOSTILE_GPU in page_text(page)[0]
    report = cli("report", sweeps["d"], "--format", "html").stdout
    assert "<img src=x" not in report and HOSTILE_GPU in page_text(report)[0]


@pytest.mark.slow
def test_logs_beside_the_page_are_linked_and_missing_ones_say_so(cli, sweeps, tmp_path):
    out = sweeps["seed"] / "report.html"
    assert cli("report", sweeps["seed"], "--format", "html", "--out", out).returncode == 0
    html = out.read_text(encoding="utf-8")
    _, links = page_text(html)
    logs = [u for u in links if u.startswith("logs/")]
    assert len(logs) == 15 and all((sweeps["seed"] / u).is_file() for u in logs)
    # the same sweep without its logs: each run says its log is missing, and nothing links to it
    bare = seed_sweep(tmp_path / "bare")
    assert cli("report", bare, "--format", "html", "--out", bare / "r.html").returncode == 0
    html = (bare / "r.html").read_text(encoding="utf-8")
    assert not [u for u in page_text(html)[1] if u.startswith("logs/")]
    assert html.count("missing: logs/") == 15


@pytest.mark.slow
def test_out_replaces_a_link_and_never_writes_through_it(cli, sweeps, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    out = tmp_path / "report.html"
    os.symlink(victim, out)
    result = cli("report", sweeps["seed"], "--format", "html", "--out", out)
    assert result.returncode == 0, result
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not out.is_symlink() and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
def test_out_in_a_missing_directory_or_on_a_directory_is_one_line(cli, sweeps, tmp_path):
    assert_clean_error(
        cli("report", sweeps["seed"], "--format", "html", "--out", tmp_path / "no" / "r.html"), 2, "does not exist"
    )
    assert_clean_error(
        cli("compare", sweeps["b"], sweeps["c"], "--format", "html", "--out", tmp_path), 2, "is a directory"
    )


@pytest.mark.slow
def test_help_does_not_import_jinja2():
    code = "import sys; from tfcnnwrap import cli; cli.build_parser(); print('jinja2' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=str(REPO_ROOT), env=cli_env(), stdout=subprocess.PIPE, check=True
    ).stdout
    assert out.strip() == b"False"


def test_number_rule():
    assert [num(v) for v in (3, 176.93333, 0.0, 0.004567, -12.3456, None, True, float("nan"))] == [
        "3",
        "176.93",
        "0.00",
        "0.00457",
        "-12.35",
        "\u2013",
        "yes",
        "\u2013",
    ]


def test_bar_chart_puts_zero_the_rule_and_whiskers_where_they_belong():
    chart = svgcharts.bar_chart(
        "t",
        [svgcharts.Bar("a", 50.0, "50", 40.0, 60.0), svgcharts.Bar("b", -20.0, "-20", kind="down")],
        rule=(100.0, "level"),
    )
    a, b = chart.bars
    zero = a["x"]
    assert b["x"] + b["w"] == pytest.approx(zero)  # a negative bar ends at zero, left of it
    assert a["whisker"]["x1"] < a["x"] + a["w"] < a["whisker"]["x2"]
    assert chart.rule["x"] > a["whisker"]["x2"]
    assert svgcharts.LABEL_W <= min(b["x"], zero) and chart.rule["x"] <= svgcharts.WIDTH


def test_line_chart_without_points_is_none():
    assert svgcharts.line_chart("t", [("run 1", [], "solid")]) is None


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "markdown", "csv"])
def test_out_writes_every_format(cli, sweeps, tmp_path, fmt):
    out = tmp_path / ("r." + fmt)
    result = cli("report", sweeps["seed"], "--format", fmt, "--out", out)
    assert result.returncode == 0 and result.stdout == "", result
    assert out.read_text(encoding="utf-8") == cli("report", sweeps["seed"], "--format", fmt).stdout
    ab = cli("compare", sweeps["b"], sweeps["c"], "--format", fmt, "--out", tmp_path / "ab")
    assert ab.returncode == 0 and (tmp_path / "ab").read_text(encoding="utf-8").strip(), ab


@pytest.mark.slow
def test_out_on_a_read_only_directory_is_one_line(cli, sweeps, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert_clean_error(cli("report", sweeps["seed"], "--format", "html", "--out", ro / "r.html"), 2, "cannot write")
    finally:
        ro.chmod(0o700)


@pytest.mark.slow
def test_report_plot_with_html_is_refused_in_one_line(cli, sweeps, tmp_path):
    assert_clean_error(
        cli("report", sweeps["seed"], "--format", "html", "--plot", tmp_path / "x.png"), 2, "draws its own charts"
    )


def test_flags_are_read_from_the_row_not_computed():
    from tfcnnwrap.pages.reportpage import flag_texts

    row = {"flags": ["outlier", "throttled"], "throttle_reasons": "sw_thermal_slowdown:3", "ci95_wide": True}
    assert flag_texts(row) == ["outlier", "throttled: sw_thermal_slowdown:3"]  # `flags` as the report set it
    older = {"outlier_runs": "2 5", "ci95_wide": True, "drifting_runs": 1, "throttled_runs": 0}
    assert flag_texts(older) == ["outlier runs 2 5", "wide CI", "drift (1 runs)"]
    assert flag_texts({"flags": []}) == []


@pytest.mark.slow
def test_flags_show_in_the_page(cli, tmp_path):
    from sweepdata import write_sweep

    values = {("resnet50", 64): [100.0, 101.0, 100.5, 99.8, 100.2, 140.0]}
    sweep = write_sweep(tmp_path / "s", values)
    data = json.loads(cli("report", sweep, "--format", "json").stdout)
    page = cli("report", sweep, "--format", "html").stdout
    text, _ = page_text(page)
    assert not missing_numbers(data, text)
    rows = data["rows"] if isinstance(data, dict) else data
    flags = rows[0].get("flags")
    expected = flags if flags else (["outlier runs"] if rows[0].get("outlier_runs") else [])
    assert expected and all(str(f if isinstance(f, str) else "") in text for f in expected)
    assert 'class="flagged"' in page


def test_scaling_chart_has_the_ideal_line():
    from tfcnnwrap.pages.reportpage import scaling_chart

    rows = [{"model": "resnet50", "num_gpus": n, "mean": m} for n, m in ((1, 100.0), (2, 180.0), (4, 300.0))]
    chart = scaling_chart(rows)
    assert [s["name"] for s in chart.series] == ["resnet50", "resnet50 ideal"]
    assert chart.series[1]["style"] == "dashed" and "4 GPUs 300.00" in chart.desc
    assert scaling_chart(rows[:1]) is None


@pytest.mark.slow
def test_run_charts_from_the_logs(cli, sweeps):
    page = cli("report", sweeps["seed"], "--format", "html").stdout
    assert page.count("images/sec of every step, per run</title>") == 5
    assert page.count("<polyline") >= 15


@pytest.mark.slow
def test_gpu_temperature_clock_and_power_over_the_run(cli, tmp_path):
    from sweepdata import write_sweep

    from tfcnnwrap.run.gpusamples import LEGACY_FIELDS

    sweep = write_sweep(tmp_path / "s", {("resnet50", 64): [176.9]})
    record = json.loads((sweep / "runs.jsonl").read_text(encoding="utf-8"))
    record["telemetry"] = {
        "samples_file": "resnet50-bs64-run1.gpu.csv",
        "max_temp_c": 83.0,
        "throttled": True,
        "throttle_reasons": ["sw_thermal_slowdown"],
        "mean_power_w": 170.0,
    }
    (sweep / "runs.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    lines = [", ".join(LEGACY_FIELDS)] + [
        "2026/11/30 10:15:%02d.000, 0, %d, %d, 170.5, 99, 7000" % (s, 70 + s, 1900 - 20 * s) for s in range(10)
    ]
    (sweep / "logs" / "resnet50-bs64-run1.gpu.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = cli("report", sweep, "--format", "html").stdout
    for title in ("GPU temperature (\u00b0C)", "GPU SM clock (MHz)", "GPU power (W)"):
        assert "resnet50 bs64: %s over seconds into the run" % title in page
    assert "run 1: 10 points from 70.00 to 79.00 \u00b0C" in page  # the chart's text alternative
    text, _ = page_text(page)
    assert "83.00" in text and "throttled" in text
