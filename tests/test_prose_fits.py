"""Prose fits, round two (issue 22.3): setup's report, every verb's --help examples and compare's cells, seen
in a real pseudo-terminal at 60, 80 and 120 columns."""

import os
import re

import pytest
from ptyscreen import run_in_pty

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

WIDTHS = (60, 80, 120)


def _words(text):
    return text.split()


@pytest.mark.parametrize("width", range(24, 90, 5))
def test_a_command_in_backticks_is_never_split(width):
    from tfcnnwrap import prose

    command = "`/opt/envs/tf/bin/python -m pip install tf-keras`"
    text = prose.fill("warning: tf_cnn_benchmarks needs tf-keras, which 82 °C lacks: run %s now" % command, width)
    assert any(command in line for line in text.split("\n")), text
    assert all(len(line) <= width for line in text.split("\n") if command not in line), text
    assert "82 °C" in text, text


# -- setup's report -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def set_up(tmp_path_factory, fake_upstream, fake_tf):
    """A checkout made once; each test re-runs setup on it (nothing fetched: the report is what is tested)."""
    python = fake_tf("2.21.0")  # no tf-keras: the warning, and the "after the warning's fix" next line
    root = tmp_path_factory.mktemp("a folder whose name is long enough to matter at sixty columns")
    args = ["setup", "--vendor-dir", root / "vendor", "--repo-url", fake_upstream.url, "--python", python]
    first = run_in_pty(args, columns=200, cwd=root)
    assert first.returncode == 0, first
    return args, root


_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]")


def printed_lines(scr):
    """The lines the program wrote (its own newlines, colours removed): what a terminal folds is not split."""
    return _ESCAPES.sub("", scr.raw.decode()).replace("\r\n", "\n").rstrip("\n").split("\n")


def _wholes(lines):
    """What must never be split: the paths, the URL and the commands of the wide report."""
    text = "\n".join(lines)
    wholes = [line.split(None, 1)[1].strip() for line in lines if re.match(r"  (Checkout|Upstream|Commit) ", line)]
    wholes += re.findall(r"`[^`]+`", text)  # the pip command of the warning
    wholes += re.findall(r"(?:\S*/)?\S*python(?=\))", text)  # the interpreter in the TensorFlow row
    wholes += ["python -m tfcnnwrap sweep --quick", "python -m tfcnnwrap sweep"]
    return wholes


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_setup_report_is_wrapped_between_words_to_the_terminal(set_up, columns):
    args, root = set_up
    wide = printed_lines(run_in_pty(args, columns=400, cwd=root))
    scr = run_in_pty(args, columns=columns, cwd=root)
    assert scr.returncode == 0, scr
    lines = printed_lines(scr)
    took = re.compile(r"Took +\d+\.\d\d s")  # the time setup took, on the line of its label with its unit
    assert any(took.search(line) for line in lines) and any(took.search(line) for line in wide), scr
    assert _words(took.sub("", "\n".join(lines))) == _words(took.sub("", "\n".join(wide))), scr  # none split
    wholes = _wholes(wide)
    for line in lines:
        # a line wider than the screen is one thing that cannot be split alone after its label: the
        # terminal folds it, a copy of it is still whole
        content = re.sub(r"^  (Checkout|Upstream|Commit|TensorFlow) +", "", line).strip().rstrip(",)")
        assert len(line) <= columns or content in wholes, (line, scr)
    text = "\n".join(lines)
    for whole in wholes:
        assert whole in text, (whole, scr)  # each on one line
    assert len(lines) > len(wide) or columns == 120, scr
    assert all(len(line) <= columns for line in lines[:1]), scr  # the headline wrapped too


# -- --help examples -----------------------------------------------------------------------------------------


def _verbs():
    from tfcnnwrap.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "verb")
    return [[]] + [[name] for name in action.choices]


def _examples(lines):
    """The example commands under "examples:" / "typical use:", a `` \\``-continued command joined into one."""
    start = next(i for i, line in enumerate(lines) if line in ("examples:", "typical use:"))
    commands, continued = [], False
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        text = line.strip()
        if continued:
            commands[-1] += " " + text
        else:
            commands.append(text)
        continued = commands[-1].endswith(" \\")
        commands[-1] = commands[-1].removesuffix(" \\")
    return commands


@pytest.fixture(scope="module")
def wide_help():
    return {tuple(verb): printed_lines(run_in_pty([*verb, "--help"], columns=400)) for verb in _verbs()}


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("verb", _verbs(), ids=lambda v: v[0] if v else "tfcnnwrap")
def test_help_examples_fit_and_copy_as_the_commands_they_are(wide_help, verb, columns):
    import shlex

    scr = run_in_pty([*verb, "--help"], columns=columns)
    assert scr.returncode == 0, scr
    lines = printed_lines(scr)
    wide = _examples(wide_help[tuple(verb)])
    assert wide and all(command.startswith("python -m tfcnnwrap") for command in wide), wide_help[tuple(verb)]
    assert all(len(line) <= columns for line in lines), scr
    assert _examples(lines) == wide, scr  # each command whole once its continuations are joined
    assert [shlex.split(c, posix=True) for c in _examples(lines)] == [shlex.split(c) for c in wide], scr


def test_an_example_breaks_between_shell_words_only_and_stays_whole_on_windows(monkeypatch):
    import shlex

    from tfcnnwrap.cli import parsing

    line = '  python -m tfcnnwrap compare results/a --against "1080-Ti,2080,2080-Ti,Vega 64,V100" --runs 5'
    for width in range(56, len(line)):  # the widest group, "--against \"...\" \\", is 54
        lines = parsing.example_lines(line, width).split("\n")
        assert all(len(part) <= width for part in lines[1:]), lines
        assert shlex.split(" ".join(lines).replace(" \\ ", " ")) == shlex.split(line), lines
        assert any('--against "1080-Ti,2080,2080-Ti,Vega 64,V100"' in part for part in lines), lines
        assert any("--runs 5" in part for part in lines), lines
    monkeypatch.setattr(parsing.os, "name", "nt")
    assert parsing.example_lines(line, 40) == line


# -- compare --against: "203.99 (86.7%)" on one line when the width allows ----------------------------------

FIVE = "1080-Ti,2080,2080-Ti,Vega 64,V100"


@pytest.fixture(scope="module")
def seed_sweep(tmp_path_factory):
    from sweepdata import seed_runs, write_sweep

    root = tmp_path_factory.mktemp("against")
    return write_sweep(root / "base", {k: [v[0], v[0] * 1.004, v[0] * 0.997] for k, v in seed_runs().items()})


@pytest.mark.slow
@pytest.mark.parametrize(
    "columns, against, whole",
    [(60, FIVE, True), (80, FIVE, False), (80, "1080-Ti,V100", True), (120, FIVE, True), (120, "V100", True)],
)
def test_compare_against_keeps_each_cell_on_one_line_when_the_width_allows(cli, seed_sweep, columns, against, whole):
    """At 120 columns the five seed references fit whole (113 columns); at 80 they do not, and the cells go
    on two lines rather than the table losing columns; at 60 each row is a block of whole items."""
    args = ["compare", seed_sweep, "--against", against]
    rows = cli(*args, "--format", "json").rows()
    scr = run_in_pty(args, columns=columns)
    assert scr.returncode == 0, scr
    assert scr.widest() <= columns, scr
    models = [r["model"] for r in rows]
    starts = {
        m: next(i for i, line in enumerate(scr.lines) if re.match(re.escape(m) + r"(\s|$)", line)) for m in models
    }
    for row in rows:
        block = scr.lines[starts[row["model"]] : starts[row["model"]] + (2 if columns >= 80 else 4)]
        cells = [ref["cell"] for ref in row["references"]]
        assert all(" (" in cell for cell in cells), cells
        on_one_line = [any(cell in line for line in block) for cell in cells]
        if whole:
            assert all(on_one_line), (row["model"], cells, scr)
        else:  # split in two, both parts under the model's name
            assert not any(on_one_line), scr
            assert all(part in " ".join(block).split() for cell in cells for part in cell.split()), scr


# -- compare A B at 60 columns: a readable block per configuration -------------------------------------------


@pytest.mark.slow
def test_compare_a_b_at_60_columns_is_a_block_per_configuration_with_every_item_whole(cli, tmp_path):
    """80 and 120 columns are a table (test_prose.py); at 60 each configuration is its name, then
    ``label value`` items wrapped between items, none split (``95% CI +2.8% to +7.2%`` on one line)."""
    from sweepdata import seed_runs, write_sweep

    base = write_sweep(tmp_path / "base", {k: [v[0], v[0] * 1.004, v[0] * 0.997] for k, v in seed_runs().items()})
    cand = write_sweep(tmp_path / "cand", {k: [v[0] * 1.05, v[0] * 1.04, v[0] * 1.06] for k, v in seed_runs().items()})
    rows = cli("compare", base, cand, "--format", "json").rows()
    scr = run_in_pty(["compare", base, cand], columns=60)
    assert scr.returncode == 0, scr
    assert scr.widest() <= 60 and "…" not in scr.text, scr
    for row in rows:
        start = scr.lines.index(row["model"])
        block = []
        for line in scr.lines[start + 1 :]:
            if not line.startswith("  "):
                break
            block.append(line)
        assert block, scr
        items = [
            "batch %d" % row["batch_size"],
            "baseline %.2f" % row["baseline"],
            "candidate %.2f" % row["candidate"],
            "change %+.1f%%" % row["change_pct"],
            "95%% CI %+.1f%% to %+.1f%%" % (row["change_ci95_low"], row["change_ci95_high"]),
        ]
        for item in items:
            assert any(item in line for line in block), (item, scr)


# -- the report's throttle warning and the sweep's header: continuation lines indented, as every warning's ------


@pytest.fixture(scope="module")
def throttled_sweep(tmp_path_factory):
    import json

    from sweepdata import write_sweep

    path = write_sweep(tmp_path_factory.mktemp("throttled") / "hot", {("alexnet", 512): [2258.9, 2260.1, 2259.5]})
    runs = path / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    for record in records:
        record["telemetry"] = {"throttled": True, "max_temp_c": 86, "throttle_reasons": ["hw_thermal_slowdown"]}
    runs.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_the_reports_throttle_warning_wraps_like_the_sweeps(cli, throttled_sweep, columns):
    piped = cli("report", throttled_sweep)
    warning = [line for line in piped.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "max 86 °C" in warning[0], piped.stderr  # off a terminal: one line
    lines = printed_lines(run_in_pty(["report", throttled_sweep], columns=columns))
    start = next(i for i, line in enumerate(lines) if line.startswith("warning:"))
    block = [lines[start]] + [line for line in lines[start + 1 :] if line.startswith("  ")]
    assert _words(" ".join(block)) == _words(warning[0]), lines  # the whole warning, continued below
    assert all(len(line) <= columns for line in block), block
    assert "86 °C" in "\n".join(block), block  # never "86" / "°C"
    assert len(block) > 1 or columns == 120 and len(warning[0]) <= 120, block


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_the_sweeps_header_continues_indented_under_its_line(tmp_path, fake_tf, columns):
    from conftest import make_vendor

    vendor = make_vendor(tmp_path / "vendor")
    out = tmp_path / "a results folder with a name long enough to wrap"
    python = fake_tf("1.12.0", dist="tensorflow-gpu")
    args = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        python,
        "--device",
        "gpu",
        "--out",
        out,
        "--models",
        "alexnet",
        "--runs",
        "1",
    ]
    env = {"FAKE_TFCNN_IPS": "alexnet=2251.87", "TFCNNWRAP_NVIDIA_SMI": "none"}
    lines = printed_lines(run_in_pty(args, columns=columns, cwd=tmp_path, env=env))
    start = next(i for i, line in enumerate(lines) if line.startswith("  1 of 1 runs to do"))
    header = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        header.append(line)
    text = " ".join(" ".join(header).split())
    assert "device gpu, TensorFlow 1.12.0, branch cnn_tf_v1.12_compatible" in text, lines
    assert all(len(line) <= columns for line in header), header
    following = lines[start + len(header)]
    assert following.startswith(("  ", "[")) or not following.strip(), lines  # nothing left at column 0


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_each_thing_to_check_hangs_its_later_lines_under_its_first(tmp_path, columns):
    """``5 things to check:`` then one item per problem: an item's later lines are indented further than its
    first, so that where one problem ends and the next begins reads at a glance."""
    from sweepdata import write_sweep

    path = write_sweep(
        tmp_path / "noisy",
        {("resnet50", 64): [176.1, 177.0, 176.5, 150.0, 176.8], ("inception3", 64): [176.1, 170.8, 165.9]},
    )
    lines = printed_lines(run_in_pty(["report", path], columns=columns))
    start = next(i for i, line in enumerate(lines) if line.endswith("things to check:"))
    items = []
    for line in lines[start + 1 :]:
        if line.startswith("  ") and not line.startswith("    "):
            items.append([line])
        elif line.startswith("    ") and items:
            items[-1].append(line)
        else:
            break
    assert [item[0].split()[0] for item in items] == ["resnet50", "resnet50", "inception3", "inception3"], lines
    assert all(len(line) <= columns for item in items for line in item), lines
    assert any(len(item) > 1 for item in items) or columns == 120, lines  # some wrap at 60 and 80
    texts = [" ".join(" ".join(item).split()) for item in items]
    assert "CI95 ±8.63% is wider than ±2%: add runs until it narrows (--until-ci 2)" in texts[1], texts


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_the_hidden_columns_note_continues_indented(throttled_sweep, columns):
    lines = printed_lines(run_in_pty(["report", throttled_sweep], columns=columns))
    start = next((i for i, line in enumerate(lines) if " hidden" in line), None)
    if columns == 120:
        assert start is None, lines  # everything fits
        return
    note = [lines[start]] + [line for line in lines[start + 1 : start + 3] if line.startswith("  ")]
    assert " ".join(" ".join(note).split()).endswith("widen the terminal or use --format csv/json."), lines
    assert all(len(line) <= columns for line in note), note
    assert not any(line.startswith(("terminal", "csv/json", "--format")) for line in lines), lines
