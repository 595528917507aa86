"""Plan owns its features (--fp16, --xla): one spelling table, and every reader sees the same conditions."""

from sweepdata import seed_runs, sweep_meta

from tfcnnwrap.environment import features
from tfcnnwrap.present.report import title_parts
from tfcnnwrap.results import plan
from tfcnnwrap.results.records import SweepMeta


def _meta_with(**plan_fields):
    data = sweep_meta(list(seed_runs(1)), runs=1).to_dict()
    data["plan"] = dict(data["plan"], **plan_fields)
    return SweepMeta.from_dict(data)


def test_the_report_title_says_xla_when_the_plan_ran_with_it():
    # conditions() says "yes"/"no"; the title read only True/"on"/"true" and so said "no XLA" under --xla
    assert "XLA" in title_parts("s", _meta_with(xla=True))
    assert "no XLA" in title_parts("s", _meta_with(xla=False))


def test_plan_features_in_the_one_order_and_spelling():
    assert plan.Plan(fp16=True, xla=True).features == ["fp16", "xla"]
    assert plan.Plan(xla=True).features == ["xla"]
    assert plan.Plan().features == []
    assert features.branch_flags(["xla", "fp16"], "cnn_tf_v1.12_compatible") == ["--use_fp16=True", "--xla=True"]
