"""Defects a careless or hostile user found in the sharing and HTML verbs (bundles, library, site, --out), one
regression test each. Bundles from other people are hostile: what they hold must never reach a terminal as
control characters, crash a reader, or mean one thing to us and another to the next JSON parser."""

import gzip
import os
import stat

import pytest
from bundledata import logged_sweep
from conftest import assert_clean_error

from tfcnnwrap.bundleexport import build


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
