"""The suite runs the verbs that only read and print in its own process (conftest: IN_PROCESS_VERBS), through the
same entry point `python -m tfcnnwrap` calls. Here each such command runs both ways and must give the same exit
code and the same bytes on stdout, on stderr and on disk: what the in-process tests see is what a user sees."""

import os
import re
import sys

import pytest
from conftest import IN_PROCESS_VERBS, run_cli, spawn_cli
from htmldata import HOSTILE_GPU, seed_sweep

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("both-ways")
    return {
        "seed": seed_sweep(root / "seed", logs=True),
        "b": seed_sweep(root / "b", 1.04, seed=2),
        "hostile": seed_sweep(root / "hostile", 0.97, seed=3, gpus=[HOSTILE_GPU]),
    }


COMMANDS = [  # (COLUMNS, argv...)
    ("200", "report", "{seed}"),
    ("60", "report", "{seed}"),
    ("200", "report", "{seed}", "--format", "json"),
    ("200", "report", "{seed}", "--format", "csv"),
    ("200", "report", "{seed}", "--format", "markdown"),
    ("80", "report", "{hostile}", "--against", "v100,1080ti"),
    ("200", "compare", "{seed}", "{b}"),
    ("60", "compare", "{seed}", "{b}"),
    ("200", "compare", "{seed}", "{b}", "--format", "json"),
    ("80", "compare", "{hostile}", "--rank"),
    (
        "120",
        "references",
    ),
    ("200", "references", "--gpu", "2070", "--format", "csv"),
    ("200", "report", "{missing}"),  # a one-line error, exit 2
    ("60", "compare", "{seed}", "--frobnicate"),  # argparse's usage error, exit 2
    ("200", "parse", "{seed}/logs"),
    ("200", "parse", "{seed}/logs", "--format", "csv"),
    ("200", "list", "{root}"),
    ("200", "completion", "bash"),
    ("60", "sweep", "--help"),
    ("120", "doctor", "--help"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_verb_in_process_prints_what_its_own_process_prints(sweeps, tmp_path, command):
    names = dict(sweeps, missing=tmp_path / "no-such-sweep", root=sweeps["seed"].parent)
    columns, *args = [part.format(**names) for part in command]
    assert args[0] in IN_PROCESS_VERBS or "--help" in args
    env = {"COLUMNS": columns, "TMPDIR": tmp_path}
    here, there = run_cli(*args, env=env, cwd=tmp_path), spawn_cli(*args, env=env, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)
    assert here.stdout or here.stderr


def test_files_written_in_process_are_the_files_written_by_a_process(sweeps, tmp_path):
    bundle = tmp_path / "b.json.gz"  # one bundle for both: a site names its pages after its sources' paths
    assert run_cli("export", sweeps["seed"], "--out", bundle).returncode == 0
    outs = []
    for way, run in (("here", run_cli), ("there", spawn_cli)):
        out = tmp_path / way
        out.mkdir()
        library = {"TFCNNWRAP_DATA": out / "library"}
        results = [
            run("report", sweeps["seed"], "--format", "html", "--out", out / "r.html"),
            run("export", sweeps["seed"], "--out", out / "b.json.gz"),
            run("verify", out / "b.json.gz"),
            run("import", bundle, env=library),
            run("library", "--format", "csv", env=library),
            run("site", "--out", out / "site", sweeps["seed"], bundle),
        ]
        shown = [
            (r.returncode, re.sub(r"in [0-9.]+ s;", "in T s;", (r.stdout + r.stderr).replace(str(out), "OUT")))
            for r in results
        ]
        outs.append(
            (
                shown,
                sorted(p.relative_to(out).as_posix() for p in out.rglob("*")),
                (out / "r.html").read_bytes(),
                (out / "site" / "index.html").read_bytes(),
            )
        )
    assert all(code == 0 for code, _ in outs[0][0]), outs[0][0]
    assert outs[0] == outs[1]


def test_the_environment_the_tree_and_the_streams_are_this_processs_own_again(sweeps, tmp_path):
    before = (dict(os.environ), os.getcwd())
    streams = (sys.stdout, sys.stderr, sys.stdin, sys.argv)
    result = run_cli("report", sweeps["seed"], "--format", "csv", env={"TFCNNWRAP_TEST_ONLY": "1"}, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("model,"), result
    assert (dict(os.environ), os.getcwd()) == before
    assert (sys.stdout, sys.stderr, sys.stdin, sys.argv) == streams


def test_a_warning_in_process_is_on_the_verbs_stderr_as_a_process_prints_it(monkeypatch):
    import warnings

    from tfcnnwrap.compare import refview

    def warn_then_list(args):
        warnings.warn("divide by zero encountered", RuntimeWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(refview, "cmd_references", warn_then_list)
    result = run_cli("references")
    assert result.returncode == 0 and "RuntimeWarning: divide by zero encountered" in result.stderr, result


def test_an_exception_escaping_main_in_process_is_a_traceback_and_1_as_a_process_ends(monkeypatch):
    from tfcnnwrap import cli

    def broken():
        raise RuntimeError("before any verb")

    monkeypatch.setattr(cli, "_tolerant_streams", broken)
    result = run_cli("report", "somewhere")
    assert result.returncode == 1 and "Traceback" in result.stderr and "before any verb" in result.stderr, result
