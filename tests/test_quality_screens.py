"""Issue 22.1 on screen: a flagged report at 60, 80 and 120 columns in a real pseudo-terminal fits, shows
each configuration's flags (or names the column hidden) and explains every problem under the table."""

import json
import os

import pytest
from sweepdata import write_sweep

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")]


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    path = tmp_path_factory.mktemp("flagged") / "20261201-101500"
    write_sweep(
        path,
        {
            ("resnet50", 64): [176.1, 177.0, 176.5, 150.0, 176.8],
            ("inception3", 64): [176.1, 170.8, 165.9],
            ("alexnet", 512): [2258.9, 2260.1, 2259.5],
        },
    )
    runs = path / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    for record in records:
        if record["model"] == "alexnet":
            record["telemetry"] = {"throttled": True, "max_temp_c": 86, "throttle_reasons": ["hw_thermal_slowdown"]}
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_a_flagged_report_fits_and_says_what_to_do(flagged, columns):
    from ptyscreen import run_in_pty

    scr = run_in_pty(["report", flagged], columns=columns)
    assert scr.returncode == 0, scr
    assert scr.widest() <= columns, scr
    text = " ".join(scr.text.split())
    rows = {line.split()[0]: line for line in scr.lines if line.startswith(("resnet50 ", "inception3 "))}
    if columns >= 80:
        assert rows["resnet50"].rstrip().endswith("outlier, wide CI"), scr
        assert rows["inception3"].rstrip().endswith("wide CI, drift"), scr
    else:  # no room: the column is named as hidden, and the lines under the table still say it all
        assert "flags hidden to fit 60 columns" in text, scr
    assert "5 things to check:" in text
    for problem in (
        "resnet50 bs=64: run 4 far from the others (kept in the mean): check its log, or add runs (--runs 10)",
        "resnet50 bs=64: CI95 ±8.63% is wider than ±2%: add runs until it narrows (--until-ci 2)",
        "inception3 bs=64: runs fell 5.8% from the first third to the last (heat soak?): cool "
        "between runs (--cool-to 60)",
    ):
        assert problem in text, scr
    assert "alexnet bs=512: 3 of 3 runs throttled (hw_thermal_slowdown in 3, max 86 °C)" in text
    for line in scr.lines:  # wrapped between words: "±8.63%" and "(--until-ci 2)" never split
        assert not line.rstrip().endswith(("±", "--", "(--until-ci")), scr
        assert not line.rstrip().endswith(" 86"), scr  # a number stays with its unit: "86 °C"
    assert any("86 °C" in line for line in scr.lines if line.startswith("warning") or "max 86" in line), scr
