"""Built-in reference data, name matching and the `references` verb (with the user's own CSV)."""

import csv
import io
import os
import re
import time

import pytest
from conftest import assert_clean_error
from sweepdata import seed_runs, write_sweep

from tfcnnwrap import render
from tfcnnwrap.errors import DamagedFile, UsageError
from tfcnnwrap.results.references import (
    COLUMNS,
    format_published,
    load_references,
    name_key,
    parse_csv,
)

SEED_HEADERS = {"1080-Ti": "gtx1080ti", "2080": "rtx2080", "2080-Ti": "rtx2080ti", "Vega 64": "vega64", "V100": "v100"}

# The seed's table as published (images/sec; fp32, synthetic, 1 GPU, parameter_server).
SEED_TABLE = {
    "rtx2070-egpu": ["176.93", "62.22", "113.24", "110.23", "2258.94"],
    "gtx1080ti": ["203.99", "82.83", "130.2", "133.16", "2720.59"],
    "rtx2080": ["209.89", "82.78", "141.9", "123.01", "2567.38"],
    "rtx2080ti": ["286.05", "110.24", "189.31", "169.28", "3550.11"],
    "vega64": ["190.58", "68.71", "103.82", "101.95", "1573.01"],
    "v100": ["386.63", "131.69", "242.7", "233", "4707.67"],
}
SEED_MODELS = [("resnet50", 64), ("resnet152", 32), ("inception3", 64), ("vgg16", 64), ("alexnet", 512)]


@pytest.fixture(scope="module")
def refs():
    return load_references()


# -- the packaged data ---------------------------------------------------------------------------------


def test_builtin_data_holds_the_seed_table_as_published(refs):
    for gpu_id, values in SEED_TABLE.items():
        gpu = refs.gpus[gpu_id]
        for (model, batch_size), text in zip(SEED_MODELS, values):
            wanted = {
                "batch_size": batch_size,
                "precision": "fp32",
                "num_gpus": 1,
                "variable_update": "parameter_server",
                "data": "synthetic",
            }
            result, differs = gpu.best_result(model, wanted)
            assert differs == [], (gpu_id, model)
            assert result.display == text, (gpu_id, model)
            assert result.images_per_sec == float(text)


def test_every_builtin_row_names_its_source_and_conditions(refs):
    assert len(refs) >= 6
    for gpu in refs:
        assert gpu.name and gpu.vendor
        for r in gpu.results:
            assert r.source, (gpu.id, r.model)
            assert r.precision in ("fp32", "fp16", "bf16")
            assert r.num_gpus >= 1 and r.batch_size >= 1
            assert r.data in ("synthetic", "real")
            assert r.variable_update or "not stated" in r.notes  # never guessed


def test_builtin_data_has_rows_under_other_conditions(refs):
    """Figures at other batch sizes and GPU counts exist, so the 'shown apart' rule is exercised."""
    p100 = refs.gpus["p100-dgx1"]
    assert {r.num_gpus for r in p100.results} == {1, 2, 4, 8}
    assert {r.batch_size for r in p100.results if r.model == "resnet152"} == {32, 64}
    assert {r.variable_update for r in p100.results} == {"parameter_server", "replicated"}


def test_best_result_prefers_the_row_matching_the_sweep(refs):
    p100 = refs.gpus["p100-dgx1"]
    base = {"precision": "fp32", "num_gpus": 1, "variable_update": "parameter_server", "data": "synthetic"}
    r32, d32 = p100.best_result("resnet152", dict(base, batch_size=32))
    r64, d64 = p100.best_result("resnet152", dict(base, batch_size=64))
    assert (r32.display, d32) == ("82.7", [])
    assert (r64.display, d64) == ("91.8", [])
    r8, d8 = p100.best_result("resnet50", dict(base, batch_size=64, num_gpus=8))
    assert (r8.display, d8) == ("1734", [])
    rbs, dbs = p100.best_result("resnet50", dict(base, batch_size=128))
    assert rbs.num_gpus == 1 and dbs == ["batch_size"]
    assert p100.best_result("nasnet", dict(base, batch_size=64)) == (None, [])


@pytest.mark.parametrize(
    "text, value, shown",
    [
        ("233", 233.0, "233"),
        ("130.2", 130.2, "130.2"),
        ("20.0", 20.0, "20.0"),
        ("1e3", 1000.0, "1000"),
        ("2.5E-1", 0.25, "0.25"),
    ],
)
def test_published_figures_print_as_written_never_scientific(text, value, shown):
    assert format_published(text, value) == shown


# -- name matching -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "typed, key",
    [
        ("1080-Ti", "1080ti"),
        ("GeForce GTX 1080 Ti", "1080ti"),
        ("rtx_2080_ti", "2080ti"),
        ("NVIDIA Tesla V100", "v100"),
        ("AMD Radeon RX Vega 64", "vega64"),
        ("RTX2080Ti", "2080ti"),
    ],
)
def test_name_key_ignores_case_separators_and_vendor_words(typed, key):
    assert name_key(typed) == key


@pytest.mark.parametrize("typed, gpu_id", list(SEED_HEADERS.items()))
def test_each_seed_header_names_exactly_one_gpu(refs, typed, gpu_id):
    assert refs.resolve(typed).id == gpu_id


@pytest.mark.parametrize(
    "typed, gpu_id",
    [
        ("2080", "rtx2080"),
        ("RTX 2080", "rtx2080"),
        ("geforce rtx 2080 ti", "rtx2080ti"),
        ("gtx1080ti", "gtx1080ti"),
        ("Vega 56", "vega56"),
        ("nvidia tesla v100", "v100"),
        ("P100", "p100-dgx1"),
        ("k80", "k80-gce"),
        ("2070", "rtx2070-egpu"),
    ],
)
def test_exact_match_wins_and_a_unique_partial_match_is_taken(refs, typed, gpu_id):
    assert refs.resolve(typed).id == gpu_id


@pytest.mark.parametrize(
    "typed, candidates",
    [
        ("Ti", ["gtx1080ti", "rtx2080ti"]),
        ("A100", ["a100-pcie-40gb", "a100-sxm4-40gb"]),
        ("Vega", ["vega64", "vega56"]),
    ],
)
def test_an_ambiguous_name_lists_the_candidates(refs, typed, candidates):
    with pytest.raises(UsageError) as err:
        refs.resolve(typed)
    message = err.value.message
    assert "ambiguous" in message and "\n" not in message
    for gpu_id in candidates:
        assert gpu_id in message
    assert "v100" not in message


def test_an_unknown_name_lists_what_is_known(refs):
    with pytest.raises(UsageError) as err:
        refs.resolve("Arc A770")
    message = err.value.message
    assert "no reference GPU matches 'Arc A770'" in message
    for gpu_id in SEED_HEADERS.values():
        assert gpu_id in message
    with pytest.raises(UsageError, match="names no GPU"):
        refs.resolve("NVIDIA GeForce")


def test_resolve_list_keeps_the_typed_names_in_order(refs):
    pairs = refs.resolve_list(" 1080-Ti, 2080 ,2080-Ti,Vega 64,V100")
    assert [t for t, _ in pairs] == list(SEED_HEADERS)
    assert [g.id for _, g in pairs] == list(SEED_HEADERS.values())
    with pytest.raises(UsageError, match="at least one"):
        refs.resolve_list(" , ")


# -- user reference files ------------------------------------------------------------------------------

USER_HEADER = ",".join(COLUMNS)


def write_user_csv(path, rows, header=USER_HEADER):
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


GOOD_ROW = (
    "my-2070,My RTX 2070 (internal),my 2070;desk,NVIDIA,resnet50,64,180.5,fp32,1,parameter_server,synthetic,"
    "no,1.12,my own run,"
)


def test_user_csv_adds_gpus_after_the_builtin_ones(tmp_path):
    path = write_user_csv(tmp_path / "mine.csv", [GOOD_ROW, GOOD_ROW.replace("resnet50,64,180.5", "vgg16,64,111")])
    refs = load_references(path)
    assert list(refs.gpus)[-1] == "my-2070"
    mine = refs.resolve("desk")
    assert mine.origin == str(path)
    assert [r.display for r in mine.results] == ["180.5", "111"]
    assert refs.resolve("2080").id == "rtx2080"


def test_user_csv_with_only_the_required_columns_and_a_bom(tmp_path):
    path = tmp_path / "min.csv"
    path.write_bytes(
        "\ufeffgpu_id,gpu_name,model,batch_size,images_per_sec,precision,num_gpus\n"
        "lab-a100,Lab A100,resnet50,256,1200,FP16,1\n".encode("utf-8")
    )
    gpus = parse_csv(path, "user")
    result = gpus["lab-a100"].results[0]
    assert (result.precision, result.variable_update, result.data) == ("fp16", "", "")


@pytest.mark.parametrize(
    "header, rows, needle",
    [
        (
            "gpu_id,gpu_name,model,batch_size,precision,num_gpus",
            ["x,X,resnet50,64,fp32,1"],
            "missing column images_per_sec",
        ),
        (USER_HEADER, [GOOD_ROW, GOOD_ROW.replace("180.5", "fast")], "line 3: images_per_sec 'fast'"),
        (USER_HEADER, [GOOD_ROW.replace(",64,", ",0,")], "line 2: batch_size '0'"),
        (USER_HEADER, [GOOD_ROW.replace("fp32", "int8")], "precision 'int8'"),
        (USER_HEADER, [GOOD_ROW.replace("synthetic", "imagenet")], "data 'imagenet'"),
        (USER_HEADER, [GOOD_ROW.replace("my-2070", "v100")], "gpu_id 'v100' is already a built-in"),
        (USER_HEADER, [GOOD_ROW.replace(",no,", ",maybe,")], "xla 'maybe'"),
        (USER_HEADER, [GOOD_ROW, GOOD_ROW], "line 3: repeats my-2070 resnet50"),
        (USER_HEADER, [GOOD_ROW.replace(",resnet50,", ",,")], "line 2: model is empty"),
        (USER_HEADER, [], "holds no reference rows"),
        (
            USER_HEADER,
            [GOOD_ROW.replace("My RTX 2070 (internal),my 2070;desk", "Tesla V100,")],
            "answers to the same name as v100",
        ),
    ],
)
def test_bad_user_csv_is_refused_naming_the_problem(tmp_path, header, rows, needle):
    path = write_user_csv(tmp_path / "bad.csv", rows, header)
    with pytest.raises(DamagedFile) as err:
        load_references(path)
    assert needle in err.value.message
    assert str(path) in err.value.message


# -- the verb, as a user runs it -----------------------------------------------------------------------


@pytest.mark.slow
def test_references_table_is_a_summary_per_gpu_that_fits_80_columns(cli):
    result = cli("references", env={"COLUMNS": "80"})
    assert result.returncode == 0, result
    for gpu_id in list(SEED_TABLE) + ["p100-dgx1", "k80-gce", "rtx3090", "a100-sxm4-40gb"]:
        assert gpu_id in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "--gpu NAME" in result.stdout and "--format csv" in result.stdout


@pytest.mark.slow
def test_the_widest_gpu_view_fits_80_columns_unwrapped(cli):
    result = cli("references", "--gpu", "2080-Ti", env={"COLUMNS": "80"})
    assert result.returncode == 0, result
    table = _table_rows(result.stdout)
    assert len(table) > 600 and max(len(line.rstrip()) for line in table) <= 80
    # no row wrapped onto a second line: a row starts with its model, or is a group's next source ("[n]")
    assert all(line[:1].strip() or re.search(r"\[\d+\]", line) for line in table)
    assert "(TF 1.15)" in result.stdout and "https://github.com/lambdal/" in result.stdout


@pytest.mark.slow
def test_references_gpu_lists_its_figures_with_numbered_sources(cli):
    result = cli("references", "--gpu", "2080", "--model", "vgg16", env={"COLUMNS": "80"})
    assert result.returncode == 0, result
    assert "rtx2080: GeForce RTX 2080" in result.stdout
    assert "123.01" in result.stdout and re.search(r"\[\d+\] Lambda Labs", result.stdout)
    assert "resnet50" not in result.stdout
    table = _table_rows(result.stdout)
    assert table and max(len(line.rstrip()) for line in table) <= 80


def _table_rows(text):
    """The lines of the table under its header rule (render's compact style), up to its notes (the first
    may name the hidden columns, its later lines indented)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("\u2500"))
    rows = []
    for line in lines[rule + 1 :]:
        if line.startswith(("update:", "Launch price")) or " hidden to fit " in line:
            break
        rows.append(line)
    return rows


@pytest.mark.slow
def test_references_filters_by_model_in_every_format(cli):
    rows = list(csv.DictReader(io.StringIO(cli("references", "--model", "alexnet", "--format", "csv").stdout)))
    assert rows and {r["model"] for r in rows} == {"alexnet"}
    assert len({r["gpu_id"] for r in rows}) >= 20
    data = cli("references", "--gpu", "V100", "--format", "json").rows()
    assert [g["id"] for g in data] == ["v100"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--gpu", "1080"], "similar: gtx1080ti"),
        (["--gpu", "A100"], "ambiguous"),
        (["--gpu", "2080", "--model", "nasnet"], "no reference row for model"),
    ],
)
def test_references_filters_refuse_unknown_names_cleanly(cli, args, needle):
    assert_clean_error(cli("references", *args), 2, needle)


@pytest.mark.slow
def test_references_csv_reads_back_as_a_user_file(cli, tmp_path):
    """The template round trip: built-in rows read back are the same rows, not 'already built-in' errors."""
    out = cli("references", "--gpu", "2080-Ti", "--format", "csv")
    assert out.returncode == 0, out
    template = tmp_path / "template.csv"
    template.write_text(out.stdout, encoding="utf-8")
    again = cli("references", "--references", template, "--gpu", "2080-Ti", "--format", "csv")
    assert again.returncode == 0, again
    assert again.stdout == out.stdout
    # An edited template: a new row of one's own for a built-in GPU joins it, a new GPU becomes a reference.
    lines = out.stdout.splitlines()
    mine = next(csv.reader([lines[1]]))
    mine[COLUMNS.index("images_per_sec")] = "300"
    mine[COLUMNS.index("source")] = "my run"
    mine[COLUMNS.index("notes")] = "desk"
    template.write_text("\n".join(lines + [_csv_line(mine)]) + "\n", encoding="utf-8")
    data = cli("references", "--references", template, "--gpu", "2080-Ti", "--format", "json").rows()
    assert [r["source"] for r in data[0]["results"]].count("my run") == 1
    changed = next(csv.reader([lines[1]]))
    changed[COLUMNS.index("images_per_sec")] = "1.5"
    template.write_text("\n".join([lines[0], _csv_line(changed)]) + "\n", encoding="utf-8")
    assert_clean_error(cli("references", "--references", template), 2, "changes the built-in figure")


def _csv_line(cells):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


@pytest.mark.slow
def test_references_json_has_every_figure_with_its_conditions(cli):
    result = cli("references", "--format", "json")
    assert result.returncode == 0, result
    data = {g["id"]: g for g in result.rows()}
    v100 = data["v100"]
    assert v100["aliases"] and v100["sources"]
    vgg = [r for r in v100["results"] if r["model"] == "vgg16"][0]
    assert vgg == {
        **vgg,
        "batch_size": 64,
        "images_per_sec": 233.0,
        "precision": "fp32",
        "num_gpus": 1,
        "variable_update": "parameter_server",
        "data": "synthetic",
    }


@pytest.mark.slow
def test_references_csv_is_a_template_in_the_data_columns(cli):
    result = cli("references", "--format", "csv")
    assert result.returncode == 0, result
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == COLUMNS
    v100_vgg = [r for r in rows if r["gpu_id"] == "v100" and r["model"] == "vgg16"][0]
    assert v100_vgg["images_per_sec"] == "233"
    assert [r for r in rows if r["gpu_id"] == "gtx1080ti" and r["model"] == "inception3"][0][
        "images_per_sec"
    ] == "130.2"


@pytest.mark.slow
def test_references_markdown_is_the_summary(cli):
    result = cli("references", "--format", "markdown")
    assert result.returncode == 0, result
    assert "| id | GPU | rows | precision | GPU counts | launch | power | trust |" in result.stdout
    assert "| v100 | Tesla V100 | 5 | fp32 | 1 | unpublished | - | reviewer |" in result.stdout


@pytest.mark.slow
def test_references_with_a_user_file(cli, tmp_path):
    path = write_user_csv(tmp_path / "mine.csv", [GOOD_ROW])
    result = cli("references", "--references", path, "--format", "json")
    assert result.returncode == 0, result
    mine = [g for g in result.rows() if g["id"] == "my-2070"]
    assert mine and mine[0]["origin"] == str(path) and mine[0]["results"][0]["images_per_sec"] == 180.5


@pytest.mark.slow
def test_references_with_a_bad_user_file_is_one_clean_line(cli, tmp_path):
    path = write_user_csv(tmp_path / "bad.csv", [GOOD_ROW.replace("180.5", "-3")])
    line = assert_clean_error(cli("references", "--references", path), 2, "line 2", "images_per_sec '-3'")
    assert line.startswith("tfcnnwrap references: error:")
    assert_clean_error(cli("references", "--references", tmp_path / "nope.csv"), 2, "does not exist")


@pytest.fixture
def seed_sweep(tmp_path):
    return write_sweep(tmp_path / "seed-2070", seed_runs(3))


def _csv(cells_rows):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for cells in cells_rows:
        writer.writerow([cells.get(c, "") for c in COLUMNS])
    return buf.getvalue()


def _user_row(**kw):
    cells = dict(
        gpu_id="mine",
        gpu_name="My Card 9000",
        aliases="Card 9000",
        vendor="ACME",
        model="resnet50",
        batch_size="64",
        images_per_sec="150",
        precision="fp32",
        num_gpus="1",
        variable_update="parameter_server",
        data="synthetic",
        xla="",
        tf_version="2.4",
        source="my desk",
        notes="",
        trust="user-log",
    )
    cells.update(kw)
    return cells


@pytest.mark.slow
def test_the_listing_shows_each_name_beside_its_id_and_the_trust(cli):
    out = cli("references", env={"COLUMNS": "120"})
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert any("tesla-t4" in line and "Tesla T4" in line for line in lines)
    assert any(line.startswith("rx7900xtx") and "partial" in line for line in lines)


@pytest.mark.slow
def test_gpu_view_groups_identical_conditions_with_their_spread(cli):
    out = cli("references", "--gpu", "radeon-vii", env={"COLUMNS": "120"})
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "295.11" in line)
    assert "resnet50" in lines[first] and "3 figures, +8.6%" in lines[first]
    # the group's other sources follow with their own numbers, conditions left blank
    for value in ("271.73", "285.54"):
        line = next(line for line in lines if value in line)
        assert not line.lstrip().startswith("resnet50") and "[" in line
    # sorted: batch 64 before 128
    assert lines.index(next(line for line in lines if "196.98" in line)) < first


@pytest.mark.slow
def test_rank_leaves_low_trust_out_and_says_how_many(cli, seed_sweep):
    out = cli("compare", seed_sweep, "--rank", "--nearest", "--format", "json")
    assert out.returncode == 0, out
    ids = {r["gpu_id"] for r in out.rows()}
    assert "rx7900xtx" not in ids and "gtx-titan-x-maxwell" not in ids
    text = cli("compare", seed_sweep, "--rank", "--nearest")
    assert "low-trust figures (trust derived or partial) left out; --include-low-trust takes them in" in " ".join(
        text.stdout.split()
    )
    out = cli("compare", seed_sweep, "--rank", "--nearest", "--include-low-trust", "--format", "json")
    ids = {r["gpu_id"] for r in out.rows()}
    assert {"rx7900xtx", "gtx-titan-x-maxwell"} <= ids


@pytest.mark.slow
def test_against_leaves_low_trust_out_unless_asked(cli, seed_sweep):
    out = cli("compare", seed_sweep, "--against", "7900 XTX", "--format", "json")
    assert out.returncode == 0, out
    cell = next(r for r in out.rows() if r["model"] == "resnet50")["references"][0]
    assert cell["published"] is None
    text = cli("compare", seed_sweep, "--against", "7900 XTX")
    assert "1 low-trust figure (trust derived or partial) left out" in " ".join(text.stdout.split())
    out = cli("compare", seed_sweep, "--against", "7900 XTX", "--include-low-trust", "--format", "json")
    cell = next(r for r in out.rows() if r["model"] == "resnet50")["references"][0]
    assert cell["published"] == "125.8" and cell["comparable"] is False


@pytest.mark.slow
def test_rank_nearest_places_the_seed_among_35_gpus(cli):
    out = cli("compare", "tests/data/format1/base", "--rank", "--nearest")
    assert out.returncode == 0, out
    text = " ".join(out.stdout.split())
    match = re.search(r"Your GeForce RTX 2070: (\d+) of (\d+) by images/sec", text)
    assert match and int(match.group(2)) >= 35, text
    assert "level with the GeForce RTX 2070 eGPU (Thunderbolt 3)" in text
    # a total over another GPU count is never a stand-in, not even the nearest
    rows = cli("compare", "tests/data/format1/base", "--rank", "--nearest", "--format", "json").rows()
    assert all("num_gpus" not in r.get("conditions_differ", []) for r in rows)
    assert_clean_error(
        cli("compare", "tests/data/format1/base", "--rank", "--nearest", "--strict"), 2, "--nearest", "--strict"
    )
    assert_clean_error(
        cli("compare", "tests/data/format1/base", "--against", "V100", "--nearest"),
        2,
        "--nearest only goes with --rank",
    )
    assert_clean_error(
        cli("compare", "tests/data/format1/base", "tests/data/format1/cand", "--include-low-trust"),
        2,
        "--include-low-trust only goes with",
    )


@pytest.mark.slow
def test_a_two_worker_job_is_not_compared_with_one_gpu_figures(cli, tmp_path):
    sweep = write_sweep(tmp_path / "cluster", seed_runs(2), cluster="local", workers=2, ps=1)
    out = cli("compare", sweep, "--against", "V100", "--format", "json")
    assert out.returncode == 0, out
    cells = [r["references"][0] for r in out.rows()]
    assert all(cell.get("comparable") is not True for cell in cells)
    assert all(cell["differs"]["num_gpus"] == {"reference": 1, "sweep": 2} for cell in cells if cell.get("published"))
    ranked = cli("compare", sweep, "--rank", "--format", "json")
    assert ranked.returncode == 0, ranked
    assert "v100" not in {r["gpu_id"] for r in ranked.rows()}
    text = cli("compare", sweep, "--against", "V100")
    assert "2 GPUs" in text.stdout


@pytest.mark.slow
def test_a_device_is_refused_quickly(cli):
    started = time.monotonic()
    result = cli("references", "--references", "/dev/zero", timeout=30)
    assert_clean_error(result, 2, "/dev/zero", "device")
    assert time.monotonic() - started < 20


@pytest.mark.slow
def test_a_pipe_that_ends_still_works(cli):
    data = _csv([_user_row()])
    result = cli("references", "--references", "/dev/stdin", "--gpu", "mine", "--format", "csv", input=data.encode())
    assert result.returncode == 0, result
    assert "My Card 9000" in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_fifo_nobody_writes_to_does_not_block(cli, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    fifo, held = tmp_path / "refs.csv", tmp_path / "held.csv"
    os.mkfifo(fifo)
    os.mkfifo(held)
    # on `held`, a writer that holds the FIFO open and never writes: given up on after the idle limit, exit 2.
    # Both verbs wait out the same idle limit, so they wait side by side.
    fd = os.open(held, os.O_RDWR)  # a writer end that stays open for the whole run
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            alone = pool.submit(cli, "references", "--references", fifo, timeout=30)
            written = pool.submit(cli, "references", "--references", held, timeout=60)
            assert_clean_error(alone.result(), 2, str(fifo))
            assert time.monotonic() - started < 20
            assert_clean_error(written.result(), 2, "no end of file")
            assert time.monotonic() - started < 40
    finally:
        os.close(fd)


def test_an_oversized_file_is_refused(tmp_path):
    from tfcnnwrap.boundedread import read_bounded
    from tfcnnwrap.errors import UsageError

    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(UsageError, match="larger than"):
        read_bounded(big, 1024, "a reference CSV")
    assert read_bounded(big, 4096, "a reference CSV") == b"x" * 2048


HOSTILE = dict(
    gpu_id="evil",
    gpu_name="=cmd|' /C calc'!A0",
    aliases="@SUM(1+1)",
    vendor="+NVIDIA",
    notes="-2+3",
    source="\x1b]0;pwned\x07\x1b[2J a log",
)


def test_csv_cells_are_guarded_and_numbers_stay_numbers():
    assert render.csv_safe("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert render.csv_safe("@SUM(1)") == "'@SUM(1)" and render.csv_safe("+NVIDIA") == "'+NVIDIA"
    assert render.csv_safe("-6.6") == "-6.6" and render.csv_safe(-6.6) == -6.6
    assert render.csv_safe("\tx") == "\\x09x"  # a tab is shown as any control character is (issue 33.7)
    assert render.safe_text("a\x1b[31mb\x9b") == "a\\x1b[31mb\\x9b"


@pytest.mark.slow
def test_a_hostile_reference_csv_reaches_no_cell_or_terminal_unguarded(cli, tmp_path, seed_sweep):
    path = tmp_path / "evil.csv"
    path.write_text(_csv([_user_row(**HOSTILE)]), encoding="utf-8")
    out = cli("references", "--references", path, "--gpu", "evil", "--format", "csv")
    assert out.returncode == 0, out
    cells = next(r for r in csv.DictReader(io.StringIO(out.stdout)))
    assert cells["gpu_name"] == "'=cmd|' /C calc'!A0" and cells["aliases"] == "'@SUM(1+1)"
    assert cells["vendor"] == "'+NVIDIA" and cells["notes"] == "'-2+3" and cells["images_per_sec"] == "150"
    assert "\x1b" not in out.stdout and "\\x1b]0;pwned" in out.stdout
    # what was guarded reads back as it was written
    again_path = tmp_path / "again.csv"
    again_path.write_text(out.stdout, encoding="utf-8")
    again = cli("references", "--references", again_path, "--gpu", "evil", "--format", "json")
    assert again.returncode == 0, again
    assert again.rows()[0]["name"] == "=cmd|' /C calc'!A0"
    for args in (
        ("references", "--references", path),
        ("references", "--references", path, "--gpu", "evil"),
        ("references", "--references", path, "--gpu", "evil", "--format", "markdown"),
    ):
        shown = cli(*args)
        assert shown.returncode == 0 and "\x1b" not in shown.stdout + shown.stderr, shown
    ranked = cli("compare", seed_sweep, "--rank", "--references", path, "--format", "csv")
    assert ranked.returncode == 0, ranked
    evil = next(r for r in csv.DictReader(io.StringIO(ranked.stdout)) if r["gpu_id"] == "evil")
    assert evil["gpu"] == "'=cmd|' /C calc'!A0"
    float(evil["geomean_pct"])
    table = cli("compare", seed_sweep, "--rank", "--references", path)
    assert table.returncode == 0 and "\x1b" not in table.stdout, table


@pytest.mark.slow
def test_an_error_quoting_a_hostile_path_shows_its_escapes(cli, tmp_path):
    missing = tmp_path / "refs\x1b]0;pwned\x07.csv"
    result = cli("references", "--references", missing)
    line = assert_clean_error(result, 2, "does not exist")
    assert "\x1b" not in result.stderr and "\\x1b]0;pwned" in line


@pytest.mark.slow
def test_a_tiny_figure_prints_in_full_and_reads_back(cli, tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text(_csv([_user_row(images_per_sec="5e-324")]), encoding="utf-8")
    out = cli("references", "--references", path, "--gpu", "mine", "--format", "csv")
    assert out.returncode == 0, out
    value = next(csv.DictReader(io.StringIO(out.stdout)))["images_per_sec"]
    assert value != "0" and "e" not in value and float(value) == 5e-324
    again = tmp_path / "again.csv"
    again.write_text(out.stdout, encoding="utf-8")
    back = cli("references", "--references", again, "--gpu", "mine", "--format", "csv")
    assert back.returncode == 0 and back.stdout == out.stdout, back


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_new_views_fit_the_terminal(tmp_path, columns):
    from ptyscreen import run_in_pty

    listing = run_in_pty(["references"], columns, rows=120)
    assert listing.returncode == 0 and listing.widest() <= columns, listing
    assert "tesla-t4" in listing.text and "Tesla T4" in listing.text
    detail = run_in_pty(["references", "--gpu", "radeon-vii"], columns)
    assert detail.returncode == 0 and detail.widest() <= columns, detail
    assert "271.73" in detail.text and "285.54" in detail.text
    ranked = run_in_pty(["compare", "tests/data/format1/base", "--rank", "--nearest"], columns, rows=120)
    assert ranked.returncode == 0 and ranked.widest() <= columns, ranked
    assert "\u2020" in ranked.text and "(yours)" in ranked.text
    # a hostile name on a terminal: shown, not obeyed
    path = tmp_path / "evil.csv"
    path.write_text(_csv([_user_row(gpu_name="Evil\x1b[2J\x1b]0;pwned\x07Card")]), encoding="utf-8")
    shown = run_in_pty(["references", "--references", str(path), "--gpu", "mine"], columns)
    assert shown.returncode == 0 and b"\x1b]0;pwned" not in shown.raw and "\\x1b" in shown.text, shown
