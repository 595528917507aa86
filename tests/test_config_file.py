"""The config file is read as any file from outside is (issue 33.4): a regular file, bounded in size, and
anything else one line naming the file (exit 2) at once. A FIFO at `TFCNNWRAP_CONFIG` or at the default path
hung every verb that reads settings; `/dev/null`, the usual "no config", stays an empty one."""

import os

import pytest
from conftest import assert_clean_error, run_cli

from tfcnnwrap import settings
from tfcnnwrap.errors import UsageError

# Every verb below reads settings before anything else; a hang is caught by the timeout, never waited out.
VERBS = [("report",), ("list",), ("doctor",), ("sweep", "--dry-run", "--models", "resnet50")]


def _fifo(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(str(path))
    return path


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@pytest.mark.slow
@needs_fifo
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_fifo_named_by_the_environment_is_refused_at_once(tmp_path, verb):
    fifo = _fifo(tmp_path / "conf" / "tfcnnwrap.toml")
    result = run_cli(*verb, cwd=tmp_path, env={settings.ENV_CONFIG: fifo}, timeout=30)
    line = assert_clean_error(result, 2, str(fifo), "not a regular file")
    assert "config file" in line


@pytest.mark.slow
@needs_fifo
def test_a_fifo_at_the_default_path_is_refused_at_once(tmp_path):
    fifo = _fifo(tmp_path / "xdg" / "tfcnnwrap" / "tfcnnwrap.toml")
    env = {settings.ENV_CONFIG: "", "XDG_CONFIG_HOME": tmp_path / "xdg"}
    result = run_cli("report", cwd=tmp_path, env=env, timeout=30)
    assert_clean_error(result, 2, str(fifo), "not a regular file")


def test_a_directory_is_refused_in_one_line(tmp_path):
    with pytest.raises(UsageError, match="not a regular file") as caught:
        settings.read_config({settings.ENV_CONFIG: str(tmp_path)})
    assert str(tmp_path) in caught.value.message


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_without_reading_it(tmp_path):
    with pytest.raises(UsageError, match="not a regular file"):
        settings.read_config({settings.ENV_CONFIG: "/dev/zero"})


def test_the_null_device_is_an_empty_config():
    assert settings.read_config({settings.ENV_CONFIG: os.devnull}) == {}


def test_a_file_over_the_bound_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * (settings.MAX_CONFIG_BYTES + 1))
    with pytest.raises(UsageError, match="larger than 64 KiB"):
        settings.read_config({settings.ENV_CONFIG: str(path)})


def test_a_link_to_a_regular_file_is_read(tmp_path):
    # dotfiles kept in a repository of their own are linked into place: the user's own file, not a stranger's
    real = tmp_path / "dotfiles" / "tfcnnwrap.toml"
    real.parent.mkdir()
    real.write_text('results_dir = "/r"\n', encoding="utf-8")
    link = tmp_path / "tfcnnwrap.toml"
    link.symlink_to(real)
    assert settings.read_config({settings.ENV_CONFIG: str(link)}) == {"results_dir": "/r"}
