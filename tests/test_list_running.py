"""Issue 38.4: `list` knows a running sweep (its writer lock is held: `running (pid N)`) and never offers a
`--resume` that would be refused; the default sweep picks (`report` and `compare --rank` with no sweep named)
skip a running sweep."""

import json
import os

import pytest
from sweepdata import write_sweep

from tfcnnwrap.filelock import FileLock
from tfcnnwrap.results.store import LOCK_NAME

pytestmark = pytest.mark.slow

PLANNED = [("resnet50", 64), ("alexnet", 512)]


@pytest.fixture
def results(tmp_path):
    """results/ with a finished sweep and, newer, one still running (half its runs done, its lock held)."""
    root = tmp_path / "results"
    write_sweep(root / "20261201-090000", {("resnet50", 64): [176.1, 176.3, 176.2]})
    running = write_sweep(root / "20261201-101500", {("resnet50", 64): [170.0]}, planned=PLANNED)
    meta = json.loads((running / "sweep.json").read_text(encoding="utf-8"))
    meta["created_at"] = "2026-12-01T10:15:00Z"
    (running / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    lock = FileLock(running / LOCK_NAME).acquire()  # as the sweep holds it while it runs: our pid inside
    yield root
    lock.release()


def test_list_says_running_and_offers_no_resume(cli, results):
    rows = json.loads(cli("list", results, "--format", "json").stdout)["rows"]
    running = rows[0]
    assert running["sweep"].endswith("20261201-101500")
    assert running["state"] == "running (pid %d)" % os.getpid()
    assert running["resume"] is None and running["complete"] is False
    assert rows[1]["state"] == "complete"


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_list_on_screen_shows_the_running_sweep(results, columns):
    from ptyscreen import run_in_pty

    screen = run_in_pty(["list", results], columns=columns)
    assert screen.returncode == 0 and screen.widest() <= columns, screen
    text = " ".join(screen.text.split())
    assert "running (pid %d)" % os.getpid() in text, screen
    assert "--resume" not in text and "interrupted" not in text, screen


def test_default_picks_skip_a_running_sweep(cli, results):
    env = {"TFCNNWRAP_RESULTS": str(results)}
    report = cli("report", "--format", "json", env=env)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["sweep"].endswith("20261201-090000")
    rank = cli("compare", "--rank", "--format", "json", env=env)
    assert rank.returncode == 0, rank.stderr
    assert json.loads(rank.stdout)["sweep"].endswith("20261201-090000")


def test_a_running_sweep_alone_is_named_as_running(cli, tmp_path):
    root = tmp_path / "results"
    running = write_sweep(root / "20261201-101500", {("resnet50", 64): [170.0]}, planned=PLANNED)
    with FileLock(running / LOCK_NAME):
        result = cli("report", env={"TFCNNWRAP_RESULTS": str(root)})
    assert result.returncode == 2 and "running (pid %d)" % os.getpid() in result.stderr, result.stderr
