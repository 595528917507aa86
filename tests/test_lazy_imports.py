"""Each reading verb imports only what it uses (issue 39, start-up): checked in a process of its own, as a user
runs it, by the modules it leaves in sys.modules."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bundledata import logged_sweep
from conftest import cli_env, run_cli
from test_summary_reuse import keep_summary

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).parent / "data" / "samples" / "results" / "egpu-H2D"
# Never needed to read and print: data frames, HTML, git, SciPy, charts, the library's database.
HEAVY = {"pandas", "numpy", "jinja2", "git", "scipy", "matplotlib", "sqlite3"}

CODE = (
    "import sys, runpy\n"
    "sys.argv = ['tfcnnwrap'] + sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_module('tfcnnwrap', run_name='__main__')\n"
    "except SystemExit as exc:\n"
    "    sys.stderr.write('EXIT=%s\\n' % exc.code)\n"
    "sys.stderr.write('MODULES=' + ' '.join(sorted(sys.modules)))\n"
)


def modules_of(*args, env=None):
    """The modules `python -m tfcnnwrap ARGS` imported, having exited 0."""
    proc = subprocess.run(
        [sys.executable, "-c", CODE, *map(str, args)], env=cli_env(env), capture_output=True, text=True
    )
    assert "EXIT=0\n" in proc.stderr, proc.stderr
    return set(proc.stderr.rsplit("MODULES=", 1)[1].split())


@pytest.fixture
def results(tmp_path):
    """A results directory holding one finished sweep with the summary.json its sweep leaves."""
    root = tmp_path / "results"
    shutil.copytree(SAMPLE, root / "egpu-H2D")
    keep_summary(root / "egpu-H2D")
    return root


def test_list_imports_no_heavy_module_no_chart_and_no_references(results):
    loaded = modules_of("list", results)
    assert not loaded & HEAVY
    # the list reads a sweep's conditions (results/sweepconditions): not report, its charts, the references
    # or process helpers
    assert not {"tfcnnwrap.present.report", "tfcnnwrap.results.references", "tfcnnwrap.run.procs"} & loaded
    assert "subprocess" not in loaded and "platformdirs" not in loaded
    assert not loaded & {"rich", "tfcnnwrap.fit"}  # on a pipe its table is plain text (plaintable)
    assert only_its_own_parser("list", loaded)


def test_report_of_a_summarised_sweep_imports_no_heavy_module(results):
    loaded = modules_of("report", results / "egpu-H2D")
    assert not loaded & HEAVY
    assert not {"tfcnnwrap.present.plot", "tfcnnwrap.results.references", "subprocess"} & loaded


def test_compare_rank_of_a_summarised_sweep_imports_no_heavy_module(results):
    assert not modules_of("compare", results / "egpu-H2D", "--rank") & HEAVY


def test_references_imports_no_heavy_module_and_no_sweep_code(tmp_path):
    loaded = modules_of("references", env={"XDG_CACHE_HOME": tmp_path / "cache"})
    assert not loaded & HEAVY
    assert not {m for m in loaded if m.startswith(("tfcnnwrap.sweep", "tfcnnwrap.share", "tfcnnwrap.present"))}
    assert not loaded & {"rich", "tfcnnwrap.fit"}  # on a pipe its table and notes are plain text (plaintable)
    assert only_its_own_parser("references", loaded)


def only_its_own_parser(verb, loaded):
    """Of the command line's verbs, only ``verb``'s module was loaded: only its parser was built."""
    return {m for m in loaded if m.startswith("tfcnnwrap.cli.")} == {"tfcnnwrap.cli.parsing", "tfcnnwrap.cli." + verb}


def test_verify_imports_no_heavy_module_and_no_table_code(tmp_path):
    logged_sweep(tmp_path / "sweep")
    bundle = tmp_path / "sweep.tfcw.json.gz"
    exported = run_cli("export", tmp_path / "sweep", "--out", bundle)
    assert exported.returncode == 0, exported
    loaded = modules_of("verify", bundle)
    assert not loaded & (HEAVY | {"rich"})
