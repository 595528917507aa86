"""`compare`: a sweep against references (the seed's table), sweep against sweep, formats and --plot."""

import csv
import io
import json
import math
import os

import pytest
from conftest import REPO_ROOT, assert_clean_error
from sweepdata import SEED_2070, seed_runs, sweep_dir, write_sweep

from tfcnnwrap import cli as cli_module
from tfcnnwrap.compare.ab import welch
from tfcnnwrap.errors import UsageError
from tfcnnwrap.results.plan import Plan

SEED_AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100"

# The seed's table, cell by cell, as its author wrote it: reference images/sec (2070 / reference).
SEED_CELLS = {
    "resnet50": ["203.99 (86.7%)", "209.89 (84.3%)", "286.05 (61.9%)", "190.58 (92.8%)", "386.63 (45.8%)"],
    "resnet152": ["82.83 (75.1%)", "82.78 (75.2%)", "110.24 (56.4%)", "68.71 (90.6%)", "131.69 (47.2%)"],
    "inception3": ["130.2 (87.0%)", "141.9 (79.8%)", "189.31 (59.8%)", "103.82 (109.1%)", "242.7 (46.7%)"],
    "vgg16": ["133.16 (82.8%)", "123.01 (89.6%)", "169.28 (65.1%)", "101.95 (108.1%)", "233 (47.3%)"],
    "alexnet": ["2720.59 (83.0%)", "2567.38 (88.0%)", "3550.11 (63.6%)", "1573.01 (143.6%)", "4707.67 (48.0%)"],
}
SEED_REFS = {
    "1080-Ti": [203.99, 82.83, 130.2, 133.16, 2720.59],
    "2080": [209.89, 82.78, 141.9, 123.01, 2567.38],
    "2080-Ti": [286.05, 110.24, 189.31, 169.28, 3550.11],
    "Vega 64": [190.58, 68.71, 103.82, 101.95, 1573.01],
    "V100": [386.63, 131.69, 242.7, 233.0, 4707.67],
}


def markdown_table(text):
    """The first Markdown table in ``text`` as a list of rows of cell strings (header first)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            if set(line) <= set("|-: "):
                continue
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    return rows


def in_process(capsys, monkeypatch, *argv):
    """Run the CLI in this process (fast, for format details); returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("COLUMNS", "200")
    code = cli_module.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def seed_sweep(tmp_path):
    """A sweep whose every run measured exactly the seed's RTX 2070 figure."""
    return write_sweep(tmp_path / "seed-2070", seed_runs(3))


# -- the seed's table ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_markdown_reproduces_all_25_cells_of_the_seeds_table(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--against", SEED_AGAINST, "--format", "markdown")
    assert result.returncode == 0, result
    table = markdown_table(result.stdout)
    assert table[0] == ["model", "batch size", "measured", "1080-Ti", "2080", "2080-Ti", "Vega 64", "V100"]
    body = {row[0]: row for row in table[1:]}
    assert list(body) == ["resnet50", "resnet152", "inception3", "vgg16", "alexnet", "geomean"]
    cells = 0
    for model, expected in SEED_CELLS.items():
        row = body[model]
        assert row[2] == "%.2f" % SEED_2070[model]
        assert row[3:] == expected, model
        cells += len(expected)
    assert cells == 25
    assert result.stdout.startswith("### seed-2070 (GeForce RTX 2070) against published references")
    assert "lambdalabs.com" in result.stdout


@pytest.mark.slow
def test_geomean_row_is_the_geometric_mean_of_the_ratios(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--against", SEED_AGAINST, "--format", "markdown")
    geomean = markdown_table(result.stdout)[-1]
    assert geomean[:3] == ["geomean", "", ""]
    measured = [SEED_2070[m] for m in SEED_CELLS]
    for typed, cell in zip(SEED_REFS, geomean[3:]):
        ratios = [m / r for m, r in zip(measured, SEED_REFS[typed])]
        expected = math.exp(sum(map(math.log, ratios)) / len(ratios)) * 100
        assert cell == "%.1f%%" % expected, typed
    assert geomean[3:] == ["82.8%", "83.2%", "61.3%", "107.3%", "47.0%"]


@pytest.mark.slow
def test_json_against_references(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--against", "1080-Ti,V100", "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    first = rows[0]
    assert (first["model"], first["batch_size"], first["runs_ok"]) == ("resnet50", 64, 3)
    assert first["measured"] == pytest.approx(176.93)
    ti = first["references"][0]
    assert ti["name"] == "1080-Ti" and ti["id"] == "gtx1080ti"
    assert ti["images_per_sec"] == 203.99 and ti["published"] == "203.99"
    assert ti["ratio_pct"] == pytest.approx(176.93 / 203.99 * 100)
    assert ti["comparable"] is True and ti["cell"] == "203.99 (86.7%)"
    assert "geomean" not in [r["model"] for r in rows]  # its own key, never a model row
    assert [c["count"] for c in result.json()["geomean"]] == [5, 5]


@pytest.mark.slow
def test_csv_and_table_against_references(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--against", "2080,V100", "--format", "csv")
    assert result.returncode == 0, result
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0])[:6] == [
        "model",
        "batch_size",
        "measured",
        "2080 images_per_sec",
        "2080 ratio_pct",
        "2080 comparable",
    ]
    vgg = [r for r in rows if r["model"] == "vgg16"][0]
    assert float(vgg["V100 images_per_sec"]) == 233.0
    assert float(vgg["V100 ratio_pct"]) == pytest.approx(110.23 / 233 * 100)
    table = cli("compare", seed_sweep, "--against", "2080,V100")
    assert table.returncode == 0, table
    assert "233 (47.3%)" in table.stdout and "123.01 (89.6%)" in table.stdout
    assert "geomean" in table.stdout and "This sweep: fp32 · 1 GPU · parameter_server" in table.stdout


@pytest.mark.slow
def test_ambiguous_and_unknown_reference_names_exit_2_listing_candidates(cli, seed_sweep):
    line = assert_clean_error(cli("compare", seed_sweep, "--against", "Ti"), 2, "ambiguous", "gtx1080ti", "rtx2080ti")
    assert "v100" not in line
    # Whole words only: "1080" is not the 1080 Ti (issue 13); the message names the near misses.
    assert_clean_error(cli("compare", seed_sweep, "--against", "1080"), 2, "'1080'", "gtx1080ti")
    assert_clean_error(cli("compare", seed_sweep, "--against", "V100,Arc A770"), 2, "'Arc A770'", "v100 (Tesla V100)")


# -- other conditions ----------------------------------------------------------------------------------


def test_reference_at_another_batch_size_is_marked_and_left_out_of_the_geomean(capsys, monkeypatch, tmp_path):
    sweep = write_sweep(tmp_path / "s", {("resnet50", 64): [180.0, 181.0], ("resnet152", 64): [60.0, 61.0]})
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "2080", "--format", "markdown")
    assert code == 0
    table = markdown_table(out)
    assert table[1][3] == "209.89 (86.0%)"
    assert table[2][3] == "82.78 (73.1%)\u2020"
    assert "\u2020 2080 (resnet152): measured at batch size 32, this sweep at batch size 64" in out
    assert table[3][3] == "86.0% (1 of 2)"
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "2080", "--format", "json")
    cell = json.loads(out)["rows"][1]["references"][0]
    assert cell["comparable"] is False
    assert cell["differs"] == {"batch_size": {"reference": 32, "sweep": 64}}
    assert json.loads(out)["geomean"][0]["count"] == 1


@pytest.mark.parametrize(
    "plan, condition",
    [
        ({"num_gpus": 2}, "2 GPUs"),
        ({"extra_args": ["--use_fp16=True"]}, "fp16"),
        ({"variable_update": "replicated"}, "variable_update replicated"),
        ({"extra_args": ["--data_dir", "/data/imagenet"]}, "real data"),
    ],
)
def test_sweeps_under_other_conditions_are_never_silently_compared(capsys, monkeypatch, tmp_path, plan, condition):
    sweep = write_sweep(tmp_path / "s", seed_runs(2), **plan)
    # the Vega 64's only figures are the seed's (fp32, 1 GPU, parameter_server, synthetic)
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "Vega 64", "--format", "markdown")
    assert code == 0
    table = markdown_table(out)
    assert all(row[3].endswith("\u2020") for row in table[1:-1])
    assert table[-1][3] == "n/a"
    assert "this sweep at %s" % condition in out
    assert "(resnet50, resnet152, inception3, vgg16, alexnet): measured at" in out


def test_p100_compares_with_its_own_row_for_the_sweeps_batch_size(capsys, monkeypatch, seed_sweep):
    code, out, _ = in_process(capsys, monkeypatch, "compare", seed_sweep, "--against", "P100", "--format", "json")
    by_model = {r["model"]: r["references"][0] for r in json.loads(out)["rows"]}
    assert by_model["resnet152"]["published"] == "82.7" and by_model["resnet152"]["comparable"] is True
    assert by_model["vgg16"]["comparable"] is False
    assert by_model["vgg16"]["differs"] == {"variable_update": {"reference": "replicated", "sweep": "parameter_server"}}


def test_missing_data_on_either_side(capsys, monkeypatch, tmp_path):
    sweep = write_sweep(
        tmp_path / "s",
        {("resnet50", 64): ["oom", "oom"], ("nasnet", 64): [50.0, 51.0], ("vgg16", 64): [100.0, "crashed", 120.0]},
    )
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "V100", "--format", "markdown")
    assert code == 0
    body = {r[0]: r for r in markdown_table(out)[1:]}
    assert body["resnet50"][2:] == ["no ok run", "386.63"]
    assert body["nasnet"][2:] == ["50.50", "n/a"]
    assert body["vgg16"][2:] == ["110.00", "233 (47.2%)"]
    assert body["geomean"][3] == "47.2% (1 of 2)"


def test_planned_pairs_without_runs_are_kept(capsys, monkeypatch, tmp_path):
    sweep = write_sweep(tmp_path / "s", {("resnet50", 64): [176.93]}, planned=[("resnet50", 64), ("vgg16", 64)])
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "V100", "--format", "json")
    rows = json.loads(out)["rows"]
    assert [r["model"] for r in rows] == ["resnet50", "vgg16"]
    assert rows[1]["measured"] is None and rows[1]["references"][0]["ratio_pct"] is None


@pytest.mark.slow
def test_user_reference_file_with_compare(cli, tmp_path, seed_sweep):
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "gpu_id,gpu_name,aliases,model,batch_size,images_per_sec,precision,num_gpus,source\n"
        "internal-2070,RTX 2070 internal,desk,resnet50,64,190,fp32,1,my run\n",
        encoding="utf-8",
    )
    result = cli("compare", seed_sweep, "--against", "desk,2080", "--references", mine, "--format", "markdown")
    assert result.returncode == 0, result
    table = markdown_table(result.stdout)
    assert table[0][3:] == ["desk", "2080"]
    assert table[1][3] == "190 (93.1%)"
    assert table[2][3] == "n/a"
    assert "Source of desk: my run" in result.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu_id,gpu_name\nx,y\n", encoding="utf-8")
    assert_clean_error(cli("compare", seed_sweep, "--against", "2080", "--references", bad), 2, "missing column")


# -- sweep against sweep -------------------------------------------------------------------------------


@pytest.fixture
def ab_sweeps(tmp_path):
    baseline = write_sweep(
        tmp_path / "egpu-F1.0",
        {
            ("resnet50", 64): [176.0, 177.0, 178.0],
            ("resnet152", 32): [62.0, 62.5, 61.5],
            ("vgg16", 64): [110.0],
            ("alexnet", 512): [2250.0, 2260.0],
        },
        gpus=["GeForce RTX 2070"],
    )
    candidate = write_sweep(
        tmp_path / "egpu-H2D",
        {
            ("resnet50", 64): [186.0, 187.0, 188.0],
            ("resnet152", 32): [62.4, 61.2, 62.9],
            ("vgg16", 64): [115.0, 116.0],
            ("inception3", 64): [113.0, 114.0],
        },
        gpus=["GeForce RTX 2070"],
    )
    return baseline, candidate


@pytest.mark.slow
def test_sweep_against_sweep_json_rows(cli, ab_sweeps):
    result = cli("compare", *ab_sweeps, "--format", "json")
    assert result.returncode == 0, result
    rows = {(r["model"], r["batch_size"]): r for r in result.rows()}
    for row in rows.values():
        assert {"model", "batch_size", "baseline", "candidate", "change_pct", "significant"} <= set(row)
    r50 = rows[("resnet50", 64)]
    assert (r50["baseline"], r50["candidate"]) == (177.0, 187.0)
    assert r50["change_pct"] == pytest.approx((187.0 / 177.0 - 1) * 100)
    assert r50["significant"] is True and r50["p_value"] < 0.05
    r152 = rows[("resnet152", 32)]
    assert r152["significant"] is False and r152["p_value"] > 0.05
    assert rows[("vgg16", 64)]["significant"] is None and rows[("vgg16", 64)]["p_value"] is None
    assert rows[("vgg16", 64)]["change_pct"] == pytest.approx((115.5 / 110.0 - 1) * 100)
    alex, inc = rows[("alexnet", 512)], rows[("inception3", 64)]
    assert alex["candidate"] is None and alex["change_pct"] is None and alex["significant"] is None
    assert inc["baseline"] is None and inc["candidate"] == 113.5
    (geo,) = result.json()["geomean"]
    changes = [187.0 / 177.0, 62.166666666666664 / 62.0, 115.5 / 110.0]
    expected = (math.exp(sum(map(math.log, changes)) / 3) - 1) * 100
    assert geo["change_pct"] == pytest.approx(expected) and geo["pairs"] == 3
    assert ("geomean", None) not in rows


@pytest.mark.slow
def test_sweep_against_sweep_markdown_and_table(cli, ab_sweeps):
    result = cli("compare", *ab_sweeps, "--format", "markdown")
    assert result.returncode == 0, result
    table = markdown_table(result.stdout)
    assert table[0] == [
        "model",
        "batch size",
        "baseline",
        "candidate",
        "change",
        "change, 95% CI",
        "significant",
        "p-value",
        "ok runs (b/c)",
    ]
    body = {r[0]: r for r in table[1:]}
    assert body["resnet50"][2:5] + body["resnet50"][6:7] == ["177.00", "187.00", "+5.6%", "yes"]
    assert body["resnet152"][6] == "no"
    assert body["vgg16"][5:] == ["", "n/a", "", "1/2"]
    assert body["alexnet"][3:7] == ["", "", "", "n/a"]
    assert body["inception3"][2] == ""
    assert "candidate egpu-H2D (GeForce RTX 2070) against baseline egpu-F1.0" in result.stdout
    plain = cli("compare", *ab_sweeps)
    assert plain.returncode == 0, plain
    assert "+5.6%" in plain.stdout and "Welch" in plain.stdout


def test_sweep_against_sweep_csv(capsys, monkeypatch, ab_sweeps):
    code, out, _ = in_process(capsys, monkeypatch, "compare", *ab_sweeps, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0])[:6] == ["model", "batch_size", "baseline", "candidate", "change_pct", "significant"]
    assert rows[0]["significant"] == "true" and rows[-1]["model"] == "geomean"


def test_plans_that_differ_are_pointed_out(capsys, monkeypatch, tmp_path):
    a = write_sweep(tmp_path / "a", seed_runs(2))
    b = write_sweep(tmp_path / "b", seed_runs(2), variable_update="replicated")
    code, out, _ = in_process(capsys, monkeypatch, "compare", a, b, "--format", "markdown")
    assert code == 0
    assert "plan variable_update: parameter_server -> replicated" in out


def test_welch_unit():
    assert welch([1.0], [1.0, 2.0]) == (None, None)
    assert welch([5.0, 5.0], [5.0, 5.0]) == (1.0, False)
    assert welch([5.0, 5.0], [6.0, 6.0]) == (0.0, True)
    p, significant = welch([100.0, 101.0, 99.0], [100.5, 99.5, 100.0])
    assert 0.05 < p <= 1.0 and significant is False


def test_plan_conditions_read_the_plan_and_extra_flags():
    assert Plan().conditions() == {
        "precision": "fp32",
        "num_gpus": 1,
        "variable_update": "parameter_server",
        "data": "synthetic",
        "xla": "no",
    }
    # --num_gpus and --variable_update are the plan's own (sweep refuses them after --); fp16 and real
    # data can only come through the pass-through flags.
    plan = Plan(num_gpus=4, variable_update="replicated", extra_args=["--use_fp16"])
    assert plan.conditions() == {
        "precision": "fp16",
        "num_gpus": 4,
        "variable_update": "replicated",
        "data": "synthetic",
        "xla": "no",
    }
    assert Plan(extra_args=["--use_fp16=false"]).conditions()["precision"] == "fp32"
    assert Plan(extra_args=["--data_dir", "/data/imagenet"]).conditions()["data"] == "real"


# -- usage errors --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_argument_rules(cli, seed_sweep, tmp_path):
    assert_clean_error(cli("compare", seed_sweep), 2, "--against")
    assert_clean_error(cli("compare", seed_sweep, seed_sweep, "--against", "V100"), 2, "drop it")
    assert_clean_error(cli("compare", seed_sweep, seed_sweep, "--rank"), 2, "one SWEEP_DIR")
    assert_clean_error(cli("compare", seed_sweep, seed_sweep, "--references", "x.csv"), 2, "--references")
    assert_clean_error(cli("compare", tmp_path / "missing", "--against", "V100"), 2, "does not exist")
    (tmp_path / "empty").mkdir()
    assert_clean_error(cli("compare", tmp_path / "empty", seed_sweep), 2, "not a sweep directory")


# -- plots ---------------------------------------------------------------------------------------------

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_plot_against_references_writes_a_png(cli, seed_sweep, tmp_path):
    png = tmp_path / "plots" / "seed.png"
    png.parent.mkdir()  # --plot creates no directories (issue 11, item 15)
    result = cli("compare", seed_sweep, "--against", SEED_AGAINST + ",P100", "--plot", png)
    assert result.returncode == 0, result
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 20000
    assert "wrote %s" % png in result.stderr
    assert "203.99 (86.7%)" in result.stdout


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process
def test_plot_sweep_against_sweep_writes_a_png(capsys, monkeypatch, ab_sweeps, tmp_path):
    png = tmp_path / "ab.png"
    code, _, err = in_process(capsys, monkeypatch, "compare", *ab_sweeps, "--plot", png, "--format", "json")
    assert code == 0 and png.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process
def test_plot_of_a_sweep_without_ok_runs_is_refused(capsys, monkeypatch, tmp_path):
    sweep = write_sweep(tmp_path / "s", {("resnet50", 64): ["oom"]})
    code, _, err = in_process(capsys, monkeypatch, "compare", sweep, "--against", "V100", "--plot", tmp_path / "x.png")
    assert code == 2 and "nothing to plot" in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_plot_without_matplotlib_says_how_to_get_it(cli, seed_sweep, tmp_path):
    blocker = tmp_path / "no-mpl" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker.parent), str(REPO_ROOT)])}
    png = tmp_path / "x.png"
    result = cli("compare", seed_sweep, "--against", "V100", "--plot", png, env=env)
    assert_clean_error(result, 2, "pip install tfcnnwrap[plot]")
    assert result.stdout == "" and not png.exists()
    # without --plot, the same interpreter compares fine
    assert cli("compare", seed_sweep, "--against", "V100", env=env).returncode == 0


def test_require_matplotlib_in_process(monkeypatch):
    import sys

    from tfcnnwrap.present.plot import require_matplotlib

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"pip install tfcnnwrap\[plot\]"):
        require_matplotlib()


@pytest.mark.parametrize(
    "baseline, candidate",
    [
        ([176.0, 177.0, 178.0], [186.0, 187.0, 188.0]),
        ([62.0, 62.5, 61.5], [62.4, 61.2, 62.9]),
        ([110.0, 110.0], [111.0, 113.0, 109.5, 112.0]),
        ([2250.0, 2260.0, 2255.5, 2249.0, 2270.0], [2240.0, 2300.0]),
    ],
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's note on a zero-spread side
def test_welch_matches_scipy_stats(baseline, candidate):
    from scipy.stats import ttest_ind

    expected = ttest_ind(candidate, baseline, equal_var=False).pvalue
    p, significant = welch(baseline, candidate)
    assert p == pytest.approx(expected, rel=1e-9)
    assert significant is bool(expected < 0.05)


@pytest.mark.slow  # draws a figure with matplotlib: seconds in process
def test_plot_refuses_what_the_cli_refuses_and_writes_svg_by_suffix(tmp_path):
    # issue 11, item 15: `--plot /tmp` wrote /tmp.png; a missing directory was created silently
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from tfcnnwrap.errors import UsageError
    from tfcnnwrap.present.plot import save_figure

    fig = Figure()
    fig.add_subplot().plot([1, 2])
    for bad in (tmp_path, tmp_path / "noext", tmp_path / "missing" / "p.png"):
        with pytest.raises(UsageError):
            save_figure(fig, bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    save_figure(fig, tmp_path / "p.svg")
    assert b"<svg" in (tmp_path / "p.svg").read_bytes()[:500]


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "cpu", "--out", out, *more]


@pytest.mark.slow
@pytest.mark.parametrize("against", ["V100,V100", "V100,Tesla V100"])
def test_against_naming_one_gpu_twice_is_refused(cli, tmp_path, vendor, tf112, against):
    # two identical columns (and a doubled geomean) are never what was meant, like --num-gpus 1,1
    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    result = cli("compare", out, "--against", against, cwd=tmp_path)
    assert_clean_error(result, 2, "--against", "twice")


@pytest.mark.slow
def test_a_candidate_given_twice_to_compare_is_refused(cli, tmp_path, vendor, tf112):
    # `compare A B ./B` printed B's rows twice (a sweep against itself stays allowed, see test_compare_ab)
    for name in ("a", "b"):
        result = cli(*sweep(vendor, tf112, tmp_path / name, "--models", "resnet50", "--runs", "1"), cwd=tmp_path)
        assert result.returncode == 0, result
    assert_clean_error(cli("compare", "a", "b", "./b", cwd=tmp_path), 2, "twice")
    assert cli("compare", "a", "a", cwd=tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("huge", [1e308, 1.7e308])
def test_an_absurd_figure_in_runs_jsonl_is_no_internal_error_in_compare(cli, tmp_path, vendor, tf112, huge):
    # a hand-edited or corrupted runs.jsonl: (x - mean) ** 2 overflowed in Welch's test -> exit 3
    from tfcnnwrap.compare.ab import change_interval, welch

    assert welch([huge, 1.0], [1.0, 2.0]) == (None, None)
    assert change_interval([huge, 1.0], [1.0, 2.0]) == (None, None)
    for name in ("a", "b"):
        result = cli(*sweep(vendor, tf112, tmp_path / name, "--models", "resnet50", "--runs", "2"), cwd=tmp_path)
        assert result.returncode == 0, result
    runs = tmp_path / "a" / "runs.jsonl"
    lines = runs.read_text().splitlines()
    both = [json.loads(line) for line in lines[:2]]
    both[0]["images_per_sec"] = huge
    both[1]["images_per_sec"] = huge  # the sum leaves the floats
    runs.write_text("\n".join([json.dumps(r) for r in both] + lines[2:]) + "\n")
    result = cli("compare", "a", "b", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result

    def refuse(constant):
        raise ValueError(constant)

    rows = json.loads(result.stdout, parse_constant=refuse)["rows"]
    assert rows[0]["significant"] is None, rows
    # pandas' overflow warning (a file path and a line of its source) is no message for a user
    report = cli("report", "a", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0 and "Warning" not in result.stderr + report.stderr, report


@pytest.mark.slow
def test_gate_fails_when_every_candidate_run_crashed(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 101.0, 99.0])
    cand = sweep_dir(tmp_path / "cand", [None, None, None])
    result = cli("compare", base, cand, "--fail-on-regression", "5", "--format", "json")
    assert result.returncode == 1, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no ok candidate run" in lines[0] and "trivial" in lines[0], result.stderr


@pytest.mark.slow
def test_gate_still_passes_an_unchanged_candidate(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 101.0, 99.0])
    cand = sweep_dir(tmp_path / "cand", [100.5, 99.5, 100.0])
    result = cli("compare", base, cand, "--fail-on-regression", "5", "--format", "json")
    assert result.returncode == 0 and not result.stderr.strip(), result


@pytest.mark.slow
def test_compare_csv_rounds_the_change_once(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 100.0, 100.0])
    cand = sweep_dir(tmp_path / "cand", [90.1, 89.9, 90.0])
    result = cli("compare", base, cand, "--format", "csv")
    assert result.returncode == 0, result
    assert "99999999" not in result.stdout and "00000000" not in result.stdout, result.stdout
    rows = result.stdout.splitlines()
    assert rows[1].split(",")[4] == "-10.0" and rows[2].split(",")[4] == "-10.0"
