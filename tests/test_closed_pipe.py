"""A reader that leaves (``report | head -1``) ends the output quietly: exit 0, nothing on stderr; a stdout
that is closed or full is still one line on stderr (issue 38.5)."""

import os
import subprocess
import sys

import pytest
from conftest import cli_env
from sweepdata import seed_runs, write_sweep

pytestmark = pytest.mark.slow

POSIX = pytest.mark.skipif(os.name != "posix", reason="a pipe whose reader left: SIGPIPE/EPIPE")


def _reader_gone(args, cwd):
    """``tfcnnwrap ARGS | head -0``: the pipe's reader has left before the first write (as ``head`` has by the
    time a long output reaches it), so every write meets EPIPE; (exit code, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
            cwd=str(cwd),
            env=cli_env({}),
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr.decode("utf-8", "replace")


@POSIX
@pytest.mark.parametrize(
    "args",
    [
        ["report", "{sweep}"],
        ["report", "{sweep}", "--format", "csv"],
        ["references"],
        ["compare", "{sweep}", "--against", "V100", "--format", "csv"],
        ["list", "{sweep}"],
    ],
)
def test_a_reader_that_leaves_ends_the_output_quietly(tmp_path, args):
    sweep = write_sweep(tmp_path / "s", seed_runs(3))
    argv = [str(a).replace("{sweep}", str(sweep)) for a in args]
    before = sorted(p.name for p in sweep.iterdir())
    code, stderr = _reader_gone(argv, tmp_path)
    assert code == 0 and stderr == "", (code, stderr)
    assert sorted(p.name for p in sweep.iterdir()) == before  # results on disk untouched
