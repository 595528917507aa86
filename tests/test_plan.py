"""plan.py: pass-through flags, model names, bounds on a recorded plan (pure, no subprocess)."""

import pytest

from tfcnnwrap.errors import DamagedFile, UsageError
from tfcnnwrap.results import plan


def sweep_args(**kw):
    """The sweep's options as `sweep` with no flags gives them, then the test's."""
    return plan.SweepArgs(**kw)


@pytest.mark.parametrize(
    "extra",
    [
        ["--", "--model=vgg16"],
        ["--", "-model=vgg16"],
        ["--", "-model", "vgg16"],
        ["--", "--model", "vgg16"],
        ["--", "--nomodel"],
        ["--", "-nomodel"],
        ["--", "--batch_size=8"],
        ["--", "-batch_size", "8"],
        ["--", "--num_gpus=2"],
        ["--", "-num_gpus=2"],
        ["--", "--device=gpu"],
        ["--", "--nodevice"],
        ["--", "--use_fp16", "-variable_update=replicated"],
        ["--", "--num_batches", "5"],
        ["--", "-num_warmup_batches=0"],
        ["--", "--", "-model=vgg16"],
    ],
)
def test_every_absl_spelling_of_a_managed_flag_is_refused(extra):
    with pytest.raises(UsageError, match="tfcnnwrap's own flag"):
        plan.check_extra_args(extra)


def test_flagfile_is_refused_and_other_flags_pass():
    with pytest.raises(UsageError, match="flagfile"):
        plan.check_extra_args(["--", "--flagfile=f.txt"])
    ok = [
        "--use_fp16=True",
        "-xla",
        "--nodistortions",
        "--data_name",
        "imagenet",
        "--optimizer=momentum",
        "--models_dir=x",
        "--noise",
    ]
    assert plan.check_extra_args(["--"] + ok) == ok


@pytest.mark.parametrize(
    "spelling, name",
    [
        ("--model=x", "model"),
        ("-model=x", "model"),
        ("--nomodel", "model"),
        ("-nodevice", "device"),
        ("--nodistortions", "nodistortions"),
        ("--use_fp16", "use_fp16"),
        ("vgg16", None),
        ("-", None),
        ("--", None),
    ],
)
def test_flag_name(spelling, name):
    assert plan.flag_name(spelling) == name


def test_model_names_ignore_case_and_suggest_close_ones():
    assert plan.check_model("ResNet50") == "resnet50"
    assert plan.parse_models("ResNet50, VGG16,resnet50") == ["resnet50", "vgg16"]
    assert plan.parse_batch_size("VGG16=32") == ("vgg16", 32)
    with pytest.raises(UsageError, match=r"did you mean resnet50\b"):
        plan.check_model("resnet5")
    with pytest.raises(UsageError, match="did you mean inception3"):
        plan.check_model("incepton3")
    built = plan.build_plan(sweep_args(models="ResNet50", batch_size=("RESNET50=16",)))
    assert built.models == [("resnet50", 16)]


@pytest.mark.parametrize(
    "kw",
    [
        dict(runs=10**9),
        dict(runs=10**20),
        dict(timeout=float("inf")),
        dict(timeout=float("nan")),
        dict(num_batches=0),
        dict(num_warmup_batches=-1),
        dict(num_gpus=(65,)),
        dict(batch_size=("vgg16=99999999999999999999",)),
    ],
)
def test_build_plan_bounds_its_numbers_as_the_flags_do(kw):
    with pytest.raises(UsageError, match="must be"):
        plan.build_plan(sweep_args(**kw))


@pytest.mark.parametrize(
    "field, value",
    [
        ("runs", 10**9),
        ("runs", 0),
        ("timeout_s", 1e300),
        ("num_batches", -1),
        ("num_gpus", 0),
    ],
)
def test_a_recorded_plan_out_of_bounds_is_refused(field, value):
    data = plan.Plan().to_dict()
    data[field] = value
    with pytest.raises(DamagedFile, match="recorded plan"):
        plan.Plan.from_dict(data)


def test_a_recorded_plan_round_trips():
    built = plan.build_plan(sweep_args(runs=5, timeout=90.0, num_batches=20))
    assert plan.Plan.from_dict(built.to_dict()) == built


def test_a_plan_flag_given_as_zero_counts_as_given():
    assert plan.plan_flags_given(sweep_args(num_warmup_batches=0)) == ["--num-warmup-batches"]
    assert plan.plan_flags_given(sweep_args()) == []


def test_run_specs_carry_the_gpu_count_and_a_scaling_plan_runs_every_count():
    from tfcnnwrap.results.plan import Plan, RunSpec

    plan = Plan(models=[("resnet50", 64)], runs=2)
    assert plan.run_specs() == [RunSpec("resnet50", 64, 1, 1), RunSpec("resnet50", 64, 1, 2)]
    assert not plan.scaling
    plan = Plan(models=[("resnet50", 64), ("vgg16", 32)], runs=1, gpu_counts=[1, 2])
    assert [tuple(s)[:4] for s in plan.run_specs()] == [  # (model, batch_size, num_gpus, run), data None
        ("resnet50", 64, 1, 1),
        ("resnet50", 64, 2, 1),
        ("vgg16", 32, 1, 1),
        ("vgg16", 32, 2, 1),
    ]
    assert plan.benchmark_flags("vgg16", 32, "cpu", 2)[2] == "--num_gpus=2"
    assert Plan.from_dict(plan.to_dict()).counts == [1, 2]


def test_logs_of_a_scaling_sweep_are_named_with_their_gpu_count(tmp_path):
    from tfcnnwrap.results.plan import Plan, RunSpec
    from tfcnnwrap.results.store import SweepDir

    sweep = SweepDir(tmp_path)
    spec = RunSpec("resnet50", 64, 2, 1)
    assert sweep.spec_log(spec, Plan(gpu_counts=[1, 2])) == "logs/resnet50-bs64-g2-run1.log"
    assert sweep.spec_log(spec, Plan(num_gpus=2)) == "logs/resnet50-bs64-run1.log"


def test_the_command_line_gives_the_sweep_every_flag_typed():
    """cli/sweep.py turns the parsed flags into SweepArgs field by field: none left out, none of argparse's lists."""
    from dataclasses import fields

    from tfcnnwrap.cli import build_parser
    from tfcnnwrap.cli.sweep import sweep_args as from_flags

    parsed = build_parser().parse_args(["sweep"])
    assert set(vars(parsed)) - {f.name for f in fields(plan.SweepArgs)} == {"debug", "verb"}
    assert from_flags(parsed) == plan.SweepArgs()
    given = from_flags(
        build_parser().parse_args(
            ["sweep", "--num-gpus", "1,2", "--batch-size", "vgg16=8", "--runs", "2", "--timeout", "5", "--fleet"]
            + ["--", "--foo=1"]
        )
    )
    assert (given.num_gpus, given.batch_size, given.runs, given.timeout, given.fleet) == (
        (1, 2),
        ("vgg16=8",),
        2,
        5.0,
        True,
    )
    assert given.extra == ("--", "--foo=1") and isinstance(given.runs, int)


def test_both_data_kinds_are_one_configuration_each_interleaved_by_default():
    both = plan.build_plan(sweep_args(models="resnet50,vgg16", runs=2, data="synthetic,generated:64"))
    assert (both.data_source, both.data_kinds, both.order) == ("generated:64", ["synthetic", "real"], "interleaved")
    assert [(s.model, s.run, s.data) for s in both.run_specs()[:4]] == [
        ("resnet50", 1, "synthetic"),
        ("resnet50", 1, "real"),
        ("vgg16", 1, "synthetic"),
        ("vgg16", 1, "real"),
    ]
    assert both.conditions()["data"] == "synthetic,real" and both.data_origin() == "synthetic,generated:64"
    both.data_dir = "/cache/x"
    assert "--data_dir=/cache/x" not in both.benchmark_flags("resnet50", 64, "cpu", data="synthetic")
    assert "--data_dir=/cache/x" in both.benchmark_flags("resnet50", 64, "cpu", data="real")
    assert plan.Plan.from_dict(both.to_dict()) == both
    assert both.only_data("synthetic").conditions()["data"] == "synthetic"
    assert both.only_data("real").data_origin() == "generated:64"
    grouped = plan.build_plan(sweep_args(data="generated,synthetic", order="grouped"))
    assert grouped.order == "grouped" and grouped.data_kinds == ["real", "synthetic"]
    assert plan.build_plan(sweep_args(data="generated")).data_kinds is None


@pytest.mark.parametrize(
    "kinds",
    [["synthetic"], ["synthetic", "synthetic"], ["real", "real"], "synthetic,real", ["synthetic", "real", "real"]],
)
def test_a_recorded_plan_with_damaged_data_kinds_is_refused(kinds):
    data = plan.Plan(data_source="generated:64", data_kinds=["synthetic", "real"]).to_dict()
    data["data_kinds"] = kinds
    with pytest.raises(DamagedFile, match="recorded plan"):
        plan.Plan.from_dict(data)


def test_the_input_path_cost_is_the_real_rows_change_against_the_synthetic_with_fieller_interval():
    from tfcnnwrap.compare.ab import change_interval
    from tfcnnwrap.results.aggregate import add_input_cost
    from tfcnnwrap.results.records import SummaryRow

    syn, real = [200.0, 202.0, 198.0], [150.0, 151.0, 149.5]

    def row(data, values):
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        return SummaryRow(model="resnet50", batch_size=64, runs_ok=len(values), mean=mean, std=std, data=data)

    rows = add_input_cost([row("synthetic", syn), row("real", real), SummaryRow(model="vgg16", batch_size=32)])
    low, high = change_interval(syn, real)  # compare's A/B interval from the runs themselves
    assert rows[1].vs_synthetic_pct == pytest.approx((150.1666666 / 200 - 1) * 100, abs=1e-5)
    assert rows[1].vs_synthetic_ci95_low == pytest.approx(low) and rows[1].vs_synthetic_ci95_high == pytest.approx(high)
    assert rows[0].vs_synthetic_pct is None and rows[2] == SummaryRow(model="vgg16", batch_size=32)
