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
    out = subprocess.run(
        [sys.executable, str(FAKE_SCRIPT), *flags],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
    ).stdout
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
    fake_log(
        root / "2080ti" / "old" / "slurm-1234.out",
        "--model=inception3",
        "--batch_size=64",
        FAKE_TFCNN_FAULTS="*=garbage",
    )
    fake_log(root / "2080ti" / "old" / "flags.txt", "--model=resnet50", "--use_fp17=True")
    fake_log(root / "hidden" / ".git" / "x.log", "--model=resnet50")  # hidden folders are skipped
    (root / "README.txt").write_text("My runs of tf_cnn_benchmarks, see the logs.\n", encoding="utf-8")
    (root / "summary.csv").write_text("model,images_per_sec\nresnet50,176.93\n", encoding="utf-8")
    (root / "hidden" / "notes").write_text("nothing here\n", encoding="utf-8")
    return root


def rows_by_name(result):
    return {Path(row["path"]).name: row for row in result.rows()}


@pytest.mark.slow
def test_one_ok_log(cli, logs):
    result = cli("parse", logs / "resnet50.log", "--format", "json")
    assert result.returncode == ALL_OK, result
    (row,) = result.rows()
    assert row["path"] == str(logs / "resnet50.log")
    assert row["status"] == "ok"
    assert row["images_per_sec"] == 176.93
    assert (row["model"], row["batch_size"], row["batch_size_global"]) == ("resnet50", 64, 64)
    assert row["tf_version"] == "1.12" and row["devices"] == ["/gpu:0"] and row["num_batches"] == 100
    assert row["steps_seen"] == 11 and row["last_step"] == 100
    assert row["failure_kind"] is None and row["failure_message"] is None


@pytest.mark.slow
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
    order = [str(Path(row["path"]).relative_to(logs)).replace(os.sep, "/") for row in result.rows()]
    assert order == [
        "resnet50.log",
        "2080ti/alexnet.log",
        "2080ti/vgg16-bs64.log",
        "2080ti/old/flags.txt",
        "2080ti/old/slurm-1234.out",
    ]  # by name, a folder's files before its sub-folders


@pytest.mark.slow
def test_any_file_named_explicitly_is_parsed(cli, logs, tmp_path):
    target = tmp_path / "output"
    target.write_bytes((logs / "resnet50.log").read_bytes())
    result = cli("parse", target, logs / "2080ti" / "alexnet.log", "--format", "json")
    assert result.returncode == SOME_FAILED, result
    assert [row["status"] for row in result.rows()] == ["ok", "oom"]


@pytest.mark.slow
def test_jsonl_streams_one_record_per_line(cli, logs):
    result = cli("parse", logs, "--format", "jsonl")
    assert result.returncode == SOME_FAILED, result
    lines = result.stdout.splitlines()
    assert len(lines) == 5
    records = [json.loads(line) for line in lines]
    assert {r["status"] for r in records} == {"ok", "oom", "crashed"}
    assert all({"path", "status", "images_per_sec", "model", "batch_size"} <= set(r) for r in records)


@pytest.mark.slow
def test_csv(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti", "--format", "csv")
    assert result.returncode == SOME_FAILED, result
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["status"] for r in table] == ["ok", "oom", "ok", "crashed", "ok"]
    assert table[0]["images_per_sec"] == "176.93" and table[0]["batch_size"] == "64"
    assert table[1]["images_per_sec"] == ""
    assert json.loads(table[0]["devices"]) == ["/gpu:0"]


@pytest.mark.slow
def test_table(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti" / "alexnet.log")
    assert result.returncode == SOME_FAILED, result
    assert "resnet50" in result.stdout and "176.93" in result.stdout and "oom" in result.stdout
    assert "2 log(s), 1 ok, 1 failed" in result.stdout


@pytest.mark.slow
def test_all_ok_exits_0(cli, logs):
    result = cli("parse", logs / "resnet50.log", logs / "2080ti" / "vgg16-bs64.log", "--format", "csv")
    assert result.returncode == ALL_OK, result


@pytest.mark.slow
def test_missing_path_is_refused_before_anything_is_printed(cli, logs, tmp_path):
    missing = tmp_path / "no-such-run.log"
    result = cli("parse", logs / "resnet50.log", missing, "--format", "jsonl")
    line = assert_clean_error(result, USAGE, str(missing))
    assert "no such file or directory" in line
    assert result.stdout == ""


@pytest.mark.slow
def test_directory_without_logs_is_refused(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    result = cli("parse", tmp_path)
    assert_clean_error(result, USAGE, "no tf_cnn_benchmarks logs found", str(tmp_path))
    assert result.stdout == ""


@pytest.mark.slow
def test_worker_processes_give_the_same_records(cli, logs):
    serial = cli("parse", logs, "--format", "jsonl", env={"TFCNNWRAP_PARSE_JOBS": "1"})
    parallel = cli("parse", logs, "--format", "jsonl", env={"TFCNNWRAP_PARSE_JOBS": "3"})
    assert serial.returncode == parallel.returncode == SOME_FAILED
    assert parallel.stdout == serial.stdout and len(serial.stdout.splitlines()) == 5
    bad = cli("parse", logs, env={"TFCNNWRAP_PARSE_JOBS": "many"})
    assert_clean_error(bad, USAGE, "TFCNNWRAP_PARSE_JOBS")


@pytest.mark.slow
def test_no_result_log(cli, tmp_path):
    log = fake_log(tmp_path / "cut.log", "--model=resnet50", FAKE_TFCNN_FAULTS="*=no_total")
    result = cli("parse", log, "--format", "json")
    assert result.returncode == SOME_FAILED, result
    (row,) = result.rows()
    assert row["status"] == "no_result" and row["steps_seen"] == 11 and row["images_per_sec"] is None


# -- issue 11, item 10: strict JSON, no NaN anywhere ------------------------------------------------------


def strict_json(text):
    def refuse(name):
        raise ValueError("non-strict JSON constant %s" % name)

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
@pytest.mark.parametrize("total", ["nan", "inf", "-5", "0"])
def test_a_bad_total_is_no_result_and_every_format_is_strict_json(cli, tmp_path, total):
    good = fake_log(tmp_path / "good.log", "--model=resnet50")
    text = good.read_text(encoding="utf-8").replace("total images/sec: 176.93", "total images/sec: %s" % total)
    text = text.replace("images/sec: 176.9", "images/sec: %s" % total)  # step lines too
    bad = tmp_path / "bad.log"
    bad.write_text(text, encoding="utf-8")
    result = cli("parse", bad, "--format", "json")
    assert result.returncode == SOME_FAILED, result
    (row,) = strict_json(result.stdout)["rows"]
    assert row["status"] == "no_result" and row["images_per_sec"] is None
    assert row["failure_kind"] == "bad_total" and total in row["failure_message"]
    lines = cli("parse", bad, "--format", "jsonl").stdout.splitlines()
    assert [strict_json(line)["status"] for line in lines] == ["no_result"]


def test_render_writes_strict_json_only():
    from tfcnnwrap import render

    rows = [{"a": float("nan"), "b": float("inf"), "c": [float("-inf"), 1.5], "d": {"e": float("nan")}}]
    assert strict_json(render.to_json(rows)) == [{"a": None, "b": None, "c": [None, 1.5], "d": {"e": None}}]
    out = io.StringIO()
    render.emit(rows, "jsonl", stream=out)
    assert strict_json(out.getvalue())["b"] is None
    out = io.StringIO()
    render.emit(rows, "csv", stream=out)
    assert "NaN" not in out.getvalue() and "Infinity" not in out.getvalue()


# -- issue 11, item 14: only regular files; nothing skipped silently; logs that died before the header -----


@pytest.mark.slow
def test_a_device_or_fifo_is_refused_not_read_forever(cli, tmp_path):
    if not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"):
        pytest.skip("POSIX only")
    assert_clean_error(cli("parse", "/dev/zero", timeout=20), USAGE, "not a regular file", "/dev/zero")
    fifo = tmp_path / "run.log"
    os.mkfifo(fifo)
    result = cli("parse", fifo, timeout=20)
    assert_clean_error(result, USAGE, "not a regular file", str(fifo))


@pytest.mark.slow
def test_a_fifo_in_a_directory_is_named_and_skipped(cli, tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("POSIX only")
    fake_log(tmp_path / "ok.log", "--model=resnet50")
    os.mkfifo(tmp_path / "stuck.log")
    result = cli("parse", tmp_path, "--format", "jsonl", timeout=20)
    assert result.returncode == ALL_OK, result
    assert len(result.stdout.splitlines()) == 1
    assert "stuck.log is not a regular file" in result.stderr


@pytest.mark.slow
def test_an_unreadable_directory_is_named_on_stderr(tmp_path, monkeypatch, capsys):
    from tfcnnwrap.run import parse

    fake_log(tmp_path / "a" / "ok.log", "--model=resnet50")
    fake_log(tmp_path / "b" / "hidden-from-us.log", "--model=resnet50")
    real_scandir = os.scandir

    def scandir(path):
        if Path(path).name == "b":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = list(parse.find_logs([str(tmp_path)]))
    assert [Path(f).name for f in found] == ["ok.log"]
    err = capsys.readouterr().err
    assert "cannot read the directory" in err and str(tmp_path / "b") in err and "Permission denied" in err


CRASH_AT_IMPORT = """\
Traceback (most recent call last):
  File "tf_cnn_benchmarks.py", line 29, in <module>
    import benchmark_cnn
  File "/opt/tfb/scripts/tf_cnn_benchmarks/benchmark_cnn.py", line 37, in <module>
    import tensorflow as tf
  File "/usr/lib/python3.6/site-packages/tensorflow/__init__.py", line 24, in <module>
    from tensorflow.python import pywrap_tensorflow  # pylint: disable=unused-import
ImportError: libcudart.so.10.0: cannot open shared object file: No such file or directory

Failed to load the native TensorFlow runtime.
"""

TF2_CPP_ONLY = """\
I0000 00:00:1796038267.832496    6740 port.cc:153] oneDNN custom operations are on. To turn them off, set the \
environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
F0000 00:00:1796038268.114580    6740 gpu_device.cc:2020] Check failed: device_count > 0
"""


@pytest.mark.slow
def test_a_log_of_a_run_that_died_before_its_header_is_found(cli, tmp_path):
    (tmp_path / "slurm-99.out").write_text(CRASH_AT_IMPORT, encoding="utf-8")
    (tmp_path / "run.txt").write_text(TF2_CPP_ONLY, encoding="utf-8")
    (tmp_path / "other-tool.txt").write_text(  # someone else's traceback and glog lines: not a log
        "I1130 10:00:00.000000 1234 server.cc:42] listening\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\nKeyError: 1\n',
        encoding="utf-8",
    )
    result = cli("parse", tmp_path, "--format", "json")
    assert result.returncode == SOME_FAILED, result
    rows = rows_by_name(result)
    assert sorted(rows) == ["run.txt", "slurm-99.out"]
    assert rows["slurm-99.out"]["status"] == "crashed"
    assert "ImportError: libcudart.so.10.0" in rows["slurm-99.out"]["failure_message"]
    assert rows["run.txt"]["status"] == "crashed" and "Check failed" in rows["run.txt"]["failure_message"]


@pytest.mark.slow
def test_parse_offers_markdown_and_the_envelope(cli, tmp_path):
    log = fake_log(tmp_path / "logs" / "resnet50.log", "--model=resnet50", "--batch_size=64")
    markdown = cli("parse", log.parent, "--format", "markdown")
    assert markdown.returncode == 0, markdown
    assert markdown.stdout.startswith("### tf_cnn_benchmarks logs") and "| resnet50 |" in markdown.stdout
    data = cli("parse", log.parent, "--format", "json").json()
    assert (data["format"], data["kind"]) == (2, "parse") and data["rows"][0]["model"] == "resnet50"
