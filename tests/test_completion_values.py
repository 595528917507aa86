"""Completion offers the values a flag takes (issue 38.5): the reference GPU ids after --against and --gpu,
every model tf_cnn_benchmarks knows after --models and --model (each item of a comma list), and the sweeps
under results/ where a sweep is named."""

import shutil
import subprocess

import pytest
from conftest import cli_env, run_cli
from sweepdata import seed_runs, write_sweep
from test_completion import _complete

from tfcnnwrap.cli import shellcompletion as completion
from tfcnnwrap.results.plan import KNOWN_MODELS
from tfcnnwrap.results.references import builtin_gpus

pytestmark = pytest.mark.slow

BASH = pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("completion") / "tfcnnwrap.bash"
    path.write_text(run_cli("completion", "bash").stdout, encoding="utf-8")
    return path


def _offered(script, words, cwd):
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "source %s\n%s" % (script, _complete(words, len(words) - 1))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=str(cwd),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split()


@BASH
@pytest.mark.parametrize(
    "words", [["compare", "x", "--against", ""], ["references", "--gpu", ""], ["library", "--gpu", ""]]
)
def test_gpu_flags_offer_every_reference_id(script, tmp_path, words):
    assert sorted(_offered(script, ["tfcnnwrap", *words], tmp_path)) == sorted(builtin_gpus())


@BASH
def test_a_comma_list_completes_its_last_item(script, tmp_path):
    offered = _offered(script, ["tfcnnwrap", "compare", "x", "--against", "v100,rtx20"], tmp_path)
    assert offered and all(o.startswith("v100,rtx20") for o in offered), offered
    assert "v100,rtx2080ti" in offered
    models = _offered(script, ["tfcnnwrap", "sweep", "--models", "resnet50,vgg1"], tmp_path)
    assert sorted(models) == ["resnet50,vgg11", "resnet50,vgg16", "resnet50,vgg19"]


@BASH
@pytest.mark.parametrize("words", [["sweep", "--models", ""], ["references", "--model", ""]])
def test_model_flags_offer_every_model_tf_cnn_benchmarks_knows(script, tmp_path, words):
    assert sorted(_offered(script, ["tfcnnwrap", *words], tmp_path)) == sorted(KNOWN_MODELS)


@BASH
@pytest.mark.parametrize(
    "words",
    [["report", "results/"], ["compare", "results/"], ["sweep", "--resume", "results/"], ["export", "results/"]],
)
def test_where_a_sweep_is_named_the_sweeps_under_results_are_offered(script, tmp_path, words):
    write_sweep(tmp_path / "results" / "20261130-101500", seed_runs(1))
    (tmp_path / "results" / "not-a-sweep").mkdir()
    offered = _offered(script, ["tfcnnwrap", *words], tmp_path)
    assert "results/20261130-101500" in offered and "results/not-a-sweep" not in offered, offered
    # nothing typed yet: the sweeps under results/ at once
    assert _offered(script, ["tfcnnwrap", *words[:-1], ""], tmp_path) == ["results/20261130-101500"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_the_values_too(shell):
    text = completion.script(shell)
    assert "rtx2080ti" in text and "inception3" in text, shell
