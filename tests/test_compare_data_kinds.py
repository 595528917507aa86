"""`compare` of sweeps that ran both data kinds (`sweep --data synthetic,generated`): each kind paired with the
same kind of the other sweep, a sweep of one kind included, and the kind named in every format."""

import csv
import io
import re

import pytest
from conftest import assert_clean_error
from sweepdata import write_both_kinds, write_sweep

pytestmark = pytest.mark.slow  # pandas' summaries of four sweeps, in process

FIGURES = {("resnet50", 64): {"synthetic": [200.0, 202.0], "real": [150.0, 151.0]}}


def test_a_sweep_of_both_kinds_against_one_of_synthetic_data_pairs_the_synthetic_runs(cli, tmp_path):
    both = write_both_kinds(tmp_path / "both", FIGURES)
    synthetic = write_sweep(tmp_path / "synthetic", {("resnet50", 64): [190.0, 192.0]})
    for baseline, candidate in ((both, synthetic), (synthetic, both)):
        result = cli("compare", baseline, candidate, "--format", "json", cwd=tmp_path)
        assert result.returncode == 0, result
        rows = {(r["model"], r["data"]): r for r in result.rows()}
        assert set(rows) == {("resnet50", "synthetic"), ("resnet50", "real")}, rows
        paired = rows[("resnet50", "synthetic")]
        assert paired["baseline"] is not None and paired["candidate"] is not None, paired
        assert paired["change_pct"] is not None
        only = rows[("resnet50", "real")]
        assert (only["baseline"] is None) is (baseline == synthetic) and (only["candidate"] is None) is (
            candidate == synthetic
        )
        assert result.json()["geomean"][0]["pairs"] == 1
    text = cli("compare", both, synthetic, cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert "Verdict: " in text


def test_a_sweep_of_generated_data_against_one_of_both_kinds_pairs_the_real_runs(cli, tmp_path):
    both = write_both_kinds(tmp_path / "both", FIGURES)
    real = write_sweep(tmp_path / "real", {("resnet50", 64): [140.0, 141.0]}, data_source="generated:64")
    rows = cli("compare", both, real, "--format", "json", cwd=tmp_path).rows()
    paired = {r["data"]: r for r in rows}["real"]
    assert paired["baseline"] == pytest.approx(150.5) and paired["candidate"] == pytest.approx(140.5)
    assert len(rows) == 2


def test_two_sweeps_of_one_kind_compare_as_before(cli, tmp_path):
    a = write_sweep(tmp_path / "a", {("resnet50", 64): [190.0, 192.0]})
    b = write_sweep(tmp_path / "b", {("resnet50", 64): [195.0, 196.0]})
    rows = cli("compare", a, b, "--format", "json", cwd=tmp_path).rows()
    assert len(rows) == 1 and "data" not in rows[0] and rows[0]["change_pct"] is not None


def test_compare_csv_names_each_rows_data_kind(cli, tmp_path):
    a = write_both_kinds(tmp_path / "a", FIGURES)
    b = write_both_kinds(tmp_path / "b", {("resnet50", 64): {"synthetic": [201.0, 203.0], "real": [149.0, 150.0]}})
    result = cli("compare", a, b, "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["model"], r.get("data")) for r in rows] == [
        ("resnet50", "synthetic"),
        ("resnet50", "real"),
        ("geomean", ""),
    ]
    one = write_sweep(tmp_path / "one", {("resnet50", 64): [190.0, 192.0]})
    plain = cli("compare", one, one, "--format", "csv", cwd=tmp_path).stdout
    assert "data" not in plain.splitlines()[0].split(",")  # a sweep of one kind: the columns as before


def test_fail_on_regression_names_the_data_kind_that_regressed_or_went_unmeasured(cli, tmp_path):
    a = write_both_kinds(tmp_path / "a", FIGURES)
    slower = write_both_kinds(
        tmp_path / "slower", {("resnet50", 64): {"synthetic": [201.0, 202.0], "real": [100.0, 101.0]}}
    )
    result = cli("compare", a, slower, "--fail-on-regression", "5", cwd=tmp_path)
    assert result.returncode == 1, result
    assert "resnet50 (batch 64, real data) -33." in result.stderr, result
    crashed = write_both_kinds(
        tmp_path / "crashed", {("resnet50", 64): {"synthetic": [201.0, 202.0], "real": ["crashed", "crashed"]}}
    )
    result = cli("compare", a, crashed, "--fail-on-regression", "5", cwd=tmp_path)
    assert result.returncode == 1, result
    assert "no ok candidate run to measure" in result.stderr and "resnet50 (batch 64, real data)" in result.stderr


def test_several_sweeps_some_of_both_kinds_name_the_one_kind_sweeps_runs_alike_in_every_comparison(cli, tmp_path):
    from tfcnnwrap.compare.ab import sweep_vs_sweeps
    from tfcnnwrap.present import plothistory

    first = write_sweep(tmp_path / "first", {("resnet50", 64): [190.0, 192.0]})
    second = write_sweep(tmp_path / "second", {("resnet50", 64): [194.0, 196.0]})
    both = write_both_kinds(tmp_path / "both", FIGURES)
    result = sweep_vs_sweeps(first, [second, both])
    assert {r.data for c in result.comparisons for r in c.rows} == {"synthetic", "real"}
    series = {s.label: [p.value for p in s.points] for s in plothistory.history_series(result)}
    assert series == {
        "resnet50, batch size 64, synthetic data": [191.0, 195.0, 201.0],
        "resnet50, batch size 64, real data": [150.5],
    }


def test_compare_html_names_each_rows_data_kind_in_its_table(cli, tmp_path):
    a = write_both_kinds(tmp_path / "a", FIGURES)
    b = write_both_kinds(tmp_path / "b", {("resnet50", 64): {"synthetic": [201.0, 203.0], "real": [149.0, 150.0]}})
    page = tmp_path / "ab.html"
    assert cli("compare", a, b, "--format", "html", "--out", page, cwd=tmp_path).returncode == 0
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))
    assert "model batch GPUs data baseline candidate" in text
    assert "resnet50 64 1 synthetic 201.00 202.00" in text and "resnet50 64 1 real 150.50 149.50" in text
    one = write_sweep(tmp_path / "one", {("resnet50", 64): [190.0, 192.0]})
    assert cli("compare", one, one, "--format", "html", "--out", tmp_path / "one.html", cwd=tmp_path).returncode == 0
    plain = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (tmp_path / "one.html").read_text(encoding="utf-8")))
    assert "model batch GPUs baseline candidate" in plain  # a sweep of one kind: the columns as before


def test_rank_of_a_sweep_of_both_kinds_without_an_ok_synthetic_run_says_which_runs_it_reads(cli, tmp_path):
    real_only = write_both_kinds(
        tmp_path / "s", {("resnet50", 64): {"synthetic": ["crashed", "crashed"], "real": [150.0, 151.0]}}
    )
    result = cli("compare", real_only, "--rank", cwd=tmp_path)
    assert_clean_error(result, 2, "no ok synthetic-data run", "--retry-failed")
    assert "no ok run yet" not in result.stderr  # it has two
    plot = cli("compare", real_only, "--against", "rtx2070", "--plot", tmp_path / "p.png", cwd=tmp_path)
    assert_clean_error(plot, 2, "nothing to plot", "no ok synthetic-data run")
