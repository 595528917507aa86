"""Issue 22.9, small truths: a CPU sweep's title says CPU and no GPU count, cut failure lines end with `…`,
`--per dollar` headers say per what, `setup` and `sweep` end with the command to run next."""

import json
from pathlib import Path

import pytest
from sweepdata import seed_runs, write_sweep

pytestmark = pytest.mark.slow

SMI = Path(__file__).resolve().parent / "fake" / "nvidia-smi"


def _screen_text(result):
    return " ".join(result.stdout.split())


def test_a_cpu_sweeps_title_says_cpu_and_no_gpu(cli, tmp_path):
    path = write_sweep(tmp_path / "cpu", {("resnet50", 64): [4.1, 4.2]}, device="cpu")
    title = cli("report", path, env={"COLUMNS": "200"}).stdout.splitlines()[0]
    assert " · CPU" in title and "GPU" not in title, title
    towers = write_sweep(tmp_path / "towers", {("resnet50", 64): [4.1, 4.2]}, device="cpu", gpu_counts=[1, 2])
    title = cli("report", towers, env={"COLUMNS": "200"}).stdout.splitlines()[0]
    assert "1, 2 towers" in title and "batch per tower" in title and "GPU" not in title, title


def test_a_cut_failure_line_ends_with_an_ellipsis(cli, tmp_path):
    path = write_sweep(tmp_path / "s", {("resnet50", 64): [176.1, "crashed"]})
    runs = path / "runs.jsonl"
    records = [json.loads(x) for x in runs.read_text().splitlines()]
    records[1]["failure"] = "Traceback: " + "x" * 300
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    text = cli("report", path, env={"COLUMNS": "400"}).stdout
    (line,) = [x for x in text.splitlines() if "run 2: crashed" in x]
    assert line.endswith("x…") and line.count("x") == 200 - len("Traceback: ")
    short = write_sweep(tmp_path / "t", {("resnet50", 64): [176.1, "oom"]})
    assert "…" not in cli("report", short, env={"COLUMNS": "400"}).stdout


def test_per_dollar_headers_say_per_dollar(cli, tmp_path):
    path = write_sweep(tmp_path / "s", seed_runs())
    result = cli("compare", path, "--rank", "--per", "dollar", "--price", "500", env={"COLUMNS": "200"})
    assert result.returncode == 0, result
    text = _screen_text(result)
    assert "yours/it per $" in text and "it/yours per $" in text and "img/s yours/it" in text, result


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def test_a_gpu_sweep_ends_with_the_compare_line_for_its_gpu(cli, tmp_path, vendor, tf112):
    out = tmp_path / "s"
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
        "--out",
        out,
        cwd=tmp_path,
        env={"TFCNNWRAP_NVIDIA_SMI": SMI, "COLUMNS": "300", "FAKE_NVSMI_GPUS": "NVIDIA GeForce GTX 1080 Ti"},
    )
    assert result.returncode == 0, result
    last = result.stdout.strip().splitlines()[-1]
    assert last == (
        "next: python -m tfcnnwrap compare %s --against gtx1080ti; python -m tfcnnwrap compare %s --rank" % (out, out)
    ), result
    cpu = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--models",
        "alexnet",
        "--runs",
        "1",
        "--out",
        tmp_path / "c",
        cwd=tmp_path,
    )
    assert cpu.returncode == 0, cpu  # a CPU sweep ends with its own next line (issue 38.1)
    assert cpu.stdout.strip().splitlines()[-1] == (
        "next: python -m tfcnnwrap compare %s --rank --nearest; python -m tfcnnwrap export %s"
        % (tmp_path / "c", tmp_path / "c")
    ), cpu


def test_setup_ends_with_the_next_command(cli, tmp_path, fake_upstream):
    result = cli(
        "setup",
        "--vendor-dir",
        tmp_path / "vendor",
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    assert result.stdout.strip().splitlines()[-1] == (
        "next: python -m tfcnnwrap sweep --quick, then python -m tfcnnwrap sweep"
    )


def test_parse_offers_markdown_and_the_envelope(cli, tmp_path):
    from test_parse_cli import fake_log

    log = fake_log(tmp_path / "logs" / "resnet50.log", "--model=resnet50", "--batch_size=64")
    markdown = cli("parse", log.parent, "--format", "markdown")
    assert markdown.returncode == 0, markdown
    assert markdown.stdout.startswith("### tf_cnn_benchmarks logs") and "| resnet50 |" in markdown.stdout
    data = cli("parse", log.parent, "--format", "json").json()
    assert (data["format"], data["kind"]) == (2, "parse") and data["rows"][0]["model"] == "resnet50"


def test_setup_names_the_vendor_dir_a_plain_sweep_would_miss(cli, tmp_path, fake_upstream):
    elsewhere = tmp_path / "elsewhere"
    result = cli(
        "setup", "--vendor-dir", elsewhere, "--repo-url", fake_upstream.url, "--tf-version", "1.12", cwd=tmp_path
    )
    assert result.returncode == 0, result
    assert result.stdout.strip().splitlines()[-1] == (
        "next: python -m tfcnnwrap sweep --vendor-dir %s --quick, then python -m tfcnnwrap sweep --vendor-dir %s"
        % (elsewhere, elsewhere)
    )
