"""References, round two (issue 23: 40+ GPUs, a trust level per row, the closest-row order, a readable
listing) and issue 27's reference defects (11: a cluster job against 1-GPU figures; 13: unbounded reads;
14: formula and terminal-escape injection; a 5e-324 figure printed as 0)."""

import csv
import io
import os
import re
import time

import pytest
from conftest import assert_clean_error
from sweepdata import seed_runs, write_sweep

from tfcnnwrap import render
from tfcnnwrap.results.references import COLUMNS, FACTS_FILE, Result, closest_row

WANTED = dict(
    batch_size=64, precision="fp32", num_gpus=1, variable_update="parameter_server", data="synthetic", xla="no"
)


def row(value, **kw):
    fields = dict(
        gpu_id="x",
        model="resnet50",
        batch_size=64,
        images_per_sec=float(value),
        text=str(value),
        precision="fp32",
        num_gpus=1,
        variable_update="parameter_server",
        data="synthetic",
        tf_version="1.12",
        source="s",
        notes="",
        origin="built-in",
        xla="no",
        trust="user-log",
    )
    fields.update(kw)
    return Result(**fields)


def chosen(*rows):
    return closest_row(rows, WANTED)[0].images_per_sec


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


# -- the closest-row order: one test per step ----------------------------------------------------------------


def test_closest_1_same_precision_before_anything_else():
    assert chosen(row(1, precision="fp16", trust="vendor"), row(2, num_gpus=2, batch_size=128)) == 2


def test_closest_2_same_gpu_count_before_batch_size():
    assert chosen(row(1, num_gpus=2), row(2, batch_size=128)) == 2


def test_closest_3_same_batch_size_then_the_nearest_before_variable_update():
    assert chosen(row(1, batch_size=128), row(2, variable_update="replicated")) == 2
    assert chosen(row(1, batch_size=256), row(2, batch_size=32)) == 2


def test_closest_4_same_variable_update_before_the_data():
    assert chosen(row(1, variable_update="replicated"), row(2, data="real")) == 2


def test_closest_5_synthetic_data_before_trust():
    assert chosen(row(1, data="real", trust="vendor"), row(2, trust="user-log")) == 2


def test_closest_6_higher_trust_before_a_newer_tf():
    assert chosen(row(1, trust="reviewer", tf_version="2.4"), row(2, trust="vendor", tf_version="1.12")) == 2
    assert chosen(row(1, trust="partial"), row(2, trust="derived"), row(3, trust="")) == 3


def test_closest_7_newer_tf_then_the_rows_order():
    assert chosen(row(1, tf_version="1.15"), row(2, tf_version="2.4"), row(3, tf_version="")) == 2
    assert chosen(row(1, tf_version="1.9"), row(2, tf_version="1.12")) == 2  # 1.12 is newer than 1.9
    assert chosen(row(1), row(2)) == 1
    assert closest_row([], WANTED) == (None, [])


def test_a_blank_condition_never_differs():
    result, differs = closest_row([row(1, variable_update="", xla="")], WANTED)
    assert result.images_per_sec == 1 and differs == []


# -- the data: 40+ GPUs, every row a source and a trust level -----------------------------------------------


@pytest.mark.slow
def test_references_csv_has_40_gpus_every_row_with_a_source_and_trust(cli, tmp_path):
    out = cli("references", "--format", "csv")
    assert out.returncode == 0, out
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert list(rows[0]) == COLUMNS and COLUMNS[-1] == "trust"
    assert len({r["gpu_id"] for r in rows}) >= 40
    assert all(
        r["source"].strip() and r["trust"] in ("vendor", "reviewer", "user-log", "derived", "partial") for r in rows
    )
    # a resnet50 figure for each, or gpus.csv says why not
    with_resnet50 = {r["gpu_id"] for r in rows if r["model"] == "resnet50"}
    with open(FACTS_FILE, encoding="utf-8", newline="") as fh:
        facts = {f["gpu_id"]: f["notes"] for f in csv.DictReader(fh)}
    for gpu_id in {r["gpu_id"] for r in rows} - with_resnet50:
        assert "no resnet50 figure: " in facts[gpu_id], gpu_id
    assert len(with_resnet50) >= 38
    # the whole listing reads back as a user file, unchanged
    path = tmp_path / "all.csv"
    path.write_text(out.stdout, encoding="utf-8")
    again = cli("references", "--references", path, "--format", "csv")
    assert again.returncode == 0 and again.stdout == out.stdout, again


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


# -- trust in compare --------------------------------------------------------------------------------------


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


# -- issue 27, 11: a cluster job's total against references of its workers x GPUs --------------------------


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


# -- issue 27, 13: reading a reference CSV is bounded -------------------------------------------------------


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


# -- issue 27, 14: formulas and escapes from someone else's CSV ---------------------------------------------


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


# -- issue 27, minor: a 5e-324 figure --------------------------------------------------------------------------


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


# -- on screen ----------------------------------------------------------------------------------------------


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
