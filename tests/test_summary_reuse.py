"""report and compare read the sweep's own aggregation (summary.json) when it is current for runs.jsonl, and
print the same bytes as when they aggregate again with pandas (issue 39, start-up)."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, run_cli
from test_sweep import ips_env, sweep_args

from tfcnnwrap.results.aggregate import config_rows
from tfcnnwrap.results.store import load_sweep
from tfcnnwrap.results.summarycache import cached_rows, summary_json_text, write_summary_json

SAMPLES = Path(__file__).parent / "data" / "samples" / "results"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
REPORTS = [
    ("report",),
    ("report", "--format", "json"),
    ("report", "--format", "csv"),
    ("report", "--format", "markdown"),
]
GPU_COMPARES = [("compare", "--rank"), ("compare", "--rank", "--format", "json"), ("compare", "--against", "2070")]


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def keep_summary(path):
    """summary.json as the sweep writes it after a run."""
    sweep, _, runs = load_sweep(path)
    write_summary_json(sweep, runs, config_rows(runs))


def outputs(path, commands):
    results = []
    for command in commands:
        result = run_cli(command[0], path, *command[1:])
        results.append((command, result.returncode, result.stdout, result.stderr))
    return results


def imports_pandas(*args):
    """Whether `python -m tfcnnwrap ARGS` imports pandas (in a process of its own, as a user runs it)."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['tfcnnwrap'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('tfcnnwrap', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('PANDAS=%s' % ('pandas' in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=cli_env(), capture_output=True, text=True)
    assert "PANDAS=" in proc.stderr, proc.stderr
    return proc.stderr.rsplit("PANDAS=", 1)[1].strip() == "True"


def commands_for(path):
    meta = json.loads((Path(path) / "sweep.json").read_text(encoding="utf-8"))
    return REPORTS + (GPU_COMPARES if meta.get("device") != "cpu" else [])


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_prints_the_same_bytes_from_summary_json_as_from_pandas(tmp_path, name):
    path = shutil.copytree(SAMPLES / name, tmp_path / name)
    commands = commands_for(path)
    aggregated = outputs(path, commands)  # no summary.json: pandas
    assert [code for _, code, _, _ in aggregated] == [0] * len(commands), aggregated
    keep_summary(path)
    sweep, _, runs = load_sweep(path)
    assert cached_rows(sweep, runs) is not None  # the second pass really reads summary.json
    assert outputs(path, commands) == aggregated


@pytest.mark.slow
def test_a_stand_in_sweep_leaves_a_summary_that_report_and_compare_read_without_pandas(tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = run_cli(*sweep_args(vendor, tf112, out, "--runs", "2"), cwd=tmp_path, env=ips_env(tmp_path / "state"))
    assert result.returncode == 0, result
    assert (out / "summary.json").is_file()
    commands = REPORTS + [("compare", "--rank"), ("compare", "--rank", "--format", "json")]
    from_summary = outputs(out, commands)
    assert not imports_pandas("report", out)
    assert not imports_pandas("compare", out, "--rank")
    (out / "summary.json").unlink()
    assert outputs(out, commands) == from_summary
    assert imports_pandas("report", out)  # a sweep from before summary.json is aggregated again


@pytest.mark.slow
def test_a_run_appended_after_the_summary_is_counted(tmp_path):
    path = shutil.copytree(SAMPLES / "egpu-F1.0", tmp_path / "s")
    keep_summary(path)
    lines = (path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    extra = json.loads(lines[0])
    extra.update(run=99, images_per_sec=1.5)
    with open(path / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(extra) + "\n")
    sweep, _, runs = load_sweep(path)
    assert cached_rows(sweep, runs) is None  # stale: the key is not these runs'
    stale = run_cli("report", path, "--format", "json")
    (path / "summary.json").unlink()
    assert stale.stdout == run_cli("report", path, "--format", "json").stdout
    assert json.loads(stale.stdout)["rows"][0]["runs_ok"] == 4


def _forged(path, change):
    data = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    change(data)
    (path / "summary.json").write_text(json.dumps(data), encoding="utf-8")


HOSTILE = {
    "another mean under the right key": lambda d: d["rows"][0].update(mean=d["rows"][0]["mean"] * 2),
    "another run count": lambda d: d["rows"][0].update(runs_ok=7),
    "a text for a number": lambda d: d["rows"][0].update(std="0.1"),
    "a field missing": lambda d: d["rows"][0].pop("flags"),
    "a row missing": lambda d: d["rows"].pop(),
    "rows not a list": lambda d: d.update(rows={"a": 1}),
    "another format": lambda d: d.update(format=99),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(HOSTILE))
def test_an_edited_summary_json_is_not_taken(tmp_path, how):
    path = shutil.copytree(SAMPLES / "egpu-F1.0", tmp_path / "s")
    expected = run_cli("report", path, "--format", "json").stdout
    keep_summary(path)
    _forged(path, HOSTILE[how])
    sweep, _, runs = load_sweep(path)
    assert cached_rows(sweep, runs) is None
    assert run_cli("report", path, "--format", "json").stdout == expected


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[]", b"null", b"{}"])
def test_a_broken_summary_json_is_ignored(tmp_path, content):
    path = shutil.copytree(SAMPLES / "egpu-F1.0", tmp_path / "s")
    expected = run_cli("report", path).stdout
    (path / "summary.json").write_bytes(content)
    result = run_cli("report", path)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


@pytest.mark.slow
def test_a_summary_json_that_is_a_link_or_a_fifo_is_not_read(tmp_path):
    path = shutil.copytree(SAMPLES / "egpu-F1.0", tmp_path / "s")
    keep_summary(path)
    expected = run_cli("report", path).stdout
    (path / "summary.json").rename(tmp_path / "elsewhere.json")
    (path / "summary.json").symlink_to(tmp_path / "elsewhere.json")
    sweep, _, runs = load_sweep(path)
    assert cached_rows(sweep, runs) is None
    (path / "summary.json").unlink()
    os.mkfifo(path / "summary.json")  # no writer: a read would block for ever
    assert cached_rows(sweep, runs) is None
    assert run_cli("report", path).stdout == expected


def test_rows_a_float_would_round_in_are_not_kept(tmp_path):
    path = shutil.copytree(SAMPLES / "egpu-F1.0", tmp_path / "s")
    sweep, _, runs = load_sweep(path)
    rows = config_rows(runs)
    rows[0] = dataclasses.replace(rows[0], mean_power_w=0.1 + 0.2)  # 0.30000000000000004: 17 digits, jsontext writes 15
    assert json.loads(summary_json_text(runs, rows))["rows"] is None


def test_the_sweep_keys_its_summary_by_the_runs_as_runs_jsonl_gives_them_back():
    from tfcnnwrap.jsontext import dumps
    from tfcnnwrap.results.records import RunRecord
    from tfcnnwrap.results.store import as_written
    from tfcnnwrap.results.summarycache import runs_key

    run = RunRecord(
        model="resnet50",
        batch_size=64,
        run=1,
        status="ok",
        images_per_sec=176.92999999999998,
        duration_s=0.1 + 0.2,
        num_gpus=1,
    )
    read_back = RunRecord.from_dict(json.loads(dumps(run.to_dict())))
    assert runs_key([run]) != runs_key([read_back])  # 17 digits in memory, 15 on disk
    assert runs_key([as_written(run)]) == runs_key([read_back])
