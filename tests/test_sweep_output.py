"""What a sweep prints and records, and what it refuses: progress and failure labels of a GPU-count
sweep, the header's counts, the dry run's summary, strict JSON in every file and output, --out and --resume
refusals, and the line that says what to run next."""

import json
from pathlib import Path

import pytest
from conftest import assert_clean_error

pytestmark = pytest.mark.slow


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def sweep(vendor, python, out, *more):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--device", "cpu", "--out", out, *more]


def test_fleet_alone_names_the_cluster_it_works_with(cli, tmp_path, vendor, tf112):
    # --fleet with --cluster local is refused, so the hint must not offer it
    result = cli(*sweep(vendor, tf112, tmp_path / "out", "--fleet", "--dry-run"), cwd=tmp_path)
    line = assert_clean_error(result, 2, "--cluster slurm")
    assert "local" not in line, line


def test_dry_run_summary_has_no_empty_field(cli, tmp_path, vendor, tf112):
    result = cli(
        *sweep(vendor, tf112, tmp_path / "out", "--models", "resnet50", "--runs", "1", "--dry-run"), cwd=tmp_path
    )
    assert result.returncode == 0, result
    summary = [line for line in result.stdout.splitlines() if line.startswith("#")][-1]
    assert "; ;" not in summary and not summary.rstrip().endswith(";"), summary


def test_progress_lines_of_a_gpu_count_sweep_say_which_count(cli, tmp_path, vendor, tf112):
    # with --num-gpus 1,2 two runs of the same model otherwise print the very same label
    out = tmp_path / "out"
    result = cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1", "--num-gpus", "1,2"), cwd=tmp_path)
    assert result.returncode == 0, result
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert len(lines) == 2, result.stdout
    labels = [line.split(":")[0] for line in lines]
    assert labels[0] != labels[1], labels
    assert any("gpus=2" in label for label in labels), labels


def test_failed_runs_of_a_gpu_count_sweep_say_which_count(cli, tmp_path, vendor, tf112):
    out = tmp_path / "out"
    result = cli(
        *sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1", "--num-gpus", "1,2"),
        cwd=tmp_path,
        env={"FAKE_TFCNN_FAULTS": "*=no_total"},
    )
    assert result.returncode == 1, result
    report = cli("report", out, cwd=tmp_path)
    failures = [line for line in report.stdout.splitlines() if "no_result" in line and "run 1" in line]
    assert len(failures) == 2 and failures[0] != failures[1], report.stdout


def test_every_json_output_is_strict_json(cli, tmp_path, vendor, tf112):
    def refuse(constant):
        raise ValueError(constant)

    out = tmp_path / "out"
    cli(
        *sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1", "--num-gpus", "1,2"),
        cwd=tmp_path,
        env={"FAKE_TFCNN_FAULTS": "*=no_total"},
    )
    for line in (out / "runs.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=refuse)
    json.loads((out / "sweep.json").read_text(), parse_constant=refuse)
    for args in (
        ["report", out],
        ["compare", out, "--against", "V100"],
        ["compare", out, out],
        ["parse", out / "logs"],
    ):
        result = cli(*args, "--format", "json", cwd=tmp_path)
        assert result.returncode in (0, 1), result
        json.loads(result.stdout, parse_constant=refuse)
    assert "nan" not in Path(out / "summary.csv").read_text().lower()


def test_header_counts_multiply_to_the_runs_to_do(cli, tmp_path, vendor, tf112):
    # "8 of 8 runs to do (2 models x 2 runs)" left out the GPU counts; "1 models x 1 runs" read badly
    import re

    result = cli(
        *sweep(vendor, tf112, tmp_path / "a", "--models", "resnet50,alexnet", "--runs", "2", "--num-gpus", "1,2"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    match = re.search(r"(\d+) of (\d+) runs to do \(([^)]*)\)", result.stdout)
    assert match, result.stdout
    factors = [int(part.split()[0]) for part in match.group(3).split(" x ")]
    assert match.group(2) == "8" and factors[0] * factors[1] * factors[2] == 8, match.group(0)
    assert "2 GPU counts" in match.group(3), match.group(0)
    one = cli(*sweep(vendor, tf112, tmp_path / "b", "--models", "resnet50", "--runs", "1"), cwd=tmp_path)
    assert "(1 model x 1 run)" in one.stdout, one.stdout


def test_resume_refuses_a_recorded_gpu_count_listed_twice(cli, tmp_path, vendor, tf112):
    # a hand-edited sweep.json with gpu_counts [1, 1] re-ran every run twice (duplicate records)
    out = tmp_path / "out"
    assert (
        cli(
            *sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1", "--num-gpus", "1,2"), cwd=tmp_path
        ).returncode
        == 0
    )
    meta = json.loads((out / "sweep.json").read_text())
    meta["plan"]["gpu_counts"] = [1, 1]
    (out / "sweep.json").write_text(json.dumps(meta))
    before = (out / "runs.jsonl").read_text()
    assert_clean_error(
        cli("sweep", "--resume", out, "--vendor-dir", vendor, "--python", tf112, cwd=tmp_path), 2, "twice"
    )
    assert (out / "runs.jsonl").read_text() == before


@pytest.mark.skipif(not hasattr(__import__("os"), "symlink"), reason="symbolic links")
def test_out_as_a_dangling_link_is_called_a_link(cli, tmp_path, vendor, tf112):
    # it read "dangling is a file, not a directory"; nothing may be made where the link leads
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    result = cli(*sweep(vendor, tf112, link, "--models", "resnet50", "--runs", "1"), cwd=tmp_path)
    line = assert_clean_error(result, 2, "link")
    assert "is a file" not in line, line
    assert not (tmp_path / "nowhere").exists()


def test_a_skipped_run_line_has_no_log_none(cli, tmp_path, vendor, tf112):
    # a run skipped after an OOM has no log; its line read "log: None"
    result = cli(
        *sweep(vendor, tf112, tmp_path / "out", "--models", "resnet50", "--runs", "2"),
        cwd=tmp_path,
        env={"FAKE_TFCNN_FAULTS": "resnet50=oom"},
    )
    assert result.returncode == 1, result
    skipped = [line for line in result.stdout.splitlines() if "SKIPPED" in line]
    assert skipped and "None" not in skipped[0], result.stdout


SMI = Path(__file__).resolve().parent / "fake" / "nvidia-smi"


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
