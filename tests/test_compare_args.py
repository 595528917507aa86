"""`compare`'s typed arguments and its one result: cli/compare.run turns the command line into a frozen
`CompareArgs` once; `compute` gives the result every renderer draws (text, CSV, JSON, the HTML page); no code
below cli/ reads argparse's Namespace or takes a renderer's callbacks (issue 34)."""

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import NO_LIBRARY
from sweepdata import SEED_2070, seed_runs, write_sweep

import tfcnnwrap
from tfcnnwrap import cli as cli_module
from tfcnnwrap.compare import against, refview
from tfcnnwrap.compare.against import CompareArgs, compute, render_text
from tfcnnwrap.pages import comparepage
from tfcnnwrap.results.comparison import ABResult, AgainstReferences, Ranking

PACKAGE = Path(tfcnnwrap.__file__).parent


@pytest.fixture
def two_sweeps(tmp_path, monkeypatch):
    monkeypatch.setenv("TFCNNWRAP_DATA", str(NO_LIBRARY))  # no community results: the user's library unread
    base = write_sweep(tmp_path / "base", seed_runs(3))
    faster = {m: v * 1.1 for m, v in SEED_2070.items()}
    return base, write_sweep(tmp_path / "cand", seed_runs(3, faster))


def captured(monkeypatch, module, name, argv):
    """The typed arguments cli/compare.run (or cli/references.run) passes to ``module.name``."""
    seen = []
    monkeypatch.setattr(module, name, lambda args: seen.append(args) or 0)
    assert cli_module.main(argv) == 0
    (args,) = seen
    return args


def test_the_command_line_becomes_one_frozen_compare_args(monkeypatch):
    args = captured(
        monkeypatch,
        against,
        "cmd_compare",
        ["compare", "s1", "--rank", "--per", "watt", "--watts", "175", "--source", "builtin", "--format", "csv"],
    )
    assert args == CompareArgs(dirs=("s1",), rank=True, per="watt", watts=175.0, source="builtin", format="csv")
    with pytest.raises(dataclasses.FrozenInstanceError):
        args.rank = False
    ab = captured(monkeypatch, against, "cmd_compare", ["compare", "a", "b", "c", "--fail-on-regression", "3"])
    assert ab.dirs == ("a", "b", "c") and ab.fail_on_regression == 3.0 and ab.format == "table" and not ab.rank


def test_html_goes_to_the_page_renderer_with_the_same_typed_arguments(monkeypatch):
    args = captured(
        monkeypatch, comparepage, "cmd_compare_html", ["compare", "s", "--against", "V100", "--format", "html"]
    )
    assert args == CompareArgs(dirs=("s",), against="V100", format="html")


def test_references_get_typed_arguments_too(monkeypatch):
    args = captured(monkeypatch, refview, "cmd_references", ["references", "--gpu", "2080-Ti", "--format", "json"])
    assert args == refview.ReferencesArgs(gpu="2080-Ti", format="json")


@pytest.mark.slow  # a second in process: scipy's Welch test and Jinja2's templates
def test_one_result_per_view_and_both_renderers_draw_it(two_sweeps, capsys):
    base, cand = (str(p) for p in two_sweeps)
    views = [
        (CompareArgs(dirs=(base,), against="2080"), AgainstReferences, "compare", "against published references"),
        (CompareArgs(dirs=(base,), rank=True, source="builtin"), Ranking, "rank", "ranked among published"),
        (CompareArgs(dirs=(base, cand)), ABResult, "ab", "A/B: 1 candidate against baseline base"),
    ]
    for args, kind, envelope, heading in views:
        result = compute(args)
        assert isinstance(result, kind)
        render_text(result, "json")
        assert json.loads(capsys.readouterr().out)["kind"] == envelope
        html = comparepage.page(result)
        assert html.startswith("<!DOCTYPE html>") and heading in html, heading


def test_no_module_below_the_command_line_reads_a_namespace_in_compare():
    for path in sorted((PACKAGE / "compare").glob("*.py")) + [PACKAGE / "pages" / "comparepage.py"]:
        text = path.read_text(encoding="utf-8")
        assert "Namespace" not in text and "pages=" not in text, path
