"""`sweep --help` and `compare --help` group their flags under headings (issue 38.5: 96 and 83 lines of one
flat list); every flag is still there, each under one heading, and the help fits 60, 80 and 120 columns."""

import re

import pytest
from ptyscreen import run_in_pty

from tfcnnwrap.cli import build_parser

pytestmark = pytest.mark.slow

GROUPS = {
    "sweep": {
        "what to run": ["--models", "--batch-size", "--runs", "--device", "--num-gpus", "--fp16", "--xla", "--quick"],
        "how many runs, in what order": ["--until-ci", "--max-runs", "--order"],
        "time and temperature": ["--timeout", "--cooldown", "--cool-to"],
        "distributed jobs and fleets": ["--cluster", "--workers", "--ps", "--fleet"],
        "where": ["--python", "--vendor-dir", "--out", "--resume", "--retry-failed", "--dry-run"],
    },
    "compare": {
        "against published GPUs (--against, --rank)": [
            "--against",
            "--references",
            "--source",
            "--strict",
            "--include-low-trust",
            "--nearest",
        ],
        "ranking": ["--rank", "--per", "--price", "--watts"],
        "sweep against sweeps": ["--fail-on-regression", "--host"],
        "output": ["--format", "--out", "--plot"],
    },
}


def _sections(text):
    """{heading: the flags its lines start with} from argparse's help."""
    sections, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
        elif current is not None:
            match = re.match(r"^  (--[a-z0-9-]+)", line)
            if match:
                sections[current].append(match.group(1))
    return sections


@pytest.mark.parametrize("verb", sorted(GROUPS))
def test_each_flag_sits_under_its_heading(verb):
    verb_parser = build_parser()._subparsers._group_actions[0].choices[verb]
    sections = _sections(verb_parser.format_help())
    for heading, flags in GROUPS[verb].items():
        assert heading in sections, (heading, sorted(sections))
        assert set(flags) <= set(sections[heading]), (heading, sections[heading])
    flags = [
        f for a in verb_parser._actions for f in a.option_strings if f.startswith("--") and a.help != "==SUPPRESS=="
    ]
    listed = [f for found in sections.values() for f in found]
    assert sorted(set(flags) - {"--help"}) == sorted(set(listed) - {"--help"})  # every flag, once
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("verb", sorted(GROUPS))
def test_the_grouped_help_fits_each_width(tmp_path, verb, columns):
    screen = run_in_pty([verb, "--help"], columns=columns, cwd=tmp_path)
    assert screen.returncode == 0, screen
    assert screen.widest() <= columns, screen
    assert any(line.startswith("what to run:") or line.startswith("ranking:") for line in screen.lines), screen


@pytest.mark.skipif(__import__("os").name != "posix", reason="a POSIX pseudo-terminal")
@pytest.mark.parametrize("verb", ["sweep", "compare", "report", "references", "parse", "doctor", "setup"])
def test_help_splits_no_word_at_60_columns(cli, verb):
    # the description was printed raw: "record eac|h run" at 60 columns; "resnet50,r|esnet152" in --models
    from ptyscreen import run_in_pty

    wide = cli(verb, "--help").stdout
    words = set(wide.split())
    screen = run_in_pty([verb, "--help"], 60)
    assert screen.returncode == 0, screen
    text = screen.text.split("examples:")[0]  # commands to copy stay whole on their lines
    split = [w for w in text.split() if w not in words]
    assert not split, (split, screen)
