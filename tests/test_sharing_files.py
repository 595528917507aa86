"""The sharing path's files: what the library, export, report, import and site write or read on disk, and
what they say when the disk or a path is not what it should be (issue 33: 10, 11, 12, 17). Each test failed on
the code before its fix."""

import errno
import json
import os
import sqlite3
import stat

import pytest
from bundledata import build, logged_sweep, variants, write_bundles
from conftest import assert_clean_error

from tfcnnwrap.filelock import FileLock
from tfcnnwrap.share import bundle as bundles


@pytest.fixture
def seed(tmp_path):
    return build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))


def data_env(tmp_path):
    return {"TFCNNWRAP_DATA": str(tmp_path / "data")}


# -- 33.10: a full disk is a full disk, not a broken library -------------------------------------------------


@pytest.mark.slow
def test_a_full_disk_writing_a_bundle_file_says_the_disk_is_full(cli, tmp_path, seed, monkeypatch):
    from tfcnnwrap import safefs

    folder = write_bundles(tmp_path / "b", [seed])

    def full(path, data, fsync=True):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(safefs, "atomic_write", full)
    line = assert_clean_error(cli("import", folder, env=data_env(tmp_path)), 2, "full")
    assert "move it aside" not in line and "unusable" not in line, line
    assert str(tmp_path / "data") in line


@pytest.mark.slow
def test_a_full_disk_under_the_index_says_the_disk_is_full_and_the_library_stays_whole(
    cli, tmp_path, seed, monkeypatch
):
    first, *more = variants(seed, 40)
    assert cli("import", write_bundles(tmp_path / "a", [first]), env=data_env(tmp_path)).returncode == 0
    connect = sqlite3.connect

    def no_room_to_grow(*args, **kwargs):  # SQLite's own SQLITE_FULL, as a full disk gives it
        db = connect(*args, **kwargs)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute("PRAGMA max_page_count=%d" % pages)
        return db

    monkeypatch.setattr(sqlite3, "connect", no_room_to_grow)
    line = assert_clean_error(cli("import", write_bundles(tmp_path / "b", more), env=data_env(tmp_path)), 2, "full")
    assert "move it aside" not in line and "unusable" not in line, line
    monkeypatch.setattr(sqlite3, "connect", connect)
    db = sqlite3.connect(str(tmp_path / "data" / "library.sqlite"))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    again = cli("import", tmp_path / "b", env=data_env(tmp_path))
    assert again.returncode == 0 and "imported" in again.stdout, again


# -- 33.11: site --out writes only into its own folder --------------------------------------------------------


@pytest.mark.slow
def test_site_refuses_a_folder_holding_files_it_did_not_make(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    out = tmp_path / "mine"
    out.mkdir()
    (out / "index.html").write_text("my own page", encoding="utf-8")
    line = assert_clean_error(cli("site", sweep, "--out", out), 2, "index.html")
    assert "empty" in line, line
    assert (out / "index.html").read_text(encoding="utf-8") == "my own page"
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]


@pytest.mark.slow
def test_site_rebuilt_removes_the_pages_the_new_one_no_longer_has(cli, tmp_path):
    one = logged_sweep(tmp_path / "one", values={"resnet50": 176.93})
    two = logged_sweep(tmp_path / "two", values={"vgg16": 110.23}, gpus=("GeForce RTX 2080",))
    out = tmp_path / "site"
    assert cli("site", one, two, "--out", out).returncode == 0
    before = {p.relative_to(out) for p in out.rglob("*.html")}
    assert cli("site", one, "--out", out).returncode == 0
    after = {p.relative_to(out) for p in out.rglob("*.html")}
    assert after < before and not any("2080" in str(p) for p in after), (before, after)
    assert cli("site", one, "--out", out).returncode == 0  # a folder a site made stays the site's


@pytest.mark.slow
def test_site_never_removes_what_a_planted_marker_names_outside_the_site(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    out = tmp_path / "site"
    assert cli("site", sweep, "--out", out).returncode == 0
    victim = tmp_path / "victim.html"
    victim.write_text("keep", encoding="utf-8")
    marker = next(p for p in out.iterdir() if p.name.startswith(".tfcnnwrap"))
    data = json.loads(marker.read_text(encoding="utf-8"))
    data["pages"] = data["pages"] + ["../victim.html", str(victim)]
    marker.write_text(json.dumps(data), encoding="utf-8")
    cli("site", sweep, "--out", out)
    assert victim.read_text(encoding="utf-8") == "keep"


# -- 33.12: export of a sweep still running, or interrupted ----------------------------------------------------


@pytest.mark.slow
def test_export_of_a_sweep_still_running_is_refused(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    with FileLock(sweep / ".tfcnnwrap.lock"):  # what a running sweep holds
        result = cli("export", sweep, "--out", tmp_path / "b.tfcw.json.gz")
    assert_clean_error(result, 2, "still running: wait or stop it")
    assert not (tmp_path / "b.tfcw.json.gz").exists()
    assert cli("export", sweep, "--out", tmp_path / "b.tfcw.json.gz").returncode == 0  # once it has ended


@pytest.mark.slow
def test_export_of_an_interrupted_sweep_warns_naming_the_runs_it_lacks(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93, "vgg16": 110.23})
    lines = (sweep / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    (sweep / "runs.jsonl").write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")  # stopped after 4 of 6
    result = cli("export", sweep, "--out", tmp_path / "b.tfcw.json.gz")
    assert result.returncode == 0, result
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "interrupted" in warning[0], result
    assert "vgg16" in warning[0] and "2 of 6" in warning[0], result


# -- 33.17: the leftovers ----------------------------------------------------------------------------------


def test_ctrl_c_while_a_bundle_file_is_made_leaves_no_hidden_temp_file(tmp_path, monkeypatch):
    from tfcnnwrap import safefs

    real_open = os.open

    def interrupted_after_open(path, flags, *args, **kwargs):  # Ctrl-C lands as the call returns
        fd = real_open(path, flags, *args, **kwargs)
        os.close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "open", interrupted_after_open)
    with pytest.raises(KeyboardInterrupt):
        safefs.atomic_write(tmp_path / "x.tfcw.json.gz", b"data")
    monkeypatch.setattr(os, "open", real_open)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("verb", [["export"], ["report"]])
def test_a_sweep_json_linked_outside_the_sweep_is_not_followed(cli, tmp_path, verb):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    outside = tmp_path / "elsewhere.json"
    (sweep / "sweep.json").rename(outside)
    os.symlink(outside, sweep / "sweep.json")
    out = ["--out", tmp_path / "b.tfcw.json.gz"] if verb == ["export"] else []
    assert_clean_error(cli(*verb, sweep, *out, cwd=tmp_path), 2, "sweep.json", "link")


@pytest.mark.slow
def test_library_under_a_regular_file_is_one_line_not_no_bundles(cli, tmp_path):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    for where in (tmp_path / "afile", tmp_path / "afile" / "data"):
        line = assert_clean_error(cli("library", env={"TFCNNWRAP_DATA": str(where)}), 2, "not a directory")
        assert "afile" in line, line


@pytest.mark.slow
def test_git_out_of_space_says_the_disk_is_full_not_the_network():
    from git.exc import GitCommandError

    from tfcnnwrap.share.gitrepo import git_error

    exc = GitCommandError(
        ["git", "fetch"],
        128,
        stderr="error: unable to write file: No space left on device\nfatal: unpack-objects failed",
    )
    message = git_error("fetching", "https://example.org/r.git", exc).message
    assert "full" in message and "network" not in message, message


@pytest.mark.slow
def test_ctrl_c_during_import_leaves_no_hidden_file_in_the_library(cli, tmp_path, seed, monkeypatch):
    real_open = os.open

    def ctrl_c_as_the_temp_file_is_made(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if str(path).endswith(".tmp"):
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", ctrl_c_as_the_temp_file_is_made)
    result = cli("import", write_bundles(tmp_path / "b", [seed]), env=data_env(tmp_path))
    monkeypatch.setattr(os, "open", real_open)
    assert result.returncode == 130, result
    assert [p.name for p in (tmp_path / "data" / "bundles").iterdir()] == []


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("verb", [["report", "--format", "html"], ["export"]])
def test_out_at_a_fifo_is_refused_not_replaced(cli, tmp_path, verb):
    # as root, `--out /dev/null` replaced the device node with a regular file; a FIFO shows it unprivileged
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    fifo = tmp_path / "pipe"
    os.mkfifo(str(fifo))
    result = cli(verb[0], sweep, *verb[1:], "--out", fifo, cwd=tmp_path)
    assert_clean_error(result, 2, str(fifo))
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode), "the FIFO was replaced by a file"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_export_skips_a_log_that_is_not_a_regular_file(cli, tmp_path):
    # a FIFO where a run's log should be: export waited for a writer for ever
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    log = sorted((sweep / "logs").iterdir())[0]
    log.unlink()
    os.mkfifo(str(log))
    out = tmp_path / "b.tfcw.json.gz"
    result = cli("export", sweep, "--out", out, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result
    bundle = bundles.read_path(out).to_dict()
    assert len(bundle["logs"]) == 2 and not any(log.name in name for name in bundle["logs"]), bundle["logs"].keys()
