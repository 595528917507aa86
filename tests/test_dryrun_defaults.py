"""Issue 22.7: `sweep --dry-run` prints commands that run as printed, with the environment tfcnnwrap sets;
22.8: every upstream model runs without `--batch-size`, at tf_cnn_benchmarks' own default."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean_error, cli_env

from tfcnnwrap.results.plan import KNOWN_MODELS, UPSTREAM_BATCH_SIZES
from tfcnnwrap.sweep.main import shell_lines

POSIX = pytest.mark.skipif(os.name != "posix", reason="runs the printed line in sh")
MIRROR = Path("/work/.mirror/tensorflow+benchmarks/repo")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def _commands(result):
    return [line for line in result.stdout.splitlines() if "tf_cnn_benchmarks.py" in line]


@pytest.mark.slow
@POSIX
def test_a_dry_run_line_runs_as_printed_with_the_environment(cli, tmp_path, vendor, fake_tf):
    tf217 = fake_tf("2.17.0", tf_keras=True)
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf217,
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--dry-run",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    (line,) = _commands(result)
    assert re.match(r"cd \S+ && env TF_USE_LEGACY_KERAS=1 \S+ -u tf_cnn_benchmarks\.py ", line), line
    flags_out = tmp_path / "flags.jsonl"
    env = cli_env({"FAKE_TFCNN_FLAGS_OUT": flags_out})
    ran = subprocess.run(
        ["sh", "-c", line], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120
    )
    assert ran.returncode == 0, ran.stdout[-2000:]
    assert b"total images/sec:" in ran.stdout
    flags = json.loads(flags_out.read_text().splitlines()[0])
    assert flags["model"] == "alexnet" and flags["batch_size"] == "512"


@pytest.mark.slow
def test_no_environment_no_env_word(cli, tmp_path, vendor, tf112):
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--dry-run",
        cwd=tmp_path,
    )
    (line,) = _commands(result)
    assert " && env " not in line and "TF_USE_LEGACY_KERAS" not in result.stdout.split("#")[0]


def test_windows_lines_set_the_environment_first():
    text = shell_lines(
        Path("C:/vendor/scripts"),
        {"TF_USE_LEGACY_KERAS": "1", "CUDA_VISIBLE_DEVICES": "0"},
        ["python.exe", "-u", "tf_cnn_benchmarks.py", "--model=alexnet"],
        windows=True,
    )
    lines = text.splitlines()
    assert lines[0].startswith("cd /d ") and lines[1:3] == ["set TF_USE_LEGACY_KERAS=1", "set CUDA_VISIBLE_DEVICES=0"]
    assert lines[3].endswith("tf_cnn_benchmarks.py --model=alexnet")


@pytest.mark.slow
def test_a_distributed_dry_run_names_each_tasks_gpus(cli, tmp_path, vendor, tf112):
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--cluster",
        "local",
        "--workers",
        "2",
        "--variable-update",
        "parameter_server",
        "--dry-run",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    lines = _commands(result)
    ps = [x for x in lines if "--job_name=ps" in x]
    assert ps and all(" && env CUDA_VISIBLE_DEVICES= " in x for x in ps), lines


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, size", [("trivial", 32), ("googlenet", 32), ("official_resnet50", 128), ("nasnetlarge", 16)]
)
def test_a_model_outside_the_seeds_runs_at_upstreams_default(cli, tmp_path, vendor, tf112, model, size):
    # "trivial has no default batch size; give one with --batch-size trivial=N" before
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--models",
        model,
        "--runs",
        "1",
        "--dry-run",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    assert "--model=%s --batch_size=%d" % (model, size) in _commands(result)[0]


def test_every_known_model_has_a_default():
    assert set(UPSTREAM_BATCH_SIZES) == set(KNOWN_MODELS)


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the tensorflow/benchmarks mirror")
@pytest.mark.parametrize(
    "path, name, size",
    [
        ("models/trivial_model.py", "trivial", 32),
        ("models/tf1_only/mobilenet_v2.py", "mobilenet", 32),
        ("models/tf1_only/nasnet_model.py", "nasnet", 32),
        ("models/googlenet_model.py", "googlenet", 32),
        ("models/overfeat_model.py", "overfeat", 32),
        ("models/lenet_model.py", "lenet", 32),
        ("models/alexnet_model.py", "alexnet", 512),
    ],
)
def test_the_table_matches_upstream_master(path, name, size):
    """The model class passes its default batch size to Model.__init__ after the image size."""
    source = subprocess.run(
        ["git", "--git-dir", str(MIRROR), "show", "master:scripts/tf_cnn_benchmarks/" + path],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    ).stdout
    spelled = {"lenet": "lenet5"}.get(name, name)  # the name Lenet5Model gives itself
    found = re.findall(r"__init__\(\s*'%s',\s*[\d +]+,\s*(\d+)," % re.escape(spelled), source)
    assert found and int(found[0]) == size == UPSTREAM_BATCH_SIZES[name]


@pytest.mark.slow
@pytest.mark.parametrize("more", [[], ["--fp16"]])
def test_dry_run_without_a_checkout_says_so_and_exits_2(cli, tmp_path, tf112, more):
    result = cli(
        "sweep",
        "--dry-run",
        "--models",
        "resnet50",
        "--vendor-dir",
        tmp_path / "none",
        "--python",
        tf112,
        "--device",
        "cpu",
        *more,
        cwd=tmp_path,
    )
    line = assert_clean_error(result, 2, "no tf_cnn_benchmarks checkout", "tfcnnwrap setup")
    assert "?" not in line and "tf_cnn_benchmarks.py --model" not in result.stdout


def test_fp16_on_an_unknown_branch_names_the_fix():
    from tfcnnwrap.environment import features
    from tfcnnwrap.errors import UsageError

    with pytest.raises(UsageError) as err:
        features.branch_flags(["fp16"], None)
    assert "branch ?" not in err.value.message and "tfcnnwrap setup" in err.value.message
