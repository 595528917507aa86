"""Strict `verify`: forgeries rebuilt as a forger would (logs edited to agree, id recomputed) are not verified.

Each forgery is a genuine export changed so that every figure, log sha256 and the id agree; only the rules of
docs/results-format.md ("What verify checks") can tell. Genuine exports, an interrupted sweep's and a
format-1 bundle's among them, still verify.
"""

import copy
import json
import math
import subprocess
from pathlib import Path

import pytest
from bundledata import build, log_text, logged_sweep, verify
from sweepdata import write_sweep

from tfcnnwrap.results.gpuid import same_gpu
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.verify import TOTAL_OVER_STEP, VERIFIED, log_gpus

DEVICE_LINE = (
    "2026-11-30 10:00:01.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 "
    "with properties: name: GeForce RTX 2070 major: 7 minor: 5 memoryClockRate(GHz): 1.62"
)


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    """A genuine export: two models x 3 runs on a GeForce RTX 2070 whose logs' device lines name it."""
    sweep = logged_sweep(
        tmp_path_factory.mktemp("strict") / "s", values={"resnet50": 176.93, "vgg16": 110.23}, device_line=DEVICE_LINE
    )
    return build(sweep)


def reid(bundle):
    return bundles.with_id({k: v for k, v in bundle.items() if k != "id"})


def relog(bundle, name, text):
    bundle["logs"][name] = {"sha256": bundles.sha256_text(text), "text": text}


def resummarise(bundle):
    """Summary means recomputed from the ok runs, as a careful forger does."""
    for row in bundle["summary"]:
        values = [
            r["images_per_sec"]
            for r in bundle["runs"]
            if r["status"] == "ok" and r["model"] == row["model"] and r["batch_size"] == row["batch_size"]
        ]
        row["mean"] = sum(values) / len(values) if values else None
        row["runs_ok"] = len(values)


def forged(genuine, change):
    bundle = copy.deepcopy(genuine)
    change(bundle)
    return reid(bundle)


def only_a_total(bundle):
    for run in bundle["runs"]:
        run["images_per_sec"] = 5000.0
        relog(bundle, run["log"], "total images/sec: 5000.00\n")
    resummarise(bundle)


def renamed_gpu(bundle):
    bundle["conditions"]["gpu"] = "GeForce RTX 2080 Ti"
    bundle["conditions"]["gpus"] = ["GeForce RTX 2080 Ti"]


def slower_run_dropped(bundle):
    """resnet50's run 1 was the slower: dropped, run 2 and 3 renumbered 1 and 2."""
    kept = [r for r in bundle["runs"] if not (r["model"] == "resnet50" and r["run"] == 1)]
    for run in kept:
        if run["model"] == "resnet50":
            run["run"] -= 1
    bundle["runs"] = kept
    resummarise(bundle)


def slower_run_dropped_not_renumbered(bundle):
    bundle["runs"] = [r for r in bundle["runs"] if not (r["model"] == "resnet50" and r["run"] == 2)]
    resummarise(bundle)


def total_contradicted_by_steps(bundle):
    run = bundle["runs"][0]
    text = bundle["logs"][run["log"]]["text"].replace("total images/sec: 176.93", "total images/sec: 300.00")
    relog(bundle, run["log"], text)
    run["images_per_sec"] = 300.0
    resummarise(bundle)


def host_row_with_a_false_mean(bundle):
    bundle["summary"][0]["host"] = "host-1"
    bundle["summary"][0]["mean"] = 999.0


def timeout_with_a_figure(bundle):
    run = bundle["runs"][0]
    run["status"] = "timeout"
    run["images_per_sec"] = 999.0
    resummarise(bundle)


def eight_gpus_on_one_device(bundle):
    """A distributed run claiming 8 GPUs (2 workers x 4) whose log ran on one device."""
    bundle["conditions"]["cluster"] = {"backend": "local", "workers": 2, "ps": 0, "fleet": False}
    for run in bundle["runs"]:
        run["num_gpus"] = 4
        run["cluster"] = {"backend": "local", "tasks": 2}
    for row in bundle["summary"]:
        row["num_gpus"] = 4
    for config in bundle["plan"]["configurations"]:
        config["num_gpus"] = 4


def distributed_claim_by_workers(bundle):
    """The same claim made by workers alone: 1 GPU each, 8 workers; the log's job ran on one device."""
    bundle["conditions"]["cluster"] = {"backend": "local", "workers": 8, "ps": 0, "fleet": False}
    for run in bundle["runs"]:
        run["cluster"] = {"backend": "local", "tasks": 8}


def real_data_claimed(bundle):
    bundle["conditions"]["data"] = "real"


def other_variable_update(bundle):
    bundle["conditions"]["variable_update"] = "replicated"


FORGERIES = {
    "a log that is only a total": (only_a_total, "not a whole tf_cnn_benchmarks log"),
    "renamed to RTX 2080 Ti, logs name an RTX 2070": (renamed_gpu, "device lines name GeForce RTX 2070"),
    "the slower of two planned runs dropped, renumbered": (slower_run_dropped, "2 runs, the plan asks 3"),
    "the slower run dropped": (slower_run_dropped_not_renumbered, "runs 2 missing"),
    "a total its own step lines contradict": (total_contradicted_by_steps, "more than its own step lines allow"),
    "a summary row with a host key and a false mean": (host_row_with_a_false_mean, "summary resnet50 bs64 host"),
    "a timeout run carrying a figure": (timeout_with_a_figure, "recorded timeout, yet it carries a figure"),
    "8 GPUs claimed, the log ran on one device": (eight_gpus_on_one_device, "the log ran on 1 devices"),
    "8 workers claimed, the job ran on one device": (distributed_claim_by_workers, "the log's job ran on 1 devices"),
    "real data claimed": (real_data_claimed, "ran on synthetic data"),
    "another variable update claimed": (other_variable_update, "variable update is parameter_server"),
}


def test_the_genuine_export_verifies_and_carries_its_plan(genuine):
    assert verify(genuine) == verify(bundles.read_bytes(bundles.to_bytes(genuine), "x"))
    assert verify(genuine).state == VERIFIED, verify(genuine)
    plan = genuine["plan"]
    assert plan["runs"] == 3 and plan["not_started"] == [] and plan["until_ci"] is None
    assert [c["model"] for c in plan["configurations"]] == ["resnet50", "vgg16"]


@pytest.mark.slow
@pytest.mark.parametrize("case", FORGERIES)
def test_a_forgery_is_not_verified_exit_1_with_a_finding(cli, tmp_path, genuine, case):
    change, needle = FORGERIES[case]
    path = tmp_path / "forged.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(forged(genuine, change)))
    result = cli("verify", path)
    assert result.returncode == 1, (case, result)
    findings = result.stdout.splitlines()[:-1]
    assert any(needle in line for line in findings), (case, result.stdout)
    assert all(line.startswith(str(path) + ": ") for line in findings), result.stdout
    assert "not verified" in result.stdout.splitlines()[-1]


@pytest.mark.slow
def test_a_bundle_edited_after_export_is_not_verified_exit_1_not_unreadable(cli, tmp_path, genuine):
    """Issue 33 #13: readable but not genuine is exit 1 (2 stays for files that are no bundle)."""
    edited = dict(genuine, created_at="2027-01-01T00:00:00Z")  # the id left as it was
    path = tmp_path / "edited.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(edited))
    result = cli("verify", path)
    assert result.returncode == 1, result
    assert "changed after export" in result.stdout and "unreadable" not in result.stdout, result
    assert result.stdout.splitlines()[-1].split(": ", 1)[1].startswith("not verified")


@pytest.mark.slow
def test_an_interrupted_sweep_exports_a_bundle_that_verifies_and_says_it_is_incomplete(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    plan_file = sweep / "sweep.json"
    meta = json.loads(plan_file.read_text(encoding="utf-8"))
    meta["plan"]["runs"] = 5  # 3 of 5 runs ran, then the sweep was stopped
    plan_file.write_text(json.dumps(meta), encoding="utf-8")
    bundle = build(sweep)
    assert [r["run"] for r in bundle["plan"]["not_started"]] == [4, 5]
    verdict = verify(bundle)
    assert verdict.state == VERIFIED and verdict.notes == ("incomplete: 2 planned runs never started",), verdict
    path = tmp_path / "b.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(bundle))
    result = cli("verify", path)
    assert result.returncode == 0 and "verified" in result.stdout and "incomplete: 2 planned runs" in result.stdout

    forged_plan = copy.deepcopy(bundle)
    forged_plan["plan"]["not_started"] = forged_plan["plan"]["not_started"][:1]  # run 5 hidden
    assert any("runs 5 missing" in f or "4 runs, the plan asks 5" in f for f in verify(reid(forged_plan)).findings)


def test_a_plan_that_is_no_plan_and_a_format_2_bundle_without_one_are_findings(genuine):
    broken = copy.deepcopy(genuine)
    broken["plan"] = {"runs": "3"}
    assert any("plan is not one" in f for f in verify(reid(broken)).findings)
    newer = copy.deepcopy(genuine)
    del newer["plan"]
    newer["format"] = bundles.PLAN_FORMAT
    assert any("carries no plan" in f for f in verify(reid(newer)).findings)
    older = copy.deepcopy(genuine)
    del older["plan"]
    older["format"] = 1
    assert verify(reid(older)).state == VERIFIED  # format 1 keeps its rule: no plan asked


def test_a_run_outside_the_plan_is_a_finding(genuine):
    bundle = copy.deepcopy(genuine)
    bundle["plan"]["configurations"] = bundle["plan"]["configurations"][:1]
    assert any("vgg16 bs" in f and "not in the bundle's plan" in f for f in verify(reid(bundle)).findings)


def test_an_ok_run_that_hung_after_its_total_verifies_only_with_its_total_in_its_log(genuine):
    bundle = copy.deepcopy(genuine)
    run = bundle["runs"][0]
    run["hung_after_total"], run["exit_code"] = True, -9
    assert verify(reid(bundle)).state == VERIFIED
    text = bundle["logs"][run["log"]]["text"].split("-" * 64)[0]  # killed before the total: no total
    relog(bundle, run["log"], text)
    assert any("holds no total" in f for f in verify(reid(bundle)).findings)


def test_a_summary_row_of_a_configuration_without_an_ok_run_carries_no_mean(genuine):
    bundle = copy.deepcopy(genuine)
    bundle["summary"].append(dict(bundle["summary"][0], model="alexnet", mean=2000.0))
    assert any("alexnet" in f and "without an ok run" in f for f in verify(reid(bundle)).findings)


def test_a_fleet_row_per_host_is_checked_against_its_hosts_runs(genuine):
    bundle = copy.deepcopy(genuine)
    for run in bundle["runs"]:
        run["host"] = "host-1"
    row = dict(bundle["summary"][0], host="host-1")
    bundle["summary"].append(row)
    assert verify(reid(bundle)).state == VERIFIED
    row["mean"] = row["mean"] * 1.5
    assert any("host host-1" in f for f in verify(reid(bundle)).findings)


def test_a_cpu_bundle_is_not_held_to_the_gpu_its_logs_may_name(genuine):
    bundle = copy.deepcopy(genuine)
    bundle["conditions"].update(device="cpu", gpu="Intel(R) Xeon(R) CPU", gpus=["Intel(R) Xeon(R) CPU"])
    assert any("the bundle says device cpu" in f for f in verify(reid(bundle)).findings)  # its logs ran on /gpu:0
    for name, entry in list(bundle["logs"].items()):  # run on the CPU of a machine whose TensorFlow saw a GPU
        relog(bundle, name, entry["text"].replace("['/gpu:0']", "['/cpu:0']"))
    assert verify(reid(bundle)).state == VERIFIED


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("GeForce RTX 2070", "NVIDIA GeForce RTX 2070", True),
        ("NVIDIA GeForce RTX 2080 Ti", "geforce rtx  2080-ti", True),
        ("GeForce RTX 2080 Ti", "GeForce RTX 2080", False),
        ("GeForce RTX 2070", "GeForce RTX 2070 SUPER", False),
        ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB", True),
        ("NVIDIA", "GeForce", False),
    ],
)
def test_same_gpu_ignores_vendor_words_case_and_spaces_only(a, b, same):
    assert same_gpu(a, b) is same


def test_device_lines_of_tensorflow_1_and_2_name_their_gpu():
    tf2 = (
        "2026-11-30 10:00:01.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 6000 MB memory:  -> device: 0, name: NVIDIA GeForce "
        "RTX 2070, pci bus id: 0000:01:00.0, compute capability: 7.5"
    )
    assert log_gpus(DEVICE_LINE + "\n" + tf2 + "\n" + DEVICE_LINE) == ["GeForce RTX 2070", "NVIDIA GeForce RTX 2070"]


@pytest.mark.parametrize(
    "steps, total, batches, ok",
    [
        (176.9, 176.93, 100, True),  # the prints' rounding
        (5.2, 5.25, 100, True),  # small figures too
        (65.4, 58.82, 10, True),  # real TF on a CPU: the time between steps makes a total lower, without bound
        (378.4, 227.02, 3, True),  # a 3-batch run: its one step line covers step 1 of 3
        (100.0, 290.0, 3, True),  # ... and bounds the total at 3 times it
        (100.0, 310.0, 3, False),
        (176.9, 180.0, 100, False),
        (300.0, 5000.0, 100, False),
    ],
)
def test_the_total_against_the_last_step_line(steps, total, batches, ok):
    from tfcnnwrap.results.bundlerecords import BundleRun
    from tfcnnwrap.share.verify import Expected, parse_text, steps_findings

    text = log_text("resnet50", 64, steps).replace("total images/sec: %.2f" % steps, "total images/sec: %.2f" % total)
    text = text.replace("Num batches: 100", "Num batches: %d" % batches)
    if batches < 100:
        text = text.replace("100\timages/sec", "%d\timages/sec" % batches if batches >= 10 else "x")
    run = {"model": "resnet50", "batch_size": 64, "run": 1}
    findings = steps_findings(BundleRun.from_dict(run), parse_text(text), "w", Expected((), None, None, 1))
    assert (findings == []) is ok, findings
    assert 1 < TOTAL_OVER_STEP < 1.05


def test_a_stand_in_sweep_with_failures_verifies(tmp_path):
    """Failed runs (no figure) and an ok run beside them: a genuine sweep of the stand-in's statuses verifies."""
    results = {("resnet50", 64): [176.93, "oom", 176.93]}
    sweep = write_sweep(tmp_path / "s", results)
    for line in (sweep / "runs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        value = record["images_per_sec"]
        text = (
            log_text("resnet50", 64, value)
            if value
            else "Traceback (most recent call last)\nResourceExhaustedError: OOM when allocating tensor\n"
        )
        (sweep / record["log"]).write_text(text, encoding="utf-8")
    bundle = build(sweep)
    assert verify(bundle).state == VERIFIED, verify(bundle)
    assert math.isclose(bundle["summary"][0]["mean"], 176.93)


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("batches", ["3", "10"])
def test_a_real_tensorflow_cpu_sweep_exports_a_bundle_that_verifies(cli, tmp_path, batches):
    """Real TensorFlow and tf_cnn_benchmarks (master) on the CPU, short runs: the strict rules pass a real log."""
    from realtf import MARKS, real_cpu_sweep

    for mark in MARKS:
        if mark.args[0]:
            pytest.skip(mark.kwargs["reason"])
    _, out = real_cpu_sweep(cli, tmp_path, 2, batches, "--device", "cpu")
    exported = cli("export", out, "--out", tmp_path / "b.tfcw.json.gz", cwd=tmp_path)
    assert exported.returncode == 0, exported
    result = cli("verify", tmp_path / "b.tfcw.json.gz", cwd=tmp_path)
    assert result.returncode == 0, result


@pytest.mark.slow
def test_a_stand_in_distributed_sweep_exports_a_bundle_that_verifies(cli, tmp_path, vendor, fake_tf):
    """A ps + 2 workers job of the stand-in (which prints upstream's header: global batch = batch x devices x
    workers): the job's devices agree; a bundle claiming 4 workers does not."""
    from test_sweep_cluster import env_for, sweep_args

    out = tmp_path / "sweep"
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")
    args = sweep_args(vendor, tf112, out, "--cluster", "local", "--workers", "2", "--ps", "1")
    result = cli(*args, cwd=tmp_path, env=env_for(tmp_path))
    assert result.returncode == 0, result
    bundle = build(out)
    assert bundle["conditions"]["cluster"]["workers"] == 2 and bundle["runs"][0]["cluster"]["tasks"] == 3
    assert verify(bundle).state == VERIFIED, verify(bundle)
    claimed = copy.deepcopy(bundle)
    claimed["conditions"]["cluster"]["workers"] = 4
    assert any("job ran on 2 devices" in f for f in verify(reid(claimed)).findings), verify(reid(claimed))


@pytest.mark.parametrize(
    "numbers, until_ci, ok",
    [
        ([1, 2, 3], None, True),
        ([1, 2, 3, 4], None, False),  # more runs than asked
        ([1, 2, 3, 4, 5], 2.0, True),  # --until-ci: from --runs up to --max-runs
        (list(range(1, 12)), 2.0, False),  # past --max-runs
        ([1, 1, 2, 2, 3, 3], None, True),  # a fleet: every number once per host
        ([1, 1, 2, 3, 3], None, False),  # one host's run 2 dropped
    ],
)
def test_a_configurations_run_numbers_against_the_plan(numbers, until_ci, ok):
    from tfcnnwrap.results.bundlerecords import Bundle
    from tfcnnwrap.share.planchecks import plan_findings

    config = {"model": "resnet50", "batch_size": 64, "num_gpus": 1}
    plan = {
        "runs": 3,
        "until_ci": until_ci,
        "max_runs": 10 if until_ci else None,
        "configurations": [config],
        "not_started": [],
    }
    # a fleet's hosts each number their runs: the nth copy of a number is host n's
    runs = [dict(config, run=k, host="host-%d" % numbers[:i].count(k)) for i, k in enumerate(numbers, 1)]
    bundle = {"format": 2, "plan": plan, "runs": runs, "conditions": {"cluster": {"fleet": True}}}
    findings, notes = plan_findings(Bundle.from_dict(bundle))
    assert (findings == []) is ok, findings


LAMBDA_LOGS = Path("/work/.mirror/lambdal+lambda-tensorflow-benchmark/repo")  # a bare mirror, where a machine has it


@pytest.mark.slow  # reads 7,600 git blobs and parses 3,930 real logs: about a minute
@pytest.mark.skipif(
    not LAMBDA_LOGS.exists(), reason="no mirror of lambdal/lambda-tensorflow-benchmark at %s" % LAMBDA_LOGS
)
def test_no_real_log_of_lambdas_corpus_fails_a_rule():
    """Every real tf_cnn_benchmarks log with a total in Lambda's corpus passes the per-log rules, its GPU being
    the one its own first device line names and its conditions its own header's."""
    from tfcnnwrap.results.bundlerecords import BundleRun
    from tfcnnwrap.share import verify as bc

    git = ["git", "--git-dir", str(LAMBDA_LOGS)]
    listing = subprocess.run(git + ["ls-tree", "-r", "HEAD", "logs/"], stdout=subprocess.PIPE, check=True).stdout
    blobs = [line.split()[2] for line in listing.decode().splitlines() if line.split()[1] == "blob"]
    batch = subprocess.run(
        git + ["cat-file", "--batch"], input="\n".join(blobs).encode() + b"\n", stdout=subprocess.PIPE, check=True
    ).stdout
    checked, failed, at = 0, [], 0
    while at < len(batch):
        head_end = batch.index(b"\n", at)
        head = batch[at:head_end].split()
        if head[1] == b"missing":  # a blob the mirror lacks
            at = head_end + 1
            continue
        size = int(head[2])
        text = batch[head_end + 1 : head_end + 1 + size].decode("utf-8", "replace")
        at = head_end + 1 + size + 1
        parsed = bc.parse_text(text)
        if parsed.total_images_per_sec is None:
            continue
        checked += 1
        run = BundleRun.from_dict(
            {
                "model": parsed.model,
                "batch_size": parsed.batch_size,
                "run": 1,
                "status": "ok",
                "exit_code": 0,
                "num_gpus": len(parsed.devices or []) or 1,
                "images_per_sec": parsed.total_images_per_sec,
            }
        )
        data = "synthetic" if "synthetic" in (parsed.dataset or "") else "real"
        expect = bc.Expected(tuple(bc.log_gpus(text)[:1]), data, parsed.variable_update, 1)
        failed += (
            bc.header_findings(run, parsed, "log", True)
            + bc.condition_findings(parsed, text, "log", expect)
            + bc.steps_findings(run, parsed, "log", expect)
            + bc.result_findings(run, parsed, "log")
        )
    assert checked >= 3900 and failed == [], (checked, failed[:5])
