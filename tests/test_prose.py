"""Prose fits (issue 22.3): errors, warnings and the --fail-on-regression message wrapped between words to the
terminal's width on a terminal (a number kept with its unit), one line in a pipe."""

import io
from pathlib import Path

import pytest
from conftest import run_cli
from ptyscreen import run_in_pty

from tfcnnwrap import prose

WIDTHS = (60, 80, 120)
THROTTLE = (
    "3 of 3 runs throttled (thermal slowdown: hw_thermal_slowdown) — max 82 °C; try --cool-to 60 or "
    "better airflow; the runs lost -6.6% and drew 175 W at 1830 MHz over 5 min"
)
UNITS = ("82 °C", "-6.6%", "175 W", "1830 MHz", "5 min", "3 runs")


def _words(text):
    return text.split()


@pytest.mark.parametrize("width", range(24, 130, 3))
def test_fill_breaks_between_words_only_and_keeps_each_number_with_its_unit(width):
    text = prose.fill("warning: " + THROTTLE, width)
    lines = text.split("\n")
    assert all(len(line) <= width for line in lines), text
    assert _words(text) == _words("warning: " + THROTTLE)  # nothing cut inside a word, nothing lost
    assert all(line.startswith("  ") for line in lines[1:])
    for unit in UNITS:
        assert unit in text, (unit, text)  # on one line, with an ordinary space
    assert "\u00a0" not in text


def test_a_pipe_gets_the_message_as_one_line(monkeypatch):
    out = io.StringIO()
    monkeypatch.setenv("COLUMNS", "60")
    prose.write("tfcnnwrap compare: " + THROTTLE, out)
    assert out.getvalue() == "tfcnnwrap compare: " + THROTTLE + "\n"


def test_a_terminal_gets_it_wrapped_to_its_width(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    monkeypatch.setenv("COLUMNS", "60")
    prose.write("tfcnnwrap compare: " + THROTTLE, out)
    lines = out.getvalue().rstrip("\n").split("\n")
    assert len(lines) > 2 and max(map(len, lines)) <= 60 and "82 °C" in out.getvalue()


@pytest.mark.parametrize("width", WIDTHS + (44, 47, 52))
def test_sweep_warnings_on_a_terminal_fit_and_keep_units(width):
    from types import SimpleNamespace

    from rich.console import Console

    from tfcnnwrap.sweep.main import _warn

    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    _warn(SimpleNamespace(warn_console=console), THROTTLE)
    text = console.file.getvalue().rstrip("\n")
    assert max(len(line) for line in text.split("\n")) <= width, text
    assert _words(text) == _words("warning: " + THROTTLE)
    for unit in UNITS:
        assert unit in text, (unit, text)


def test_sweep_warnings_off_a_terminal_stay_one_line():
    from types import SimpleNamespace

    from rich.console import Console

    from tfcnnwrap.sweep.main import _warn

    console = Console(file=io.StringIO(), width=60, force_terminal=False, color_system=None)
    _warn(SimpleNamespace(warn_console=console), THROTTLE + " [not markup]")
    assert console.file.getvalue() == "warning: " + THROTTLE + " [not markup]\n"


def _config_error_env(tmp_path):
    path = Path("a folder with a long name for the settings", "tfcnnwrap.toml")  # relative: words fit 60 columns
    (tmp_path / path).parent.mkdir()
    (tmp_path / path).write_text("results_dir = [unclosed\n", encoding="utf-8")
    return {"TFCNNWRAP_CONFIG": str(path)}


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_an_error_on_a_terminal_is_wrapped_between_words(tmp_path, columns):
    env = _config_error_env(tmp_path)
    piped = run_cli("report", cwd=tmp_path, env=env)
    assert piped.returncode == 2 and len(piped.stderr.strip().splitlines()) == 1, piped
    screen = run_in_pty(["report"], columns=columns, env=env, cwd=tmp_path)
    assert screen.returncode == 2, screen
    assert screen.widest() <= columns, screen
    assert _words(screen.text) == _words(piped.stderr), screen
    assert all(line.startswith("  ") for line in screen.lines[1:] if line), screen


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize(
    "args",
    [
        ["compare", "a sweep directory that does not exist anywhere at all", "--against", "V100"],
        ["report", "--format", "yaml"],
    ],
)  # argparse's own error
def test_a_usage_error_on_a_terminal_fits(tmp_path, columns, args):
    piped = run_cli(*args, cwd=tmp_path)
    screen = run_in_pty(args, columns=columns, cwd=tmp_path)
    assert screen.returncode == piped.returncode == 2, (screen, piped)
    assert screen.widest() <= columns, screen
    assert _words(screen.text) == _words(piped.stderr), screen


def _two_sweeps(tmp_path):
    from sweepdata import SEED_2070, SEED_BATCH, write_sweep

    write_sweep(tmp_path / "a", {(m, SEED_BATCH[m]): [v, v * 1.01, v * 0.99] for m, v in SEED_2070.items()})
    write_sweep(tmp_path / "b", {(m, SEED_BATCH[m]): [v * 0.93, v * 0.94, v * 0.935] for m, v in SEED_2070.items()})


@pytest.mark.slow
@pytest.mark.parametrize("columns", (80, 120))
def test_compare_a_b_is_a_table_at_80_columns_and_up(tmp_path, columns):
    _two_sweeps(tmp_path)
    screen = run_in_pty(["compare", "a", "b", "--fail-on-regression", "1"], columns=columns, cwd=tmp_path)
    assert screen.returncode == 1, screen
    assert screen.widest() <= columns, screen
    header = next((line for line in screen.lines if line.startswith("model")), "")
    assert _words(header)[:8] == ["model", "batch", "baseline", "candidate", "change", "95%", "CI", "signif"], screen
    row = next(line for line in screen.lines if line.startswith("resnet50"))
    assert _words(row)[:8] == ["resnet50", "64", "176.93", "165.43", "-6.5%", "-8.4%", "to", "-4.5%"], screen
    if columns == 80:
        assert any(line.startswith("runs hidden to fit 80 columns") for line in screen.lines), screen
    message = [i for i, line in enumerate(screen.lines) if line.startswith("tfcnnwrap compare: 5 configurations")]
    assert message, screen  # the --fail-on-regression message, wrapped between words below
    text = " ".join(screen.lines[message[0] :])
    assert "-6.5% (95% CI -8.4% to -4.5%)" in " ".join(text.split()), screen
