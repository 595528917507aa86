"""Issue 38.1: the CPU is a first-class device. A CPU sweep exports (its bundle says `device: cpu` and names the
CPU model where the GPU name goes) and verifies, ranks among CPU results, ends with a `next:` line, and its
titles count towers, not GPUs."""

import gzip
import json
import os

import pytest
from bundledata import logged_sweep

from tfcnnwrap.results.records import SweepMeta

CPU = "Intel(R) Xeon(R) CPU @ 2.20GHz"
CPU_VALUES = {"resnet50": 3.88, "alexnet": 41.2}


def cpu_sweep(path, values=None):
    """A finished CPU sweep with its logs, as `sweep --device cpu` leaves it."""
    path = logged_sweep(path, values=values or CPU_VALUES, gpus=())
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    meta["device"] = "cpu"
    meta["plan"]["device"] = "cpu"
    meta["environment"]["cpu_model"] = CPU
    (path / "sweep.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    for log in (path / "logs").iterdir():
        log.write_text(log.read_text(encoding="utf-8").replace("/gpu:0", "/cpu:0"), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_cpu_sweep_exports_and_its_bundle_names_the_cpu(cli, tmp_path):
    sweep = cpu_sweep(tmp_path / "20261201-101500")
    out = tmp_path / "cpu.tfcw.json.gz"
    result = cli("export", sweep, "--out", out)
    assert result.returncode == 0, result.stderr
    bundle = json.loads(gzip.decompress(out.read_bytes()))
    assert bundle["conditions"]["device"] == "cpu"
    assert bundle["conditions"]["gpu"] == CPU
    assert CPU in result.stderr
    verified = cli("verify", out)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verified" in verified.stdout


@pytest.mark.slow
def test_a_sweep_with_neither_gpu_nor_cpu_name_is_still_refused(cli, tmp_path):
    sweep = cpu_sweep(tmp_path / "s")
    meta = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    del meta["environment"]["cpu_model"]
    (sweep / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    result = cli("export", sweep, "--out", tmp_path / "x.tfcw.json.gz")
    assert result.returncode == 2 and "records no CPU model" in result.stderr, result.stderr


def test_the_next_line_of_a_cpu_sweep(tmp_path):
    from tfcnnwrap.present.report import next_compare

    sweep = cpu_sweep(tmp_path / "20261201-101500")
    meta = SweepMeta.from_dict(json.loads((sweep / "sweep.json").read_text(encoding="utf-8")))
    line = next_compare(sweep, meta)
    assert line is not None and "--rank --nearest" in line and "export" in line


@pytest.mark.slow
def test_the_readme_runs_the_smoke_sweep_setup_suggests():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    # setup's last line: "next: python -m tfcnnwrap sweep --quick, then python -m tfcnnwrap sweep" (the docs spell
    # the console script, the same program)
    assert "tfcnnwrap setup && tfcnnwrap sweep --quick\n" in quick_start
    assert "--device cpu --quick" not in quick_start
    # a duration says what it depends on, not "about 5 minutes" that was 10 1/2 on a loaded machine
    assert "about 5 minutes" not in quick_start and "depends on the CPU's cores and on what else" in quick_start


def _one_line(screen):
    return " ".join(screen.text.split())


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("values, ranked", [({"mobilenet": 3.9}, 1), ({"googlenet": 3.9}, 2)])
def test_few_ranked_suggests_nearest(tmp_path, columns, values, ranked):
    from ptyscreen import run_in_pty

    sweep = cpu_sweep(tmp_path / "20261201-101500", values)
    screen = run_in_pty(["compare", sweep, "--rank"], columns=columns)
    assert screen.returncode == 0 and screen.widest() <= columns, screen
    text = _one_line(screen)
    command = "python -m tfcnnwrap compare %s --rank --nearest" % sweep
    assert "".join(command.split()) in "".join(text.split()), screen  # a long path may fold anywhere
    nearest = run_in_pty(["compare", sweep, "--rank", "--nearest"], columns=columns)
    assert nearest.returncode == 0 and "--rank --nearest" not in _one_line(nearest), nearest


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_a_cpu_sweep_counts_towers_not_gpus(tmp_path, columns):
    from ptyscreen import run_in_pty

    sweep = cpu_sweep(tmp_path / "20261201-101500")
    for args in (["--against", "2070"], ["--rank"]):
        screen = run_in_pty(["compare", sweep, *args], columns=columns)
        assert screen.returncode == 0 and screen.widest() <= columns, screen
        text = _one_line(screen)
        assert "fp32 · 1 tower ·" in text and "1 GPU" not in text, screen


@pytest.mark.slow
def test_cpu_results_rank_among_cpu_results(cli, tmp_path):
    from bundledata import logged_sweep as gpu_sweep

    data = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    shared = cpu_sweep(tmp_path / "shared", {"resnet50": 4.2, "alexnet": 40.0})
    bundle = tmp_path / "shared.tfcw.json.gz"
    assert cli("export", shared, "--out", bundle).returncode == 0
    imported = cli("import", bundle, env=data)
    assert imported.returncode == 0, imported.stderr
    community = CPU + " community (1 sweep)"

    def ranked(sweep):
        result = cli("compare", sweep, "--rank", "--format", "json", env=data)
        assert result.returncode == 0, result.stderr
        return [row["gpu"] for row in json.loads(result.stdout)["rows"] if row["rank"] is not None]

    mine = ranked(cpu_sweep(tmp_path / "mine"))
    assert community in mine
    assert community not in ranked(gpu_sweep(tmp_path / "gpu"))
    only = cli(
        "compare", cpu_sweep(tmp_path / "again"), "--rank", "--source", "community", "--format", "json", env=data
    )
    assert only.returncode == 0, only.stderr
    assert {row["gpu"] for row in json.loads(only.stdout)["rows"]} == {community, "CPU"}


@pytest.mark.slow
def test_list_counts_towers_on_the_cpu(cli, tmp_path):
    cpu_sweep(tmp_path / "results" / "20261201-101500")
    table = cli("list", tmp_path / "results", env={"COLUMNS": "200"})
    assert "1 tower" in table.stdout and "1 GPU" not in table.stdout, table.stdout
