"""One rule for the width of what is printed (issue 33.5): a `COLUMNS` that is no width (0, 3, -1, x) is read as
an unset one, on a terminal as on a pipe. On a terminal that does not say its size (a pty of 0 x 0: `script`,
`docker exec -t`), rich took `COLUMNS=0` literally and `report`, `library` and `compare --rank` printed nothing
(exit 0); only the pipe case had been fixed before (test_a_nonsense_columns_is_ignored_like_an_unset_one)."""

import sys

import pytest
from bundledata import build, logged_sweep, write_bundles
from conftest import run_cli

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A sweep of the seed's 2070 and a library holding a bundle of it."""
    root = tmp_path_factory.mktemp("width")
    sweep = logged_sweep(root / "sweep", values={"resnet50": 176.93, "vgg16": 110.23})
    data = {"TFCNNWRAP_DATA": str(root / "data")}
    made = run_cli("import", write_bundles(root / "in", [build(sweep)]), env=data)
    assert made.returncode == 0, made
    return sweep, data


VERBS = {  # verb: (argv, what its table shows)
    "report": (lambda sweep: ["report", sweep], "resnet50"),
    "library": (lambda sweep: ["library"], "resnet50"),
    "rank": (lambda sweep: ["compare", sweep, "--rank"], "(yours)"),
}


def screen_of(world, verb, sized, columns=None):
    from ptyscreen import run_in_pty

    sweep, data = world
    env = dict(data, **({"COLUMNS": columns} if columns is not None else {}))
    return run_in_pty(VERBS[verb][0](sweep), columns=80, env=env, sized=sized)


@pytest.mark.parametrize("sized", [True, False], ids=["80-column pty", "pty of unknown size"])
@pytest.mark.parametrize("columns", ["0", "3", "x"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_columns_that_is_no_width_prints_what_an_unset_one_does(world, verb, sized, columns):
    unset = screen_of(world, verb, sized)
    assert unset.returncode == 0, unset
    assert VERBS[verb][1] in unset.text and unset.widest() <= 80, unset  # rows, at the terminal's (or rich's) 80
    screen = screen_of(world, verb, sized, columns)
    assert screen.returncode == 0, screen
    assert screen.lines == unset.lines, screen


@pytest.mark.parametrize("columns", ["0", "3", "-1", "x"])
def test_a_nonsense_columns_is_ignored_like_an_unset_one(cli, columns):
    wide = cli("references", env={"COLUMNS": "160"})
    result = cli("references", env={"COLUMNS": columns})
    assert result.returncode == 0 and result.stdout == wide.stdout, result
    assert len(result.stdout.splitlines()) > 8, result  # rows, not an empty table
