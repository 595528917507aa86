"""The typed data model (records.py): runs and sweeps read and write their own JSON, old sweeps still read
exactly as before, summary rows carry the contract's statistics."""

import csv
import dataclasses
import io
import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import assert_clean_error
from sweepdata import run_record, seed_runs, write_sweep

from tfcnnwrap import cli as cli_module
from tfcnnwrap.results.aggregate import summarize
from tfcnnwrap.results.records import FORMAT_VERSION, RunRecord, Status, SweepMeta
from tfcnnwrap.results.store import SweepDir, latest_runs

FORMAT1 = Path(__file__).resolve().parent / "data" / "format1"
SEED_AGAINST = "1080-Ti,2080,2080-Ti,Vega 64,V100"
NEW_SUMMARY_KEYS = ["num_gpus", "ci95_pct", "throttled_runs", "max_temp_c"]


def in_process(capsys, monkeypatch, cwd, *argv):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(cwd)
    code = cli_module.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return "%src=%d\n" % (out, code), err


@pytest.fixture
def format1(tmp_path):
    """A copy of the committed format-1 sweeps (base, cand): the text they gave on main is in expected/."""
    for name in ("base", "cand"):
        shutil.copytree(str(FORMAT1 / name), str(tmp_path / name))
    return tmp_path


def expected(name, root):
    return (FORMAT1 / "expected" / ("%s.txt" % name)).read_text(encoding="utf-8").replace("<ROOT>", str(root))


VERBS = {
    "against-base": ("compare", "base", "--against", SEED_AGAINST),
    "against-cand": ("compare", "cand", "--against", "1080-Ti,V100"),
    "ab": ("compare", "base", "cand"),
    "report-base": ("report", "base"),
    "report-cand": ("report", "cand"),
}


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_format_1_sweep_reads_as_it_did(capsys, monkeypatch, format1, verb, fmt):
    out, err = in_process(capsys, monkeypatch, format1, *(VERBS[verb] + ("--format", fmt)))
    want = expected("%s-%s" % (verb, fmt), format1.resolve())
    if not (verb.startswith("report") and fmt in ("json", "csv")):
        assert out == want, err
        return
    # report's JSON and CSV gained the contract's columns; every column main wrote reads the same.
    if fmt == "json":
        old, new = json.loads(want.rsplit("rc=", 1)[0]), json.loads(out.rsplit("rc=", 1)[0])["rows"]
    else:
        old = list(csv.DictReader(io.StringIO(want.rsplit("rc=", 1)[0])))
        new = list(csv.DictReader(io.StringIO(out.rsplit("rc=", 1)[0])))
    assert len(old) == len(new)
    for was, now in zip(old, new):
        assert list(now)[: len(was)] == list(was) and list(now)[len(was) :][: len(NEW_SUMMARY_KEYS)] == NEW_SUMMARY_KEYS
        assert {k: now[k] for k in was} == was


def test_format_1_report_json_has_the_new_statistics(capsys, monkeypatch, format1):
    out, _ = in_process(capsys, monkeypatch, format1, "report", "base", "--format", "json")
    rows = {r["model"]: r for r in json.loads(out.rsplit("rc=", 1)[0])["rows"]}
    from scipy import stats

    values = [176.93, 177.41, 175.88]
    _, high = stats.t.interval(0.95, len(values) - 1, loc=0, scale=stats.sem(values))
    mean = sum(values) / 3
    assert rows["resnet50"]["ci95_pct"] == pytest.approx(high / mean * 100)
    assert rows["resnet50"]["num_gpus"] == 1
    assert rows["resnet50"]["throttled_runs"] is None and rows["resnet50"]["max_temp_c"] is None
    assert rows["vgg16"]["ci95_pct"] is None  # no ok run
    assert rows["alexnet"]["ci95_pct"] is not None  # two runs suffice


# -- RunRecord -----------------------------------------------------------------------------------------


def test_run_record_round_trips_and_keeps_unknown_keys():
    line = run_record("resnet50", 64, 2, 176.5).to_dict()
    line.update(
        num_gpus=2,
        host="node7",
        cluster={"backend": "local", "tasks": ["worker:0"]},
        start_temp_c=41.0,
        cooldown_s=30.0,
        telemetry={"max_temp_c": 83, "throttled": True},
        future_key={"x": [1]},
    )
    record = RunRecord.from_dict(line)
    assert record.to_dict() == line
    assert record.key == ("resnet50", 64, 2, "node7", None, 2)  # data None: a sweep of one data kind
    assert record.ok and record.value == 176.5 and record.throttled is True and record.max_temp_c == 83.0
    assert record.extra == {"future_key": {"x": [1]}}
    json.dumps(record.to_dict(), allow_nan=False)


def test_run_record_statuses_and_bad_values():
    assert [s.value for s in Status] == ["ok", "oom", "timeout", "crashed", "no_result", "interrupted", "skipped"]
    skipped = RunRecord.from_dict(dict(run_record("vgg16", 64, 3, "skipped").to_dict()))
    assert skipped.status is Status.SKIPPED and not skipped.ok and skipped.value is None
    odd = RunRecord.from_dict(
        {
            "model": "vgg16",
            "batch_size": 64,
            "run": 1,
            "status": "ok",
            "images_per_sec": "fast",
            "duration_s": float("nan"),
            "status_extra": 1,
        }
    )
    assert odd.value is None and odd.duration_s is None
    future = RunRecord.from_dict({"model": "vgg16", "batch_size": 64, "run": 1, "status": "preempted"})
    assert future.status == "preempted" and future.to_dict()["status"] == "preempted"
    with pytest.raises(ValueError):
        RunRecord.from_dict({"model": "vgg16", "batch_size": "64", "run": 1})


def test_old_records_count_as_their_plans_gpus_so_a_rerun_replaces_them(tmp_path):
    path = write_sweep(tmp_path / "s", {("resnet50", 64): [100.0, "interrupted"]}, num_gpus=2)
    sweep = SweepDir(path)
    records = sweep.read_runs()
    assert [r.num_gpus for r in records] == [2, 2]
    rerun = dict(run_record("resnet50", 64, 2, 101.0).to_dict())  # a writer's dict, without num_gpus
    sweep.append_run(RunRecord.from_dict(rerun))
    sweep.append_run(RunRecord.from_dict(dict(rerun, run=3, num_gpus=2)))
    latest = latest_runs(records + [RunRecord.from_dict(rerun, 2)])  # read back with its plan's count
    assert [(r.run, r.value) for r in latest] == [(1, 100.0), (2, 101.0)]
    assert [(r.run, r.value, r.num_gpus) for r in sweep.read_runs()] == [(1, 100.0, 2), (2, 101.0, 2), (3, 101.0, 2)]


def test_summary_rows_read_telemetry():
    runs = [
        RunRecord.from_dict(dict(run_record("resnet50", 64, i, 100.0 + i).to_dict(), telemetry=t))
        for i, t in enumerate([{"max_temp_c": 80, "throttled": False}, {"max_temp_c": 86, "throttled": True}, None], 1)
    ]
    hot_failure = RunRecord.from_dict(
        dict(run_record("resnet50", 64, 4, "crashed").to_dict(), telemetry={"max_temp_c": 95, "throttled": True})
    )
    (row,) = summarize(runs + [hot_failure])
    # Over the ok runs, the ones the mean is made of.
    assert (row.throttled_runs, row.max_temp_c, row.runs_ok, row.runs_failed) == (1, 86.0, 3, 1)
    assert row.ci95_pct == pytest.approx(4.3027 * 1.0 / math.sqrt(3) / 102.0 * 100, rel=1e-4)  # t(2) = 4.3027


# -- SweepMeta -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_sweep_from_a_newer_tfcnnwrap_is_refused_naming_both_versions(cli, tmp_path):
    path = write_sweep(tmp_path / "s", seed_runs(2))
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    meta.update(format=FORMAT_VERSION + 1, tfcnnwrap_version="9.0.0")
    (path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    line = assert_clean_error(
        cli("report", path),
        2,
        "tfcnnwrap 9.0.0",
        "format %d" % (FORMAT_VERSION + 1),
        "format %d at most" % FORMAT_VERSION,
    )
    assert "upgrade" in line
    assert_clean_error(cli("compare", path, "--against", "V100"), 2, "format %d" % (FORMAT_VERSION + 1))


@pytest.mark.slow
@pytest.mark.parametrize(
    "change, needle",
    [
        ({"plan": ["resnet50"]}, "`plan` is a list, not an object"),
        ({"format": "1"}, "`format`"),
        ({"environment": "desk"}, "`environment` is text"),
        ({"plan": {"models": [{"model": "resnet50", "batch_size": "64"}], "runs": 1}}, "plan.models"),
        # where the sweep ran, as SweepMeta types it
        ({"python": 3}, "`python` is a whole number"),
        ({"resumed": ["yesterday"]}, "`resumed` holds text"),
        ({"argv": "tfcnnwrap sweep"}, "`argv` is text"),
    ],
)
def test_wrong_value_types_in_sweep_json_exit_2_in_one_line(cli, tmp_path, change, needle):
    path = write_sweep(tmp_path / "s", seed_runs(1))
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    meta.update(change)
    (path / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    assert_clean_error(cli("report", path, "--format", "json"), 2, needle, "sweep.json")


def test_sweep_meta_round_trips_and_reads_gpus():
    data = json.loads((FORMAT1 / "base" / "sweep.json").read_text(encoding="utf-8"))
    meta = SweepMeta.from_dict(data)
    assert meta.to_dict() == data
    assert meta.gpu_names() == "GeForce RTX 2070" and meta.upstream.branch == "cnn_tf_v1.12_compatible"
    assert meta.plan_order[0] == ("resnet50", 64) and meta.plan_num_gpus == 1


def test_test_data_cannot_record_a_plan_key_the_writer_never_writes(tmp_path):
    with pytest.raises(TypeError):
        write_sweep(tmp_path / "s", seed_runs(1), use_fp16=True)


def test_plans_differing_in_precision_are_pointed_out(capsys, monkeypatch, tmp_path):
    a = write_sweep(tmp_path / "a", seed_runs(2))
    b = write_sweep(tmp_path / "b", seed_runs(2), extra_args=["--use_fp16"])
    out, _ = in_process(capsys, monkeypatch, tmp_path, "compare", a, b, "--format", "markdown")
    assert "- precision: fp32 -> fp16" in out and "- plan extra_args: [] -> ['--use_fp16']" in out


@pytest.mark.slow
def test_live_lines_read_records_and_dicts():
    import io

    from tfcnnwrap.sweep.live import PlainDisplay

    out = io.StringIO()
    display = PlainDisplay(out)
    display.start(2, ["header"])
    display.run_finished(1, run_record("vgg16", 64, 1, 110.5), 3)
    skipped = dataclasses.replace(run_record("vgg16", 64, 2, "skipped"), failure="an earlier run ran out")
    display.run_finished(2, skipped, 3)
    lines = out.getvalue().splitlines()
    assert lines[1] == "[1/2] vgg16 bs=64 run 1/3: ok  110.50 images/sec  (1m00s)"
    assert lines[2].startswith("[2/2] vgg16 bs=64 run 2/3: SKIPPED  (1m00s)  an earlier run ran out  log: logs/")


@pytest.mark.slow
def test_report_json_is_strict_json(cli, tmp_path):
    path = write_sweep(tmp_path / "s", {("resnet50", 64): [100.0]})
    with open(path / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"model": "resnet50", "batch_size": 64, "run": 2, "status": "ok", "images_per_sec": Infinity}\n')
    result = cli("report", path, "--format", "json")
    assert result.returncode == 0, result
    rows = json.loads(result.stdout, parse_constant=lambda name: pytest.fail("non-strict JSON: %s" % name))["rows"]
    assert rows[0]["runs_ok"] == 1 and rows[0]["runs_failed"] == 1 and rows[0]["mean"] == 100.0
