"""The built-in references are parsed once and kept, compact, in the user cache directory keyed by the packaged
files' content; a missing, stale, broken or hostile cache is ignored and rewritten (issue 39, start-up)."""

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from tfcnnwrap.jsontext import dumps
from tfcnnwrap.results import references


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """A user cache directory of the test's own, for this process and for the CLI it runs."""
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def cache_file(home):
    return home / "tfcnnwrap" / references.CACHE_NAME


def parsed():
    gpus = references.parse_csv(references.DATA_FILE, "built-in")
    references.load_facts(gpus)
    return gpus


def listing(home, *more):
    result = run_cli("references", *more, env={"XDG_CACHE_HOME": home})
    assert result.returncode == 0, result
    return result.stdout


@pytest.mark.parametrize(
    "environ",
    [
        {"XDG_CACHE_HOME": "/somewhere/cache", "HOME": "/home/someone"},
        {"XDG_CACHE_HOME": "", "HOME": "/home/someone"},
        {"XDG_CACHE_HOME": "relative/cache", "HOME": "/home/someone"},
        {"HOME": "/home/someone/"},
        {"XDG_CACHE_HOME": "/trailing/slash/", "HOME": "/h"},
    ],
)
def test_the_cache_lies_where_platformdirs_says(environ, monkeypatch):
    import platformdirs

    for name in ("XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    expected = Path(platformdirs.user_cache_dir("tfcnnwrap", appauthor=False)) / references.CACHE_NAME
    assert references.cache_path() == expected


def test_the_cache_reads_back_what_the_csv_parses_to(cache_home):
    key = references._builtin_key()
    expected = parsed()
    assert references._expanded(json.loads(dumps(references._compact(key, expected))), key) == expected
    assert not cache_file(cache_home).exists()
    assert references.builtin_gpus() == expected  # parsed, then kept
    assert cache_file(cache_home).is_file()
    assert references._cached_builtin(key) == expected
    assert references.builtin_gpus() == expected  # read from the cache


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_references_print_the_same_with_a_cold_and_a_warm_cache(cache_home, fmt):
    cold = listing(cache_home, "--format", fmt)
    assert cache_file(cache_home).is_file()
    assert listing(cache_home, "--format", fmt) == cold


def _edit(home, change):
    data = json.loads(cache_file(home).read_text(encoding="utf-8"))
    change(data)
    cache_file(home).write_text(json.dumps(data), encoding="utf-8")


HOSTILE = {
    "an index past the texts": lambda d: d["gpus"][0][5][0].__setitem__(0, len(d["texts"]) + 5),
    "a negative index": lambda d: d["gpus"][0].__setitem__(1, -1),
    "a text for a batch size": lambda d: d["gpus"][0][5][0].__setitem__(2, "64"),
    "a batch size of 0": lambda d: d["gpus"][0][5][0].__setitem__(2, 0),
    "a number for a text": lambda d: d["texts"].__setitem__(0, 5),
    "a short result": lambda d: d["gpus"][0][5][0].pop(),
    "a GPU without facts": lambda d: d["gpus"][0].pop(),
    "a price that is an object": lambda d: d["gpus"][0][6].__setitem__(0, {"usd": 1}),
    "another key": lambda d: d.update(key="0" * 64),
    "another format": lambda d: d.update(format=0),
    "gpus not a list": lambda d: d.update(gpus={"x": 1}),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(HOSTILE))
def test_a_hostile_cache_is_ignored_and_rewritten(cache_home, how):
    expected = listing(cache_home, "--format", "json")
    good = cache_file(cache_home).read_bytes()
    _edit(cache_home, HOSTILE[how])
    assert references._cached_builtin(references._builtin_key()) is None
    assert listing(cache_home, "--format", "json") == expected
    assert cache_file(cache_home).read_bytes() == good  # rewritten


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe\x00", b"[1, 2]", b"null", b"[" * 100000])
def test_a_broken_cache_is_ignored_and_rewritten(cache_home, content):
    expected = listing(cache_home)
    good = cache_file(cache_home).read_bytes()
    cache_file(cache_home).write_bytes(content)
    result = run_cli("references", env={"XDG_CACHE_HOME": cache_home})
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")
    assert cache_file(cache_home).read_bytes() == good


@pytest.mark.slow
def test_a_cache_that_is_a_link_is_neither_read_nor_followed(cache_home, tmp_path):
    listing(cache_home)
    target = tmp_path / "elsewhere.json"
    shutil.move(str(cache_file(cache_home)), str(target))
    before = target.read_bytes()
    cache_file(cache_home).symlink_to(target)
    assert references._cached_builtin(references._builtin_key()) is None
    listing(cache_home)
    assert target.read_bytes() == before  # the link was replaced, not written through
    assert not cache_file(cache_home).is_symlink()


def test_a_cache_directory_that_cannot_be_written_costs_only_the_parse(cache_home):
    cache_home.mkdir()
    (cache_home / "tfcnnwrap").write_text("a file where the directory goes", encoding="utf-8")
    assert references.builtin_gpus() == parsed()


def test_an_edited_packaged_csv_is_parsed_again(cache_home, tmp_path, monkeypatch):
    references.builtin_gpus()  # the cache of the packaged file
    lines = references.DATA_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("images_per_sec")] = "12345.5"
    edited = tmp_path / "references.csv"
    edited.write_text(lines[0] + ",".join(row) + "".join(lines[2:]), encoding="utf-8")
    monkeypatch.setattr(references, "DATA_FILE", edited)
    gpus = references.builtin_gpus()
    first = next(iter(gpus.values())).results[0]
    assert (first.images_per_sec, first.text) == (12345.5, "12345.5")


@pytest.mark.slow
def test_a_user_references_csv_is_still_parsed_with_its_line_numbers(cache_home, tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "gpu_id,gpu_name,model,batch_size,images_per_sec,precision,num_gpus\nmygpu,My GPU,resnet50,64,abc,fp32,1\n",
        encoding="utf-8",
    )
    result = run_cli("references", "--references", mine, env={"XDG_CACHE_HOME": cache_home})
    assert result.returncode == 2 and "line 2" in result.stderr and "images_per_sec" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root writes anywhere")
def test_a_read_only_cache_directory_is_not_an_error(cache_home):
    (cache_home / "tfcnnwrap").mkdir(parents=True)
    os.chmod(cache_home / "tfcnnwrap", 0o500)
    try:
        assert listing(cache_home)
    finally:
        os.chmod(cache_home / "tfcnnwrap", 0o700)
