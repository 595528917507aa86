"""`--cluster slurm` and `--fleet` across several Slurm nodes: the cluster of `.ci/slurm-multi-up DIR` (every node
a network + UTS namespace of this machine, with its own hostname, address, port space and slurmd), driven as a
user does, through `sbatch`. A node dies by `kill -9` of every process in its namespace; a node stops answering
when its link goes down. Every wait on Slurm has a deadline and polls `squeue` with back-off (never
`sbatch --wait`, which backs off to 15 s and more).

Runs when TFCNNWRAP_SLURM_MULTI=1 and TFCNNWRAP_SLURM_MULTI_DIR names the cluster's DIR (.ci/run sets both);
otherwise skips, saying how to bring the cluster up."""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT, cli_env, pid_alive, run_cli

from tfcnnwrap.cluster import layout, nodewatch
from tfcnnwrap.run import telemetry

# Under pytest-xdist (-n 2, --dist loadfile in pyproject) every test of this file runs on one worker, one after
# another: they share the clusters' nodes, and some kill a node or cut its link.

MULTI_NOT_UP = (
    "the multi-node Slurm cluster is not up: as root run `.ci/slurm-multi-up DIR` (3 nodes), then export "
    "TFCNNWRAP_SLURM_MULTI=1 TFCNNWRAP_SLURM_MULTI_DIR=DIR (.ci/run does all this)"
)
FLAGS = ["--device", "cpu", "--models", "trivial", "--batch-size", "trivial=8", "--num-batches", "10"]
TOTAL = re.compile(r"^total images/sec:\s*(\S+)\s*$", re.MULTILINE)


class Multi:
    """The running cluster: its DIR, config, nodes and their namespaces and links (DIR/cluster.env)."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.conf = str(self.dir / "slurm.conf")
        values = dict(re.findall(r"^(\w+)='([^']*)'$", (self.dir / "cluster.env").read_text(), re.MULTILINE))
        self.nodes = values["TFCNNWRAP_SLURM_MULTI_NODES"].split()
        self.netns = dict(zip(self.nodes, values["TFCNNWRAP_SLURM_MULTI_NETNS"].split()))
        self.links = dict(zip(self.nodes, values["TFCNNWRAP_SLURM_MULTI_LINKS"].split()))
        self.env = {"SLURM_CONF": self.conf}

    def slurm(self, *argv, timeout=30):
        return subprocess.run(
            [str(a) for a in argv],
            env=dict(os.environ, SLURM_CONF=self.conf),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=timeout,
        )

    def ns_pids(self, node):
        done = subprocess.run(
            ["ip", "netns", "pids", self.netns[node]], stdout=subprocess.PIPE, universal_newlines=True, timeout=30
        )
        return [int(p) for p in done.stdout.split()]

    def kill_node(self, node):
        """The node dies: every process in its namespace (slurmd, slurmstepd, tasks) gets SIGKILL."""
        subprocess.run(["kill", "-KILL", *map(str, self.ns_pids(node))], timeout=30)

    def heal(self, deadline_s=90.0):
        """Restart whatever died (the bring-up is idempotent), cancel any job an earlier test left (one that
        failed before its job ended), and wait until every node is idle: a job of the next test then gets every
        node at once, as a node Slurm still holds down or busy would leave it pending."""
        deadline = time.monotonic() + deadline_s
        done = subprocess.run(
            [str(REPO_ROOT / ".ci" / "slurm-multi-up"), str(self.dir), str(len(self.nodes))],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stdout
        left = self.slurm("squeue", "--noheader", "--format=%i").stdout.split()
        if left:
            self.slurm("scancel", *left)
        self.wait_idle(deadline)

    def wait_idle(self, deadline):
        """Until ``sinfo`` shows every node idle (back-off 0.1 s to 1 s), by ``deadline`` (time.monotonic)."""
        pause = 0.1
        while True:
            shown = self.slurm("sinfo", "--noheader", "--Node", "--format=%N %T")
            states = dict(line.split(None, 1) for line in shown.stdout.splitlines() if line.strip())
            if shown.returncode == 0 and all(states.get(n, "").strip() == "idle" for n in self.nodes):
                return
            assert time.monotonic() < deadline, "the nodes are not all idle: %s %s" % (states, shown.stderr)
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def job_processes(self, job_id, wait_s=30.0):
        """(node, pid, command) of every process in any node that belongs to Slurm job ``job_id`` and is still
        there after up to ``wait_s`` (each waited for on a pidfd: a process Slurm has just signalled)."""
        found = []
        for node in self.nodes:
            for pid in self.ns_pids(node):
                try:
                    environ = Path("/proc/%d/environ" % pid).read_bytes().split(b"\0")
                    cmd = Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if ("SLURM_JOB_ID=%s" % job_id).encode() in environ and pid_alive(pid, wait_s=wait_s):
                    found.append((node, pid, cmd))
        return found


@pytest.fixture(scope="module")
def three_nodes():
    if os.environ.get("TFCNNWRAP_SLURM_MULTI") != "1":
        pytest.skip(MULTI_NOT_UP)
    directory = os.environ.get("TFCNNWRAP_SLURM_MULTI_DIR", "")
    if not (Path(directory) / "cluster.env").is_file():
        pytest.fail(
            "TFCNNWRAP_SLURM_MULTI=1 but TFCNNWRAP_SLURM_MULTI_DIR (%r) holds no cluster; %s"
            % (directory, MULTI_NOT_UP)
        )
    return Multi(directory)


@pytest.fixture
def multi(three_nodes):
    """The three-node cluster, whole and idle when each test starts, whatever the test before it did: a test
    that kills a node and fails before it has healed it (or leaves its job behind) no longer fails the next."""
    three_nodes.heal()
    return three_nodes


def submit(multi, tmp_path, name, argv_lines, sbatch=(), env=None, exec_last=False):
    """``sbatch`` a script running each argv of ``argv_lines`` (``python -m tfcnnwrap ...``) in turn, each
    followed by ``echo step<i>-exit=$?``; returns (job id, output file). ``exec_last``: the script becomes the
    last one (``exec``), so that the job's exit code is tfcnnwrap's, and Slurm waits for it when it ends a job."""
    script = tmp_path / ("%s.sbatch" % name)
    output = tmp_path / ("%s.out" % name)
    lines = ["#!/bin/sh", "cd %s" % shlex.quote(str(tmp_path))]
    for i, argv in enumerate(argv_lines):
        command = "%s -m tfcnnwrap %s" % (shlex.quote(sys.executable), " ".join(shlex.quote(str(a)) for a in argv))
        if exec_last and i == len(argv_lines) - 1:
            lines.append("exec " + command)
        else:
            lines += [command, "echo step%d-exit=$?" % i]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        ["sbatch", "--parsable", "--time=5", "--job-name=tfcw-%s" % name, "--output=%s" % output, *sbatch, str(script)],
        cwd=str(tmp_path),
        env=cli_env(dict(env or {}, **multi.env)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout
    return done.stdout.strip().split(";")[0], output


def wait_job(multi, job_id, deadline_s=180):
    """Until ``squeue`` no longer lists the job (back-off 0.1 s to 2 s, within ``deadline_s``); its end state."""
    deadline = time.monotonic() + deadline_s
    pause = 0.1
    while True:
        listed = multi.slurm("squeue", "--noheader", "--jobs=%s" % job_id, "--format=%T")
        if (listed.returncode == 0 and not listed.stdout.strip()) or "Invalid job id" in listed.stderr:
            break  # ended (or ended so long ago that slurmctld has forgotten it: MinJobAge)
        if time.monotonic() > deadline:
            multi.slurm("scancel", job_id)
            pytest.fail("job %s still listed after %d s: %s" % (job_id, deadline_s, listed.stdout))
        time.sleep(pause)
        pause = min(pause * 2, 2.0)
    shown = multi.slurm("scontrol", "show", "job", job_id).stdout
    match = re.search(r"JobState=(\S+)", shown)
    return match.group(1) if match else "GONE"


def exit_code(multi, job_id):
    """The job's ``ExitCode=N:S`` as scontrol shows it (its batch script's exit code and signal)."""
    match = re.search(r"\bExitCode=(\d+:\d+)", multi.slurm("scontrol", "show", "job", job_id).stdout)
    return match.group(1) if match else None


def run_job(multi, tmp_path, name, argv_lines, sbatch=(), env=None, deadline_s=180):
    job_id, output = submit(multi, tmp_path, name, argv_lines, sbatch, env)
    state = wait_job(multi, job_id, deadline_s)
    return job_id, state, output.read_text(encoding="utf-8") if output.exists() else ""


def sweep_argv(vendor, python, out, *more, runs=1):
    return ["sweep", "--vendor-dir", vendor, "--python", python, "--out", out, *FLAGS, "--runs", str(runs), *more]


def read_runs(out):
    return [json.loads(line) for line in (Path(out) / "runs.jsonl").read_text().splitlines() if line.strip()]


def stand_in_env(tmp_path, **extra):
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    return dict({"FAKE_TFCNN_IPS": "trivial=50.0", "FAKE_TFCNN_PID_DIR": str(pids)}, **extra)


def stand_in_fifo_env(tmp_path, step_delay):
    """The stand-in's environment with a FIFO its tasks announce themselves on, each step ``step_delay`` s."""
    fifo = tmp_path / "tasks.fifo"
    os.mkfifo(str(fifo))
    return fifo, stand_in_env(tmp_path, FAKE_TFCNN_TASKS_FIFO=str(fifo), FAKE_TFCNN_STEP_DELAY=str(step_delay))


def task_pids(tmp_path):
    return [int(p.read_text()) for p in (tmp_path / "pids").glob("*.pid")]


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


@pytest.fixture
def master_vendor(tmp_path):
    """The stand-in script in a vendor dir on master (collective_all_reduce needs cnn_tf_v1.9 or newer)."""
    from conftest import make_vendor

    return make_vendor(tmp_path / "vendor-master", branch="master", tf_version="2.21.0")


# -- pure parts (no cluster) ---------------------------------------------------------------------------------


def test_each_task_gets_a_node_of_its_own_when_there_are_enough():
    plan = layout.build_plan("parameter_server", workers=2, ps=1, hosts=["n1", "n2", "n3"], base_port=4000)
    assert [(t.name, t.host, t.port) for t in plan.tasks] == [
        ("ps0", "n1", 4000),
        ("worker0", "n2", 4000),
        ("worker1", "n3", 4000),
    ]
    dar = layout.build_plan("distributed_all_reduce", workers=2, hosts=["n1", "n2", "n3"])
    assert [t.host for t in dar.tasks] == ["n1", "n2", "n3"]


def test_srun_node_failure_is_read_from_the_end_of_a_tasks_log(tmp_path):
    log = tmp_path / "run.worker1.log"
    log.write_bytes(b"x" * 200000 + b"\nsrun: error: Node failure on n3\n")
    assert nodewatch.node_failure_in(log) == "n3"
    log.write_bytes(b"total images/sec: 3.0\n")
    assert nodewatch.node_failure_in(log) is None and nodewatch.node_failure_in(tmp_path / "none") is None


def test_a_port_nothing_listens_on_is_refused_and_a_listening_one_answers():
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    assert nodewatch.answers("127.0.0.1", port) is None
    server.close()
    assert nodewatch.answers("127.0.0.1", port) == "refused"


# -- 1. a ps/worker job across nodes --------------------------------------------------------------------------


def check_across_nodes(out, nodes, roles):
    [run] = read_runs(out)
    assert run["status"] == "ok", run
    tasks = run["cluster"]["tasks"]
    assert [(t["role"], t["index"]) for t in tasks] == roles
    assert [t["host"] for t in tasks] == list(nodes[: len(tasks)])  # one node each, by the nodes' own names
    [plan_file] = (out / "cluster").glob("*.plan.json")
    planned = json.loads(plan_file.read_text())["tasks"]
    assert [(t["host"], t["port"]) for t in planned] == [(t["host"], t["port"]) for t in tasks]
    reporter = next(t for t in tasks if t["reports"])
    log = (out / reporter["log"]).read_text()
    assert run["images_per_sec"] == float(TOTAL.search(log).group(1)) and run["log"] == reporter["log"]
    for t in tasks:
        assert (out / t["log"]).is_file() and t["log"].startswith("logs/")
    return run


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.parametrize(
    "mode, more, roles",
    [
        ("parameter_server", ["--workers", "2", "--ps", "1"], [("ps", 0), ("worker", 0), ("worker", 1)]),
        ("distributed_replicated", ["--workers", "2", "--ps", "1"], [("ps", 0), ("worker", 0), ("worker", 1)]),
        ("collective_all_reduce", ["--workers", "3"], [("worker", 0), ("worker", 1), ("worker", 2)]),
    ],
)
def test_a_job_puts_its_tasks_on_different_nodes(multi, tmp_path, master_vendor, tf112, mode, more, roles):
    out = tmp_path / "sweep"
    argv = sweep_argv(master_vendor, tf112, out, "--cluster", "slurm", "--variable-update", mode, *more)
    env = stand_in_env(tmp_path, FAKE_TFCNN_FLAGS_OUT=str(tmp_path / "flags.jsonl"))
    job_id, state, text = run_job(multi, tmp_path, mode, [argv], ["-N", "3"], env)
    assert state == "COMPLETED" and "step0-exit=0" in text, text
    run = check_across_nodes(out, multi.nodes, roles)
    # what reached each benchmark: the cluster spec by the nodes' names
    seen = [json.loads(line) for line in (tmp_path / "flags.jsonl").read_text().splitlines()]
    workers = ",".join("%s:%d" % (t["host"], t["port"]) for t in run["cluster"]["tasks"] if t["role"] == "worker")
    assert len(seen) == len(roles) and {f["worker_hosts"] for f in seen} == {workers}
    assert run["images_per_sec"] == 50.0 * (len(roles) - (1 if "--ps" in more else 0))
    assert not [p for p in task_pids(tmp_path) if pid_alive(p, wait_s=5)]
    assert multi.job_processes(job_id) == []


# -- 5. two jobs at once on the same nodes --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.slurm
def test_two_jobs_at_once_on_the_same_nodes_use_ports_that_do_not_collide(multi, tmp_path, tf112, vendor):
    jobs = []
    for name in ("a", "b"):
        where = tmp_path / name
        where.mkdir()
        argv = sweep_argv(vendor, tf112, where / "sweep", "--cluster", "slurm", "--workers", "2", "--ps", "1")
        env = stand_in_env(where, FAKE_TFCNN_STEP_DELAY="1")  # long enough for the two jobs to overlap
        jobs.append((where,) + submit(multi, where, name, [argv], ["-N", "3"], env))
    for _where, job_id, output in jobs:
        assert wait_job(multi, job_id) == "COMPLETED"
        assert "step0-exit=0" in output.read_text(), output.read_text()
    runs = [read_runs(where / "sweep")[0] for where, _, _ in jobs]
    assert [r["status"] for r in runs] == ["ok", "ok"]
    a, b = ({(t["host"], t["port"]) for t in r["cluster"]["tasks"]} for r in runs)
    assert a.isdisjoint(b) and len(a) == len(b) == 3
    assert {h for h, _ in a} == {h for h, _ in b} == set(multi.nodes)  # the same three nodes


# -- 2. a fleet over several hosts ----------------------------------------------------------------------------


def fleet_report(out, expected_hosts):
    records = read_runs(out)
    assert sorted(r["host"] for r in records) == sorted(expected_hosts) and all(r["status"] == "ok" for r in records)
    report = run_cli("report", out, "--format", "json")
    assert report.returncode == 0, report
    return {row["host"]: row for row in report.rows()}


def report_seconds(out, capsys):
    """The report's own work on ``out``, in this process: the interpreter's start and the pandas import, which
    every `report` pays whatever the sweep (~2 s on a loaded 2-core machine), are measured apart."""
    import pandas  # noqa: F401 - imported before the clock starts, on purpose

    from tfcnnwrap import cli

    capsys.readouterr()
    started = time.perf_counter()
    code = cli.main(["report", str(out), "--format", "json"])
    took = time.perf_counter() - started
    assert code == 0 and len(json.loads(capsys.readouterr().out)["rows"]) == 10
    return took


@pytest.mark.slow
@pytest.mark.slurm
def test_a_fleet_over_three_nodes_flags_exactly_the_slow_one(multi, tmp_path, tf112, vendor):
    out = tmp_path / "fleet"
    slow = multi.nodes[1]
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--fleet")
    _, state, text = run_job(
        multi, tmp_path, "fleet", [argv], ["-N", "3"], stand_in_env(tmp_path, FAKE_TFCNN_HOST_FACTOR="%s=0.8" % slow)
    )
    assert state == "COMPLETED" and "step0-exit=0" in text, text
    rows = fleet_report(out, multi.nodes)
    assert {h: r["mean"] for h, r in rows.items()} == {n: (40.0 if n == slow else 50.0) for n in multi.nodes}
    assert rows[slow]["vs_fleet_pct"] == -20.0
    assert [h for h, r in rows.items() if r["fleet_flag"]] == [slow]


@pytest.fixture(scope="module")
def ten_nodes(three_nodes, tmp_path_factory):
    """A second cluster of 10 nodes beside the first (its own DIR, tag, subnet and ports): the 10-host fleet and
    the real-TensorFlow job run there."""
    directory = tmp_path_factory.mktemp("slurm-ten")
    up = subprocess.run(
        [str(REPO_ROOT / ".ci" / "slurm-multi-up"), str(directory), "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=120,
    )
    try:
        assert up.returncode == 0, up.stdout
        print(up.stdout.splitlines()[0])
        yield Multi(directory)
    finally:
        subprocess.run([str(REPO_ROOT / ".ci" / "slurm-multi-down"), str(directory)], timeout=120)


@pytest.mark.slow
@pytest.mark.slurm
def test_a_ten_node_fleet_records_ten_hosts_and_reports_fast(ten_nodes, tmp_path, tf112, vendor, capsys):
    out = tmp_path / "fleet"
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--fleet")
    _, state, text = run_job(ten_nodes, tmp_path, "fleet10", [argv], ["-N", "10"], stand_in_env(tmp_path))
    assert state == "COMPLETED" and "step0-exit=0" in text, text
    rows = fleet_report(out, ten_nodes.nodes)
    assert len(rows) == 10 and not any(r["fleet_flag"] for r in rows.values())
    took = report_seconds(out, capsys)
    assert took < 1.0, "report of a 10-host fleet took %.2f s" % took


# -- 3. a node dies in the middle of a job --------------------------------------------------------------------


def kill_when_running(multi, fifo, task, deadline_s=90, on=None):
    """Block (within ``deadline_s``) until ``task`` (on node ``on``, when given) says, through the stand-in's
    FIFO, that it runs; then kill its whole node. Returns the node."""
    import select

    fd = os.open(str(fifo), os.O_RDWR | os.O_NONBLOCK)  # our own writer end too: no end-of-file between tasks
    deadline = time.monotonic() + deadline_s
    seen = b""
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "no %s running within %d s (saw %r)" % (task, deadline_s, seen)
            if select.select([fd], [], [], left)[0]:
                seen += os.read(fd, 4096)
            for line in seen.decode().splitlines():
                name, host, _pid = line.split()
                if name == task and on in (None, host):
                    multi.kill_node(host)
                    return host
    finally:
        os.close(fd)


def resume_on_healed_nodes(multi, tmp_path, name, out, tf112, vendor):
    """``--resume --retry-failed`` in a new allocation on healed nodes, which must finish the sweep."""
    multi.heal()
    _, state, text = run_job(
        multi,
        tmp_path,
        name,
        [["sweep", "--vendor-dir", vendor, "--python", tf112, "--resume", out, "--retry-failed"]],
        ["-N", "3"],
        stand_in_env(tmp_path),
    )
    assert state == "COMPLETED" and "step0-exit=0" in text, text


def resume_and_report(multi, tmp_path, out, tf112, vendor, runs):
    """``--resume --retry-failed`` in a new allocation on healed nodes finishes the sweep; report covers it."""
    resume_on_healed_nodes(multi, tmp_path, "resume", out, tf112, vendor)
    latest = {}
    for record in read_runs(out):
        latest[record["run"]] = record["status"]
    assert latest == {n: "ok" for n in range(1, runs + 1)}
    report = run_cli("report", out, "--format", "json")
    assert report.returncode == 0, report
    assert (report.rows()[0]["runs_ok"], report.rows()[0]["runs_failed"]) == (runs, 0)


@pytest.mark.slow
@pytest.mark.slurm
def test_a_node_dying_in_a_no_kill_job_fails_that_run_and_the_sweep_goes_on(multi, tmp_path, tf112, vendor):
    out = tmp_path / "sweep"
    # Worker 0 takes ~6 s and prints its total after worker 1's node has died, before Slurm has noticed.
    fifo, env = stand_in_fifo_env(tmp_path, step_delay=12)
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1", runs=2)
    job_id, output = submit(multi, tmp_path, "nokill", [argv], ["-N", "3", "--no-kill"], env)
    dead = kill_when_running(multi, fifo, "worker1")
    assert wait_job(multi, job_id) == "COMPLETED"
    text = output.read_text()
    assert "step0-exit=1" in text, text
    first, second = read_runs(out)
    assert first["status"] == "crashed" and first["images_per_sec"] is None, first
    assert first["failure"].startswith("node_failure: %s" % dead), first["failure"]
    assert [t["lost"] is not None for t in first["cluster"]["tasks"]] == [False, False, True]
    # the sweep went on, on the nodes the job still holds
    assert second["status"] == "ok" and dead not in {t["host"] for t in second["cluster"]["tasks"]}, second
    assert multi.job_processes(job_id) == []
    assert not [p for p in task_pids(tmp_path) if pid_alive(p, wait_s=5)]
    resume_and_report(multi, tmp_path, out, tf112, vendor, 2)


@pytest.mark.slow
@pytest.mark.slurm
def test_a_node_dying_under_slurms_default_ends_the_allocation_and_the_run_is_interrupted(
    multi, tmp_path, tf112, vendor
):
    out = tmp_path / "sweep"
    fifo, env = stand_in_fifo_env(tmp_path, step_delay=60)
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1", runs=2)
    job_id, output = submit(multi, tmp_path, "default", [argv], ["-N", "3"], env, exec_last=True)
    kill_when_running(multi, fifo, "worker1")
    assert wait_job(multi, job_id) == "NODE_FAIL"
    [run] = read_runs(out)
    assert run["status"] == "interrupted", run
    assert exit_code(multi, job_id) == "130:0", output.read_text()  # as on Ctrl-C
    assert multi.job_processes(job_id) == []
    assert not [p for p in task_pids(tmp_path) if pid_alive(p, wait_s=5)]
    resume_and_report(multi, tmp_path, out, tf112, vendor, 2)


@pytest.mark.slow
@pytest.mark.slurm
def test_a_fleet_losing_a_node_fails_that_hosts_record_and_the_sweep_goes_on(multi, tmp_path, tf112, vendor):
    out = tmp_path / "fleet"
    # Each host's run takes ~25 s after it says it runs: the node dies in the middle of it, and the other hosts
    # still run when Slurm notices (~16 s): they finish and keep their figures.
    fifo, env = stand_in_fifo_env(tmp_path, step_delay=12)
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--fleet", runs=2)
    job_id, output = submit(multi, tmp_path, "fleetdies", [argv], ["-N", "3", "--no-kill"], env)
    dead = kill_when_running(multi, fifo, "run", on=multi.nodes[1])
    assert wait_job(multi, job_id) == "COMPLETED"
    text = output.read_text()
    records = read_runs(out)
    first = {r["host"]: r for r in records if r["run"] == 1}
    assert sorted(first) == sorted(multi.nodes), text
    assert first[dead]["status"] != "ok" and dead in (first[dead]["failure"] or ""), first[dead]
    assert "node_failure" in first[dead]["failure"], first[dead]
    alive = [n for n in multi.nodes if n != dead]
    assert all(first[n]["status"] == "ok" for n in alive), first
    # the sweep went on, on the nodes the job still holds
    second = {r["host"]: r for r in records if r["run"] == 2}
    assert sorted(second) == sorted(alive) and all(r["status"] == "ok" for r in second.values()), text
    assert "step0-exit=" in text, text
    assert multi.job_processes(job_id) == []
    resume_on_healed_nodes(multi, tmp_path, "fleetresume", out, tf112, vendor)
    latest = {}
    for record in read_runs(out):
        latest[record["host"], record["run"]] = record["status"]
    # run 1 again on every node; run 2 stays as it ran, on the two nodes the job held then
    owed = {(n, run): "ok" for n in multi.nodes for run in (1, 2) if run == 1 or n in alive}
    assert latest == owed, latest
    report = run_cli("report", out, "--format", "json")
    assert report.returncode == 0, report
    rows = {row["host"]: (row["runs_ok"], row["runs_failed"]) for row in report.rows()}
    assert rows == {n: (1 if n == dead else 2, 0) for n in multi.nodes}, rows


# -- 4. a node that stops answering ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.slurm
def test_a_node_that_stops_answering_fails_the_run_naming_it_and_leaves_nothing(multi, tmp_path, tf112, vendor):
    out = tmp_path / "sweep"
    fifo, env = stand_in_fifo_env(tmp_path, step_delay=60)
    argv = sweep_argv(vendor, tf112, out, "--cluster", "slurm", "--workers", "2", "--ps", "1", "--timeout", "60")
    job_id, output = submit(multi, tmp_path, "link", [argv], ["-N", "3", "--no-kill"], env)
    silent = multi.nodes[2]
    link = multi.links[silent]
    original = multi.kill_node
    multi.kill_node = lambda node: subprocess.run(["ip", "link", "set", link, "down"], check=True, timeout=30)
    try:
        assert kill_when_running(multi, fifo, "worker1") == silent
    finally:
        multi.kill_node = original
    try:
        assert wait_job(multi, job_id) == "COMPLETED"
    finally:
        subprocess.run(["ip", "link", "set", link, "up"], check=True, timeout=30)
    [run] = read_runs(out)
    assert run["status"] in ("crashed", "timeout") and silent in run["failure"], run
    assert "node_failure" in run["failure"] or "timeout" in run["failure"]
    multi.heal()
    assert not [p for p in task_pids(tmp_path) if pid_alive(p, wait_s=30)]
    assert multi.job_processes(job_id) == []


# -- 1 with real TensorFlow ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def real_tf_job(request, tmp_path_factory):
    """The real-TensorFlow job, submitted when this module starts and checked by its last test: it runs on the
    second (10-node) cluster, beside the tests that kill nodes of the first, so that its ~40 s of TensorFlow
    start-up and Supervisor wait overlap their ~20 s waits for Slurm to notice a dead node.
    None when there is no cluster, no TensorFlow or no tensorflow/benchmarks (the test then skips, saying which)."""
    from realtf import REAL_TF_PYTHON, REPO

    if os.environ.get("TFCNNWRAP_SLURM_MULTI") != "1" or not REAL_TF_PYTHON or REPO is None:
        yield None
        return
    cluster = request.getfixturevalue("ten_nodes")
    where = tmp_path_factory.mktemp("real-tf-multi")
    env = {telemetry.ENV_NVIDIA_SMI: "none", "CUDA_VISIBLE_DEVICES": ""}
    vendor = where / "vendor"
    setup = run_cli(
        "setup", "--repo-url", REPO, "--python", REAL_TF_PYTHON, "--vendor-dir", vendor, cwd=where, env=env, timeout=300
    )
    out = where / "sweep"
    argv = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        REAL_TF_PYTHON,
        "--out",
        out,
        "--device",
        "cpu",
        "--models",
        "trivial",
        "--batch-size",
        "trivial=8",
        "--num-batches",
        "5",
        "--runs",
        "1",
        "--cluster",
        "slurm",
        "--workers",
        "2",
        "--ps",
        "1",
    ]
    job = None
    if setup.returncode == 0:
        job = submit(cluster, where, "realtf", [argv], ["-N", "3"], env)
    yield {"cluster": cluster, "setup": setup, "job": job, "out": out, "started": time.perf_counter()}
    if job is not None:
        cluster.slurm("scancel", job[0])  # a selection that left out the test below: stop it


@pytest.mark.slow
@pytest.mark.slurm
def test_real_tensorflow_ps_job_across_nodes_records_worker0s_total(real_tf_job):
    if real_tf_job is None:
        pytest.skip(
            "needs the multi-node cluster (TFCNNWRAP_SLURM_MULTI=1), TFCNNWRAP_REAL_TF_PYTHON and a local "
            "tensorflow/benchmarks (TFCNNWRAP_BENCHMARKS_REPO)"
        )
    assert real_tf_job["setup"].returncode == 0, real_tf_job["setup"]
    cluster, (job_id, output), out = real_tf_job["cluster"], real_tf_job["job"], real_tf_job["out"]
    state = wait_job(cluster, job_id, deadline_s=400)
    text = output.read_text() if output.exists() else ""
    assert state == "COMPLETED" and "step0-exit=0" in text, text
    run = check_across_nodes(out, cluster.nodes, [("ps", 0), ("worker", 0), ("worker", 1)])
    assert run["images_per_sec"] > 0
    print(
        "real TF 1 ps + 2 workers on 3 nodes: %.1f s from sbatch to checked, job %.1f s"
        % (time.perf_counter() - real_tf_job["started"], run["duration_s"])
    )
