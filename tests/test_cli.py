"""The CLI skeleton: verbs, help, version, lazy imports, clean errors."""

import subprocess
import sys

import pytest

from conftest import assert_clean_error, cli_env

VERBS = ["setup", "sweep", "report", "compare", "references", "parse", "doctor"]


def test_help_lists_every_verb(cli):
    result = cli("--help")
    assert result.returncode == 0
    for verb in VERBS:
        assert verb in result.stdout


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_has_help_with_an_example(cli, verb):
    result = cli(verb, "--help")
    assert result.returncode == 0, result
    assert "python -m tfcnnwrap %s" % verb in result.stdout


def test_version(cli):
    from tfcnnwrap import __version__

    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == "tfcnnwrap %s" % __version__


def test_console_script_entry_point_is_main():
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="console_scripts") if ep.name == "tfcnnwrap"]
    assert eps and eps[0].value == "tfcnnwrap.cli:main"


def test_help_imports_no_heavy_module():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['tfcnnwrap', '--help']\n"
        "try:\n"
        "    runpy.run_module('tfcnnwrap', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('pandas', 'git', 'tensorflow', 'rich', 'numpy', 'scipy') if m in sys.modules]\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True)
    assert "HEAVY=" in proc.stderr
    assert proc.stderr.split("HEAVY=")[1].strip() == ""


def test_unknown_verb_and_bad_flag_are_one_line_exit_2(cli):
    assert_clean_error(cli("frobnicate"), 2, "invalid choice")
    assert_clean_error(cli("report", "--format", "xml"), 2, "--format")


def test_no_verb_prints_help_and_exits_2(cli):
    result = cli()
    assert result.returncode == 2 and "setup" in result.stdout


def test_unexpected_error_is_one_line_with_traceback_file(tmp_path):
    code = (
        "import sys\n"
        "import tfcnnwrap.cli as c\n"
        "c.HANDLERS['report'] = 'json:loads'\n"  # calling json.loads(namespace) raises TypeError
        "sys.exit(c.main(['report']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True)
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unexpected error" in lines[0] and "--debug" in lines[0]
    path = lines[0].split("full traceback in ")[1].split(")")[0]
    assert "Traceback" in open(path, encoding="utf-8").read()
    debug = subprocess.run([sys.executable, "-c", code.replace("main(['report'])", "main(['report', '--debug'])")],
                           env=cli_env(), capture_output=True, text=True)
    assert "Traceback" in debug.stderr
