"""`compare BASELINE CANDIDATE [CANDIDATE...]`: what differs between the sweeps, the 95% interval of each
change (Fieller), --fail-on-regression, several candidates, the newest sweeps by default, GPU counts and
fleet hosts."""

import dataclasses
import json
import random

import pytest
from conftest import assert_clean_error
from sweepdata import run_record, seed_runs, sweep_meta, write_sweep

from tfcnnwrap.compare.ab import change_interval, welch


def edit_meta(path, **changes):
    """Change sweep.json's top-level keys; ``environment`` and ``upstream`` are merged into what is there."""
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(meta.get(key), dict):
            meta[key].update(value)
        else:
            meta[key] = value
    (path / "sweep.json").write_text(json.dumps(meta, allow_nan=False), encoding="utf-8")
    return path


def write_records(path, pairs, records, **plan):
    """A sweep of ``records`` (RunRecords, with hosts, GPU counts, telemetry...) planned as ``pairs``."""
    (path / "logs").mkdir(parents=True)
    meta = sweep_meta(pairs, **plan)
    (path / "sweep.json").write_text(json.dumps(meta.to_dict(), allow_nan=False), encoding="utf-8")
    (path / "runs.jsonl").write_text(
        "".join(json.dumps(r.to_dict(), allow_nan=False) + "\n" for r in records), encoding="utf-8"
    )
    return path


# -- the interval of a change ----------------------------------------------------------------------------


def _fieller_by_root_finding(b, c):
    """The same interval found numerically: the ratios where (mc - r mb)^2 = t^2 (vc + r^2 vb)."""
    from scipy import optimize, stats

    nb, nc = len(b), len(c)
    mb, mc = sum(b) / nb, sum(c) / nc
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1) / nb
    vc = sum((x - mc) ** 2 for x in c) / (nc - 1) / nc
    df = (vb + vc) ** 2 / (vb**2 / (nb - 1) + vc**2 / (nc - 1))
    t = stats.t.ppf(0.975, df)

    def f(r):
        return (mc - r * mb) ** 2 - t * t * (vc + r * r * vb)

    r0 = mc / mb
    low = optimize.brentq(f, r0 * 0.01, r0)
    high = optimize.brentq(f, r0, r0 * 10)
    return (low - 1) * 100, (high - 1) * 100


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_change_interval_is_fiellers_and_agrees_with_the_test():
    rng = random.Random(13)
    for _ in range(40):
        nb, nc = rng.randint(2, 8), rng.randint(2, 8)
        shift = rng.uniform(-0.1, 0.1)
        b = [rng.gauss(100.0, rng.uniform(0.2, 5.0)) for _ in range(nb)]
        c = [rng.gauss(100.0 * (1 + shift), rng.uniform(0.2, 5.0)) for _ in range(nc)]
        low, high = change_interval(b, c)
        expected = _fieller_by_root_finding(b, c)
        assert (low, high) == pytest.approx(expected, rel=1e-6, abs=1e-6)
        change = (sum(c) / nc / (sum(b) / nb) - 1) * 100
        assert low <= change <= high
        _, significant = welch(b, c)
        # The interval excludes 0% exactly when Welch's test calls the change significant.
        assert significant == (low > 0 or high < 0)


def test_change_interval_edges():
    assert change_interval([1.0], [1.0, 2.0]) == (None, None)
    assert change_interval([100.0, 100.0], [90.0, 90.0]) == (pytest.approx(-10.0), pytest.approx(-10.0))
    # A baseline mean indistinguishable from zero: the interval of the ratio is unbounded.
    assert change_interval([-1.0, 1.0, 0.5], [5.0, 6.0]) == (None, None)
    # Not symmetric around the change: the baseline mean's uncertainty stretches the upper side.
    low, high = change_interval([90.0, 100.0, 110.0], [100.0, 101.0, 99.0])
    change = (100.0 / 100.0 - 1) * 100
    assert high - change > change - low > 0


# -- A/B from the command line ---------------------------------------------------------------------------


@pytest.fixture
def firmware(tmp_path):
    """F1.0 (baseline), H2D (resnet50 7% slower, the rest the same), H3 (resnet50 2% faster)."""
    base = {("resnet50", 64): [176.0, 177.0, 178.0], ("vgg16", 64): [110.0, 110.5, 109.5]}
    h2d = {("resnet50", 64): [163.0, 164.5, 165.0], ("vgg16", 64): [110.2, 109.8, 110.1]}
    h3 = {("resnet50", 64): [180.0, 181.0, 180.5], ("vgg16", 64): [110.0, 110.4, 109.7]}
    paths = [
        write_sweep(tmp_path / name, runs) for name, runs in (("egpu-F1.0", base), ("egpu-H2D", h2d), ("egpu-H3", h3))
    ]
    edit_meta(paths[0], environment={"nvidia_driver": "410.79"}, tensorflow_version="1.12.0")
    edit_meta(
        paths[1], environment={"nvidia_driver": "418.56"}, tensorflow_version="1.12.0", upstream={"commit": "1" * 40}
    )
    edit_meta(paths[2], environment={"nvidia_driver": "410.79"}, tensorflow_version="1.13.1")
    return paths


@pytest.mark.slow
def test_json_rows_carry_the_interval_and_the_configuration(cli, firmware):
    result = cli("compare", firmware[0], firmware[1], "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    r50 = rows[0]
    assert (r50["model"], r50["batch_size"], r50["num_gpus"]) == ("resnet50", 64, 1)
    assert r50["change_pct"] == pytest.approx((164.1666666 / 177.0 - 1) * 100, rel=1e-6)
    assert r50["significant"] is True
    assert r50["change_ci95_low"] < r50["change_pct"] < r50["change_ci95_high"] < 0
    vgg = rows[1]
    assert vgg["significant"] is False and vgg["change_ci95_low"] < 0 < vgg["change_ci95_high"]
    assert "candidate_dir" not in r50
    data = result.json()
    assert [r["model"] for r in rows] == ["resnet50", "vgg16"]  # the geometric mean has its own key
    assert data["baseline"] == str(firmware[0]) and data["candidates"] == [str(firmware[1])]
    assert data["geomean"][0]["candidate_dir"] == str(firmware[1])
    differences = [{k: d[k] for k in ("what", "baseline", "candidate")} for d in data["environment_differences"]]
    assert {"what": "driver", "baseline": "410.79", "candidate": "418.56"} in differences
    assert {d["what"] for d in differences} == {"driver", "commit"}


@pytest.mark.slow
def test_what_differs_is_listed_above_the_table(cli, firmware):
    for fmt in ("markdown", "table"):
        result = cli("compare", firmware[0], firmware[1], "--format", fmt)
        assert result.returncode == 0, result
        out = result.stdout
        assert "What differs (baseline -> candidate):" in out
        assert "driver: 410.79 -> 418.56" in out and "commit: 0000000000 -> 1111111111" in out
        assert out.index("What differs") < out.index("resnet50")
        assert "Fieller" in out
    same = cli("compare", firmware[0], firmware[0], "--format", "markdown")
    assert "Same environment" in same.stdout


def test_precision_and_plan_differences_are_named(capsys, tmp_path):
    a = write_sweep(tmp_path / "a", seed_runs(2))
    b = write_sweep(tmp_path / "b", seed_runs(2), extra_args=["--use_fp16"], num_batches=50)
    from tfcnnwrap.compare.ab import environment_differences
    from tfcnnwrap.results.comparesweep import Sweep

    found = {what: (x, y) for what, x, y in environment_differences(Sweep(a), Sweep(b))}
    assert found["precision"] == ("fp32", "fp16")
    assert found["plan num_batches"] == (None, 50)


@pytest.mark.slow
def test_fail_on_regression_names_the_configurations(cli, firmware):
    failed = cli("compare", firmware[0], firmware[1], "--fail-on-regression", "5")
    line = assert_clean_error(failed, 1, "resnet50 (batch 64) -7.3%", "more than 5%", "95% CI")
    assert "vgg16" not in line
    assert "geomean" in failed.stdout  # the comparison itself is still shown
    # Slower by less than the threshold, or faster: no failure.
    assert cli("compare", firmware[0], firmware[1], "--fail-on-regression", "8").returncode == 0
    assert cli("compare", firmware[0], firmware[2], "--fail-on-regression", "0").returncode == 0


@pytest.mark.slow
def test_a_drop_that_is_not_significant_never_fails(cli, tmp_path):
    base = write_sweep(tmp_path / "b", {("resnet50", 64): [176.0]})
    cand = write_sweep(tmp_path / "c", {("resnet50", 64): [150.0]})
    result = cli("compare", base, cand, "--fail-on-regression", "1", "--format", "json")
    assert result.returncode == 0, result
    assert result.rows()[0]["significant"] is None and result.rows()[0]["change_ci95_low"] is None


@pytest.mark.slow
def test_several_candidates_one_row_set_each(cli, firmware):
    result = cli("compare", *firmware, "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    assert [(r["model"], r["candidate_dir"]) for r in rows] == [
        ("resnet50", str(firmware[1])),
        ("vgg16", str(firmware[1])),
        ("resnet50", str(firmware[2])),
        ("vgg16", str(firmware[2])),
    ]
    assert [g["candidate_dir"] for g in result.json()["geomean"]] == [str(firmware[1]), str(firmware[2])]
    assert rows[2]["change_pct"] > 0
    text = cli("compare", *firmware, "--format", "markdown")
    assert text.stdout.count("against baseline egpu-F1.0") == 2
    assert "TensorFlow: 1.12.0 -> 1.13.1" in text.stdout
    failed = cli("compare", *firmware, "--fail-on-regression", "5")
    assert_clean_error(failed, 1, "in %s" % firmware[1])
    csv_out = cli("compare", *firmware, "--format", "csv")
    assert csv_out.stdout.splitlines()[0].endswith("candidate_dir")


@pytest.mark.slow
def test_no_directory_compares_the_two_newest_sweeps(cli, tmp_path):
    results = tmp_path / "elsewhere"
    for name, stamp, value in (
        ("old", "2026-11-28T10:00:00Z", 100.0),
        ("mid", "2026-11-29T10:00:00Z", 110.0),
        ("new", "2026-11-30T10:00:00Z", 121.0),
    ):
        edit_meta(write_sweep(results / name, {("resnet50", 64): [value, value]}), created_at=stamp)
    result = cli("compare", "--format", "json", env={"TFCNNWRAP_RESULTS": results})
    assert result.returncode == 0, result
    row = result.rows()[0]
    assert (row["baseline"], row["candidate"]) == (110.0, 121.0)
    assert_clean_error(cli("compare", cwd=tmp_path), 2, "results", "holds 0 sweeps", "TFCNNWRAP_RESULTS")
    ranked = cli("compare", "--rank", "--format", "json", env={"TFCNNWRAP_RESULTS": results})
    assert ranked.returncode == 0, ranked
    assert any(r["measured"] for r in ranked.rows())


def test_gpu_counts_are_configurations_of_their_own(capsys, tmp_path):
    records = [
        dataclasses.replace(run_record("resnet50", 64, k, v), num_gpus=g)
        for g, values in ((1, [170.0, 171.0]), (2, [330.0, 332.0]))
        for k, v in enumerate(values, 1)
    ]
    a = write_records(tmp_path / "a", [("resnet50", 64)], records, gpu_counts=[1, 2], runs=2)
    faster = [
        dataclasses.replace(r, images_per_sec=r.images_per_sec * (1.1 if r.num_gpus == 2 else 1.0)) for r in records
    ]
    b = write_records(tmp_path / "b", [("resnet50", 64)], faster, gpu_counts=[1, 2], runs=2)
    from tfcnnwrap.compare.ab import sweep_vs_sweep

    rows = {r.num_gpus: r for r in sweep_vs_sweep(a, b).rows}
    assert set(rows) == {1, 2}
    assert rows[1].change_pct == pytest.approx(0.0) and rows[2].change_pct == pytest.approx(10.0)


@pytest.fixture
def fleet(tmp_path):
    def sweep(name, by_host):
        records = [
            dataclasses.replace(run_record("resnet50", 64, k, v), host=host)
            for host, values in by_host.items()
            for k, v in enumerate(values, 1)
        ]
        return write_records(tmp_path / name, [("resnet50", 64)], records, runs=2)

    return (
        sweep("before", {"node1": [100.0, 101.0], "node2": [90.0, 91.0]}),
        sweep("after", {"node1": [100.0, 101.0], "node2": [99.0, 100.0]}),
    )


@pytest.mark.slow
def test_fleet_hosts_are_pooled_unless_one_is_picked(cli, fleet):
    pooled = cli("compare", *fleet, "--format", "json")
    assert pooled.returncode == 0, pooled
    row = pooled.rows()[0]
    assert row["baseline"] == pytest.approx(95.5) and row["baseline_runs"] == 4
    one = cli("compare", *fleet, "--host", "node1", "--format", "json").rows()[0]
    assert one["change_pct"] == pytest.approx(0.0) and one["baseline_runs"] == 2
    assert_clean_error(cli("compare", *fleet, "--host", "node9"), 2, "node9", "node1, node2")


@pytest.mark.slow
def test_ab_argument_rules(cli, firmware):
    assert_clean_error(
        cli("compare", firmware[0], "--against", "V100", "--fail-on-regression", "5"), 2, "--fail-on-regression"
    )
    assert_clean_error(cli("compare", firmware[0], firmware[1], "--strict"), 2, "--strict")
    assert_clean_error(cli("compare", firmware[0], firmware[1], "--per", "watt"), 2, "--rank")
    assert_clean_error(
        cli("compare", firmware[0], firmware[1], "--fail-on-regression", "-3"), 2, "--fail-on-regression"
    )


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process
def test_plot_of_several_candidates(capsys, monkeypatch, firmware, tmp_path):
    from tfcnnwrap import cli as cli_module

    monkeypatch.setenv("COLUMNS", "200")
    png = tmp_path / "ab.png"
    assert cli_module.main(["compare", *[str(p) for p in firmware], "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote %s" % png in capsys.readouterr().err
