"""Issue 27, the new paths: Slurm tools that misbehave (stood in by scripts on PATH: no real cluster), the
compare gate, the fleet report, and the minor items, each driven as a user would."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error

POSIX = pytest.mark.skipif(os.name != "posix", reason="stand-in Slurm tools are POSIX shell scripts")

SRUN = """#!/bin/sh
# stand-in srun: drop its options, run the command after "--" (one task, here)
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""


def tool(bin_dir, name, body):
    path = Path(bin_dir) / name
    path.write_bytes(body if body.startswith(b"#!") else b"#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return path


def slurm_tools(tmp_path, squeue=b"exit 0\n", scontrol=b"echo localhost\n"):
    """srun, scontrol, squeue and scancel stand-ins in a directory put first on PATH; ``squeue``/``scontrol``:
    their shell bodies (``None``: that tool is missing)."""
    bin_dir = tmp_path / "slurm-bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "srun").chmod(0o755)
    tool(bin_dir, "scancel", b"exit 0\n")
    if scontrol is not None:
        tool(bin_dir, "scontrol", scontrol)
    if squeue is not None:
        tool(bin_dir, "squeue", squeue)
    return {
        "PATH": "%s%s%s" % (bin_dir, os.pathsep, os.environ.get("PATH", "")),
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NODELIST": "localhost",
        "SLURMD_NODENAME": "localhost",
        "FAKE_TFCNN_IPS": "trivial=50.0",
    }


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


def cluster_sweep(cli, tmp_path, vendor, tf112, env, *more):
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--out",
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--workers",
        "2",
        "--ps",
        "1",
        *more,
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    runs = (
        [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
        if (out / "runs.jsonl").is_file()
        else []
    )
    return result, runs


# -- 6. a cleanup that fails keeps the finished run ----------------------------------------------------------


@pytest.mark.slow
@POSIX
def test_a_slow_squeue_at_cleanup_keeps_the_finished_run(cli, tmp_path, vendor, tf112):
    """squeue answers nothing within the query timeout when the steps are released: a warning, and the run
    recorded from worker 0's log (the timeout's error used to replace the outcome: exit 2, 0 runs kept)."""
    env = slurm_tools(tmp_path, squeue=b"exec /bin/sleep 30\n")
    env["TFCNNWRAP_SLURM_QUERY_TIMEOUT_S"] = "1"
    result, runs = cluster_sweep(cli, tmp_path, vendor, tf112, env)
    assert result.returncode == 0, result
    assert [r["status"] for r in runs] == ["ok"] and runs[0]["images_per_sec"] == 100.0
    assert "warning: could not release" in result.stderr and "did not answer within 1 s" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@POSIX
def test_a_slow_squeue_at_cleanup_is_a_warning(tmp_path, monkeypatch, capsys):
    from tfcnnwrap.sweep import job

    env = slurm_tools(tmp_path, squeue=b"exec /bin/sleep 30\n")
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("TFCNNWRAP_SLURM_QUERY_TIMEOUT_S", "0.5")
    assert job.release_steps_or_warn("42", ["tfcnnwrap-1-1"]) is False
    err = capsys.readouterr().err
    assert "warning" in err and "did not answer within 0.5 s" in err


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1_0", "\u0661", "soon", "4000"])
def test_a_bad_query_timeout_is_refused_before_anything_runs(cli, tmp_path, vendor, tf112, value):
    env = slurm_tools(tmp_path)
    env["TFCNNWRAP_SLURM_QUERY_TIMEOUT_S"] = value
    result, runs = cluster_sweep(cli, tmp_path, vendor, tf112, env)
    assert_clean_error(result, 2, "TFCNNWRAP_SLURM_QUERY_TIMEOUT_S")
    assert runs == []


# -- 7. undecodable bytes from Slurm's tools ------------------------------------------------------------------


@pytest.mark.slow
@POSIX
def test_non_utf8_from_squeue_and_scontrol_is_read_with_replacement(cli, tmp_path, vendor, tf112):
    env = slurm_tools(
        tmp_path,
        squeue=b"printf '42.7|caf\\351-\\377\\376 job of someone else\\n'\n",
        scontrol=b"echo localhost\nprintf 'scontrol: caf\\351 \\377\\n' >&2\n",
    )
    result, runs = cluster_sweep(cli, tmp_path, vendor, tf112, env)
    assert result.returncode == 0, result
    assert [r["status"] for r in runs] == ["ok"] and "Traceback" not in result.stderr


@pytest.mark.slow
def test_slurm_tool_output_is_decoded_with_replacement(tmp_path, monkeypatch):
    from tfcnnwrap.cluster import slurm

    script = tmp_path / "tool"
    script.write_text(
        "#!%s\nimport sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\n')\n"
        "sys.stderr.buffer.write(b'\\xe9')\n" % sys.executable
    )
    script.chmod(0o755)
    done = slurm.run_slurm([str(script)], "tool")
    assert done.stdout == "ok \ufffd\ufffd\n" and done.stderr == "\ufffd"


# -- 12. the fleet report names each column once --------------------------------------------------------------


def fleet_sweep_dir(out):
    (out / "logs").mkdir(parents=True)
    meta = {
        "format": 1,
        "tool": "tfcnnwrap",
        "device": "gpu",
        "plan": {"models": [{"model": "resnet50", "batch_size": 64}], "runs": 2, "cluster": "slurm", "fleet": True},
    }
    (out / "sweep.json").write_text(json.dumps(meta))
    lines = []
    for host, values in {"node1": [200.0, 202.0], "node2": [201.0, 199.0], "node3": [180.0, 181.0]}.items():
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
    return out


def header_cells(text, marker):
    line = next(line for line in text.splitlines() if marker in line)
    return [c.strip() for c in (line.strip("|").split("|") if "|" in line else line.split("  ")) if c.strip()]


@pytest.mark.slow
def test_fleet_report_names_host_and_vs_fleet_once(cli, tmp_path):
    out = fleet_sweep_dir(tmp_path / "fleet")
    table = cli("report", out, env={"COLUMNS": "200"})
    markdown = cli("report", out, "--format", "markdown")
    for text in (table.stdout, markdown.stdout):
        cells = header_cells(text, "mean img/s")
        assert cells.count("host") == 1 and cells.count("vs fleet %") == 1, cells
    header = cli("report", out, "--format", "csv").stdout.splitlines()[0].split(",")
    assert header.count("host") == 1 and header[-3:] == ["host", "vs_fleet_pct", "fleet_flag"]


# -- 15. a % in --out does not reach srun's --output pattern ----------------------------------------------------

FLEET_SRUN = (
    r'''#!%s
"""stand-in srun: runs the command once per task, the way srun does, output to --output's pattern."""
import os, subprocess, sys
args = sys.argv[1:]
cut = args.index("--")
opts, argv = args[:cut], args[cut + 1:]
opt = dict(a[2:].split("=", 1) for a in opts if a.startswith("--") and "=" in a)
ntasks = int(opt.get("ntasks", "1"))
nodes = os.environ.get("FAKE_NODES", "localhost").split()

def expand(pattern, task, node):
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "%%" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append({"%%": "%%", "t": str(task), "N": node, "j": os.environ.get("SLURM_JOB_ID", "0"),
                        "n": str(task), "s": "0"}.get(nxt, "%%" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)

procs = []
for task in range(ntasks):
    node = nodes[task %% len(nodes)]
    env = dict(os.environ, SLURM_PROCID=str(task), SLURMD_NODENAME=node, SLURM_STEP_ID="0")
    sink = None
    if "output" in opt:
        sink = open(expand(opt["output"], task, node), "ab")
    procs.append(subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT if sink else None))
sys.exit(max(p.wait() for p in procs))
'''
    % sys.executable
)


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("odd", ["sweep%j%N", "sweep%%t", "100%"])
def test_a_percent_in_out_keeps_fleet_logs_in_the_sweep(cli, tmp_path, vendor, tf112, odd):
    env = slurm_tools(tmp_path, scontrol=b"echo nodeA\necho nodeB\n")
    (tmp_path / "slurm-bin" / "srun").write_text(FLEET_SRUN)
    env.update(FAKE_NODES="nodeA nodeB", SLURM_JOB_NODELIST="nodeA,nodeB")
    out = tmp_path / odd
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--out",
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--fleet",
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert result.returncode == 0, result
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["host"], r["status"], r["images_per_sec"]) for r in runs) == [
        ("nodeA", "ok", 50.0),
        ("nodeB", "ok", 50.0),
    ]
    assert all((out / r["log"]).is_file() for r in runs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["slurm-bin", "vendor", "pids", odd]) or not list(
        tmp_path.glob("*42*")
    )
    # the sweep's own summary names each column once (12)
    cells = header_cells(result.stdout, "mean img/s")
    assert cells.count("host") == 1 and cells.count("vs fleet %") == 1, result.stdout


@pytest.mark.slow
@POSIX
def test_a_backslash_in_a_fleets_out_is_refused_before_anything_runs(cli, tmp_path, vendor, tf112):
    env = slurm_tools(tmp_path, scontrol=b"echo nodeA\n")
    (tmp_path / "slurm-bin" / "srun").write_text(FLEET_SRUN)
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--out",
        tmp_path / "a\\b",
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--fleet",
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert_clean_error(result, 2, "backslash")
    assert not list(tmp_path.glob("*.log")) and not (tmp_path / "a\\b" / "runs.jsonl").exists()


@pytest.mark.slow
@POSIX
def test_a_slow_squeue_after_a_fleet_run_keeps_every_hosts_record(cli, tmp_path, vendor, tf112):
    env = slurm_tools(tmp_path, squeue=b"exec /bin/sleep 30\n", scontrol=b"echo nodeA\necho nodeB\n")
    (tmp_path / "slurm-bin" / "srun").write_text(FLEET_SRUN)
    env.update(FAKE_NODES="nodeA nodeB", SLURM_JOB_NODELIST="nodeA,nodeB", TFCNNWRAP_SLURM_QUERY_TIMEOUT_S="1")
    out = tmp_path / "sweep"
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "cpu",
        "--out",
        out,
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "10",
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--fleet",
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert result.returncode == 0, result
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["host"], r["status"]) for r in runs) == [("nodeA", "ok"), ("nodeB", "ok")]
    assert "warning: could not release" in result.stderr and "Traceback" not in result.stderr


# -- minor: numbers ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--num-gpus", "\u0661"),
        ("--num-gpus", "1,\u0662"),
        ("--runs", "1_0"),
        ("--num-batches", "\uff11\uff10"),
        ("--timeout", "1_000"),
        ("--cooldown", "\u0665"),
        ("--runs", "-0"),
    ],
)
def test_sweep_numbers_are_ascii_digits_only(cli, tmp_path, flag, value):
    result = cli("sweep", flag, value, "--dry-run", "--out", tmp_path / "s", cwd=tmp_path)
    assert_clean_error(result, 2, flag)
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--fail-on-regression", "-0"),
        ("--fail-on-regression", "-0.0"),
        ("--fail-on-regression", "\u0665"),
        ("--fail-on-regression", "5_0"),
    ],
)
def test_compare_gate_takes_plain_numbers(cli, tmp_path, flag, value):
    assert_clean_error(cli("compare", tmp_path, tmp_path, flag, value, cwd=tmp_path), 2, flag)


@pytest.mark.slow
def test_a_price_too_small_to_mean_anything_is_refused(cli, tmp_path):
    line = assert_clean_error(
        cli("compare", tmp_path, "--rank", "--per", "dollar", "--price", "1e-300", cwd=tmp_path), 2, "--price"
    )
    assert len(line) < 300


def test_bounds_refuse_unicode_digits_underscores_and_negative_zero():
    from tfcnnwrap import bounds

    for bound, text in (
        (bounds.NUM_GPUS, "\u0661"),
        (bounds.RUNS, "1_0"),
        (bounds.PS, "-0"),
        (bounds.FAIL_ON_REGRESSION, "-0"),
        (bounds.FAIL_ON_REGRESSION, "-0e0"),
        (bounds.TIMEOUT, "\u0661\u0660"),
        (bounds.PRICE, "1e-300"),
        (bounds.PRICE, "0.5"),
    ):
        with pytest.raises(bounds.OutOfBounds):
            bound.parse(text)
    assert bounds.PS.parse("0") == 0 and bounds.FAIL_ON_REGRESSION.parse("0") == 0.0
    assert bounds.RUNS.parse(" 10 ") == 10 and bounds.PRICE.parse("499") == 499.0
    assert bounds.NUM_GPUS.parse_list("1, 2") == [1, 2] and bounds.TIMEOUT.parse("+5") == 5.0


# -- 9. a regression gate fails when a candidate has nothing to compare ----------------------------------------


def sweep_dir(out, values, model="trivial", batch=8, status="ok"):
    """A sweep directory as the sweep writes it: ``values`` the totals of its runs (None: a crashed run)."""
    (out / "logs").mkdir(parents=True)
    meta = {
        "format": 1,
        "tool": "tfcnnwrap",
        "device": "gpu",
        "plan": {"models": [{"model": model, "batch_size": batch}], "runs": len(values)},
    }
    (out / "sweep.json").write_text(json.dumps(meta))
    lines = []
    for run, value in enumerate(values, 1):
        rec = {
            "model": model,
            "batch_size": batch,
            "run": run,
            "num_gpus": 1,
            "status": "ok" if value is not None else "crashed",
            "images_per_sec": value,
            "log": "logs/%s-bs%d-run%d.log" % (model, batch, run),
        }
        if value is None:
            rec["failure"] = "Segmentation fault"
        lines.append(json.dumps(rec))
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.slow
def test_gate_fails_when_every_candidate_run_crashed(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 101.0, 99.0])
    cand = sweep_dir(tmp_path / "cand", [None, None, None])
    result = cli("compare", base, cand, "--fail-on-regression", "5", "--format", "json")
    assert result.returncode == 1, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no ok candidate run" in lines[0] and "trivial" in lines[0], result.stderr


@pytest.mark.slow
def test_gate_still_passes_an_unchanged_candidate(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 101.0, 99.0])
    cand = sweep_dir(tmp_path / "cand", [100.5, 99.5, 100.0])
    result = cli("compare", base, cand, "--fail-on-regression", "5", "--format", "json")
    assert result.returncode == 0 and not result.stderr.strip(), result


# -- minor: a dry run without a checkout ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("more", [[], ["--fp16"]])
def test_dry_run_without_a_checkout_says_so_and_exits_2(cli, tmp_path, tf112, more):
    result = cli(
        "sweep",
        "--dry-run",
        "--models",
        "resnet50",
        "--vendor-dir",
        tmp_path / "none",
        "--python",
        tf112,
        "--device",
        "cpu",
        *more,
        cwd=tmp_path,
    )
    line = assert_clean_error(result, 2, "no tf_cnn_benchmarks checkout", "tfcnnwrap setup")
    assert "?" not in line and "tf_cnn_benchmarks.py --model" not in result.stdout


def test_fp16_on_an_unknown_branch_names_the_fix():
    from tfcnnwrap.environment import features
    from tfcnnwrap.errors import UsageError

    with pytest.raises(UsageError) as err:
        features.branch_flags(["fp16"], None)
    assert "branch ?" not in err.value.message and "tfcnnwrap setup" in err.value.message


# -- minor: compare's CSV carries no float noise --------------------------------------------------------------


@pytest.mark.slow
def test_compare_csv_rounds_the_change_once(cli, tmp_path):
    base = sweep_dir(tmp_path / "base", [100.0, 100.0, 100.0])
    cand = sweep_dir(tmp_path / "cand", [90.1, 89.9, 90.0])
    result = cli("compare", base, cand, "--format", "csv")
    assert result.returncode == 0, result
    assert "99999999" not in result.stdout and "00000000" not in result.stdout, result.stdout
    rows = result.stdout.splitlines()
    assert rows[1].split(",")[4] == "-10.0" and rows[2].split(",")[4] == "-10.0"


# -- minor: --plot -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_report_plot_with_no_ok_run_says_there_is_nothing_to_plot(cli, tmp_path):
    pytest.importorskip("matplotlib")
    dead = sweep_dir(tmp_path / "dead", [None, None])
    result = cli("report", dead, "--plot", tmp_path / "x.png")
    assert result.returncode == 0, result
    assert "nothing to plot" in result.stderr and "Warning" not in result.stderr, result.stderr
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_report_plot_of_runs_whose_logs_are_gone_warns_nothing(cli, tmp_path):
    pytest.importorskip("matplotlib")
    ok = sweep_dir(tmp_path / "ok", [100.0, 101.0])
    result = cli("report", ok, "--plot", tmp_path / "x.png")
    assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr
    assert (tmp_path / "x.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(
    "verb, tail",
    [
        (["report"], os.sep),
        (["compare", "--against", "V100"], os.sep),
        (["report"], os.sep + "."),
        (["report"], os.sep + os.sep),
    ],
)
def test_plot_path_with_a_trailing_separator_is_refused(cli, tmp_path, verb, tail):
    ok = sweep_dir(tmp_path / "ok", [100.0, 101.0])
    result = cli(verb[0], ok, *verb[1:], "--plot", str(tmp_path / "a.png") + tail)
    assert_clean_error(result, 2, "--plot", "separator")
    assert not (tmp_path / "a.png").exists()


# -- minor: one OOM hint per model and batch size ----------------------------------------------------------------


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


# -- minor: figures near the float limit -------------------------------------------------------------------------


@pytest.mark.slow
def test_totals_near_the_float_limit_have_a_mean(cli, tmp_path):
    huge = sweep_dir(tmp_path / "huge", [1.7e308, 1.7e308, 1.7e308])
    [row] = cli("report", huge, "--format", "json").rows()
    assert (row["runs_ok"], row["mean"], row["std"], row["median"]) == (3, 1.7e308, 0.0, 1.7e308)
    table = cli("report", huge, env={"COLUMNS": "200"})
    assert table.returncode == 0 and "1.70e+308" in table.stdout and "no ok run" not in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 200
    mixed = sweep_dir(tmp_path / "mixed", [1.7e308, 1.6e308, 1.5e308])
    [row] = cli("report", mixed, "--format", "json").rows()
    assert row["mean"] == pytest.approx(1.6e308) and row["std"] == pytest.approx(1e307)


# -- on screen: the fleet report and a huge figure at 60, 80 and 120 columns -------------------------------------


@pytest.mark.slow
@POSIX
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_fleet_report_and_huge_figures_on_a_terminal(tmp_path, columns):
    from ptyscreen import run_in_pty

    fleet = run_in_pty(["report", fleet_sweep_dir(tmp_path / "fleet")], columns=columns)
    assert fleet.returncode == 0 and fleet.widest() <= columns, fleet
    for line in fleet.lines:  # the header (wrapped when narrow), or a narrow screen's block per row
        assert line.split().count("host") <= 1 and line.split().count("vs") <= 1, fleet
    assert "node3" in fleet.text and "host" in fleet.text, fleet
    huge = run_in_pty(["report", sweep_dir(tmp_path / "huge", [1.7e308, 1.7e308, 1.7e308])], columns=columns)
    assert huge.returncode == 0 and huge.widest() <= columns, huge
    assert "1.70e+308" in huge.text and "999999" not in huge.text, huge
