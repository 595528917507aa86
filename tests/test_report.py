"""`report` on what a sweep directory holds: a CPU sweep's title, a cut failure line, a fleet's columns,
totals near the float limit, --plot with nothing to plot or a path that names a directory, and the same on a
terminal of 60, 80 and 120 columns."""

import json
import os

import pytest
from conftest import assert_clean_error
from sweepdata import sweep_dir, write_both_kinds, write_sweep

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")


def test_a_cpu_sweeps_title_says_cpu_and_no_gpu(cli, tmp_path):
    path = write_sweep(tmp_path / "cpu", {("resnet50", 64): [4.1, 4.2]}, device="cpu")
    title = cli("report", path, env={"COLUMNS": "200"}).stdout.splitlines()[0]
    assert " · CPU" in title and "GPU" not in title, title
    towers = write_sweep(tmp_path / "towers", {("resnet50", 64): [4.1, 4.2]}, device="cpu", gpu_counts=[1, 2])
    title = cli("report", towers, env={"COLUMNS": "200"}).stdout.splitlines()[0]
    assert "1, 2 towers" in title and "batch per tower" in title and "GPU" not in title, title


def test_a_cut_failure_line_ends_with_an_ellipsis(cli, tmp_path):
    path = write_sweep(tmp_path / "s", {("resnet50", 64): [176.1, "crashed"]})
    runs = path / "runs.jsonl"
    records = [json.loads(x) for x in runs.read_text().splitlines()]
    records[1]["failure"] = "Traceback: " + "x" * 300
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    text = cli("report", path, env={"COLUMNS": "400"}).stdout
    (line,) = [x for x in text.splitlines() if "run 2: crashed" in x]
    assert line.endswith("x…") and line.count("x") == 200 - len("Traceback: ")
    short = write_sweep(tmp_path / "t", {("resnet50", 64): [176.1, "oom"]})
    assert "…" not in cli("report", short, env={"COLUMNS": "400"}).stdout


def fleet_sweep_dir(out):
    (out / "logs").mkdir(parents=True)
    meta = {
        "format": 1,
        "tool": "tfcnnwrap",
        "device": "gpu",
        "plan": {"models": [{"model": "resnet50", "batch_size": 64}], "runs": 2, "cluster": "slurm", "fleet": True},
    }
    (out / "sweep.json").write_text(json.dumps(meta))
    lines = []
    for host, values in {"node1": [200.0, 202.0], "node2": [201.0, 199.0], "node3": [180.0, 181.0]}.items():
        for run, value in enumerate(values, 1):
            lines.append(
                json.dumps(
                    {
                        "model": "resnet50",
                        "batch_size": 64,
                        "run": run,
                        "num_gpus": 1,
                        "status": "ok",
                        "images_per_sec": value,
                        "host": host,
                        "log": "logs/resnet50-bs64-run%d.%s.log" % (run, host),
                    }
                )
            )
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return out


def header_cells(text, marker):
    line = next(line for line in text.splitlines() if marker in line)
    return [c.strip() for c in (line.strip("|").split("|") if "|" in line else line.split("  ")) if c.strip()]


def test_fleet_report_names_host_and_vs_fleet_once(cli, tmp_path):
    out = fleet_sweep_dir(tmp_path / "fleet")
    table = cli("report", out, env={"COLUMNS": "200"})
    markdown = cli("report", out, "--format", "markdown")
    for text in (table.stdout, markdown.stdout):
        cells = header_cells(text, "mean img/s")
        assert cells.count("host") == 1 and cells.count("vs fleet %") == 1, cells
    header = cli("report", out, "--format", "csv").stdout.splitlines()[0].split(",")
    assert header.count("host") == 1 and header[-3:] == ["host", "vs_fleet_pct", "fleet_flag"]


def test_report_plot_with_no_ok_run_says_there_is_nothing_to_plot(cli, tmp_path):
    pytest.importorskip("matplotlib")
    dead = sweep_dir(tmp_path / "dead", [None, None])
    result = cli("report", dead, "--plot", tmp_path / "x.png")
    assert result.returncode == 0, result
    assert "nothing to plot" in result.stderr and "Warning" not in result.stderr, result.stderr
    assert not (tmp_path / "x.png").exists()


def test_report_plot_of_runs_whose_logs_are_gone_warns_nothing(cli, tmp_path):
    pytest.importorskip("matplotlib")
    ok = sweep_dir(tmp_path / "ok", [100.0, 101.0])
    result = cli("report", ok, "--plot", tmp_path / "x.png")
    assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr
    assert (tmp_path / "x.png").is_file()


@pytest.mark.parametrize(
    "verb, tail",
    [
        (["report"], os.sep),
        (["compare", "--against", "V100"], os.sep),
        (["report"], os.sep + "."),
        (["report"], os.sep + os.sep),
    ],
)
def test_plot_path_with_a_trailing_separator_is_refused(cli, tmp_path, verb, tail):
    ok = sweep_dir(tmp_path / "ok", [100.0, 101.0])
    result = cli(verb[0], ok, *verb[1:], "--plot", str(tmp_path / "a.png") + tail)
    assert_clean_error(result, 2, "--plot", "separator")
    assert not (tmp_path / "a.png").exists()


def test_totals_near_the_float_limit_have_a_mean(cli, tmp_path):
    huge = sweep_dir(tmp_path / "huge", [1.7e308, 1.7e308, 1.7e308])
    [row] = cli("report", huge, "--format", "json").rows()
    assert (row["runs_ok"], row["mean"], row["std"], row["median"]) == (3, 1.7e308, 0.0, 1.7e308)
    table = cli("report", huge, env={"COLUMNS": "200"})
    assert table.returncode == 0 and "1.70e+308" in table.stdout and "no ok run" not in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 200
    mixed = sweep_dir(tmp_path / "mixed", [1.7e308, 1.6e308, 1.5e308])
    [row] = cli("report", mixed, "--format", "json").rows()
    assert row["mean"] == pytest.approx(1.6e308) and row["std"] == pytest.approx(1e307)


@POSIX
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_fleet_report_and_huge_figures_on_a_terminal(tmp_path, columns):
    from ptyscreen import run_in_pty

    fleet = run_in_pty(["report", fleet_sweep_dir(tmp_path / "fleet")], columns=columns)
    assert fleet.returncode == 0 and fleet.widest() <= columns, fleet
    for line in fleet.lines:  # the header (wrapped when narrow), or a narrow screen's block per row
        assert line.split().count("host") <= 1 and line.split().count("vs") <= 1, fleet
    assert "node3" in fleet.text and "host" in fleet.text, fleet
    huge = run_in_pty(["report", sweep_dir(tmp_path / "huge", [1.7e308, 1.7e308, 1.7e308])], columns=columns)
    assert huge.returncode == 0 and huge.widest() <= columns, huge
    assert "1.70e+308" in huge.text and "999999" not in huge.text, huge


def test_what_the_input_path_costs_wraps_to_a_narrow_width_as_the_things_to_check_do(cli, tmp_path):
    both = write_both_kinds(tmp_path / "s", {("resnet50", 64): {"synthetic": [200.0, 202.0], "real": [150.0, 151.0]}})
    result = cli("report", "s", cwd=tmp_path, env={"COLUMNS": "60"})
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 60, result.stdout
    cost = next(i for i, line in enumerate(lines) if "real data -25.1% against synthetic" in line)
    assert lines[cost].startswith("  resnet50 bs=64: ") and lines[cost + 1].startswith("    "), result.stdout
    wide = cli("report", both, cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert "  resnet50 bs=64: real data -25.1% against synthetic (95% CI -27.8% to -22.3%)\n" in wide
