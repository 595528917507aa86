"""--fp16/--xla, --until-ci/--max-runs, --order, the OOM rule and remembered settings (issues 13 and 14),
driven as a user would against the stand-in tf_cnn_benchmarks, plus the pure parts."""

import json
import math
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean_error, make_vendor
from test_sweep import _start_sweep, _wait_hanging, read_runs

from tfcnnwrap.environment import features
from tfcnnwrap.errors import DamagedFile, UsageError
from tfcnnwrap.results.plan import Plan, RunSpec
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.sweep import schedule

MIRROR = Path("/work/.mirror/tensorflow+benchmarks/repo")
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and named pipes")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "gpu", "--out", out, *more]


def env_for(tmp_path, ips=None, **extra):
    env = {"FAKE_TFCNN_STATE": tmp_path / "state", "FAKE_TFCNN_FLAGS_OUT": tmp_path / "flags.jsonl"}
    if ips:
        env["FAKE_TFCNN_IPS"] = ",".join("%s=%s" % (m, "/".join(map(str, v))) for m, v in ips.items())
    env.update(extra)
    return env


def invocations(tmp_path):
    path = tmp_path / "state" / "all"
    return int(path.read_text()) if path.exists() else 0


def seen_flags(tmp_path):
    return [json.loads(line) for line in (tmp_path / "flags.jsonl").read_text().splitlines()]


def order_of(runs):
    return [(r["model"], r["run"]) for r in runs]


# --- --fp16 and --xla -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fp16_and_xla_reach_the_benchmark_and_the_plan(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep(
            vendor, tf112, out, "--models", "trivial", "--batch-size", "trivial=8", "--runs", "1", "--fp16", "--xla"
        ),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    (run,) = read_runs(out)
    assert run["command"][-2:] == ["--use_fp16=True", "--xla=True"]
    (flags,) = seen_flags(tmp_path)
    assert flags["use_fp16"] == "True" and flags["xla"] == "True"
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["plan"]["fp16"] is True and meta["plan"]["xla"] is True
    assert meta["command_template"][-2:] == ["--use_fp16=True", "--xla=True"]
    conditions = Plan.from_dict(meta["plan"]).conditions()
    assert conditions["precision"] == "fp16" and conditions["xla"] == "yes"
    assert "--use_fp16=True --xla=True" in result.stdout  # the header says so


@pytest.mark.slow
def test_dry_run_shows_the_translated_flags(cli, tmp_path, vendor, tf112):
    result = cli(
        *sweep(
            vendor,
            tf112,
            tmp_path / "s",
            "--models",
            "trivial",
            "--batch-size",
            "trivial=8",
            "--runs",
            "1",
            "--fp16",
            "--dry-run",
        ),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    assert "--use_fp16=True" in result.stdout and "--xla" not in result.stdout
    assert invocations(tmp_path) == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "ours, theirs",
    [("--fp16", "--use_fp16=True"), ("--fp16", "--nouse_fp16"), ("--xla", "--xla"), ("--xla", "-xla_compile=true")],
)
def test_a_feature_given_both_ways_is_refused(cli, tmp_path, vendor, tf112, ours, theirs):
    result = cli(*sweep(vendor, tf112, tmp_path / "s", ours, "--", theirs), cwd=tmp_path, env=env_for(tmp_path))
    assert_clean_error(result, 2, ours, "after --")
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_pass_through_use_fp16_alone_still_works(cli, tmp_path, vendor, tf112):
    result = cli(
        *sweep(
            vendor,
            tf112,
            tmp_path / "s",
            "--models",
            "trivial",
            "--batch-size",
            "trivial=8",
            "--runs",
            "1",
            "--",
            "--use_fp16=True",
        ),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    assert seen_flags(tmp_path)[0]["use_fp16"] == "True"


def _fork_vendor(tmp_path, source):
    vendor = make_vendor(tmp_path / "fork-vendor", branch="my-fork")
    if source is not None:
        (vendor / "benchmarks" / "scripts" / "tf_cnn_benchmarks" / "benchmark_cnn.py").write_text(source)
    return vendor


@pytest.mark.slow
def test_a_branch_without_the_flag_is_refused(cli, tmp_path, tf112):
    vendor = _fork_vendor(tmp_path, "flags.DEFINE_boolean('use_fp16', False, 'fp16')\n")
    refused = cli(*sweep(vendor, tf112, tmp_path / "s", "--xla"), cwd=tmp_path, env=env_for(tmp_path))
    assert_clean_error(refused, 2, "my-fork", "--xla")
    assert not (tmp_path / "s").exists() and invocations(tmp_path) == 0
    fp16 = cli(*sweep(vendor, tf112, tmp_path / "s", "--fp16", "--dry-run"), cwd=tmp_path, env=env_for(tmp_path))
    assert fp16.returncode == 0 and "--use_fp16=True" in fp16.stdout, fp16


@pytest.mark.slow
def test_an_unknown_branch_without_its_source_is_refused(cli, tmp_path, tf112):
    vendor = _fork_vendor(tmp_path, None)
    refused = cli(*sweep(vendor, tf112, tmp_path / "s", "--fp16"), cwd=tmp_path, env=env_for(tmp_path))
    assert_clean_error(refused, 2, "my-fork", "after --")


@pytest.mark.slow
def test_branch_flags_unit():
    assert features.branch_flags([], "anything") == []
    assert features.branch_flags(["xla", "fp16"], "cnn_tf_v1.5_compatible") == ["--use_fp16=True", "--xla=True"]
    legacy = "    'xla':\n        ParamSpec('boolean', False, 'XLA'),\n"  # the 1.5 branch's style
    assert features.branch_flags(["xla"], "fork", legacy) == ["--xla=True"]
    with pytest.raises(UsageError, match="--fp16"):
        features.branch_flags(["fp16"], "fork", legacy)


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the tensorflow/benchmarks mirror")
@pytest.mark.parametrize("branch", features.KNOWN_BRANCHES)
def test_the_branch_table_matches_upstream(branch):
    source = subprocess.run(
        ["git", "--git-dir", str(MIRROR), "show", "%s:scripts/tf_cnn_benchmarks/benchmark_cnn.py" % branch],
        stdout=subprocess.PIPE,
        check=True,
    ).stdout.decode("utf-8", "replace")
    defined = features.defined_flags(source)
    for flag in features.BRANCH_FLAGS[branch].values():
        assert flag in defined, (branch, flag)


# --- --order ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_interleaved_order_runs_round_by_round(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep(vendor, tf112, out, "--models", "alexnet,vgg16", "--runs", "3", "--order", "interleaved"),
        cwd=tmp_path,
        env=env_for(tmp_path),
    )
    assert result.returncode == 0, result
    assert order_of(read_runs(out)) == [
        ("alexnet", 1),
        ("vgg16", 1),
        ("alexnet", 2),
        ("vgg16", 2),
        ("alexnet", 3),
        ("vgg16", 3),
    ]
    assert json.loads((out / "sweep.json").read_text())["plan"]["order"] == "interleaved"


@pytest.mark.slow
def test_grouped_is_the_default_order_and_dry_run_follows_the_order(cli, tmp_path, vendor, tf112):
    args = sweep(vendor, tf112, tmp_path / "s", "--models", "alexnet,vgg16", "--runs", "2", "--dry-run")
    grouped = cli(*args, cwd=tmp_path, env=env_for(tmp_path))
    interleaved = cli(*args, "--order", "interleaved", cwd=tmp_path, env=env_for(tmp_path))

    def models(r):
        return [line.split("--model=")[1].split()[0] for line in r.stdout.splitlines() if "--model=" in line]

    assert models(grouped) == ["alexnet", "alexnet", "vgg16", "vgg16"]
    assert models(interleaved) == ["alexnet", "vgg16", "alexnet", "vgg16"]


# --- --until-ci -------------------------------------------------------------------------------------------


def _runs_until(values, runs, pct, most):
    """How many runs --until-ci should take, from scipy.stats (independent of tfcnnwrap's formula)."""
    from scipy import stats

    n = runs
    while n < most:
        sample = values[:n]
        mean = sum(sample) / n
        s = math.sqrt(sum((v - mean) ** 2 for v in sample) / (n - 1))
        if stats.t.ppf(0.975, n - 1) * s / math.sqrt(n) / mean * 100 <= pct:
            break
        n += 1
    return n


@pytest.mark.slow
def test_until_ci_stops_once_the_interval_is_narrow(cli, tmp_path, vendor, tf112):
    values = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 100.0, 99.9]
    expected = _runs_until(values, 2, 1.0, 10)
    assert 2 < expected < 8  # the sequence is meant to need a few extra runs, not all of them
    out = tmp_path / "sweep"
    result = cli(
        *sweep(vendor, tf112, out, "--models", "alexnet", "--runs", "2", "--until-ci", "1"),
        cwd=tmp_path,
        env=env_for(tmp_path, {"alexnet": values}),
    )
    assert result.returncode == 0, result
    runs = read_runs(out)
    assert [r["run"] for r in runs] == list(range(1, expected + 1))
    (row,) = cli("report", out, "--format", "json").rows()
    assert row["runs_ok"] == expected and row["ci95_pct"] <= 1.0
    plan = json.loads((out / "sweep.json").read_text())["plan"]
    assert plan["until_ci"] == 1.0 and plan["max_runs"] == 10


@pytest.mark.slow
def test_until_ci_goes_on_to_max_runs_when_noisy(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    result = cli(
        *sweep(vendor, tf112, out, "--models", "alexnet", "--runs", "2", "--until-ci", "1", "--max-runs", "5"),
        cwd=tmp_path,
        env=env_for(tmp_path, {"alexnet": [50, 150]}),
    )
    assert result.returncode == 0, result
    assert [r["run"] for r in read_runs(out)] == [1, 2, 3, 4, 5]
    assert "run 5/5" in result.stdout


@pytest.mark.slow
@POSIX
def test_until_ci_interleaved_survives_an_interrupt_and_resume(cli, tmp_path, vendor, tf112):
    """alexnet is steady (done after --runs 2), vgg16 noisy (to --max-runs 4); Ctrl-C in vgg16's third run."""
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    out = tmp_path / "sweep"
    ips = {"alexnet": [100, 100.01], "vgg16": [50, 150]}
    args = sweep(
        vendor,
        tf112,
        out,
        "--models",
        "alexnet,vgg16",
        "--runs",
        "2",
        "--until-ci",
        "0.5",
        "--max-runs",
        "4",
        "--order",
        "interleaved",
    )
    proc = _start_sweep(args, tmp_path, env_for(tmp_path, ips, FAKE_TFCNN_FAULTS="#5=hang", FAKE_TFCNN_READY_FIFO=fifo))
    _wait_hanging(fifo)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert [(m, k, r["status"]) for (m, k), r in zip(order_of(read_runs(out)), read_runs(out))] == [
        ("alexnet", 1, "ok"),
        ("vgg16", 1, "ok"),
        ("alexnet", 2, "ok"),
        ("vgg16", 2, "ok"),
        ("vgg16", 3, "interrupted"),
    ]
    resumed = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=env_for(tmp_path, ips))
    assert resumed.returncode == 0, resumed
    latest = {(r["model"], r["run"]): r["status"] for r in read_runs(out)}
    assert latest == {
        ("alexnet", 1): "ok",
        ("alexnet", 2): "ok",
        ("vgg16", 1): "ok",
        ("vgg16", 2): "ok",
        ("vgg16", 3): "ok",
        ("vgg16", 4): "ok",
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--until-ci", "0"], "--until-ci"),
        (["--until-ci", "nan"], "--until-ci"),
        (["--max-runs", "5"], "--until-ci"),
        (["--until-ci", "1", "--max-runs", "2", "--runs", "3"], "--max-runs"),
        (["--until-ci", "1", "--max-runs", "1001"], "--max-runs"),
        (["--order", "random"], "--order"),
    ],
)
def test_bad_flow_flags_are_one_line_and_exit_2(cli, tmp_path, vendor, tf112, flags, needle):
    result = cli(*sweep(vendor, tf112, tmp_path / "s", *flags), cwd=tmp_path, env=env_for(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result
    assert needle in result.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_resume_refuses_flow_flags(cli, tmp_path, vendor, tf112):
    out = tmp_path / "sweep"
    assert (
        cli(
            *sweep(vendor, tf112, out, "--models", "alexnet", "--runs", "1"), cwd=tmp_path, env=env_for(tmp_path)
        ).returncode
        == 0
    )
    for flag in (["--fp16"], ["--until-ci", "2"], ["--order", "interleaved"]):
        result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, *flag, env=env_for(tmp_path))
        assert_clean_error(result, 2, flag[0])


# --- OOM --------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("order", ["grouped", "interleaved"])
def test_oom_skips_the_rest_of_the_configuration_until_retry_failed(cli, tmp_path, vendor, tf112, order):
    out = tmp_path / "sweep"
    result = cli(
        *sweep(vendor, tf112, out, "--models", "vgg16,alexnet", "--runs", "3", "--order", order),
        cwd=tmp_path,
        env=env_for(tmp_path, FAKE_TFCNN_FAULTS="vgg16#1=oom"),
    )
    assert result.returncode == 1, result
    runs = read_runs(out)
    assert invocations(tmp_path) == 4  # vgg16 once, alexnet three times
    # the skipped runs are recorded right after the OOM, whatever the order
    assert [(r["model"], r["run"], r["status"]) for r in runs[:3]] == [
        ("vgg16", 1, "oom"),
        ("vgg16", 2, "skipped"),
        ("vgg16", 3, "skipped"),
    ]
    skipped = runs[1]
    assert skipped["log"] is None and skipped["images_per_sec"] is None and skipped["exit_code"] is None
    assert "ran out of GPU memory" in skipped["failure"] and "--batch-size vgg16=32" in skipped["failure"]
    assert "--model=vgg16" in skipped["command"]
    assert "try --batch-size vgg16=32" in result.stdout  # the summary's hint
    (row,) = [r for r in cli("report", out, "--format", "json").rows() if r["model"] == "vgg16"]
    assert row["runs_failed"] == 3 and row["failures"] == "oom:1 skipped:2"

    plain = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=env_for(tmp_path))
    assert plain.returncode == 1 and invocations(tmp_path) == 4, plain
    retry = cli(
        "sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, "--retry-failed", env=env_for(tmp_path)
    )
    assert retry.returncode == 0, retry
    assert invocations(tmp_path) == 7
    (row,) = [r for r in cli("report", out, "--format", "json").rows() if r["model"] == "vgg16"]
    assert row["runs_ok"] == 3 and row["runs_failed"] == 0


@pytest.mark.slow
def test_a_resume_skips_what_an_earlier_oom_left_unrun(cli, tmp_path, vendor, tf112):
    """A sweep killed between its OOM and the skipped records: the resume records them, runs nothing."""
    out = tmp_path / "sweep"
    cli(
        *sweep(vendor, tf112, out, "--models", "vgg16", "--runs", "3"),
        cwd=tmp_path,
        env=env_for(tmp_path, FAKE_TFCNN_FAULTS="vgg16#1=oom"),
    )
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text(lines[0] + "\n")  # as if killed right after the OOM was written
    result = cli("sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, env=env_for(tmp_path))
    assert result.returncode == 1, result
    assert invocations(tmp_path) == 1
    assert [r["status"] for r in read_runs(out)] == ["oom", "skipped", "skipped"]


# --- remembered settings and where results go -------------------------------------------------------------


def _remember(vendor, python):
    manifest_path = Path(vendor) / "tfcnnwrap-setup.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["settings"] = {"python": str(python), "repo_url": manifest["url"]}
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.slow
def test_sweep_uses_the_remembered_python_then_the_variable_then_the_flag(cli, tmp_path, vendor, tf112, fake_tf):
    tf115 = fake_tf("1.15.0")
    _remember(vendor, tf112)
    base = ["sweep", "--vendor-dir", vendor, "--device", "gpu", "--models", "alexnet", "--runs", "1"]
    remembered = cli(*base, "--out", tmp_path / "a", cwd=tmp_path, env=env_for(tmp_path))
    assert remembered.returncode == 0, remembered
    assert json.loads((tmp_path / "a" / "sweep.json").read_text())["tensorflow_version"] == "1.12.0"
    from_env = cli(*base, "--out", tmp_path / "b", cwd=tmp_path, env=env_for(tmp_path, TFCNNWRAP_PYTHON=tf115))
    assert json.loads((tmp_path / "b" / "sweep.json").read_text())["tensorflow_version"] == "1.15.0", from_env
    flag = cli(
        *base, "--python", tf112, "--out", tmp_path / "c", cwd=tmp_path, env=env_for(tmp_path, TFCNNWRAP_PYTHON=tf115)
    )
    assert json.loads((tmp_path / "c" / "sweep.json").read_text())["tensorflow_version"] == "1.12.0", flag


@pytest.mark.slow
def test_a_remembered_python_that_is_gone_says_where_it_came_from(cli, tmp_path, vendor):
    _remember(vendor, tmp_path / "gone" / "python")
    result = cli("sweep", "--vendor-dir", vendor, "--dry-run", cwd=tmp_path, env=env_for(tmp_path))
    assert_clean_error(result, 2, "the last setup")


@pytest.mark.slow
def test_vendor_dir_and_results_from_the_environment(cli, tmp_path, vendor, tf112):
    results = tmp_path / "my-results"
    env = env_for(tmp_path, TFCNNWRAP_VENDOR_DIR=vendor, TFCNNWRAP_RESULTS=results, TFCNNWRAP_PYTHON=tf112)
    work = tmp_path / "work"
    work.mkdir()
    result = cli("sweep", "--device", "gpu", "--models", "alexnet", "--runs", "1", cwd=work, env=env)
    assert result.returncode == 0, result
    (made,) = list(results.iterdir())
    assert not (work / "results").exists()
    report = cli("report", "--format", "json", cwd=work, env=env)
    assert report.returncode == 0 and report.rows()[0]["model"] == "alexnet", report
    assert str(made) in cli("report", cwd=work, env=env).stdout.replace("\n", "")


@pytest.mark.slow
def test_doctor_questions_the_remembered_python(cli, tmp_path, vendor, fake_tf):
    tf115 = fake_tf("1.15.0")
    _remember(vendor, tf115)
    result = cli("doctor", "--format", "json", cwd=tmp_path, env={"TFCNNWRAP_VENDOR_DIR": vendor})
    report = result.json()
    assert report["tensorflow_version"].startswith("1.15"), result
    assert report["vendor"]["dir"] == str(vendor)


# --- pure parts -------------------------------------------------------------------------------------------


def test_plan_round_trips_the_new_fields_and_old_plans_read_as_defaults():
    plan = Plan(models=[("alexnet", 8)], fp16=True, xla=True, until_ci=1.5, max_runs=7, order="interleaved")
    again = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again == plan and again.most_runs == 7
    old = Plan().to_dict()
    for key in ("fp16", "xla", "until_ci", "max_runs", "order"):
        del old[key]
    assert Plan.from_dict(old) == Plan()
    assert Plan(until_ci=2.0).most_runs == 10 and Plan().most_runs == 3
    for bad in ({"order": "random"}, {"until_ci": 0}, {"max_runs": 10**9}):
        with pytest.raises(DamagedFile):
            Plan.from_dict(dict(Plan().to_dict(), **bad))


def _rec(model, run, status="ok", ips=100.0):
    return RunRecord.from_dict(
        {
            "model": model,
            "batch_size": 8,
            "num_gpus": 1,
            "run": run,
            "status": status,
            "images_per_sec": ips if status == "ok" else None,
        }
    )


def _drain(plan, values):
    """Run a Schedule to its end, each run giving the next of ``values[model]``: [(model, run, skipped?)]."""
    sched, done, given = schedule.Schedule(plan, []), [], {}
    while True:
        step = sched.next()
        if step is None:
            return done
        spec, skip = step
        done.append((spec.model, spec.run, bool(skip)))
        if not skip:
            seq = values[spec.model]
            status, ips = seq[given.get(spec.model, 0) % len(seq)]
            given[spec.model] = given.get(spec.model, 0) + 1
            sched.finished(_rec(spec.model, spec.run, status, ips))


def test_schedule_interleaves_extra_runs_and_skips_after_oom():
    plan = Plan(
        models=[("alexnet", 8), ("vgg16", 8), ("lenet", 8)], runs=2, until_ci=1.0, max_runs=4, order="interleaved"
    )
    done = _drain(plan, {"alexnet": [("ok", 100.0)], "vgg16": [("ok", 50.0), ("ok", 150.0)], "lenet": [("oom", None)]})
    assert done == [
        ("alexnet", 1, False),
        ("vgg16", 1, False),
        ("lenet", 1, False),
        ("lenet", 2, True),
        ("alexnet", 2, False),
        ("vgg16", 2, False),
        ("vgg16", 3, False),
        ("vgg16", 4, False),
    ]


def test_schedule_gives_no_extra_runs_to_a_failing_configuration():
    plan = Plan(models=[("alexnet", 8)], runs=2, until_ci=1.0, max_runs=6)
    assert _drain(plan, {"alexnet": [("crashed", None), ("ok", 100.0)]}) == [
        ("alexnet", 1, False),
        ("alexnet", 2, False),
    ]


def test_runs_to_do_on_resume():
    plan = Plan(models=[("alexnet", 8)], runs=3)
    records = [_rec("alexnet", 1), _rec("alexnet", 2, "interrupted"), _rec("alexnet", 3, "crashed")]
    assert schedule.runs_to_do(plan, records, False) == [RunSpec("alexnet", 8, 1, 2)]
    assert schedule.runs_to_do(plan, records, True) == [RunSpec("alexnet", 8, 1, 2), RunSpec("alexnet", 8, 1, 3)]


def test_ci_pct_is_the_one_of_the_summary():
    from tfcnnwrap.results.aggregate import ci95_pct

    values = [100.0, 101.0, 99.0, 100.5]
    mean = sum(values) / 4
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert schedule.ci_pct(values) == pytest.approx(ci95_pct(std, 4, mean))
    assert schedule.ci_pct([100.0]) is None


def test_oom_hint_halves_the_batch_size():
    runs = [
        RunRecord.from_dict({"model": "vgg16", "batch_size": 64, "num_gpus": 1, "run": 1, "status": "oom"}),
        RunRecord.from_dict({"model": "vgg16", "batch_size": 64, "num_gpus": 1, "run": 2, "status": "skipped"}),
        RunRecord.from_dict({"model": "lenet", "batch_size": 1, "num_gpus": 1, "run": 1, "status": "oom"}),
    ]
    hints = schedule.oom_hints(runs)
    assert "--batch-size vgg16=32" in hints[0] and "1 run skipped" in hints[0]
    assert "batch size 1 does not fit" in hints[1]


def test_sweep_directory_names_carry_the_utc_offset():
    from datetime import datetime, timedelta, timezone

    from tfcnnwrap.sweep.main import sweep_stamp

    stamp = sweep_stamp(datetime(2026, 11, 30, 10, 15, 0, tzinfo=timezone(timedelta(hours=1))))
    assert stamp == "20261130-101500+0100"
    assert (
        sweep_stamp(datetime(2026, 11, 30, 10, 15, 0, tzinfo=timezone(-timedelta(hours=3, minutes=30))))
        == "20261130-101500-0330"
    )


def test_oom_hint_once_for_two_gpu_counts():
    from types import SimpleNamespace

    from tfcnnwrap.sweep.schedule import oom_hints

    def run(status, gpus, model="resnet50"):
        return SimpleNamespace(model=model, batch_size=64, num_gpus=gpus, status=status)

    runs = [
        run("oom", 1),
        run("skipped", 1),
        run("oom", 2),
        run("skipped", 2),
        run("skipped", 2),
        run("ok", 1, "vgg16"),
        run("oom", 4, "vgg16"),
    ]
    hints = oom_hints(runs)
    assert len(hints) == 2, hints
    assert hints[0].startswith("resnet50 bs=64 ran out of GPU memory at 1 and 2 GPUs (3 runs skipped)")
    assert "resnet50=32" in hints[0] and hints[1].startswith("vgg16 bs=64 ran out of GPU memory (0 runs skipped)")
