"""Defects a careless or hostile user found in the sharing and HTML verbs (bundles, library, site, --out), one
regression test each. Bundles from other people are hostile: what they hold must never reach a terminal as
control characters, crash a reader, or mean one thing to us and another to the next JSON parser."""

import gzip
import json
import os
import re
import stat

import pytest
from bundledata import logged_sweep
from conftest import assert_clean_error

from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.export import build

pytestmark = pytest.mark.slow


@pytest.fixture
def seed_bundle(tmp_path):
    return build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))


def write_raw(path, text):
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


# -- --out at something that is not a file ---------------------------------------------------------------


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


# -- what a bundle holds -----------------------------------------------------------------------------------


def test_a_gpu_name_with_control_characters_is_refused(cli, tmp_path, seed_bundle):
    # "GeForce\x1b[2J" cleared the screen of whoever ran `verify` or `import` on it
    content = {k: v for k, v in seed_bundle.items() if k != "id"}
    content["conditions"] = dict(content["conditions"], gpu="GeForce RTX 2070\x1b[2J\x1b]0;pwned\x07")
    path = tmp_path / "evil.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(bundles.with_id(content)))
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stdout + result.stderr, result
    assert "control character" in result.stdout, result
    imported = cli("import", path, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert imported.returncode == 1, imported
    assert "\x1b" not in imported.stdout + imported.stderr, imported


def test_an_overflowing_number_is_refused_not_a_crash(cli, tmp_path, seed_bundle):
    # 1e999 is valid JSON syntax that Python reads as infinity; the id check then crashed with a traceback
    text = json.dumps(seed_bundle).replace('"summary": [', '"summary": [{"mean": 1e999}, ', 1)
    path = write_raw(tmp_path / "inf.tfcw.json.gz", text)
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stdout + result.stderr and "unexpected error" not in result.stderr, result
    assert "1e999" in result.stdout, result


def test_a_duplicate_key_is_refused(cli, tmp_path, seed_bundle):
    # {"images_per_sec": 999.0, "images_per_sec": 176.93}: we read the last, a first-wins reader of the stored
    # file the first; the bundle verified and was imported byte for byte
    text = json.dumps(seed_bundle)
    at = text.index('"images_per_sec"')
    path = write_raw(tmp_path / "dup.tfcw.json.gz", text[:at] + '"images_per_sec": 999.0, ' + text[at:])
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "images_per_sec" in result.stdout and "twice" in result.stdout, result
    imported = cli("import", path, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert imported.returncode == 1, imported
    assert not list((tmp_path / "data" / "bundles").glob("*.gz")), "a refused bundle was stored"


def test_findings_show_control_characters_of_the_bundle_never_send_them(cli, tmp_path, seed_bundle):
    # a run's model or log name is the bundle's text: verify and import quoted it raw in their findings
    content = {k: v for k, v in seed_bundle.items() if k != "id"}
    runs = content["runs"]
    content["runs"] = [dict(runs[0], model="resnet50\x1b[2J\x1b]0;pwned\x07"), dict(runs[1], log="x\x1b[5m")]
    path = tmp_path / "evil.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(bundles.with_id(content)))
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 1, result
    assert "\\x1b[2J" in result.stdout, result
    assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stdout + result.stderr, result
    imported = cli("import", path, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert imported.returncode == 1 and "not verified" in imported.stderr, imported
    assert "\x1b" not in imported.stdout + imported.stderr, imported


def test_a_json_bomb_is_refused_before_it_is_parsed(cli, tmp_path, seed_bundle):
    # a 60 KB bundle of '{},{},...' took 1.6 GB of memory to parse; at the size limit one took the machine's
    content = {k: v for k, v in seed_bundle.items() if k != "id"}
    content["summary"] = [{} for _ in range(20000)] + content["summary"]
    path = tmp_path / "bomb.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(bundles.with_id(content)))
    assert path.stat().st_size < 10000
    env = {"TFCNNWRAP_MAX_BUNDLE_BYTES": "100000", "TFCNNWRAP_DATA": str(tmp_path / "data")}
    result = cli("verify", path, cwd=tmp_path, env=env)
    assert result.returncode == 2, result
    assert "values" in result.stdout and "limit" in result.stdout, result
    imported = cli("import", path, cwd=tmp_path, env=env)
    assert imported.returncode == 1 and "values" in imported.stderr, imported


def test_a_bundle_of_many_runs_with_logs_is_not_taken_for_a_bomb(cli, tmp_path, seed_bundle):
    path = tmp_path / "seed.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(seed_bundle))
    result = cli("verify", path, cwd=tmp_path, env={"TFCNNWRAP_MAX_BUNDLE_BYTES": "100000"})
    assert result.returncode == 0, result


@pytest.mark.parametrize("tamper", ["overflow", "duplicate"])
def test_site_reads_a_bundle_as_strictly_as_verify(cli, tmp_path, seed_bundle, tamper):
    # site had a reader of its own: 1e999 images/sec was shown as "nan", a key twice read as its last value
    text = json.dumps(seed_bundle)
    at = text.index('"images_per_sec"')
    text = (
        text.replace("176.93", "1e999") if tamper == "overflow" else text[:at] + '"images_per_sec": 999.0, ' + text[at:]
    )
    good = tmp_path / "in" / bundles.file_name(seed_bundle)
    good.parent.mkdir()
    good.write_bytes(bundles.to_bytes(seed_bundle))
    bad = write_raw(tmp_path / "in" / "bad.tfcw.json.gz", text)
    result = cli("site", good, bad, "--out", tmp_path / "site", cwd=tmp_path)
    assert result.returncode == 1, result
    assert "bad.tfcw.json.gz" in result.stderr and "Traceback" not in result.stderr, result
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html"))
    assert not re.search(r"\bnan\b", pages, re.IGNORECASE) and "999.0" not in pages


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
    bundle = bundles.read_path(out)
    assert len(bundle["logs"]) == 2 and not any(log.name in name for name in bundle["logs"]), bundle["logs"].keys()


def test_a_run_status_outside_the_contract_is_refused(cli, tmp_path, seed_bundle):
    # "banana" is no status; with no log to check against, the bundle was reported verified
    content = {k: v for k, v in seed_bundle.items() if k != "id"}
    content["runs"] = content["runs"] + [
        dict(content["runs"][0], run=4, status="banana", images_per_sec=None, log=None)
    ]
    path = tmp_path / "odd.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(bundles.with_id(content)))
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "banana" in result.stdout and "status" in result.stdout, result


def test_a_second_pull_of_one_url_into_one_library_says_a_pull_is_running(cli, tmp_path):
    # three pulls at once: two failed on git's shallow.lock, reported as "check the URL, your access and your
    # network"; the pull cache is now locked for the whole pull (here the test holds the lock)
    import subprocess

    from tfcnnwrap.environment import gitremote
    from tfcnnwrap.filelock import FileLock
    from tfcnnwrap.share.gitrepo import cache_path
    from tfcnnwrap.share.library import Library

    bare = tmp_path / "results.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    library = Library(tmp_path / "data")
    path = cache_path(library, gitremote.normalise_repo_url(str(bare), flag="GIT_URL"))
    library.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.parent / (path.name + ".lock")):
        result = cli("pull", bare, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert_clean_error(result, 2, "another tfcnnwrap pull", "wait for it")
    again = cli("pull", bare, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert again.returncode == 0, again
