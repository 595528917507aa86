"""A node that fails in the middle of a run (issue 26), the pure parts: a fleet's run, and a distributed job whose
Slurm cannot say whether the allocation is ending. The runs themselves are in tests/test_slurm_multi.py."""

import pytest

from tfcnnwrap.cluster import nodewatch, slurm
from tfcnnwrap.errors import SetupError
from tfcnnwrap.results.plan import Plan, RunSpec
from tfcnnwrap.results.records import RunRecord
from tfcnnwrap.results.store import latest_runs
from tfcnnwrap.sweep import schedule


def host_run(host, run, status="ok"):
    return RunRecord.from_dict(
        {
            "model": "trivial",
            "batch_size": 8,
            "num_gpus": 1,
            "run": run,
            "status": status,
            "images_per_sec": 50.0 if status == "ok" else None,
            "host": host,
        }
    )


@pytest.mark.parametrize("order", [["n1", "n2", "n3"], ["n2", "n1", "n3"], ["n1", "n3", "n2"]])
def test_a_fleet_run_with_one_failed_host_is_owed_to_retry_failed_whichever_host_was_recorded_last(order):
    plan = Plan(models=[("trivial", 8)], runs=2)
    status = {"n1": "ok", "n2": "crashed", "n3": "ok"}
    records = latest_runs([host_run(h, 1, status[h]) for h in order] + [host_run(h, 2) for h in ("n1", "n3")])
    assert schedule.runs_to_do(plan, records, True) == [RunSpec("trivial", 8, 1, 1)]
    assert schedule.runs_to_do(plan, records, False) == []


def test_a_fleet_run_with_one_interrupted_host_is_owed_even_without_retry_failed():
    plan = Plan(models=[("trivial", 8)], runs=1)
    records = [host_run("n1", 1), host_run("n2", 1, "interrupted"), host_run("n3", 1)]
    assert schedule.runs_to_do(plan, records, False) == [RunSpec("trivial", 8, 1, 1)]


def test_a_fleet_run_every_host_of_which_is_ok_is_not_owed():
    plan = Plan(models=[("trivial", 8)], runs=1)
    assert schedule.runs_to_do(plan, [host_run(h, 1) for h in ("n1", "n2", "n3")], True) == []


def test_a_fleet_step_may_overlap_the_step_that_lost_a_node_and_survives_a_node_of_its_own():
    cmd = slurm.srun_command(
        ["python", "x.py"], 2, "tfcnnwrap-1-2", job_id="7", nodes=2, ntasks_per_node=1, overlap=True, no_kill=True
    )
    assert {"--overlap", "--no-kill"} <= set(cmd[: cmd.index("--")])
    assert cmd[cmd.index("--") :] == ["--", "python", "x.py"]
    plain = slurm.srun_command(["python", "x.py"], 2, "tfcnnwrap-1-3")
    assert "--overlap" not in plain and "--no-kill" not in plain


@pytest.mark.slow
@pytest.mark.parametrize(
    "error",
    [SetupError("squeue --jobs=7 did not answer within 60 s"), OSError(0, "the supervisor did not start", "squeue")],
)
def test_a_node_failure_is_a_failed_run_when_slurm_cannot_say_whether_the_job_is_ending(monkeypatch, error):
    def no_answer(*args, **kwargs):
        raise error

    monkeypatch.setattr(slurm, "run_slurm", no_answer)
    assert nodewatch.NodeWatch("7").allocation_ending() is False
