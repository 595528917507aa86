"""Host-fed data (issue 36): `sweep --data-dir DIR` runs on a user's ImageNet TFRecords and `sweep --data
generated[:N]` on N images the target's own TensorFlow writes (cached, reused); the conditions say `data: real`
and where the images came from; `compare` of a synthetic and a host-fed sweep names the data among its
environment differences.

The stand-in tf_cnn_benchmarks reads --data_dir as upstream's header does (dataset "imagenet", not "imagenet
(synthetic)"); the stand-in TensorFlow cannot write records, so generating is tested with the real TensorFlow
(the `tf` tier, TFCNNWRAP_REAL_TF_PYTHON) and the oldest one installed (TFCNNWRAP_OLD_TF_PYTHON).
"""

import gzip
import json
import os
import subprocess
import textwrap
import time

import pytest
from conftest import assert_clean_error
from realtf import CPU_ENV, MARKS, REAL_TF_PYTHON, REPO, real_setup

from tfcnnwrap.environment import datagen
from tfcnnwrap.results.plan import Plan
from tfcnnwrap.results.references import Result, closest_row
from tfcnnwrap.run import telemetry

NO_SMI = {telemetry.ENV_NVIDIA_SMI: "none"}
OLD_TF_PYTHON = os.environ.get("TFCNNWRAP_OLD_TF_PYTHON")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0")


def records_dir(where, names=("train-00000-of-00001", "validation-00000-of-00001")):
    where.mkdir(parents=True, exist_ok=True)
    for name in names:
        (where / name).write_bytes(b"not really a record")
    return where


def sweep(cli, tmp_path, vendor, python, out, *flags, env=None):
    env = dict(NO_SMI, TFCNNWRAP_CACHE=str(tmp_path / "cache"), **(env or {}))
    return cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        python,
        "--device",
        "cpu",
        "--models",
        "resnet50",
        "--runs",
        "1",
        "--out",
        out,
        *flags,
        cwd=tmp_path,
        env=env,
    )


def run_logs(out):
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line]
    return runs, [(out / r["log"]).read_text() for r in runs]


@pytest.mark.slow
def test_data_dir_runs_on_the_users_records_and_says_real_data(cli, tmp_path, vendor, fake_tf):
    data = records_dir(tmp_path / "imagenet")
    out = tmp_path / "s"
    gpu = {"FAKE_TF_GPUS": "GeForce RTX 2070"}  # a name for the bundle (the runs are on the CPU)
    result = sweep(cli, tmp_path, vendor, fake_tf("2.4.0"), out, "--data-dir", data, env=gpu)
    assert result.returncode == 0, result
    assert "data: data-dir (real, decoded on the host)" in result.stdout
    runs, logs = run_logs(out)
    assert "--data_dir=%s" % data.resolve() in runs[0]["command"] and "--data_name=imagenet" in runs[0]["command"]
    assert "Dataset:     imagenet\n" in logs[0] and "(synthetic)" not in logs[0]
    plan = json.loads((out / "sweep.json").read_text())["plan"]
    assert plan["data_source"] == "data-dir" and plan["data_dir"] == str(data.resolve())
    report = cli("report", out, "--format", "json", cwd=tmp_path).json()
    assert report["conditions"]["data"] == "real" and report["conditions"]["data_source"] == "data-dir"
    assert "real data" in cli("report", out, cwd=tmp_path).stdout
    exported = cli("export", out, "--out", tmp_path / "b.tfcw.json.gz", cwd=tmp_path, env=dict(NO_SMI, **gpu))
    assert exported.returncode == 0, exported
    bundle = json.loads(gzip.decompress((tmp_path / "b.tfcw.json.gz").read_bytes()))
    assert bundle["conditions"]["data"] == "real" and bundle["conditions"]["data_source"] == "data-dir"


@pytest.mark.slow
def test_a_synthetic_sweep_says_synthetic(cli, tmp_path, vendor, tf112):
    out = tmp_path / "s"
    assert sweep(cli, tmp_path, vendor, tf112, out).returncode == 0
    runs, logs = run_logs(out)
    assert not any(a.startswith("--data_dir") for a in runs[0]["command"])
    assert "Dataset:     imagenet (synthetic)" in logs[0]
    cond = cli("report", out, "--format", "json", cwd=tmp_path).json()["conditions"]
    assert cond["data"] == "synthetic" and cond["data_source"] == "synthetic"


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--data-dir", "nowhere"], ["--data-dir nowhere is not a directory"]),
        (["--data", "generated:3"], ["--data generated:N: N must be a whole number from 8 to 100000 images"]),
        (["--data", "imagenet"], ["--data takes synthetic or generated[:N]", "--data-dir DIR"]),
        (["--data", "generated,generated:100"], ["synthetic and one generated[:N]"]),
        (["--data", "synthetic,synthetic"], ["synthetic and one generated[:N]"]),
        (["--data", "synthetic,generated", "--data-dir", "d"], ["give one of them"]),
        (["--data", "generated", "--data-dir", "d"], ["give one of them"]),
        (["--data", "generated", "--", "--data_dir=/x"], ["drop --data_dir after --"]),
    ],
)
def test_bad_data_flags_are_one_line_and_exit_2(cli, tmp_path, vendor, tf112, flags, needles):
    (tmp_path / "d").mkdir()
    result = sweep(cli, tmp_path, vendor, tf112, tmp_path / "s", *flags)
    assert_clean_error(result, 2, *needles)
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_a_data_dir_without_imagenet_records_is_refused_before_anything_runs(cli, tmp_path, vendor, tf112):
    data = records_dir(tmp_path / "d", names=("cifar-10-batches",))
    result = sweep(cli, tmp_path, vendor, tf112, tmp_path / "s", "--data-dir", data)
    assert_clean_error(result, 2, "holds no train-*-of-* files", "--data generated")


def fake_cache(tmp_path, count):
    """A generated set as datagen leaves it, so that the stand-in TensorFlow need not write one."""
    where = tmp_path / "cache" / "data" / ("%s-%d" % (datagen.DATA_FORMAT, count))
    files = ["train-00000-of-00001", "validation-00000-of-00001"]
    records_dir(where, files)
    (where / datagen.MANIFEST).write_text(json.dumps({"files": files, "train_images": count}))
    return where


@pytest.mark.slow
def test_generated_data_reuses_the_cache_and_resume_reads_the_same_records(cli, tmp_path, vendor, tf112):
    cached = fake_cache(tmp_path, 64)
    out = tmp_path / "s"
    flags_out = tmp_path / "flags.jsonl"
    env = {
        "FAKE_TFCNN_STATE": str(tmp_path / "state"),
        "FAKE_TFCNN_FAULTS": "#2=crash",
        "FAKE_TFCNN_FLAGS_OUT": str(flags_out),
    }
    (tmp_path / "state").mkdir()
    result = sweep(cli, tmp_path, vendor, tf112, out, "--data", "generated:64", "--runs", "2", env=env)
    assert result.returncode == 1, result  # run 2 crashed
    assert "writing" not in result.stderr  # the cached set, not a new one
    plan = json.loads((out / "sweep.json").read_text())["plan"]
    assert plan["data_source"] == "generated:64" and plan["data_dir"] == str(cached)
    again = cli(
        "sweep",
        "--resume",
        out,
        "--retry-failed",
        cwd=tmp_path,
        env=dict(NO_SMI, TFCNNWRAP_CACHE=str(tmp_path / "cache"), **env),
    )
    assert again.returncode == 0, again
    seen = [json.loads(line) for line in flags_out.read_text().splitlines()]
    assert len(seen) == 3 and {s["data_dir"] for s in seen} == {str(cached)}
    assert {s["data_name"] for s in seen} == {"imagenet"}
    cond = cli("report", out, "--format", "json", cwd=tmp_path).json()["conditions"]
    assert cond["data"] == "real" and cond["data_source"] == "generated:64"


def both_kinds(cli, tmp_path, vendor, python, out, *flags, env=None):
    """A sweep of both data kinds on resnet50 and vgg16, 2 runs each, on a cached generated set of 64 images;
    the stand-in's figures: synthetic 200/vgg16 100, real 150/vgg16 90 (within a few tenths)."""
    fake_cache(tmp_path, 64)
    env = dict(env or {})
    env.setdefault("FAKE_TFCNN_STATE", str(tmp_path / "state"))
    env.setdefault("FAKE_TFCNN_IPS", "resnet50=200/150/202/151,vgg16=100/90/101/90.5")
    (tmp_path / "state").mkdir(exist_ok=True)
    models = ("--models", "resnet50,vgg16", "--runs", "2")
    return sweep(cli, tmp_path, vendor, python, out, "--data", "synthetic,generated:64", *models, *flags, env=env)


@pytest.mark.slow
def test_both_data_kinds_run_interleaved_in_one_sweep_and_report_what_the_input_path_costs(
    cli, tmp_path, vendor, tf112
):
    out, flags_out = tmp_path / "s", tmp_path / "flags.jsonl"
    result = both_kinds(cli, tmp_path, vendor, tf112, out, env={"FAKE_TFCNN_FLAGS_OUT": str(flags_out)})
    assert result.returncode == 0, result
    assert "data: synthetic and generated:64" in result.stdout
    seen = [json.loads(line) for line in flags_out.read_text().splitlines()]
    # interleaved by default: run 1 of every configuration (a model's two kinds side by side), then run 2
    order = [(s["model"], "real" if s.get("data_dir") else "synthetic") for s in seen]
    assert order == [("resnet50", "synthetic"), ("resnet50", "real"), ("vgg16", "synthetic"), ("vgg16", "real")] * 2
    runs, logs = run_logs(out)
    assert [r["data"] for r in runs] == ["synthetic", "real"] * 4
    assert runs[1]["log"] == "logs/resnet50-bs64-real-run1.log" and "-synthetic-run1" in runs[0]["log"]
    assert "Dataset:     imagenet\n" in logs[1] and "(synthetic)" in logs[0]
    plan = json.loads((out / "sweep.json").read_text())["plan"]
    assert plan["data_kinds"] == ["synthetic", "real"] and plan["order"] == "interleaved"
    report = cli("report", out, "--format", "json", cwd=tmp_path).json()
    assert report["conditions"]["data"] == "synthetic,real"
    assert report["conditions"]["data_source"] == "synthetic,generated:64"
    rows = {(r["model"], r["data"]): r for r in report["rows"]}
    assert len(rows) == 4 and rows[("resnet50", "synthetic")]["vs_synthetic_pct"] is None
    cost = rows[("resnet50", "real")]
    assert cost["vs_synthetic_pct"] == pytest.approx((150.5 / 201 - 1) * 100, abs=1e-6)
    assert cost["vs_synthetic_ci95_low"] < cost["vs_synthetic_pct"] < cost["vs_synthetic_ci95_high"] < 0
    table = cli("report", out, cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    page = tmp_path / "report.html"
    assert cli("report", out, "--format", "html", "--out", page, cwd=tmp_path).returncode == 0
    html = page.read_text()
    assert "What the input path costs" in html and "resnet50 bs=64: real data -25.1% against synthetic" in html
    plot = tmp_path / "runs.png"
    assert cli("report", out, "--plot", plot, cwd=tmp_path).returncode == 0 and plot.is_file()
    assert "synthetic and real data" in table and "input path" in table
    assert "resnet50 bs=64: real data -25.1% against synthetic (95% CI" in table
    header = (out / "summary.csv").read_text().splitlines()[0].split(",")
    assert header[-4:] == ["data", "vs_synthetic_pct", "vs_synthetic_ci95_low", "vs_synthetic_ci95_high"]


@pytest.mark.slow
def test_a_resumed_sweep_of_both_kinds_reruns_each_run_with_its_own_data(cli, tmp_path, vendor, tf112):
    out, flags_out = tmp_path / "s", tmp_path / "flags.jsonl"
    env = {"FAKE_TFCNN_FLAGS_OUT": str(flags_out), "FAKE_TFCNN_FAULTS": "#2=crash,#7=crash"}
    assert both_kinds(cli, tmp_path, vendor, tf112, out, env=env).returncode == 1
    again = cli(
        "sweep",
        "--resume",
        out,
        "--retry-failed",
        cwd=tmp_path,
        env=dict(NO_SMI, TFCNNWRAP_CACHE=str(tmp_path / "cache"), FAKE_TFCNN_STATE=str(tmp_path / "state"), **env),
    )
    assert again.returncode == 0, again
    seen = [json.loads(line) for line in flags_out.read_text().splitlines()]
    assert len(seen) == 10  # the two crashed runs again, each with its own kind
    assert [(s["model"], bool(s.get("data_dir"))) for s in seen[8:]] == [("resnet50", True), ("vgg16", False)]
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    latest = {(r["model"], r["data"], r["run"]): r["status"] for r in runs}
    assert len(latest) == 8 and set(latest.values()) == {"ok"}


@pytest.mark.slow
def test_a_sweep_of_both_kinds_exports_one_kind_a_bundle_and_compares_kind_by_kind(cli, tmp_path, vendor, tf112):
    a, b = tmp_path / "a", tmp_path / "b"
    gpu = {"FAKE_TF_GPUS": "GeForce RTX 2070"}
    assert both_kinds(cli, tmp_path, vendor, tf112, a, env=gpu).returncode == 0
    assert (
        both_kinds(cli, tmp_path, vendor, tf112, b, env=dict(gpu, FAKE_TFCNN_STATE=str(tmp_path / "s2"))).returncode
        == 0
    )
    bundles = {}
    for kind in (None, "real"):
        flags = ("--data", kind) if kind else ()
        result = cli("export", a, "--out", tmp_path / ("%s.tfcw.json.gz" % kind), *flags, cwd=tmp_path)
        assert result.returncode == 0, result
        assert ("holds one kind" in result.stderr) is (kind is None)
        path = result.stdout.strip()
        bundles[kind] = json.loads(gzip.decompress(open(path, "rb").read()))
        assert cli("verify", path, cwd=tmp_path).returncode == 0
    assert bundles[None]["conditions"]["data"] == "synthetic" and len(bundles[None]["runs"]) == 4
    assert bundles["real"]["conditions"]["data"] == "real"
    assert bundles["real"]["conditions"]["data_source"] == "generated:64"
    assert {r["log"] for r in bundles["real"]["runs"]} == {
        "%s-bs%d-real-run%d.log" % (m, bs, k) for m, bs in (("resnet50", 64), ("vgg16", 64)) for k in (1, 2)
    }
    one = tmp_path / "one"
    assert sweep(cli, tmp_path, vendor, tf112, one).returncode == 0
    assert_clean_error(cli("export", one, "--data", "real", cwd=tmp_path), 2, "drop --data")
    compared = cli("compare", a, b, "--format", "json", cwd=tmp_path)
    assert compared.returncode == 0, compared
    rows = compared.json()["rows"]
    assert sorted((r["model"], r["data"]) for r in rows) == sorted(
        (m, d) for m in ("resnet50", "vgg16") for d in ("synthetic", "real")
    )
    assert "data" in cli("compare", a, b, cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    against = cli("compare", a, "--against", "rtx2070", "--format", "json", cwd=tmp_path)
    assert against.returncode == 0, against
    assert against.json()["conditions"]["data"] == "synthetic"  # the references' terms: the synthetic runs
    assert sorted(r["model"] for r in against.json()["rows"]) == ["resnet50", "vgg16"]


@pytest.mark.slow
def test_resume_refuses_new_data_flags(cli, tmp_path, vendor, tf112):
    out = tmp_path / "s"
    assert sweep(cli, tmp_path, vendor, tf112, out).returncode == 0
    result = cli("sweep", "--resume", out, "--data", "generated", cwd=tmp_path, env=NO_SMI)
    assert_clean_error(result, 2, "--data")


@pytest.mark.slow
def test_a_target_that_cannot_write_records_is_one_line_naming_the_fix(cli, tmp_path, vendor, tf112):
    result = sweep(cli, tmp_path, vendor, tf112, tmp_path / "s", "--data", "generated:16")
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result
    last = result.stderr.strip().splitlines()[-1]
    assert "could not write the generated ImageNet TFRecords" in last and "--data-dir" in last, result
    assert not (tmp_path / "s").exists()
    assert not list((tmp_path / "cache" / "data").iterdir())  # no half-written set left behind


@pytest.mark.slow
def test_dry_run_names_the_cache_and_writes_nothing(cli, tmp_path, vendor, tf112):
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--models",
        "alexnet",
        "--data",
        "generated",
        "--dry-run",
        cwd=tmp_path,
        env=dict(NO_SMI, TFCNNWRAP_CACHE=str(tmp_path / "cache")),
    )
    assert result.returncode == 0, result
    assert "--data_name=imagenet" in result.stdout
    assert "%s-512" % datagen.DATA_FORMAT in result.stdout
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_compare_names_the_data_among_the_environment_differences(cli, tmp_path, vendor, tf112):
    base, cand = tmp_path / "syn", tmp_path / "real"
    assert sweep(cli, tmp_path, vendor, tf112, base).returncode == 0
    data = records_dir(tmp_path / "imagenet")
    assert sweep(cli, tmp_path, vendor, tf112, cand, "--data-dir", data).returncode == 0
    result = cli("compare", base, cand, "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result
    differences = [
        {k: d[k] for k in ("what", "baseline", "candidate")} for d in result.json()["environment_differences"]
    ]
    assert {"what": "data", "baseline": "synthetic", "candidate": "real"} in differences
    assert {"what": "data source", "baseline": "synthetic", "candidate": "data-dir"} in differences
    assert not any(d["what"].startswith("plan data") for d in differences)  # said once, without paths
    assert "data" in cli("compare", base, cand, cwd=tmp_path).stdout


def test_plan_data_round_trips_and_old_plans_read_as_synthetic():
    plan = Plan(data_source="generated:64", data_dir="/cache/x")
    again = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again.data_source == "generated:64" and again.data_dir == "/cache/x" and again.generated_count == 64
    assert again.conditions()["data"] == "real"
    flags = again.benchmark_flags("resnet50", 8, "gpu")
    assert "--data_dir=/cache/x" in flags and "--data_name=imagenet" in flags
    old = Plan().to_dict()
    del old["data_source"], old["data_dir"]
    assert Plan.from_dict(old).data_origin() == "synthetic"
    # the pass-through spelling, the only one older sweeps had, still counts as real data
    assert Plan(extra_args=["--data_dir=/x"]).data_origin() == "data_dir flag"


# --- with real TensorFlow -----------------------------------------------------------------------------------

# upstream's parse_example_proto keys (preprocessing.py), read back with the real TensorFlow
READ_BACK = textwrap.dedent("""
    import sys, glob, tensorflow as tf
    files = sorted(glob.glob(sys.argv[1] + "/train-*-of-*"))
    n = 0
    for raw in tf.data.TFRecordDataset(files):
        f = tf.io.parse_single_example(raw, {
            "image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([1], tf.int64),
            "image/class/text": tf.io.FixedLenFeature([], tf.string),
            "image/object/bbox/xmin": tf.io.VarLenFeature(tf.float32),
            "image/object/bbox/ymin": tf.io.VarLenFeature(tf.float32),
            "image/object/bbox/xmax": tf.io.VarLenFeature(tf.float32),
            "image/object/bbox/ymax": tf.io.VarLenFeature(tf.float32),
            "image/height": tf.io.FixedLenFeature([], tf.int64),
            "image/width": tf.io.FixedLenFeature([], tf.int64)})
        img = tf.io.decode_jpeg(f["image/encoded"], channels=3)
        assert img.shape[0] == f["image/height"] and img.shape[1] == f["image/width"], img.shape
        assert 1 <= int(f["image/class/label"][0]) <= 1000
        assert 0 <= float(f["image/object/bbox/xmin"].values[0]) < float(f["image/object/bbox/xmax"].values[0]) <= 1
        n += 1
    print(n)
""")


def generate_and_read_back(python, tmp_path, count):
    os.environ[datagen.ENV_CACHE] = str(tmp_path / "cache")
    try:
        started = time.perf_counter()
        made = datagen.ensure_generated(python, count)
        took = time.perf_counter() - started
        again = datagen.ensure_generated(python, count)
    finally:
        del os.environ[datagen.ENV_CACHE]
    assert made["cached"] is False and again["cached"] is True and again["directory"] == made["directory"]
    assert [f for f in made["files"] if f.startswith("train-")] == ["train-%05d-of-00004" % i for i in range(4)]
    read = subprocess.run(
        [REAL_TF_PYTHON, "-c", READ_BACK, made["directory"]],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=300,
    )
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stdout.split()[-1] == str(count)
    return made, took


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.skipif(not OLD_TF_PYTHON, reason="set TFCNNWRAP_OLD_TF_PYTHON to a python with an old TensorFlow (1.x)")
@pytest.mark.skipif(not REAL_TF_PYTHON, reason="reading the records back needs TFCNNWRAP_REAL_TF_PYTHON")
def test_the_oldest_tensorflow_writes_records_the_newest_reads(tmp_path):
    made, took = generate_and_read_back(OLD_TF_PYTHON, tmp_path, 24)
    assert made["tensorflow"].startswith("1."), made
    print("TensorFlow %s on Python %s wrote %s in %.1f s" % (made["tensorflow"], made["python"], made["files"], took))


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.skipif(not REAL_TF_PYTHON, reason="set TFCNNWRAP_REAL_TF_PYTHON to a python with TensorFlow")
def test_real_tensorflow_writes_records_with_upstreams_keys(tmp_path):
    made, took = generate_and_read_back(REAL_TF_PYTHON, tmp_path, 24)
    assert made["validation_images"] == 2 and made["bytes"] > 24 * 10000


@pytest.mark.tf
@pytest.mark.slow
@MARKS[0]
@MARKS[1]
def test_real_tf_sweep_on_generated_data_reads_the_records(cli, tmp_path):
    env = dict(NO_SMI, CUDA_VISIBLE_DEVICES="", TFCNNWRAP_CACHE=str(tmp_path / "cache"))
    vendor = tmp_path / "vendor"
    setup = cli(
        "setup",
        "--repo-url",
        REPO,
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        vendor,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert setup.returncode == 0, setup
    outs = {}
    for data in ("synthetic", "generated"):
        outs[data] = tmp_path / data
        started = time.perf_counter()
        result = cli(
            "sweep",
            "--python",
            REAL_TF_PYTHON,
            "--vendor-dir",
            vendor,
            "--out",
            outs[data],
            "--data",
            data,
            "--models",
            "resnet50",
            "--device",
            "cpu",
            "--quick",
            cwd=tmp_path,
            env=env,
            timeout=900,
        )
        assert result.returncode == 0, result
        print("%s: %.1f s; %s" % (data, time.perf_counter() - started, result.stderr[-400:]))
    runs, logs = run_logs(outs["generated"])
    assert runs[0]["status"] == "ok" and "Dataset:     imagenet\n" in logs[0], logs[0][-3000:]
    assert any(a.startswith("--data_dir=%s" % (tmp_path / "cache")) for a in runs[0]["command"])
    cond = cli("report", outs["generated"], "--format", "json", cwd=tmp_path, env=env).json()["conditions"]
    assert cond["data"] == "real" and cond["data_source"] == "generated:512"
    result = cli("compare", outs["synthetic"], outs["generated"], "--format", "json", cwd=tmp_path, env=env)
    assert result.returncode == 0, result
    assert any(
        (d["what"], d["baseline"], d["candidate"]) == ("data", "synthetic", "real")
        for d in result.json()["environment_differences"]
    )
    assert json.loads((outs["generated"] / "sweep.json").read_text())["environment"]["link_bandwidth"]["reason"]


@pytest.mark.tf
@pytest.mark.slow
@MARKS[0]
@MARKS[1]
def test_real_tf_sweep_of_both_data_kinds_says_what_the_input_path_costs(cli, tmp_path):
    """resnet50 at batch 2 for 3 timed batches, 2 runs of each kind on 32 generated images: what the real
    TensorFlow's input path costs, measured, with an interval, in one sweep."""
    env = dict(CPU_ENV, TFCNNWRAP_CACHE=str(tmp_path / "cache"))
    vendor = real_setup(cli, tmp_path)
    out = tmp_path / "both"
    started = time.perf_counter()
    result = cli(
        "sweep",
        "--python",
        REAL_TF_PYTHON,
        "--vendor-dir",
        vendor,
        "--out",
        out,
        "--data",
        "synthetic,generated:32",
        "--models",
        "resnet50",
        "--batch-size",
        "resnet50=2",
        "--num-batches",
        "3",
        "--num-warmup-batches",
        "1",
        "--runs",
        "2",
        "--device",
        "cpu",
        cwd=tmp_path,
        env=env,
        timeout=900,
    )
    assert result.returncode == 0, result
    print("both kinds: %.1f s; %s" % (time.perf_counter() - started, result.stderr[-400:]))
    runs, logs = run_logs(out)
    assert [r["data"] for r in runs] == ["synthetic", "real", "synthetic", "real"]
    assert all(r["status"] == "ok" for r in runs), runs
    assert "(synthetic)" in logs[0] and "Dataset:     imagenet\n" in logs[1], logs[1][-3000:]
    report = cli("report", out, "--format", "json", cwd=tmp_path, env=env).json()
    assert report["conditions"]["data_source"] == "synthetic,generated:32"
    [real] = [r for r in report["rows"] if r["data"] == "real"]
    print("input path cost: %s" % {k: v for k, v in real.items() if k.startswith("vs_synthetic")})
    assert real["vs_synthetic_pct"] is not None
    low, high = real["vs_synthetic_ci95_low"], real["vs_synthetic_ci95_high"]
    text = cli("report", out, cwd=tmp_path, env=dict(env, COLUMNS="200")).stdout
    # 2 runs a kind: Student's t at ~1 degree of freedom is 12.7, so Fieller's set is unbounded when the two
    # synthetic runs differ enough (a CPU run's noise): then no interval, and the line says why
    if low is None or high is None:
        assert low is None and high is None and "against synthetic (no interval:" in text, (real, text)
    else:
        assert low <= real["vs_synthetic_pct"] <= high and "against synthetic (95% CI" in text, (real, text)


def reference(data, ips, tf_version="1.12"):
    return Result(
        gpu_id="rtx2070",
        model="resnet50",
        batch_size=64,
        images_per_sec=ips,
        text=str(ips),
        precision="fp32",
        num_gpus=1,
        variable_update="parameter_server",
        data=data,
        tf_version=tf_version,
        source="test",
        notes="",
        origin="builtin",
    )


def test_the_closest_reference_row_of_a_real_data_sweep_is_a_real_data_one():
    real_plan = Plan(data_source="generated:512", data_dir="/x")
    wanted = dict(real_plan.conditions(), batch_size=64)
    # the synthetic row is newer: only the data condition puts the real one first
    rows = [reference("synthetic", 180.0, "1.15"), reference("real", 150.0)]
    best, differs = closest_row(rows, wanted)
    assert best.data == "real" and differs == []
    best, differs = closest_row(rows[:1], wanted)  # none measured on real data: the difference is named
    assert differs == ["data"]
    best, _ = closest_row(rows, dict(Plan().conditions(), batch_size=64))
    assert best.data == "synthetic"


def test_an_incomplete_cache_entry_is_made_again_and_a_complete_one_reused(tmp_path, monkeypatch):
    monkeypatch.setenv(datagen.ENV_CACHE, str(tmp_path / "cache"))
    made = []

    def fake_generator(python, work, count):
        made.append(count)
        (work / "train-00000-of-00001").write_bytes(b"r")
        return {"files": ["train-00000-of-00001"], "train_images": count}

    monkeypatch.setattr(datagen, "_run_generator", fake_generator)
    broken = fake_cache(tmp_path, 16)
    (broken / "validation-00000-of-00001").unlink()  # a file its manifest names is gone
    first = datagen.ensure_generated("python", 16)
    assert made == [16] and first["cached"] is False and first["directory"] == str(broken)
    assert sorted(p.name for p in broken.iterdir()) == [datagen.MANIFEST, "train-00000-of-00001"]
    assert datagen.ensure_generated("python", 16)["cached"] is True and made == [16]
    assert [p.name for p in broken.parent.iterdir()] == [broken.name]  # no temporary directory left
