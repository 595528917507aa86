"""`tfcnnwrap parse` driven as a user would: files and directories of logs, every format, exit codes."""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAKE_SCRIPT, assert_clean_error

ALL_OK = 0
SOME_FAILED = 1
USAGE = 2


def fake_log(path, *flags, **env):
    """Run the stand-in tf_cnn_benchmarks and keep its merged output, byte for byte, as ``path``."""
    full_env = dict(os.environ, **{k: str(v) for k, v in env.items()})
    out = subprocess.run([sys.executable, str(FAKE_SCRIPT), *flags], env=full_env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=60).stdout
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out)
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A directory as people keep them: logs in sub-folders, under any name, next to files that are not logs."""
    root = tmp_path_factory.mktemp("logs")
    fake_log(root / "resnet50.log", "--model=resnet50", "--batch_size=64")
    fake_log(root / "2080ti" / "vgg16-bs64.log", "--model=vgg16", "--batch_size=64", FAKE_TFCNN_CRLF=1)
    fake_log(root / "2080ti" / "alexnet.log", "--model=alexnet", "--batch_size=512", FAKE_TFCNN_FAULTS="*=oom")
    fake_log(root / "2080ti" / "old" / "slurm-1234.out", "--model=inception3", "--batch_size=64",
             FAKE_TFCNN_FAULTS="*=garbage")
    fake_log(root / "2080ti" / "old" / "flags.txt", "--model=resnet50", "--use_fp17=True")
    fake_log(root / "hidden" / ".git" / "x.log", "--model=resnet50")  # hidden folders are skipped
    (root / "README.txt").write_text("My runs of tf_cnn_benchmarks, see the logs.\n", encoding="utf-8")
    (root / "summary.csv").write_text("model,images_per_sec\nresnet50,176.93\n", encoding="utf-8")
    (root / "hidden" / "notes").write_text("nothing here\n", encoding="utf-8")
    return root


def rows_by_name(result):
    return {Path(row["path"]).name: row for row in result.json()}


def test_one_ok_log(cli, logs):
    result = cli("parse", logs / "resnet50.log", "--format", "json")
    assert result.returncode == ALL_OK, result
    (row,) = result.json()
    assert row["path"] == str(logs / "resnet50.log")
    assert row["status"] == "ok"
    assert row["images_per_sec"] == 176.93
    assert (row["model"], row["batch_size"], row["batch_size_global"]) == ("resnet50", 64, 64)
    assert row["tf_version"] == "1.12" and row["devices"] == ["/gpu:0"] and row["num_batches"] == 100
    assert row["steps_seen"] == 11 and row["last_step"] == 100
    assert row["failure_kind"] is None and row["failure_message"] is None


def test_directory_is_searched_recursively(cli, logs):
    result = cli("parse", logs, "--format", "json")
    assert result.returncode == SOME_FAILED, result
    rows = rows_by_name(result)
    assert sorted(rows) == ["alexnet.log", "flags.txt", "resnet50.log", "slurm-1234.out", "vgg16-bs64.log"]
    assert rows["vgg16-bs64.log"]["status"] == "ok" and rows["vgg16-bs64.log"]["images_per_sec"] == 110.23
    assert rows["slurm-1234.out"]["status"] == "ok" and rows["slurm-1234.out"]["images_per_sec"] == 113.24
    assert rows["alexnet.log"]["status"] == "oom"
    assert rows["alexnet.log"]["images_per_sec"] is None and rows["alexnet.log"]["batch_size"] == 512
    assert "ResourceExhaustedError" in rows["alexnet.log"]["failure_message"]
    assert rows["flags.txt"]["status"] == "crashed"
    assert rows["flags.txt"]["failure_kind"] == "flag_error"
    assert "Unknown command line flag 'use_fp17'" in rows["flags.txt"]["failure_message"]
    order = [str(Path(row["path"]).relative_to(logs)).replace(os.sep, "/") for row in result.json()]
    assert order == ["resnet50.log", "2080ti/alexnet.log", "2080ti/vgg16-bs64.log", "2080ti/old/flags.txt",
                     "2080ti/old/slurm-1234.out"]  # by name, a folder's files before its sub-folders


def test_any_file_named_explicitly_is_parsed(cli, logs, tmp_path):
    target = tmp_path / "output"
    target.write_bytes((logs / "resnet50.log").read_bytes())
    result = cli("parse", target, logs / "2080ti" / "alexnet.log", "--format", "json")
    assert result.returncode == SOME_FAILED, result
    assert [row["status"] for row in result.json()] == ["ok", "oom"]


def test_jsonl_streams_one_record_per_line(cli, logs):
    result = cli("parse", logs, "--format", "jsonl")
    assert result.returncode == SOME_FAILED, result
    lines = result.stdout.splitlines()
    assert len(lines) == 5
    records = [json.loads(line) for line in lines]
    assert {r["status"] for r in records} == {"ok", "oom", "crashed"}
    assert all({"path", "status", "images_per_sec", "model", "batch_size"} <= set(r) for r in records)


def test_csv(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti", "--format", "csv")
    assert result.returncode == SOME_FAILED, result
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["status"] for r in table] == ["ok", "oom", "ok", "crashed", "ok"]
    assert table[0]["images_per_sec"] == "176.93" and table[0]["batch_size"] == "64"
    assert table[1]["images_per_sec"] == ""
    assert json.loads(table[0]["devices"]) == ["/gpu:0"]


def test_table(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti" / "alexnet.log")
    assert result.returncode == SOME_FAILED, result
    assert "resnet50" in result.stdout and "176.93" in result.stdout and "oom" in result.stdout
    assert "2 log(s), 1 ok, 1 failed" in result.stdout


def test_all_ok_exits_0(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti" / "vgg16-bs64.log", "--format", "csv")
    assert result.returncode == ALL_OK, result


def test_missing_path_is_refused_before_anything_is_printed(cli, logs, tmp_path):
    missing = tmp_path / "no-such-run.log"
    result = cli("parse", logs / "resnet50.log", missing, "--format", "jsonl")
    line = assert_clean_error(result, USAGE, str(missing))
    assert "no such file or directory" in line
    assert result.stdout == ""


def test_directory_without_logs_is_refused(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    result = cli("parse", tmp_path)
    assert_clean_error(result, USAGE, "no tf_cnn_benchmarks logs found", str(tmp_path))
    assert result.stdout == ""


def test_worker_processes_give_the_same_records(cli, logs):
    serial = cli("parse", logs, "--format", "jsonl", env={"TFCNNWRAP_PARSE_JOBS": "1"})
    parallel = cli("parse", logs, "--format", "jsonl", env={"TFCNNWRAP_PARSE_JOBS": "3"})
    assert serial.returncode == parallel.returncode == SOME_FAILED
    assert parallel.stdout == serial.stdout and len(serial.stdout.splitlines()) == 5
    bad = cli("parse", logs, env={"TFCNNWRAP_PARSE_JOBS": "many"})
    assert_clean_error(bad, USAGE, "TFCNNWRAP_PARSE_JOBS")


def test_no_result_log(cli, tmp_path):
    log = fake_log(tmp_path / "cut.log", "--model=resnet50", FAKE_TFCNN_FAULTS="*=no_total")
    result = cli("parse", log, "--format", "json")
    assert result.returncode == SOME_FAILED, result
    (row,) = result.json()
    assert row["status"] == "no_result" and row["steps_seen"] == 11 and row["images_per_sec"] is None
