"""Fleet sweeps: every node of a Slurm allocation runs the single-GPU sweep; `report` compares the hosts."""

import json
from pathlib import Path

import pytest
from conftest import cli_env
from test_sweep_cluster import env_for, in_sbatch, read_runs, sweep_args

from tfcnnwrap.results import fleetreport
from tfcnnwrap.results.records import SummaryRow


def row(host, mean, cv=0.5, model="resnet50"):
    return SummaryRow(model=model, batch_size=64, runs_ok=3, mean=mean, cv_pct=cv, num_gpus=1, host=host)


def test_a_host_more_than_5_percent_below_the_fleet_median_is_flagged():
    rows = fleetreport.with_fleet([row("a", 100.0), row("b", 101.0), row("c", 99.0), row("d", 90.0), row("e", 100.5)])
    by_host = {r.host: r for r in rows}
    assert by_host["a"].vs_fleet_pct == 0.0  # the median of host means is 100.0
    assert by_host["d"].vs_fleet_pct == -10.0 and by_host["d"].fleet_flag.startswith("slow: 10.0%")
    assert [h for h, r in by_host.items() if r.fleet_flag] == ["d"]


def test_a_tight_fleet_flags_a_host_beyond_twice_its_cv():
    rows = fleetreport.with_fleet([row("a", 100.0), row("b", 100.2), row("c", 99.9), row("d", 100.1), row("e", 98.0)])
    by_host = {r.host: r for r in rows}
    # host means' CV is ~0.9%: e is 2% below the median, under 5% but over 2 x CV
    assert by_host["e"].fleet_flag and "CV" in by_host["e"].fleet_flag
    assert not any(r.fleet_flag for h, r in by_host.items() if h != "e")


def test_a_noisy_fleet_within_5_percent_and_2_cv_is_not_flagged():
    rows = fleetreport.with_fleet([row("a", 100.0), row("b", 96.0), row("c", 104.0)])
    assert not any(r.fleet_flag for r in rows)
    assert {r.host: r.vs_fleet_pct for r in rows} == {"a": 0.0, "b": -4.0, "c": 4.0}


def test_configurations_are_compared_separately_and_rows_without_host_are_untouched():
    rows = fleetreport.with_fleet(
        [
            row("a", 100.0),
            row("b", 50.0),
            row("a", 10.0, model="vgg16"),
            row("b", 10.0, model="vgg16"),
            row(None, 7.0, model="alexnet"),
        ]
    )
    assert [(r.model, r.host, r.vs_fleet_pct) for r in rows] == [
        ("resnet50", "a", 33.33),
        ("resnet50", "b", -33.33),
        ("vgg16", "a", 0.0),
        ("vgg16", "b", 0.0),
        ("alexnet", None, None),
    ]
    assert rows[-1].to_dict().get("vs_fleet_pct", "absent") == "absent"


@pytest.mark.slow
def test_report_shows_one_row_per_host_with_vs_fleet(cli, tmp_path):
    """A fleet sweep's records (as the fleet writes them: one per host and run) read by `report`."""
    out = tmp_path / "fleet"
    (out / "logs").mkdir(parents=True)
    meta = {
        "format": 1,
        "tool": "tfcnnwrap",
        "device": "gpu",
        "plan": {"models": [{"model": "resnet50", "batch_size": 64}], "runs": 2, "cluster": "slurm", "fleet": True},
    }
    (out / "sweep.json").write_text(json.dumps(meta))
    figures = {"node1": [200.0, 202.0], "node2": [201.0, 199.0], "node3": [180.0, 181.0]}
    lines = []
    for host, values in figures.items():
        for run, value in enumerate(values, 1):
            lines.append(
                json.dumps(
                    {
                        "model": "resnet50",
                        "batch_size": 64,
                        "run": run,
                        "num_gpus": 1,
                        "status": "ok",
                        "images_per_sec": value,
                        "host": host,
                        "log": "logs/resnet50-bs64-run%d.%s.log" % (run, host),
                    }
                )
            )
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n")
    result = cli("report", out, "--format", "json")
    assert result.returncode == 0, result
    rows = {r["host"]: r for r in result.rows()}
    assert set(rows) == {"node1", "node2", "node3"}
    # host means 201, 200, 180.5: the fleet median is 200
    assert rows["node1"]["vs_fleet_pct"] == 0.5 and rows["node3"]["vs_fleet_pct"] == -9.75
    assert rows["node3"]["fleet_flag"].startswith("slow") and rows["node1"]["fleet_flag"] is None
    table = cli("report", out)
    assert "node3" in table.stdout and "vs fleet" in table.stdout and "fleet" in table.stdout


@pytest.mark.slow
@pytest.mark.slurm
def test_fleet_on_the_one_node_cluster_records_its_host(slurm, tmp_path, vendor, fake_tf):
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")
    out = tmp_path / "sweep"
    done, text = in_sbatch(
        slurm,
        tmp_path,
        1,
        sweep_args(vendor, tf112, out, "--cluster", "slurm", "--fleet", "--runs", "2"),
        env_for(tmp_path),
    )
    assert done.returncode == 0 and "sweep-exit=0" in text, (done.stdout, text)
    assert "step-left=" not in text
    runs = read_runs(out)
    assert [(r["run"], r["host"], r["status"]) for r in runs] == [(1, slurm.node, "ok"), (2, slurm.node, "ok")]
    for r in runs:
        assert r["log"].endswith(".%s.log" % slurm.node) and (out / r["log"]).is_file()
        assert r["images_per_sec"] == 50.0
    import subprocess
    import sys

    report = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", "report", str(out), "--format", "json"],
        env=cli_env(),
        stdout=subprocess.PIPE,
        universal_newlines=True,
    )
    [row] = json.loads(report.stdout)["rows"]
    assert row["host"] == slurm.node and row["vs_fleet_pct"] == 0.0 and row["fleet_flag"] is None
    header = (out / "summary.csv").read_text().splitlines()[0].split(",")
    assert header[-3:] == ["host", "vs_fleet_pct", "fleet_flag"]


@pytest.mark.slow
def test_fleet_task_wrapper_records_the_exit_code_and_exits_0(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfcnnwrap.cli.node",
            "fleet",
            str(tmp_path),
            str(tmp_path),
            "--",
            sys.executable,
            "-c",
            "import sys; print('bench'); sys.exit(3)",
        ],
        env=cli_env({"SLURM_PROCID": "0", "SLURMD_NODENAME": "n7"}),
        stdout=subprocess.PIPE,
        universal_newlines=True,
    )
    assert done.returncode == 0 and done.stdout == "bench\n"
    record = json.loads((tmp_path / "task-0.json").read_text())
    assert record["node"] == "n7" and record["exit_code"] == 3


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--workers", "2"], ["--ps", "1"]])
def test_fleet_takes_no_job_shape(cli, tmp_path, vendor, fake_tf, flags):
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")
    result = cli(*sweep_args(vendor, tf112, tmp_path / "s", "--cluster", "slurm", "--fleet", *flags), cwd=tmp_path)
    assert result.returncode == 2 and "drop --workers/--ps" in result.stderr
    assert not Path(tmp_path / "s").exists()


@pytest.mark.slow
@pytest.mark.slurm
def test_fleet_timeout_cancels_the_step_and_records_timeout(slurm, tmp_path, vendor, fake_tf):
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")
    out = tmp_path / "sweep"
    env = env_for(tmp_path, FAKE_TFCNN_FAULTS="*=hang")
    done, text = in_sbatch(
        slurm, tmp_path, 1, sweep_args(vendor, tf112, out, "--cluster", "slurm", "--fleet", "--timeout", "3"), env
    )
    assert done.returncode == 0 and "sweep-exit=1" in text, (done.stdout, text)
    assert "step-left=" not in text
    [run] = read_runs(out)
    assert (run["status"], run["host"]) == ("timeout", slurm.node)
