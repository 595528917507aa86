"""`export` and `verify`: a sweep as one checkable bundle, and every bad bundle refused in one line."""

import gzip
import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
from bundledata import HOST, log_text, logged_sweep, verify
from conftest import assert_clean_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.verify import FAILED, UNVERIFIED, VERIFIED

SCHEMA = json.loads(files("tfcnnwrap").joinpath("data", "bundle.schema.json").read_text(encoding="utf-8"))


def check_schema(bundle):
    """Every bundle the tests make is checked against the JSON Schema the package ships."""
    jsonschema.validate(bundle, SCHEMA)
    return bundle


def load(path):
    with gzip.open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def export(cli, sweep, out, *flags):
    result = cli("export", sweep, "--out", out, *flags)
    assert result.returncode == 0, result
    path = Path(result.stdout.strip())
    check_schema(load(path))
    return path


def write(path, bundle, reid=True):
    """A bundle as a tamperer would write it: with the id recomputed (``reid``), so only verify can tell."""
    if reid:
        bundle = bundles.with_id({k: v for k, v in bundle.items() if k != "id"})
    Path(path).write_bytes(bundles.to_bytes(bundle))
    return path


@pytest.fixture
def exported(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "sweep")
    (tmp_path / "out").mkdir()
    return export(cli, sweep, tmp_path / "out")


@pytest.mark.slow
def test_export_is_one_gzip_file_named_by_the_hash_of_its_content(cli, tmp_path, exported):
    bundle = load(exported)
    assert exported.name == bundle["id"] + ".tfcw.json.gz"
    assert list(bundle)[:8] == ["format", "id", "tool_version", "created_at", "conditions", "runs", "summary", "logs"]
    assert bundle["id"] == bundles.content_id(bundle)
    cond = bundle["conditions"]
    assert cond["gpu"] == "GeForce RTX 2070" and cond["vendor"] == "nvidia"
    assert cond["precision"] == "fp32" and cond["num_gpus"] == [1] and cond["data"] == "synthetic"
    assert cond["batch_sizes"] == {"resnet50": 64, "resnet152": 32, "inception3": 64, "vgg16": 64, "alexnet": 512}
    assert cond["branch"] == "cnn_tf_v1.12_compatible" and cond["tensorflow_version"] == "1.12.0"
    assert len(bundle["runs"]) == 15 and len(bundle["logs"]) == 15 and len(bundle["summary"]) == 5
    for run in bundle["runs"]:
        entry = bundle["logs"][run["log"]]
        assert bundles.sha256_text(entry["text"]) == entry["sha256"]
        assert "total images/sec: %.2f" % run["images_per_sec"] in entry["text"]
    # the same sweep exported twice: the same id and the same bytes
    again = export(cli, tmp_path / "sweep", tmp_path / "again.tfcw.json.gz")
    assert again.read_bytes() == exported.read_bytes()


@pytest.mark.slow
def test_private_data_is_redacted_unless_keep_host(cli, tmp_path, exported):
    text = json.dumps(load(exported))
    assert HOST not in text and "/home/alice" not in text and "alice" not in text
    bundle = load(exported)
    assert bundle["conditions"]["host"] == "<host>"
    assert bundle["runs"][0]["command"][0] == "/home/<user>/tf112/bin/python"
    assert "host <host> cwd /home/<user>/bench" in bundle["logs"]["resnet50-bs64-run1.log"]["text"]
    kept = load(export(cli, tmp_path / "sweep", tmp_path / "kept.tfcw.json.gz", "--keep-host"))
    assert kept["conditions"]["host"] == HOST and "alice" not in json.dumps(kept)
    assert kept["id"] != bundle["id"]


@pytest.mark.slow
def test_verify_a_good_bundle(cli, exported):
    result = cli("verify", exported)
    assert result.returncode == 0, result
    assert result.stdout.strip().endswith("verified (GeForce RTX 2070, 15 runs, bundle %s)" % exported.name[:12])


@pytest.mark.slow
def test_gpu_name_from_tensorflow_device_line_when_the_sweep_recorded_none(cli, tmp_path):
    line = (
        "2026-11-30 10:00:01.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 "
        "with properties: name: GeForce RTX 2070 major: 7 minor: 5 memoryClockRate(GHz): 1.62"
    )
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93}, gpus=(), device_line=line)
    bundle = load(export(cli, sweep, tmp_path / "b.tfcw.json.gz"))
    assert bundle["conditions"]["gpu"] == "GeForce RTX 2070"


@pytest.mark.slow
def test_a_sweep_without_any_gpu_name_is_not_exported(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93}, gpus=())
    result = cli("export", sweep, "--out", tmp_path / "b.tfcw.json.gz")
    assert_clean_error(result, 2, "no GPU name")
    assert not (tmp_path / "b.tfcw.json.gz").exists()


@pytest.mark.slow
def test_no_logs_is_unverified_and_says_so(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    path = export(cli, sweep, tmp_path / "b.tfcw.json.gz", "--no-logs")
    assert "logs" not in load(path)
    assert "no logs" in cli("export", sweep, "--out", tmp_path / "c.tfcw.json.gz", "--no-logs").stderr
    result = cli("verify", path)
    assert result.returncode == 1, result
    assert "unverified" in result.stdout and "--no-logs" in result.stdout


# -- bad input: each one line, the right exit code ------------------------------------------------------


def tampered_figure(bundle):
    bundle["runs"][0]["images_per_sec"] = 276.93  # its log says 176.93


def changed_log(bundle):
    entry = bundle["logs"]["resnet50-bs64-run1.log"]
    entry["text"] = entry["text"].replace("176.93", "276.93")
    bundle["runs"][0]["images_per_sec"] = 276.93


def huge_figure(bundle):
    for run in bundle["runs"]:
        if run["model"] == "resnet50":
            run["images_per_sec"] = 1e9
    bundle["summary"][0]["mean"] = 1e9


def other_model_in_log(bundle):
    entry = bundle["logs"]["resnet50-bs64-run1.log"]
    entry["text"] = entry["text"].replace("Model:       resnet50", "Model:       alexnet")
    entry["sha256"] = bundles.sha256_text(entry["text"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "tamper, needles",
    [
        (tampered_figure, ["resnet50 bs64 run 1", "recorded 276.93", "log says 176.93"]),
        (changed_log, ["does not match its sha256"]),
        (huge_figure, ["images/sec must be"]),
        (other_model_in_log, ["the log ran model alexnet"]),
    ],
)
def test_verify_names_what_does_not_match_and_exits_1(cli, tmp_path, exported, tamper, needles):
    bundle = load(exported)
    tamper(bundle)
    path = write(tmp_path / "t.tfcw.json.gz", check_schema(bundle) if tamper is not huge_figure else bundle)
    result = cli("verify", path)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    for needle in needles:
        assert needle in first, (needle, result)
    assert result.stdout.splitlines()[-1].split(": ")[1].startswith("not verified")


def json_bytes(value):
    return gzip.compress(json.dumps(value).encode("utf-8"))


def bad_files(tmp_path, bundle):
    """{case: (file, what the one line says)} of bundles verify cannot read at all (exit 2)."""
    good = bundles.to_bytes(bundle)
    cases = {  # edited without a new id is readable, so "not verified" (exit 1): tests/test_verify_strict.py
        "truncated gzip": (good[: len(good) // 2], "truncated or damaged"),
        "not gzip": (b'{"format": 1}', "not gzip"),
        "newer format": (
            json_bytes(dict(bundle, format=bundles.FORMAT + 1)),
            "bundle format %d is newer" % (bundles.FORMAT + 1),
        ),
        "not an object": (json_bytes([bundle]), "not an object"),
        "NaN": (gzip.compress(json.dumps(bundle).replace("176.93", "NaN", 1).encode()), "JSON is invalid"),
    }
    slash = dict(bundle, logs={"../../etc/passwd": {"sha256": "0" * 64, "text": ""}})
    dots = dict(bundle, logs={"a..log": {"sha256": "0" * 64, "text": ""}})
    no_gpu = json.loads(json.dumps(bundle))
    no_gpu["conditions"]["gpu"] = "  "
    for name, value, says in (
        ("log name with / and ..", slash, "is a path"),
        ("log name with ..", dots, "a path"),
        ("empty GPU name", no_gpu, "names no GPU"),
    ):
        cases[name] = (bundles.to_bytes(bundles.with_id({k: v for k, v in value.items() if k != "id"})), says)
    for i, (name, (data, says)) in enumerate(cases.items()):
        (tmp_path / ("bad%d.tfcw.json.gz" % i)).write_bytes(data)
        cases[name] = (tmp_path / ("bad%d.tfcw.json.gz" % i), says)
    return cases


@pytest.mark.slow
def test_unreadable_bundles_are_refused_in_one_line_with_exit_2(cli, tmp_path, exported):
    for case, (path, says) in bad_files(tmp_path, load(exported)).items():
        result = cli("verify", path)
        assert result.returncode == 2, (case, result)
        lines = result.stdout.strip().splitlines()
        assert len(lines) == 1 and "unreadable" in lines[0] and says in lines[0], (case, result)
        assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow
def test_a_file_over_64_mib_is_refused_before_it_is_read(cli, tmp_path):
    big = tmp_path / "big.tfcw.json.gz"
    with open(big, "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)  # sparse: reading it would take a while, refusing it does not
    result = cli("verify", big)
    assert result.returncode == 2 and "over the 67108864-byte limit" in result.stdout, result
    small_limit = cli("verify", big, env={"TFCNNWRAP_MAX_BUNDLE_BYTES": "1000"})
    assert "over the 1000-byte limit" in small_limit.stdout


# -- property-based: the reader never fails in any other way -------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.slow  # a property-based search: seconds in process
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_any_bytes_are_a_bundle_or_one_refusal(data):
    try:
        bundles.read_bytes(data, "x")
    except bundles.BundleRefused as exc:
        assert exc.message.startswith("x: ") and "\n" not in exc.message


@pytest.mark.slow  # a property-based search: seconds in process
@settings(max_examples=150, deadline=None)
@given(_json)
def test_any_json_is_a_bundle_or_one_refusal(value):
    try:
        bundles.read_bytes(json_bytes(value), "x")
    except bundles.BundleRefused as exc:
        assert exc.message.startswith("x: ")


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory):
    from bundledata import build

    return build(logged_sweep(tmp_path_factory.mktemp("hyp") / "s", values={"resnet50": 176.93, "vgg16": 110.23}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    index=st.integers(0, 5),
    value=st.floats(1.0, 999999.0).filter(lambda v: abs(v - 176.93) > 1e-6 and abs(v - 110.23) > 1e-6),
)
@pytest.mark.slow  # a property-based search: seconds in process
def test_any_changed_figure_fails_verification(good_bundle, index, value):
    assert verify(good_bundle).state == VERIFIED
    bundle = json.loads(json.dumps(good_bundle))
    bundle["runs"][index]["images_per_sec"] = value
    bundle = bundles.read_bytes(bundles.to_bytes(bundles.with_id({k: v for k, v in bundle.items() if k != "id"})), "x")
    assert verify(bundle).state == FAILED
    bundle = {k: v for k, v in bundle.to_dict().items() if k != "logs"}
    assert verify(bundle).state in (FAILED, UNVERIFIED)


@pytest.mark.parametrize(
    "text",
    [
        log_text("resnet50", 64, 176.93),
        log_text("vgg16", 32, 110.23, num_gpus=2).replace("\n", "\r\n"),
        log_text("alexnet", 512, 2258.94).split("total images/sec")[0]
        + "Traceback (most recent call last):\nResourceExhaustedError: OOM when allocating tensor\n",
        "garbage \xff\n no log at all",
    ],
)
def test_verify_reads_a_log_as_the_sweeps_streaming_parser_does(text):
    from tfcnnwrap.run import logparse
    from tfcnnwrap.share.verify import parse_text

    data = text.encode("utf-8")
    streamed = logparse.LogParser()
    streamed.feed_bytes(data, final=True)
    assert parse_text(text) == streamed.result()
    lines = logparse.parse_lines(data.decode("utf-8").splitlines())
    assert logparse.classify(parse_text(text), None) == logparse.classify(lines, None)


@pytest.mark.slow  # a property-based search: seconds in process
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["conditions", "summary", "run"]), key=st.text(min_size=1, max_size=12), value=_json)
def test_a_bundle_of_any_values_is_verified_or_refused_never_a_crash(good_bundle, where, key, value):
    """Others' bundles may hold anything where a value is expected: verify and the library's index take it."""
    from tfcnnwrap.share.library import index_rows

    bundle = json.loads(json.dumps(good_bundle))
    target = {"conditions": bundle["conditions"], "summary": bundle["summary"][0], "run": bundle["runs"][0]}[where]
    target[key] = value
    try:  # a whole number past 2**53 has no RFC 8785 form: refused when the id is made
        data = bundles.to_bytes(bundles.with_id({k: v for k, v in bundle.items() if k != "id"}))
        read = bundles.read_bytes(data, "x")
    except bundles.BundleRefused:
        return
    verdict = verify(read)
    bundle_row, rows = index_rows(read, verdict.verified)
    assert all(isinstance(v, (str, int, float, type(None))) for v in bundle_row + tuple(x for r in rows for x in r))


def test_a_summary_row_with_unhashable_values_is_read_not_a_crash(good_bundle):
    bundle = json.loads(json.dumps(good_bundle))
    bundle["summary"][0].update(num_gpus=[1, 2], model={"a": 1}, mean="176.93")
    read = bundles.read_bytes(bundles.to_bytes(bundles.with_id({k: v for k, v in bundle.items() if k != "id"})), "x")
    assert verify(read).state == VERIFIED  # the runs are the figures; a summary row of no configuration is no claim
