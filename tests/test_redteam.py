"""Defects a careless or hostile user found (red-team pass over the wave-2 flags), one regression test each."""

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


def test_doctor_never_says_the_seed(cli, tf112, tmp_path):
    # "the seed" is the project's private name for the original write-up; a user does not know it
    result = cli("doctor", "--python", tf112, "--vendor-dir", tmp_path / "vendor", cwd=tmp_path)
    assert result.returncode == 0, result
    assert "seed" not in (result.stdout + result.stderr).lower(), result.stdout


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


@pytest.mark.parametrize("against", ["V100,V100", "V100,Tesla V100"])
def test_against_naming_one_gpu_twice_is_refused(cli, tmp_path, vendor, tf112, against):
    # two identical columns (and a doubled geomean) are never what was meant, like --num-gpus 1,1
    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    result = cli("compare", out, "--against", against, cwd=tmp_path)
    assert_clean_error(result, 2, "--against", "twice")


def test_a_candidate_given_twice_to_compare_is_refused(cli, tmp_path, vendor, tf112):
    # `compare A B ./B` printed B's rows twice (a sweep against itself stays allowed, see test_compare_ab)
    for name in ("a", "b"):
        result = cli(*sweep(vendor, tf112, tmp_path / name, "--models", "resnet50", "--runs", "1"), cwd=tmp_path)
        assert result.returncode == 0, result
    assert_clean_error(cli("compare", "a", "b", "./b", cwd=tmp_path), 2, "twice")
    assert cli("compare", "a", "a", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("huge", [1e308, 1.7e308])
def test_an_absurd_figure_in_runs_jsonl_is_no_internal_error_in_compare(cli, tmp_path, vendor, tf112, huge):
    # a hand-edited or corrupted runs.jsonl: (x - mean) ** 2 overflowed in Welch's test -> exit 3
    from tfcnnwrap.compare.ab import change_interval, welch

    assert welch([huge, 1.0], [1.0, 2.0]) == (None, None)
    assert change_interval([huge, 1.0], [1.0, 2.0]) == (None, None)
    for name in ("a", "b"):
        result = cli(*sweep(vendor, tf112, tmp_path / name, "--models", "resnet50", "--runs", "2"), cwd=tmp_path)
        assert result.returncode == 0, result
    runs = tmp_path / "a" / "runs.jsonl"
    lines = runs.read_text().splitlines()
    both = [json.loads(line) for line in lines[:2]]
    both[0]["images_per_sec"] = huge
    both[1]["images_per_sec"] = huge  # the sum leaves the floats
    runs.write_text("\n".join([json.dumps(r) for r in both] + lines[2:]) + "\n")
    result = cli("compare", "a", "b", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result

    def refuse(constant):
        raise ValueError(constant)

    rows = json.loads(result.stdout, parse_constant=refuse)["rows"]
    assert rows[0]["significant"] is None, rows
    # pandas' overflow warning (a file path and a line of its source) is no message for a user
    report = cli("report", "a", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0 and "Warning" not in result.stderr + report.stderr, report


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--price", "500"], "--per dollar"),
        (["--watts", "175"], "--per watt"),
        (["--per", "dollar", "--price", "500", "--watts", "175"], "--per watt"),
        (["--per", "watt", "--watts", "175", "--price", "500"], "--per dollar"),
    ],
)
def test_rank_refuses_a_price_or_power_it_would_ignore(cli, tmp_path, vendor, tf112, flags, needle):
    # `--rank --price 500` ranked by images/sec and said nothing of the price
    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    assert_clean_error(cli("compare", out, "--rank", *flags, cwd=tmp_path), 2, needle)


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


@pytest.mark.skipif(__import__("os").name != "posix", reason="a POSIX pseudo-terminal")
@pytest.mark.parametrize("verb", ["sweep", "compare", "report", "references", "parse", "doctor", "setup"])
def test_help_splits_no_word_at_60_columns(cli, verb):
    # the description was printed raw: "record eac|h run" at 60 columns; "resnet50,r|esnet152" in --models
    from ptyscreen import run_in_pty

    wide = cli(verb, "--help").stdout
    words = set(wide.split())
    screen = run_in_pty([verb, "--help"], 60)
    assert screen.returncode == 0, screen
    text = screen.text.split("examples:")[0]  # commands to copy stay whole on their lines
    split = [w for w in text.split() if w not in words]
    assert not split, (split, screen)


@pytest.mark.skipif(__import__("os").name != "posix", reason="a POSIX pseudo-terminal")
def test_unranked_gpus_at_60_columns_have_a_title(cli, tmp_path, vendor, tf112):
    # stacked rows are titled by their rank; an unranked GPU's title was an empty line
    from ptyscreen import run_in_pty

    out = tmp_path / "out"
    assert cli(*sweep(vendor, tf112, out, "--models", "resnet50", "--runs", "1"), cwd=tmp_path).returncode == 0
    screen = run_in_pty(["compare", str(out), "--rank", "--per", "dollar", "--price", "500"], 60)
    assert screen.returncode == 0, screen
    assert "Tesla V100" in screen.text and "" not in screen.lines, screen
