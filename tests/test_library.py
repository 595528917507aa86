"""`import` and `library`, and the library's community results in `compare --against/--rank`."""

import gzip
import json
import sqlite3
import subprocess
import sys

import pytest
from bundledata import build, logged_sweep, variants, write_bundles
from conftest import assert_clean_error, cli_env

from tfcnnwrap.share import bundle as bundles

pytestmark = pytest.mark.slow

ROW_KEYS = {"id", "gpu", "model", "batch_size", "precision", "num_gpus", "images_per_sec", "verified", "created_at"}


@pytest.fixture
def data(tmp_path):
    return {"TFCNNWRAP_DATA": str(tmp_path / "data")}


@pytest.fixture
def seed_bundle(tmp_path):
    return build(logged_sweep(tmp_path / "seed", values={"resnet50": 176.93, "vgg16": 110.23}))


def library_json(cli, data, *flags):
    result = cli("library", "--format", "json", *flags, env=data)
    assert result.returncode == 0, result
    out = result.json()
    assert out["format"] == 2 and out["kind"] == "library" and isinstance(out["conditions"], dict)
    return out["rows"]


def test_import_verifies_deduplicates_and_lists(cli, tmp_path, data, seed_bundle):
    folder = write_bundles(tmp_path / "in", variants(seed_bundle, 3))
    result = cli("import", folder, env=data)
    assert result.returncode == 0, result
    assert "3 imported, 0 already there, 0 refused" in result.stderr
    again = cli("import", folder, *sorted(folder.iterdir())[:1], env=data)
    assert again.returncode == 0 and "0 imported, 4 already there" in again.stderr, again
    rows = library_json(cli, data)
    assert len(rows) == 6 and all(ROW_KEYS <= set(r) for r in rows)
    assert {r["model"] for r in rows} == {"resnet50", "vgg16"} and all(r["verified"] is True for r in rows)
    assert {r["images_per_sec"] for r in rows if r["model"] == "resnet50"} == {176.93}
    stored = sorted(p.name for p in (tmp_path / "data" / "bundles").iterdir())
    assert stored == sorted(p.name for p in folder.iterdir())
    assert len(library_json(cli, data, "--model", "vgg16")) == 3
    assert len(library_json(cli, data, "--gpu", "2070")) == 6 and library_json(cli, data, "--gpu", "2080") == []
    table = cli("library", env=data)
    assert table.returncode == 0 and "GeForce RTX 2070" in table.stdout and "176.93" in table.stdout, table


def test_refused_bundles_are_named_with_why_and_leave_nothing(cli, tmp_path, data, seed_bundle):
    folder = write_bundles(tmp_path / "in", [seed_bundle])
    tampered = json.loads(json.dumps(seed_bundle))
    tampered["runs"][0]["images_per_sec"] = 276.93
    tampered = bundles.with_id({k: v for k, v in tampered.items() if k != "id"})
    (folder / bundles.file_name(tampered)).write_bytes(bundles.to_bytes(tampered))
    (folder / "cut.tfcw.json.gz").write_bytes(bundles.to_bytes(seed_bundle)[:100])
    result = cli("import", folder, env=data)
    assert result.returncode == 1, result
    refused = [line for line in result.stderr.splitlines() if line.startswith("refused: ")]
    assert len(refused) == 2
    assert any("cut.tfcw.json.gz" in line and "truncated" in line for line in refused)
    assert any(tampered["id"] in line and "recorded 276.93" in line for line in refused)
    assert [p.name for p in (tmp_path / "data" / "bundles").iterdir()] == [bundles.file_name(seed_bundle)]
    assert {r["id"] for r in library_json(cli, data)} == {seed_bundle["id"]}


def test_an_unverified_bundle_is_imported_and_marked_so(cli, tmp_path, data, seed_bundle):
    bare = bundles.with_id({k: v for k, v in seed_bundle.items() if k not in ("id", "logs")})
    folder = write_bundles(tmp_path / "in", [bare])
    result = cli("import", folder, env=data)
    assert result.returncode == 0 and "unverified" in result.stdout, result
    assert {r["verified"] for r in library_json(cli, data)} == {False}
    assert "unverified" in cli("library", env=data).stdout
    # and it counts for nothing in compare: community results are verified ones only
    sweep = logged_sweep(tmp_path / "mine", values={"resnet50": 180.0})
    rank = cli("compare", sweep, "--rank", "--source", "community", env=data)
    assert_clean_error(rank, 2, "no verified community results")


def test_two_importers_at_once_store_each_bundle_once(tmp_path, data, seed_bundle):
    folder = write_bundles(tmp_path / "in", variants(seed_bundle, 70))  # 64 or more: checked in worker processes
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tfcnnwrap", "import", str(folder)],
            env=cli_env(data),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    db = sqlite3.connect(str(tmp_path / "data" / "library.sqlite"))
    assert db.execute("SELECT COUNT(*) FROM bundles").fetchone()[0] == 70
    assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 140
    assert len(list((tmp_path / "data" / "bundles").iterdir())) == 70


def test_an_unusable_library_is_exit_2(cli, tmp_path, seed_bundle):
    folder = write_bundles(tmp_path / "in", [seed_bundle])
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert_clean_error(cli("import", folder, env={"TFCNNWRAP_DATA": blocker}), 2, "unusable")
    assert_clean_error(cli("library", env={"TFCNNWRAP_DATA": blocker}), 2, "not a directory")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "library.sqlite").write_bytes(b"this is not a database" * 100)
    assert_clean_error(cli("import", folder, env={"TFCNNWRAP_DATA": broken}), 2, "unusable")
    assert_clean_error(cli("library", env={"TFCNNWRAP_DATA": broken}), 2, "unusable")
    assert_clean_error(cli("import", tmp_path / "nope", env={"TFCNNWRAP_DATA": broken}), 2, "does not exist")


def test_an_empty_library_lists_nothing_and_creates_nothing(cli, tmp_path, data):
    assert library_json(cli, data) == []
    result = cli("library", env=data)
    assert result.returncode == 0 and "no bundles" in result.stderr
    assert not (tmp_path / "data").exists()


# -- community results in compare ------------------------------------------------------------------------


def community_library(cli, tmp_path, data):
    """Three verified sweeps of one 2070 (resnet50 170, 175, 190) in the library."""
    made = [
        build(logged_sweep(tmp_path / ("c%d" % i), values={"resnet50": v, "vgg16": 100.0 + i}))
        for i, v in enumerate((170.0, 190.0, 175.0))
    ]
    result = cli("import", write_bundles(tmp_path / "in", made), env=data)
    assert result.returncode == 0, result
    return sorted(b["id"] for b in made)


def test_rank_shows_the_community_median_with_its_sweeps_and_bundles(cli, tmp_path, data):
    ids = community_library(cli, tmp_path, data)
    sweep = logged_sweep(tmp_path / "mine", values={"resnet50": 175.0, "vgg16": 101.0})
    result = cli("compare", sweep, "--rank", "--format", "json", env=data)
    assert result.returncode == 0, result
    rows = result.json()
    rows = rows["rows"] if isinstance(rows, dict) else rows
    community = [r for r in rows if r["gpu"] == "GeForce RTX 2070 community (3 sweeps)"]
    assert len(community) == 1 and community[0]["configurations"] == 2
    # medians 175 and 101 against the measured 175 and 101: level
    assert community[0]["geomean_pct"] == pytest.approx(100.0)
    assert any(r["gpu_id"] == "v100" for r in rows)
    table = cli("compare", sweep, "--rank", env=data)
    assert "community (3 sweeps)" in table.stdout
    assert "Community: GeForce RTX 2070 community (3 sweeps)" in table.stdout
    assert all(i[:12] in table.stdout for i in ids)
    only = cli("compare", sweep, "--rank", "--source", "community", "--format", "json", env=data).json()
    only = only["rows"] if isinstance(only, dict) else only
    assert {r["gpu"] for r in only} == {"GeForce RTX 2070 community (3 sweeps)", "GeForce RTX 2070"}
    builtin = cli("compare", sweep, "--rank", "--source", "builtin", "--format", "json", env=data).json()
    builtin = builtin["rows"] if isinstance(builtin, dict) else builtin
    assert not any("community" in r["gpu"] for r in builtin) and len(builtin) > 3


def test_against_a_community_entry_reads_its_median_range_and_bundles(cli, tmp_path, data):
    ids = community_library(cli, tmp_path, data)
    sweep = logged_sweep(tmp_path / "mine", values={"resnet50": 175.0})
    result = cli("compare", sweep, "--against", "2070 community,2080", "--format", "markdown", env=data)
    assert result.returncode == 0, result
    assert "175.00 (100.0%)" in result.stdout
    assert "community (3 sweeps): median 175.00, range 170.00-190.00 images/sec" in result.stdout
    assert all(i[:12] in result.stdout for i in ids)
    refused = cli("compare", sweep, "--against", "2070 community", "--source", "builtin", env=data)
    assert_clean_error(refused, 2, "2070 community")
    both = cli("compare", sweep, "--rank", "--source", "community", "--references", tmp_path / "x.csv", env=data)
    assert_clean_error(both, 2, "--references")


def test_gzip_of_a_library_bundle_is_byte_for_byte_what_was_imported(cli, tmp_path, data, seed_bundle):
    folder = write_bundles(tmp_path / "in", [seed_bundle])
    assert cli("import", folder, env=data).returncode == 0
    name = bundles.file_name(seed_bundle)
    stored = tmp_path / "data" / "bundles" / name
    assert stored.read_bytes() == (folder / name).read_bytes()
    assert json.loads(gzip.decompress(stored.read_bytes()))["id"] == seed_bundle["id"]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_library_table_on_a_terminal_keeps_names_whole_and_marks_unverified(cli, tmp_path, data, columns):
    from ptyscreen import run_in_pty

    laptop = build(
        logged_sweep(tmp_path / "l", values={"resnet50": 98.5}, gpus=("NVIDIA GeForce RTX 4090 Laptop GPU",))
    )
    seed = build(logged_sweep(tmp_path / "s", values={"vgg16": 110.23}))
    bare = bundles.with_id({k: v for k, v in seed.items() if k not in ("id", "logs")})
    assert cli("import", write_bundles(tmp_path / "in", [laptop, bare]), env=data).returncode == 0
    screen = run_in_pty(["library"], columns=columns, env=data)
    assert screen.returncode == 0, screen
    assert all(len(line) <= columns for line in screen.lines)
    text = "\n".join(screen.lines)
    assert "NVIDIA GeForce RTX 4090 Laptop GPU" in text and "GeForce RTX 2070" in text
    (laptop_row,) = [line for line in screen.lines if "98.50" in line]
    (seed_row,) = [line for line in screen.lines if "110.23" in line]
    assert " yes" in laptop_row and "unverified" in seed_row, screen


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_rank_on_a_terminal_names_the_community_bundles_in_whole_words(cli, tmp_path, data, columns):
    from ptyscreen import run_in_pty

    ids = community_library(cli, tmp_path, data)
    sweep = logged_sweep(tmp_path / "mine", values={"resnet50": 175.0, "vgg16": 101.0})
    screen = run_in_pty(["compare", sweep, "--rank"], columns=columns, env=data)
    assert screen.returncode == 0, screen
    assert all(len(line) <= columns for line in screen.lines)
    words = " ".join(screen.lines).split()
    assert "configuration" in words and "Community:" in words, screen
    assert all(i[:12] + ("," if i != ids[-1] else "") in words for i in ids), screen
