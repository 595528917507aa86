"""A mistyped verb or flag names what was meant (issue 38.5): difflib's closest match, one line, exit 2."""

import pytest
from conftest import assert_clean_error

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "args, meant",
    [
        (["reprot"], "report"),
        (["compre", "x"], "compare"),
        (["sweeep", "--dry-run"], "sweep"),
    ],
)
def test_a_mistyped_verb_names_the_verb_meant(cli, args, meant):
    result = cli(*args)
    assert_clean_error(result, 2, "did you mean `%s`?" % meant)
    assert "choose from" not in result.stderr, result.stderr  # one line, not the list of every verb


@pytest.mark.parametrize(
    "args, meant",
    [
        (["compare", "x", "--rankk"], "--rank"),
        (["report", "x", "--fromat", "csv"], "--format"),
        (["sweep", "--modles", "resnet50", "--dry-run"], "--models"),
        (["compare", "x", "--againts=V100"], "--against"),
    ],
)
def test_a_mistyped_flag_names_the_flag_of_that_verb(cli, args, meant):
    result = cli(*args)
    assert_clean_error(result, 2, "did you mean %s?" % meant)
    assert result.stderr.startswith("tfcnnwrap %s: error:" % args[0]), result.stderr


def test_nothing_is_guessed_when_nothing_is_close(cli):
    result = cli("zzzzzz")
    assert_clean_error(result, 2, "zzzzzz")
    assert "did you mean" not in result.stderr and "tfcnnwrap --help" in result.stderr, result.stderr
    result = cli("compare", "x", "--qqqqq")
    assert_clean_error(result, 2, "--qqqqq")
    assert "did you mean" not in result.stderr, result.stderr


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_suggestion_fits_the_terminal(tmp_path, columns):
    from ptyscreen import run_in_pty

    screen = run_in_pty(["compare", "x", "--rankk"], columns=columns, cwd=tmp_path)
    assert screen.returncode == 2, screen
    assert "did you mean --rank?" in " ".join(screen.text.split()), screen
    assert screen.widest() <= columns, screen
