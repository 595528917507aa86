"""The screens of issue 22.14 in a real pseudo-terminal at 60, 80 and 120 columns: doctor's copy-bandwidth
check and compare's PCIe-link note fit, and their figures never split."""

import os
import re

import pytest
from ptyscreen import run_in_pty
from sweepdata import seed_runs, write_sweep
from test_linknote import TB3, with_link

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")]
WIDTHS = [60, 80, 120]


def assert_fits(scr):
    assert scr.returncode == 0, scr
    assert scr.widest() <= scr.columns, scr
    assert "…" not in scr.text, scr


@pytest.mark.parametrize("columns", WIDTHS)
def test_doctor_bandwidth_line_fits(fake_tf, tmp_path, columns):
    env = {"TFCNNWRAP_NVIDIA_SMI": "none", "FAKE_TF_GPUS": "GeForce RTX 2070"}
    scr = run_in_pty(
        ["doctor", "--python", str(fake_tf("2.4.0")), "--bandwidth"],
        columns=columns,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert_fits(scr)
    line = next(text for text in scr.lines if "copy bandwidth" in text)
    joined = " ".join(scr.lines[scr.lines.index(line) : scr.lines.index(line) + 3])
    assert re.search(r"host->GPU \d+\.\d GB/s", joined) and re.search(r"GPU->host \d+\.\d GB/s", joined), scr


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_link_note_fits(tmp_path, columns):
    sweep = with_link(write_sweep(tmp_path / "egpu", seed_runs(3)), [TB3])
    for verb in (["--against", "2080"], ["--rank"]):
        scr = run_in_pty(["compare", str(sweep)] + verb, columns=columns, cwd=tmp_path)
        assert_fits(scr)
        text = " ".join(line.strip() for line in scr.lines)
        assert "PCIe link: the GPU ran at gen3 x4 of gen3 x16 (Thunderbolt 3?) in every run" in text, scr
