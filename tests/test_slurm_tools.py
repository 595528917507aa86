"""Slurm's tools misbehaving, stood in by scripts on PATH (no real cluster, so no `slurm` fixture here):
an squeue that is slow or hangs at cleanup, bytes that are not UTF-8, a bad TFCNNWRAP_SLURM_QUERY_TIMEOUT_S,
and a % or a backslash in a fleet's --out that must not reach srun's --output pattern."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error, pid_alive

pytestmark = pytest.mark.slow


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


@POSIX
def test_a_slow_squeue_at_cleanup_is_a_warning(tmp_path, monkeypatch, capsys):
    from tfcnnwrap.sweep import job

    env = slurm_tools(tmp_path, squeue=b"exec /bin/sleep 30\n")
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("TFCNNWRAP_SLURM_QUERY_TIMEOUT_S", "0.5")
    assert job.release_steps_or_warn("42", ["tfcnnwrap-1-1"]) is False
    err = capsys.readouterr().err
    assert "warning" in err and "did not answer within 0.5 s" in err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1_0", "\u0661", "soon", "4000"])
def test_a_bad_query_timeout_is_refused_before_anything_runs(cli, tmp_path, vendor, tf112, value):
    env = slurm_tools(tmp_path)
    env["TFCNNWRAP_SLURM_QUERY_TIMEOUT_S"] = value
    result, runs = cluster_sweep(cli, tmp_path, vendor, tf112, env)
    assert_clean_error(result, 2, "TFCNNWRAP_SLURM_QUERY_TIMEOUT_S")
    assert runs == []


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


def header_cells(text, marker):
    line = next(line for line in text.splitlines() if marker in line)
    return [c.strip() for c in (line.strip("|").split("|") if "|" in line else line.split("  ")) if c.strip()]


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


def fleet_sweep(cli, tmp_path, vendor, tf112, out, env):
    """One run of the trivial model on every node of the stand-in allocation (`--cluster slurm --fleet`)."""
    args = ["--device", "cpu", "--out", out, "--models", "trivial", "--batch-size", "trivial=8", "--num-batches", "10"]
    return cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        *args,
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--fleet",
        cwd=tmp_path,
        env=env,
        timeout=180,
    )


@POSIX
@pytest.mark.parametrize("odd", ["sweep%j%N", "sweep%%t", "100%"])
def test_a_percent_in_out_keeps_fleet_logs_in_the_sweep(cli, tmp_path, vendor, tf112, odd):
    env = slurm_tools(tmp_path, scontrol=b"echo nodeA\necho nodeB\n")
    (tmp_path / "slurm-bin" / "srun").write_text(FLEET_SRUN)
    env.update(FAKE_NODES="nodeA nodeB", SLURM_JOB_NODELIST="nodeA,nodeB")
    out = tmp_path / odd
    result = fleet_sweep(cli, tmp_path, vendor, tf112, out, env)
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


@POSIX
def test_a_slow_squeue_after_a_fleet_run_keeps_every_hosts_record(cli, tmp_path, vendor, tf112):
    env = slurm_tools(tmp_path, squeue=b"exec /bin/sleep 30\n", scontrol=b"echo nodeA\necho nodeB\n")
    (tmp_path / "slurm-bin" / "srun").write_text(FLEET_SRUN)
    env.update(FAKE_NODES="nodeA nodeB", SLURM_JOB_NODELIST="nodeA,nodeB", TFCNNWRAP_SLURM_QUERY_TIMEOUT_S="1")
    out = tmp_path / "sweep"
    result = fleet_sweep(cli, tmp_path, vendor, tf112, out, env)
    assert result.returncode == 0, result
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["host"], r["status"]) for r in runs) == [("nodeA", "ok"), ("nodeB", "ok")]
    assert "warning: could not release" in result.stderr and "Traceback" not in result.stderr


def gone(pid):
    return not pid_alive(pid, wait_s=10.0)


HANGING_TOOL = """#!{python}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open({pids!r}, "w") as fh:
    fh.write("%d %d" % (os.getpid(), child.pid))
time.sleep(3600)
"""


@POSIX
def test_a_squeue_that_times_out_takes_its_wrappers_children_along(tmp_path, monkeypatch):
    from tfcnnwrap.cluster import slurm
    from tfcnnwrap.errors import SetupError

    pids = tmp_path / "pids"
    tool = tmp_path / "squeue"
    tool.write_text(HANGING_TOOL.format(python=sys.executable, pids=str(pids)))
    tool.chmod(0o755)
    monkeypatch.setattr(slurm, "QUERY_TIMEOUT_S", 2)
    with pytest.raises(SetupError, match="did not answer within 2 s"):
        slurm.run_slurm([tool, "--noheader"], "squeue")
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), "the wrapper's child outlived the squeue timeout"
