"""`compare` notes a PCIe link that ran below its maximum, from the runs' recorded telemetry (issue 22.14)."""

import json

import pytest
from sweepdata import seed_runs, write_sweep
from test_compare import in_process

from tfcnnwrap.present import linknote

TB3 = {"gen": 3, "gen_max": 3, "width": 4, "width_max": 16, "text": "gen3 x4 of gen3 x16", "degraded": True}
FULL = {"gen": 3, "gen_max": 3, "width": 16, "width_max": 16, "text": "gen3 x16 of gen3 x16", "degraded": False}


def with_link(sweep, links):
    """Give the sweep's runs, in order, the telemetry a sampler records with these PCIe links (cycled)."""
    path = sweep / "runs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        record["telemetry"] = {
            "samples": 60,
            "max_temp_c": 71,
            "mean_power_w": 170.5,
            "throttled": False,
            "throttle_reasons": [],
            "pcie_link": links[i % len(links)],
        }
        out.append(json.dumps(record, allow_nan=False) + "\n")
    path.write_text("".join(out), encoding="utf-8")
    return sweep


def note_lines(out):
    return [line for line in out.splitlines() if "PCIe link" in line]


@pytest.mark.parametrize("verb", [("--against", "2080"), ("--rank",)])
def test_compare_notes_a_thunderbolt_link(capsys, monkeypatch, tmp_path, verb):
    sweep = with_link(write_sweep(tmp_path / "egpu", seed_runs(3)), [TB3])
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, *verb)
    assert code == 0
    lines = note_lines(out)
    assert len(lines) == 1, out
    assert "gen3 x4 of gen3 x16 (Thunderbolt 3?)" in lines[0] and "every run" in lines[0]
    assert "doctor --bandwidth" in out


def test_markdown_has_the_note_too(capsys, monkeypatch, tmp_path):
    sweep = with_link(write_sweep(tmp_path / "egpu", seed_runs(3)), [TB3, FULL, FULL])
    code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, "--against", "2080", "--format", "markdown")
    assert code == 0
    assert "gen3 x4 of gen3 x16 (Thunderbolt 3?) in 5 of 15 runs" in out


def test_no_note_at_full_link_or_without_telemetry(capsys, monkeypatch, tmp_path):
    full = with_link(write_sweep(tmp_path / "full", seed_runs(3)), [FULL])
    bare = write_sweep(tmp_path / "bare", seed_runs(3))
    for sweep in (full, bare):
        for verb in (("--against", "2080"), ("--rank",)):
            code, out, _ = in_process(capsys, monkeypatch, "compare", sweep, *verb)
            assert code == 0 and note_lines(out) == [], out


class Run:
    def __init__(self, link, value=100.0):
        self.telemetry = {"pcie_link": link}
        self.value = value


def link(gen, width, gen_max, width_max):
    return {"gen": gen, "width": width, "gen_max": gen_max, "width_max": width_max}


@pytest.mark.parametrize(
    "shape, guess",
    [
        ((3, 4, 3, 16), "Thunderbolt 3?"),
        ((4, 4, 4, 16), "Thunderbolt or an x4 slot?"),
        ((3, 1, 3, 16), "a riser or x1 slot?"),
        ((3, 8, 3, 16), "a slot wired narrower than the card?"),
        ((1, 16, 3, 16), "BIOS PCIe setting, riser or seating?"),
    ],
)
def test_each_shape_of_slow_link_gets_its_likely_cause(shape, guess):
    note = linknote.link_note([Run(link(*shape))])
    assert "gen%d x%d of gen%d x%d (%s)" % (shape + (guess,)) in note


def test_the_worst_link_is_named_and_failed_runs_do_not_count():
    runs = [Run(link(3, 8, 3, 16)), Run(link(3, 4, 3, 16)), Run(link(3, 1, 3, 16), value=None)]
    assert "gen3 x4 of gen3 x16 (Thunderbolt 3?) in every run" in linknote.link_note(runs)


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "gen3 x4",
        {"gen": "3", "width": 4, "gen_max": 3, "width_max": 16},
        {"gen": True, "width": 4, "gen_max": 3, "width_max": 16},
        link(3, 4, 3, 10**9),
        link(0, 4, 3, 16),
        {"gen": 3, "width": 4},
    ],
)
def test_hostile_or_partial_links_are_ignored(bad):
    assert linknote.link_note([Run(bad)]) is None
