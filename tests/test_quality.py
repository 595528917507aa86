"""Issue 22.1: the quality verdict where people read (flags beside each mean, what to do under the table), and
22.4: one JSON envelope with typed values for every tabular `--format json`."""

import csv
import io
import json
import re

import pytest
from sweepdata import write_sweep

from tfcnnwrap import jsontext
from tfcnnwrap.results import aggregate, quality
from tfcnnwrap.results.records import RunRecord

# The figures: one slow run among five, and runs falling as the GPU soaks up heat.
OUTLIER = [176.1, 177.0, 176.5, 150.0, 176.8]
SOAK = [176.1, 170.8, 165.9]
STEADY = [2258.9, 2260.1, 2259.5]


def rec(run, value, **extra):
    return RunRecord.from_dict(
        dict({"model": "resnet50", "batch_size": 64, "run": run, "status": "ok", "images_per_sec": value}, **extra)
    )


def test_trend_compares_the_last_third_of_the_runs_with_the_first():
    assert quality.trend_pct(SOAK) == pytest.approx((165.9 / 176.1 - 1) * 100)
    assert quality.trend_pct([100, 101, 102, 103, 104, 110]) == pytest.approx((107 / 100.5 - 1) * 100)
    assert quality.trend_pct([100.0, 90.0]) is None  # no thirds to tell apart


@pytest.mark.parametrize(
    "verdict, flags",
    [
        (quality.Verdict(), []),
        (quality.Verdict(outlier_runs=(4,), ci95_pct=8.63), ["outlier", "wide CI"]),
        (quality.Verdict(ci95_pct=2.0, trend_pct=-3.0), []),  # at the limits is within them
        (quality.Verdict(ci95_pct=2.01, trend_pct=3.01), ["wide CI", "drift"]),
        (quality.Verdict(trend_pct=-5.8, throttled_runs=2, runs_ok=3), ["drift", "throttled"]),
    ],
)
def test_flags(verdict, flags):
    assert verdict.flags == flags


def test_each_problem_says_what_to_do():
    verdict = quality.Verdict(
        outlier_runs=(4,),
        ci95_pct=8.63,
        trend_pct=-5.8,
        throttled_runs=3,
        runs_ok=5,
        throttle_reasons=(("hw_thermal_slowdown", 3),),
        max_temp_c=86.0,
    )
    lines = quality.problems(verdict)
    assert len(lines) == 4
    assert lines[0].startswith("run 4 far from the others") and "--runs 10" in lines[0]
    assert "CI95 ±8.63%" in lines[1] and "--until-ci 2" in lines[1]
    assert "fell 5.8%" in lines[2] and "--cool-to 60" in lines[2]
    assert "3 of 5 runs throttled (hw_thermal_slowdown in 3, max 86 °C)" in lines[3] and "--cool-to" in lines[3]
    rising = quality.problems(quality.Verdict(trend_pct=4.0))
    assert rising == [
        "runs rose 4.0% from the first third to the last (still warming up?): more warm-up (--num-warmup-batches)"
    ]


def test_summary_rows_carry_the_flags_and_typed_values():
    row = aggregate.summarize([rec(i, v) for i, v in enumerate(OUTLIER, 1)])[0]
    assert row.outlier_runs == (4,) and row.ci95_wide is True and row.flags == ("outlier", "wide CI")
    soak = aggregate.summarize([rec(i, v) for i, v in enumerate(SOAK, 1)])[0]
    assert soak.trend_pct == pytest.approx(-5.792, abs=1e-3) and "drift" in soak.flags
    # run order, not file order: a resumed sweep appends run 1 after run 3
    shuffled = aggregate.summarize([rec(3, SOAK[2]), rec(1, SOAK[0]), rec(2, SOAK[1])])[0]
    assert shuffled.trend_pct == soak.trend_pct
    tele = {"throttled": True, "max_temp_c": 86, "throttle_reasons": ["hw_thermal_slowdown"]}
    hot = aggregate.summarize([rec(i, 100.0 + i / 100, telemetry=tele) for i in (1, 2, 3)])[0]
    assert hot.flags == ("throttled",) and hot.throttle_reasons == {"hw_thermal_slowdown": 3}


def test_three_runs_are_too_few_to_call_one_an_outlier():
    # 185.9, 187.2, 186.1: the MAD of three values is their smaller distance to the median
    assert aggregate.summarize([rec(i, v) for i, v in enumerate([185.9, 187.2, 186.1], 1)])[0].outlier_runs == ()


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    path = tmp_path_factory.mktemp("flagged") / "20261201-101500"
    write_sweep(path, {("resnet50", 64): OUTLIER, ("inception3", 64): SOAK, ("alexnet", 512): STEADY})
    return path


@pytest.mark.slow
def test_report_json_is_the_envelope_with_typed_values(cli, flagged):
    result = cli("report", flagged, "--format", "json")
    assert result.returncode == 0, result
    data = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(c))
    assert (data["format"], data["kind"]) == (2, "report")
    assert data["conditions"]["gpu"] == "GeForce RTX 2070" and data["conditions"]["precision"] == "fp32"
    assert data["conditions"]["xla"] is False and data["conditions"]["num_gpus"] == [1]
    rows = {r["model"]: r for r in data["rows"]}
    r50 = rows["resnet50"]
    assert r50["mean"] == 171.28 and r50["ci95_pct"] == pytest.approx(8.627, abs=1e-3)
    assert r50["outlier_runs"] == [4] and r50["ci95_wide"] is True and r50["flags"] == ["outlier", "wide CI"]
    assert r50["throttle_reasons"] == {}
    assert rows["inception3"]["flags"] == ["wide CI", "drift"] and rows["alexnet"]["flags"] == []


@pytest.mark.slow
def test_report_csv_writes_json_booleans_and_the_same_numbers(cli, flagged):
    rows = list(csv.DictReader(io.StringIO(cli("report", flagged, "--format", "csv").stdout)))
    data = {r["model"]: r for r in cli("report", flagged, "--format", "json").rows()}
    r50 = rows[0]
    assert r50["ci95_wide"] == "true" and rows[2]["ci95_wide"] == "false"
    assert float(r50["ci95_pct"]) == data["resnet50"]["ci95_pct"] and r50["std"] == str(data["resnet50"]["std"])
    assert json.loads(r50["flags"]) == ["outlier", "wide CI"] and json.loads(r50["outlier_runs"]) == [4]


@pytest.mark.slow
def test_report_table_and_markdown_flag_and_advise(cli, flagged):
    table = cli("report", flagged, env={"COLUMNS": "200"})
    assert table.returncode == 0, table
    line = next(x for x in table.stdout.splitlines() if x.startswith("resnet50"))
    assert line.rstrip().endswith("outlier, wide CI")
    assert "4 things to check:" in table.stdout
    assert "resnet50 bs=64: run 4 far from the others" in table.stdout
    assert "inception3 bs=64: runs fell 5.8%" in table.stdout
    assert not re.search(r"alexnet bs=512:", table.stdout)
    markdown = cli("report", flagged, "--format", "markdown").stdout
    assert "| outlier, wide CI |" in markdown and "- inception3 bs=64: CI95 ±7.41% is wider than ±2%" in markdown
    assert "|---|---:|---:|" in markdown  # numbers right-aligned


@pytest.mark.slow
def test_report_repeats_the_sweeps_throttle_warning(cli, tmp_path):
    path = write_sweep(tmp_path / "hot", {("resnet50", 64): [176.1, 176.3, 176.2]})
    runs = path / "runs.jsonl"
    tele = {"throttled": True, "max_temp_c": 84, "throttle_reasons": ["sw_thermal_slowdown"]}
    runs.write_text(
        "".join(json.dumps(dict(json.loads(x), telemetry=tele)) + "\n" for x in runs.read_text().splitlines())
    )
    result = cli("report", path)
    assert result.returncode == 0, result
    assert (
        "warning: 3 of 3 runs throttled (thermal slowdown: sw_thermal_slowdown) — max 84 °C; try --cool-to 60"
        in " ".join(result.stderr.split())
    )
    assert "3 of 3 runs throttled (sw_thermal_slowdown in 3, max 84 °C)" in " ".join(result.stdout.split())


@pytest.mark.slow
def test_an_xla_sweeps_title_says_xla(cli, tmp_path):
    # Plan.conditions() says xla "yes"; the title read only True, "on" and "true" and said "no XLA"
    path = write_sweep(tmp_path / "xla", {("resnet50", 64): [176.1, 176.3]}, xla=True)
    assert "· XLA ·" in cli("report", path, env={"COLUMNS": "200"}).stdout
    assert cli("report", path, "--format", "json").json()["conditions"]["xla"] is True


def test_one_json_writer():
    text = jsontext.dumps({"a": float("nan"), "b": (1, 2), "c": 176.92999999999998, "p": 9.8458282404278e-05})
    assert json.loads(text) == {"a": None, "b": [1, 2], "c": 176.93, "p": 9.8458282404278e-05}
    assert jsontext.csv_cell(True) == "true" and jsontext.csv_cell(None) == "" and jsontext.csv_cell([4]) == "[4]"
    from tfcnnwrap import render
    from tfcnnwrap.results import store

    assert not hasattr(store, "json_text") and render.dumps is jsontext.dumps
    with pytest.raises(ValueError):
        jsontext.envelope("nonsense", [])
