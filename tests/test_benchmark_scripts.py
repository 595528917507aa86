"""The scripts behind docs/performance.md's figures still run against today's code: each at a tiny size, so a
change to what they build on (a bundle read into records, issue 34) breaks a test, not the next measurement."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

pytestmark = pytest.mark.slow
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_script(*args, env=None):
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / args[0]), *map(str, args[1:])],
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_library_bench_imports_ranks_pulls_and_builds_a_site_of_a_small_library():
    done = run_script("bench_library.py", "--bundles", 20, "--repeat", 1)
    assert done.returncode == 0, done.stderr[-2000:]
    for figure in ("import", "rank", "pull", "site"):
        assert any(line.startswith(figure + " ") and line.endswith("ok") for line in done.stdout.splitlines()), (
            figure,
            done.stdout,
        )


def test_the_varied_library_is_made_and_the_query_plans_print(tmp_path):
    made = run_script("varied_bundles.py", 30, tmp_path / "varied")
    assert made.returncode == 0, made.stderr[-2000:]
    assert len(list((tmp_path / "varied").glob("*.tfcw.json.gz"))) == 30
    data = tmp_path / "data"
    imported = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", "import", str(tmp_path / "varied")],
        env=cli_env({"TFCNNWRAP_DATA": data}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert imported.returncode in (0, 1), imported  # the varied set holds bundles changed after export
    plans = run_script("explain_library.py", env={"TFCNNWRAP_DATA": data})
    assert plans.returncode == 0, plans.stderr[-2000:]
    assert "USING INDEX" in plans.stdout or "USING COVERING INDEX" in plans.stdout, plans.stdout
