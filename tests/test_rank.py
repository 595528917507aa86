"""`compare SWEEP --rank [--per watt|dollar]`: the measured GPU among every reference with the sweep's
conditions; and references matched on precision, with --strict, in `--against`."""

import dataclasses
import json
import math
import re

import pytest
from conftest import assert_clean_error
from sweepdata import SEED_2070, run_record, seed_runs, sweep_meta, write_sweep
from test_compare import SEED_REFS, markdown_table

SEED_ORDER = ["resnet50", "resnet152", "inception3", "vgg16", "alexnet"]


def geomean_pct(measured, refs, factor=1.0):
    return math.exp(sum(math.log(m / r * factor) for m, r in zip(measured, refs)) / len(refs)) * 100


@pytest.fixture
def seed_sweep(tmp_path):
    return write_sweep(tmp_path / "seed-2070", seed_runs(3))


@pytest.mark.slow
def test_rank_places_the_seeds_2070_as_its_table_implies(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--rank", "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    by_id = {r["gpu_id"]: r for r in rows}
    names = [r["gpu"] for r in rows]
    me = names.index("GeForce RTX 2070")
    assert rows[me]["measured"] is True and rows[me]["geomean_pct"] == 100.0
    # Best first: just below the 1080 Ti, the 2080 and the Radeon VII (one configuration, issue 23's
    # sources), above the Vega 64 (the seed's geomean row).
    assert names[me - 3 : me] == ["GeForce GTX 1080 Ti", "GeForce RTX 2080", "Radeon VII"]
    assert names.index("Radeon RX Vega 64") > me
    assert names.index("Tesla V100") < names.index("GeForce RTX 2080 Ti") < me
    measured = [SEED_2070[m] for m in SEED_ORDER]
    for gpu_id, typed in (("gtx1080ti", "1080-Ti"), ("rtx2080", "2080"), ("vega64", "Vega 64")):
        assert by_id[gpu_id]["geomean_pct"] == pytest.approx(geomean_pct(measured, SEED_REFS[typed]))
        assert by_id[gpu_id]["configurations"] == 5
    # Every comparison says what it rests on: the P100 and the K80s published only some of these figures.
    assert by_id["p100-dgx1"]["configurations"] == 3 and by_id["k80-ec2"]["configurations"] == 2
    pcts = [r["geomean_pct"] for r in rows]
    assert pcts == sorted(pcts)
    # GPUs with none of the sweep's conditions (A100s: replicated, other batch sizes) are not in it.
    assert "a100-sxm4-40gb" not in by_id
    assert json.loads(json.dumps(rows, allow_nan=False)) == rows


@pytest.mark.slow
def test_rank_says_where_the_gpu_lands(cli, seed_sweep):
    for fmt in ("table", "markdown"):
        result = cli("compare", seed_sweep, "--rank", "--format", fmt)
        assert result.returncode == 0, result
        out = " ".join(result.stdout.split())
        # The place and the field grow as published references are added; the neighbours are the point.
        assert re.search(
            r"Your GeForce RTX 2070: \d+ of \d+ by images/sec, between the Radeon VII \(89\.8%, "
            r"on 1 configuration\) and the Radeon RX Vega 64 \(107\.3%, on 5 configurations\)",
            out,
        ), out
        assert "level with the GeForce RTX 2070 eGPU (Thunderbolt 3)" in out
        assert "5 of 5" in out and "3 of 5" in out


@pytest.mark.slow
def test_rank_per_watt_from_the_flag_and_from_telemetry(cli, seed_sweep, tmp_path):
    result = cli("compare", seed_sweep, "--rank", "--per", "watt", "--watts", "175", "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    by_id = {r["gpu_id"]: r for r in rows}
    measured = [SEED_2070[m] for m in SEED_ORDER]
    expected = geomean_pct(measured, SEED_REFS["2080"], 225.0 / 175.0)
    assert by_id["rtx2080"]["geomean_pct"] == pytest.approx(expected)
    assert by_id["rtx2080"]["speed_geomean_pct"] == pytest.approx(geomean_pct(measured, SEED_REFS["2080"]))
    # The 3080 and the 2080 Ti do more per watt than a 175 W 2070; the 1080 Ti and the 1070 (x1 risers) less;
    # the 70 W T4 comes first, on its one configuration.
    ranked = [r["gpu_id"] for r in rows if r["rank"] is not None]
    assert ranked[ranked.index(None) - 2 :] == ["rtx3080", "rtx2080ti", None, "rtx2080", "gtx1080ti", "gtx1070"]
    assert set(ranked[: ranked.index(None) - 2]) <= {"tesla-t4"}
    assert [r["per"] for r in rows] == ["watt"] * len(rows)
    unranked = [r for r in rows if r["rank"] is None]
    assert {r["gpu_id"] for r in unranked} >= {"v100", "vega64"}
    assert all(r["geomean_pct"] is None and r["why_not_ranked"] == "no published board power" for r in unranked)
    # Telemetry: each configuration's own mean power draw.
    records = []
    for model, batch in ((m, b) for m, b in seed_runs(1)):
        for k in (1, 2):
            power = 150.0 if model == "alexnet" else 175.0
            records.append(
                dataclasses.replace(
                    run_record(model, batch, k, SEED_2070[model]), telemetry={"mean_power_w": power, "max_temp_c": 70}
                )
            )
    sweep = tmp_path / "telemetry"
    (sweep / "logs").mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps(sweep_meta(list(seed_runs(1)), runs=2).to_dict()), encoding="utf-8")
    (sweep / "runs.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records), encoding="utf-8")
    result = cli("compare", sweep, "--rank", "--per", "watt", "--format", "json")
    assert result.returncode == 0, result
    r2080 = {r["gpu_id"]: r for r in result.rows()}["rtx2080"]
    factors = [225.0 / (150.0 if m == "alexnet" else 175.0) for m in SEED_ORDER]
    expected = math.exp(sum(math.log(m / r * f) for m, r, f in zip(measured, SEED_REFS["2080"], factors)) / 5) * 100
    assert r2080["geomean_pct"] == pytest.approx(expected)
    assert_clean_error(cli("compare", seed_sweep, "--rank", "--per", "watt"), 2, "--watts", "telemetry")


@pytest.mark.slow
def test_rank_per_dollar(cli, seed_sweep):
    result = cli("compare", seed_sweep, "--rank", "--per", "dollar", "--price", "499", "--format", "json")
    assert result.returncode == 0, result
    rows = result.rows()
    by_id = {r["gpu_id"]: r for r in rows}
    measured = [SEED_2070[m] for m in SEED_ORDER]
    assert by_id["gtx1080ti"]["geomean_pct"] == pytest.approx(
        geomean_pct(measured, SEED_REFS["1080-Ti"], 700.0 / 499.0)
    )
    # At $499 the 2070 gives more images/sec per dollar than the Vega 64 (also $499, slower) and the 1080 Ti;
    # only the 3080 (2.3x the speed at $699) and the eGPU 2070 (level) come before it.
    me = next(r for r in rows if r["measured"])
    assert me["price_usd"] == 499.0 and rows[0]["gpu_id"] == "rtx3080"
    assert me["rank"] < by_id["vega64"]["rank"] < by_id["gtx1080ti"]["rank"]
    assert by_id["v100"]["rank"] is None and by_id["v100"]["why_not_ranked"] == "no published launch price"
    text = cli("compare", seed_sweep, "--rank", "--per", "dollar", "--price", "499")
    assert re.search(r"Not ranked \(launch price not published\): [^.]*Tesla V100", " ".join(text.stdout.split()))
    assert_clean_error(cli("compare", seed_sweep, "--rank", "--per", "dollar"), 2, "--price")
    assert_clean_error(cli("compare", seed_sweep, "--per", "dollar", "--price", "5"), 2, "--rank")
    assert_clean_error(cli("compare", seed_sweep, "--rank", "--against", "V100"), 2, "--against and --rank")


@pytest.mark.slow
def test_rank_plot(cli, seed_sweep, tmp_path):
    png = tmp_path / "rank.png"
    result = cli("compare", seed_sweep, "--rank", "--plot", png)
    assert result.returncode == 0, result
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "rank.svg"
    assert cli("compare", seed_sweep, "--rank", "--per", "watt", "--watts", "175", "--plot", svg).returncode == 0
    assert b"GeForce RTX 2080 Ti" in svg.read_bytes() or svg.stat().st_size > 1000


# -- precision and --strict ------------------------------------------------------------------------------


@pytest.fixture
def fp16_pair(tmp_path):
    """The 1080 Ti's published configuration (replicated, batch 128) at fp16 and at fp32."""
    runs = {("resnet50", 128): [300.0, 301.0], ("vgg16", 128): [200.0, 201.0]}
    half = write_sweep(tmp_path / "fp16", runs, variable_update="replicated", extra_args=["--use_fp16"])
    full = write_sweep(tmp_path / "fp32", runs, variable_update="replicated")
    return half, full


@pytest.mark.slow
def test_an_fp16_sweep_meets_fp16_references_without_a_dagger(cli, fp16_pair):
    from tfcnnwrap.results.references import load_references

    ti = load_references().resolve("1080-Ti")
    wanted = dict(precision="fp16", num_gpus=1, variable_update="replicated", data="synthetic", batch_size=128)
    fp16_figure = ti.best_result("resnet50", wanted)[0]
    fp32_figure = ti.best_result("resnet50", dict(wanted, precision="fp32"))[0]
    assert fp16_figure.precision == "fp16" and fp16_figure.images_per_sec != fp32_figure.images_per_sec
    half = cli("compare", fp16_pair[0], "--against", "1080-Ti", "--format", "json")
    assert half.returncode == 0, half
    cell = half.rows()[0]["references"][0]
    assert cell["comparable"] is True and cell["images_per_sec"] == fp16_figure.images_per_sec
    assert cell["conditions"]["precision"] == "fp16" and "\u2020" not in cell["cell"]
    # The fp32 sweep gets the fp32 figure (published at batch size 64 only: daggered for that alone).
    cell = cli("compare", fp16_pair[1], "--against", "1080-Ti", "--format", "json").rows()[0]["references"][0]
    assert cell["images_per_sec"] == fp32_figure.images_per_sec and cell["conditions"]["precision"] == "fp32"
    assert list(cell["differs"]) == ["batch_size"]
    ranked = cli("compare", fp16_pair[0], "--rank", "--format", "json").rows()
    assert "fp16" in cli("compare", fp16_pair[0], "--rank").stdout
    ids = {r["gpu_id"] for r in ranked}
    assert "gtx1080ti" in ids and "rtx2080" not in ids  # the 2080 published no fp16 replicated figure


def test_strict_leaves_stand_ins_out_and_the_note_says_why(capsys, monkeypatch, tmp_path):
    from test_compare import in_process

    sweep = write_sweep(tmp_path / "s", {("resnet50", 64): [180.0, 181.0], ("resnet152", 64): [60.0, 61.0]})
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "2080", "--format", "markdown")
    assert code == 0
    assert markdown_table(out)[2][3] == "82.78 (73.1%)\u2020"
    assert "the closest is shown" in out and "--strict leaves such figures out" in out
    code, out, _ = in_process(
        capsys, monkeypatch, "compare", sweep, "--against", "2080", "--strict", "--format", "markdown"
    )
    assert code == 0
    table = markdown_table(out)
    assert table[1][3] == "209.89 (86.0%)" and table[2][3] == "n/a"
    assert "--strict: only figures under exactly" in out


def test_tensorflow_versions_are_noted_and_strict_leaves_other_ones_out(capsys, monkeypatch, tmp_path):
    from test_compare import in_process

    sweep = write_sweep(
        tmp_path / "s", {("resnet50", 128): [300.0, 301.0]}, variable_update="replicated", extra_args=["--use_fp16"]
    )
    meta = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    meta["tensorflow_version"] = "2.4.1"
    (sweep / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "1080-Ti", "--format", "markdown")
    assert code == 0
    assert "TensorFlow: 1080-Ti (resnet50) measured with TF 2.2, this sweep with TF 2.4.1" in out
    code, out, _ = in_process(
        capsys, monkeypatch, "compare", sweep, "--against", "1080-Ti", "--strict", "--format", "json"
    )
    assert json.loads(out)["rows"][0]["references"][0]["published"] is None
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--rank", "--strict", "--format", "json")
    assert "gtx1080ti" not in {r["gpu_id"] for r in json.loads(out)["rows"]}


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").name != "posix", reason="a pseudo-terminal")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_rank_and_ab_fit_the_terminal(seed_sweep, tmp_path, columns):
    from ptyscreen import run_in_pty

    screen = run_in_pty(["compare", str(seed_sweep), "--rank", "--per", "watt", "--watts", "175"], columns)
    assert screen.returncode == 0, screen
    assert screen.widest() <= columns, screen
    assert "Your GeForce RTX 2070: 4 of 7 by images/sec per watt" in " ".join(screen.text.split())
    other = write_sweep(tmp_path / "other", seed_runs(3, {m: v * 0.9 for m, v in SEED_2070.items()}))
    screen = run_in_pty(["compare", str(seed_sweep), str(other)], columns)
    assert screen.returncode == 0 and screen.widest() <= columns, screen
    assert "resnet50" in screen.text and "Same environment" in screen.text


@pytest.mark.slow
def test_rank_with_no_reference_under_the_sweeps_conditions(cli, tmp_path):
    quick = write_sweep(tmp_path / "quick", {("resnet50", 8): [20.0]}, device="cpu")
    result = cli("compare", quick, "--rank")
    assert result.returncode == 0, result
    assert "no reference GPU published a figure under this sweep's conditions" in " ".join(result.stdout.split())
    rows = cli("compare", quick, "--rank", "--format", "json").rows()
    assert len(rows) == 1 and rows[0]["measured"] is True and rows[0]["rank"] == 1
    png = tmp_path / "rank.png"
    assert_clean_error(cli("compare", quick, "--rank", "--plot", png), 2, "nothing to plot")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "cpu", "--out", out, *more]


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--price", "500"], "--per dollar"),
        (["--watts", "175"], "--per watt"),
        (["--per", "dollar", "--price", "500", "--watts", "175"], "--per watt"),
        (["--per", "watt", "--watts", "175", "--price", "500"], "--per dollar"),
    ],
)
def test_rank_refuses_a_price_or_power_it_would_ignore(cli, tmp_path, vendor, tf112, flags, needle):
    # `--rank --price 500` ranked by images/sec and said nothing of the price
    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    assert_clean_error(cli("compare", out, "--rank", *flags, cwd=tmp_path), 2, needle)


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").name != "posix", reason="a POSIX pseudo-terminal")
def test_unranked_gpus_at_60_columns_have_a_title(cli, tmp_path, vendor, tf112):
    # stacked rows are titled by their rank; an unranked GPU's title was an empty line
    from ptyscreen import run_in_pty

    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    screen = run_in_pty(["compare", str(out), "--rank", "--per", "dollar", "--price", "500"], 60)
    assert screen.returncode == 0, screen
    assert "Tesla V100" in screen.text and "" not in screen.lines, screen


def _screen_text(result):
    return " ".join(result.stdout.split())


@pytest.mark.slow
def test_per_dollar_headers_say_per_dollar(cli, tmp_path):
    path = write_sweep(tmp_path / "s", seed_runs())
    result = cli("compare", path, "--rank", "--per", "dollar", "--price", "500", env={"COLUMNS": "200"})
    assert result.returncode == 0, result
    text = _screen_text(result)
    assert "yours/it per $" in text and "it/yours per $" in text and "img/s yours/it" in text, result
