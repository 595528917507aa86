"""main() builds only the parser of the verb its argv names (issue 39: start-up); whatever the argv, parsing
it gives what the whole command line gives: the same values, help, errors and exit codes."""

import pytest

from tfcnnwrap.cli import VERB_MODULES, build_parser, named_verb

ARGVS = [
    [],
    ["--help"],
    ["--debug"],
    ["--version"],
    ["lst"],
    ["--debug", "--help", "list"],
    ["--help", "list"],
]
for _verb in VERB_MODULES:
    ARGVS += [
        [_verb],
        [_verb, "--help"],
        [_verb, "--formt", "json"],
        [_verb, "--format", "jsn"],
        [_verb, "a", "b", "c"],
    ]
ARGVS += [
    ["--debug", "list", "--help"],
    ["sweep", "--debug", "--no-such-flag=1"],
    ["list", "results", "--format", "json"],
    ["references", "--gpu", "2080-Ti", "--model", "resnet50", "--format", "csv"],
    ["report", "results/x", "--format", "html", "--out", "x.html"],
    ["report", "--plot", "x.txt"],
    ["parse", "a.log", "b", "--format", "jsonl"],
    ["setup", "--tf-version", "1.12", "--update", "--repo-url", ""],
    ["doctor", "--matmul", "--strict", "--format", "json"],
    ["sweep", "--models", "resnet50", "--runs", "0"],
    ["compare", "x", "--against", "V100", "--rank"],
]


@pytest.fixture(scope="module")
def whole_parser():
    return build_parser()  # parsing leaves a parser as it was: one serves every argv


def outcome(parser, argv, capsys):
    try:
        parsed, code = vars(parser.parse_args(argv)), None
    except SystemExit as exc:
        parsed, code = None, exc.code
    out = capsys.readouterr()
    return code, parsed, out.out, out.err


@pytest.mark.parametrize("argv", ARGVS, ids=" ".join)
def test_parsing_with_one_verbs_parser_is_parsing_with_all(argv, whole_parser, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(tmp_path)
    whole = outcome(whole_parser, argv, capsys)
    assert outcome(build_parser(named_verb(argv)), argv, capsys) == whole


def test_only_a_verb_named_first_is_built_alone():
    assert named_verb(["list", "results"]) == "list"
    assert named_verb(["--debug", "references", "--gpu", "V100"]) == "references"
    assert named_verb(["--help", "list"]) is None  # the top-level help lists every verb
    assert named_verb(["lst"]) is None  # the closest verb comes from all of them
    assert named_verb([]) is None
    assert named_verb(["--version"]) is None
    parser = build_parser("list")
    verbs = next(a for a in parser._actions if a.dest == "verb")
    assert list(verbs.choices) == list(VERB_MODULES)
    assert [a.dest for a in verbs.choices["references"]._actions] == []  # a name, nothing built
