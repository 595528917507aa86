"""Issue 22.5: `tfcnnwrap list [RESULTS_DIR]`, past sweeps newest first, complete or interrupted (with the
command that resumes it), in every format; and on screen at 60, 80 and 120 columns."""

import csv
import io
import json
import os

import pytest
from conftest import assert_clean_error
from sweepdata import write_sweep

pytestmark = pytest.mark.slow


def _edit_meta(path, **changes):
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key == "plan_runs":
            meta["plan"]["runs"] = value
        else:
            meta[key] = value
    (path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    write_sweep(
        root / "20261130-101500", {("resnet50", 64): [176.1, 177.0, 176.5], ("vgg16", 64): [110.0, "oom", "skipped"]}
    )
    half = write_sweep(root / "20261201-090000", {("resnet50", 64): [176.1]})
    _edit_meta(half, created_at="2026-12-01T09:00:00Z", plan_runs=3)
    newer = write_sweep(root / "20261201-120000", {("resnet50", 64): [176.1]})
    _edit_meta(newer, created_at="2026-12-01T12:00:00Z", format=99)
    (root / "notes").mkdir()  # not a sweep: not listed
    return root


def test_list_json_is_newest_first_and_says_what_to_resume(cli, results):
    result = cli("list", results, "--format", "json")
    assert result.returncode == 0, result
    assert result.json()["kind"] == "list"
    rows = result.rows()
    assert [os.path.basename(r["sweep"]) for r in rows] == ["20261201-120000", "20261201-090000", "20261130-101500"]
    unreadable, half, done = rows
    assert unreadable["state"] == "unreadable" and "format 99" in unreadable["error"]
    assert half["complete"] is False and half["state"] == "interrupted (2 to run)"
    assert half["resume"] == "python -m tfcnnwrap sweep --resume %s" % (results / "20261201-090000")
    assert (half["runs_ok"], half["runs_failed"]) == (1, 0)
    assert done["complete"] is True and done["resume"] is None and (done["runs_ok"], done["runs_failed"]) == (4, 2)
    assert done["gpu"] == "GeForce RTX 2070" and done["conditions"]["precision"] == "fp32"
    assert done["models"] == [{"model": "resnet50", "batch_size": 64}, {"model": "vgg16", "batch_size": 64}]
    assert done["created_at"] == "2026-11-30T10:15:00Z"


def test_list_csv_and_markdown(cli, results):
    rows = list(csv.DictReader(io.StringIO(cli("list", results, "--format", "csv").stdout)))
    assert rows[1]["complete"] == "false" and rows[2]["models"] == "resnet50 (64), vgg16 (64)"
    assert rows[2]["conditions"] == "fp32 · 1 GPU · parameter_server · synthetic data"
    markdown = cli("list", results, "--format", "markdown").stdout
    assert "| 20261201-090000 |" in markdown and "resume 20261201-090000: python -m tfcnnwrap sweep" in markdown


def test_list_defaults_to_the_results_directory(cli, results, tmp_path):
    rows = cli("list", "--format", "json", env={"TFCNNWRAP_RESULTS": results}).rows()
    assert len(rows) == 3
    assert_clean_error(cli("list", tmp_path / "none"), 2, "not a directory")


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_list_on_screen(results, columns):
    from ptyscreen import run_in_pty

    scr = run_in_pty(["list", results], columns=columns)
    assert scr.returncode == 0, scr
    assert scr.widest() <= columns, scr
    text = " ".join(scr.text.split())
    for name in ("20261201-120000", "20261201-090000", "20261130-101500"):
        assert name in text
    assert "interrupted (2 to run)" in text and "complete" in text and "unreadable" in text
    assert "resume 20261201-090000:" in text  # the command on a line of its own, unbroken even where it folds
    raw = scr.raw.decode("utf-8", "replace").replace("\r", "")
    assert "\n  python -m tfcnnwrap sweep --resume %s" % (results / "20261201-090000") in raw
