"""clusterplan (pure): every mode's task list, the validity rules per branch, the reporting-task rule, JSON."""

import json
import subprocess
from pathlib import Path

import pytest

from tfcnnwrap.cluster import layout
from tfcnnwrap.cluster.layout import ClusterPlan, build_plan, drop_flags, flag_value, modes_for_branch
from tfcnnwrap.errors import DamagedFile, UsageError

MIRROR = Path("/work/.mirror/tensorflow+benchmarks/repo")


def names(tasks):
    return [t.name for t in tasks]


def one_line_error(call, *needles, error=UsageError):
    with pytest.raises(error) as info:
        call()
    message = info.value.message
    assert "\n" not in message and ": " in message, message
    for needle in needles:
        assert needle in message, message
    assert info.value.exit_code == 2
    return message


def test_parameter_server_tasks_flags_and_roles():
    plan = build_plan("parameter_server", workers=2, ps=1, ports=[5000, 5001, 5002])
    assert names(plan.tasks) == ["ps0", "worker0", "worker1"]
    assert names(plan.reporting()) == ["worker0"]
    assert names(plan.to_stop()) == ["ps0"]
    assert plan.flags_for(plan.task("worker", 1)) == [
        "--job_name=worker",
        "--task_index=1",
        "--ps_hosts=localhost:5000",
        "--worker_hosts=localhost:5001,localhost:5002",
        "--variable_update=parameter_server",
    ]
    assert plan.flags_for(plan.task("ps", 0))[:2] == ["--job_name=ps", "--task_index=0"]


def test_distributed_replicated_defaults_to_one_ps():
    plan = build_plan("distributed_replicated", workers=3)
    assert names(plan.tasks) == ["ps0", "worker0", "worker1", "worker2"]
    assert names(plan.reporting()) == ["worker0"] and names(plan.to_stop()) == ["ps0"]


def test_collective_all_reduce_has_no_ps_and_the_collective_spec():
    plan = build_plan("collective_all_reduce", workers=2)
    assert names(plan.tasks) == ["worker0", "worker1"]
    assert plan.to_stop() == [] and names(plan.reporting()) == ["worker0"]
    flags = plan.flags_for(plan.tasks[1])
    assert "--all_reduce_spec=collective" in flags
    assert not any(f.startswith(("--ps_hosts", "--controller_host")) for f in flags)


def test_distributed_all_reduce_controller_reports_and_workers_are_stopped():
    plan = build_plan("distributed_all_reduce", workers=2, ports=[7001, 7002, 7003])
    assert names(plan.tasks) == ["worker0", "worker1", "controller0"]
    assert names(plan.reporting()) == ["controller0"]
    assert names(plan.to_stop()) == ["worker0", "worker1"]
    flags = plan.flags_for(plan.task("controller", 0))
    assert "--controller_host=localhost:7003" in flags and "--all_reduce_spec=pscpu" in flags
    assert build_plan("distributed_all_reduce", 2, all_reduce_spec="xring").all_reduce_spec == "xring"


@pytest.mark.parametrize("mode", ["replicated", "independent"])
def test_local_only_modes_are_refused(mode):
    one_line_error(lambda: build_plan(mode, 2), mode, "parameter_server")


def test_horovod_and_unknown_modes_are_refused():
    one_line_error(lambda: build_plan("horovod", 2), "mpirun", "drop --cluster")
    one_line_error(lambda: build_plan("bogus", 2), "bogus", "collective_all_reduce")


def test_ps_counts_are_checked_per_mode():
    one_line_error(lambda: build_plan("parameter_server", 2, ps=0), "--ps 1")
    one_line_error(lambda: build_plan("collective_all_reduce", 2, ps=1), "drop --ps")
    one_line_error(lambda: build_plan("distributed_all_reduce", 2, ps=2), "drop --ps")
    one_line_error(lambda: build_plan("parameter_server", 0), "--workers")
    assert len(build_plan("parameter_server", 1, ps=3).by_role("ps")) == 3


def test_all_reduce_specs_are_checked():
    one_line_error(lambda: build_plan("collective_all_reduce", 2, all_reduce_spec="nccl"), "collective")
    one_line_error(lambda: build_plan("distributed_all_reduce", 2, all_reduce_spec="nccl"), "pscpu")
    assert build_plan("distributed_all_reduce", 1, all_reduce_spec="nccl").all_reduce_spec == "nccl"


@pytest.mark.parametrize("branch", ["cnn_tf_v1.5_compatible", "cnn_tf_v1.8_compatible"])
def test_collective_needs_a_newer_branch(branch):
    one_line_error(lambda: build_plan("collective_all_reduce", 2, branch=branch), branch, "setup --branch")
    assert build_plan("parameter_server", 2, branch=branch).mode == "parameter_server"


@pytest.mark.parametrize(
    "branch",
    ["cnn_tf_v1.9_compatible", "cnn_tf_v1.12_compatible", "cnn_tf_v2.1_compatible", "master", None, "some-fork"],
)
def test_collective_on_branches_that_know_it(branch):
    assert "collective_all_reduce" in modes_for_branch(branch)


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the tensorflow/benchmarks mirror")
def test_branch_rule_matches_upstream_sources():
    refs = subprocess.run(
        ["git", "--git-dir", str(MIRROR), "for-each-ref", "--format=%(refname:short)", "refs/heads/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    branches = [b for b in refs if b == "master" or b.startswith("cnn_tf_v")]
    assert len(branches) >= 10
    for branch in branches:
        source = subprocess.run(
            ["git", "--git-dir", str(MIRROR), "show", branch + ":scripts/tf_cnn_benchmarks/benchmark_cnn.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        knows = "'collective_all_reduce'" in source
        assert ("collective_all_reduce" in modes_for_branch(branch)) == knows, branch
        assert "Invalid variable_update in distributed mode" in source  # replicated refused: our rule too
        assert "Invalid variable_update in local mode" in source  # distributed_replicated needs --job_name


def test_hosts_round_robin_and_ports_count_up_per_host():
    plan = build_plan("parameter_server", workers=3, ps=2, hosts=["n1", "n2"], base_port=4000)
    placed = [(t.name, t.host, t.port) for t in plan.tasks]
    assert placed == [
        ("ps0", "n1", 4000),
        ("ps1", "n2", 4000),
        ("worker0", "n1", 4001),
        ("worker1", "n2", 4001),
        ("worker2", "n1", 4002),
    ]
    assert plan.hostfile_lines() == ["n1", "n2", "n1", "n2", "n1"]
    one_line_error(lambda: build_plan("parameter_server", 2, ports=[1, 2]), "3 tasks but 2 ports")
    one_line_error(lambda: build_plan("parameter_server", 2, ports=[1, 2, 2]), "own port")
    one_line_error(lambda: build_plan("parameter_server", 2, hosts=["a b"]), "host name")


def test_gpu_placement():
    plan = build_plan("parameter_server", 2, gpus_per_host=2)
    env = {t.name: dict(t.env) for t in plan.tasks}
    assert env == {
        "ps0": {"CUDA_VISIBLE_DEVICES": ""},
        "worker0": {"CUDA_VISIBLE_DEVICES": "0"},
        "worker1": {"CUDA_VISIBLE_DEVICES": "1"},
    }
    shared = build_plan("parameter_server", 2, gpus_per_host=1)
    assert shared.flags_for(shared.task("worker", 1))[-1] == "--gpu_memory_frac_for_testing=0.3500"
    assert not any("gpu_memory" in f for f in shared.flags_for(shared.task("ps", 0)))
    two_each = build_plan("collective_all_reduce", 2, gpus_per_host=4, gpus_per_worker=2)
    assert dict(two_each.task("worker", 1).env) == {"CUDA_VISIBLE_DEVICES": "2,3"}
    unknown = build_plan("parameter_server", 2)  # under Slurm: the workers' GPUs are left alone
    assert [dict(t.env) for t in unknown.tasks] == [{"CUDA_VISIBLE_DEVICES": ""}, {}, {}]
    assert not any("gpu_memory" in f for t in unknown.tasks for f in unknown.flags_for(t))


@pytest.mark.parametrize("mode", layout.DISTRIBUTED_MODES)
def test_json_round_trip(mode):
    plan = build_plan(mode, workers=2, hosts=["n1", "n2"], branch="master", gpus_per_host=1)
    text = plan.to_json()
    json.loads(text, parse_constant=lambda c: pytest.fail("non-strict JSON: %s" % c))
    again = ClusterPlan.from_json(text)
    assert again == plan
    assert [again.flags_for(t) for t in again.tasks] == [plan.flags_for(t) for t in plan.tasks]


def test_bad_plan_files_are_one_line_errors():
    one_line_error(lambda: ClusterPlan.from_json("{not json"), "not JSON", error=DamagedFile)
    good = build_plan("parameter_server", 1).to_dict()
    for broken in (
        {**good, "format": 99},
        {**good, "mode": "replicated"},
        {**good, "tasks": [{"role": "boss"}]},
        {**good, "tasks": [{**good["tasks"][0], "port": -1}]},
        [],
    ):
        one_line_error(lambda broken=broken: ClusterPlan.from_dict(broken), "cluster plan", error=DamagedFile)


def test_argv_for_replaces_the_base_commands_own_distributed_flags():
    plan = build_plan("collective_all_reduce", 1, ports=[9000])
    base = [
        "py",
        "-u",
        "tf_cnn_benchmarks.py",
        "--model=trivial",
        "--variable_update=parameter_server",
        "--job_name",
        "stale",
        "--all_reduce_spec=nccl",
        "--num_gpus=2",
    ]
    argv = plan.argv_for(plan.tasks[0], base)
    assert argv[:4] == ["py", "-u", "tf_cnn_benchmarks.py", "--model=trivial"]
    assert "stale" not in argv and "--variable_update=parameter_server" not in argv
    assert "--all_reduce_spec=nccl" not in argv and "--num_gpus=2" in argv
    assert argv.count("--variable_update=collective_all_reduce") == 1
    # a plan without a spec keeps the base command's
    ps_plan = build_plan("parameter_server", 1)
    assert "--all_reduce_spec=nccl" in ps_plan.argv_for(ps_plan.tasks[1], base)


def test_flag_helpers():
    argv = ["--variable_update=replicated", "--all_reduce_spec", "xring", "--variable_update=parameter_server"]
    assert flag_value(argv, "variable_update") == "parameter_server"
    assert flag_value(argv, "all_reduce_spec") == "xring"
    assert flag_value(argv, "model") is None
    assert drop_flags(argv, ["all_reduce_spec"]) == [
        "--variable_update=replicated",
        "--variable_update=parameter_server",
    ]


def test_startup_wait_of_non_chief_workers():
    assert build_plan("parameter_server", 2).startup_wait_s == 30.0
    assert build_plan("distributed_replicated", 3).startup_wait_s == 30.0
    assert build_plan("parameter_server", 1).startup_wait_s == 0.0
    assert build_plan("collective_all_reduce", 2).startup_wait_s == 0.0
    assert build_plan("distributed_all_reduce", 2).startup_wait_s == 0.0
