"""The README's test command passes on a fresh machine (issue 33.16): no matplotlib font cache, no per-user
config, cache or data directory. matplotlib's first import builds its font cache by running `fc-list`; the
in-process CLI and the fast tier's guard refuse a process, so a test that drew first on such a machine failed
where a developer's machine, cache built long ago, passed. Each test here runs a pytest of its own with every
per-user directory fresh and empty, as CI (.ci/run) runs the whole suite."""

import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.slow


def fresh_user_env(root):
    """The environment of a user who has never run matplotlib, tfcnnwrap or anything else here."""
    env = dict(os.environ)
    for name in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env.pop(name, None)
    home = root / "home"
    home.mkdir()
    env["HOME"] = str(home)
    return env


def run_pytest(tmp_path, *args):
    """A pytest session of its own (its own base temp: its clean-up must not touch this session's folders)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    cmd += ["--basetemp", str(tmp_path / "basetemp"), *args]
    proc = subprocess.run(
        cmd, cwd=str(REPO_ROOT), env=fresh_user_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return proc.returncode, proc.stdout.decode(errors="replace")


def test_an_in_process_verb_draws_its_first_figure_on_a_fresh_machine(tmp_path):
    # the first figure of the session is drawn by `compare --plot` run in process
    code, out = run_pytest(tmp_path, "tests/test_compare.py::test_plot_against_references_writes_a_png")
    assert code == 0, out[-3000:]
    assert (tmp_path / "home" / ".cache" / "matplotlib").is_dir()  # the cache was built where a user's would be


def test_the_fast_tier_draws_no_figure_on_a_fresh_machine(tmp_path):
    code, out = run_pytest(tmp_path, "-m", "not slow", "tests/test_plot_history.py", "tests/test_plots.py")
    assert code == 0, out[-3000:]
    assert not (tmp_path / "home" / ".cache" / "matplotlib").exists()


def test_ci_runs_the_readme_command_with_fresh_per_user_directories():
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "python -m pytest -q -n 2" in readme
    fresh = ci[ci.index("fresh_user") :]
    for name in ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert name in fresh, name
    assert "python -m pytest -q -n 2" in fresh
