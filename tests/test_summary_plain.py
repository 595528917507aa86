"""The summary without pandas (issue 39: a library's site summarised each bundle with pandas, a quarter of its time
per bundle): `summarize_plain` gives `summarize`'s rows, field for field, or lets pandas do it."""

import random

import pytest

from tfcnnwrap.results import aggregate
from tfcnnwrap.results.records import RunRecord


def run(model, run_no, value, status="ok", **extra):
    record = {"model": model, "batch_size": 64, "run": run_no, "status": status, "images_per_sec": value}
    return RunRecord.from_dict(dict(record, **extra))


def random_sweep(rnd):
    """Runs as sweeps and bundles hold them: 1-3 models, 1-12 runs each, some failed, figures to 1-3 decimals,
    now and then a second batch size, GPU count or host, a missing GPU count, the runs in any order."""
    runs = []
    decimals = rnd.choice([1, 2, 2, 3])
    for model in rnd.sample(["resnet50", "vgg16", "alexnet", "inception3"], rnd.randint(1, 3)):
        base = rnd.choice([0.7, 50.0, 180.0, 2600.0, 30000.0])
        for number in range(1, rnd.randint(1, 12) + 1):
            ok = rnd.random() > 0.1
            extra = {"num_gpus": rnd.choice([1, 2, None])} if rnd.random() < 0.2 else {"num_gpus": 1}
            if rnd.random() < 0.05:
                extra["host"] = rnd.choice(["node-a", ""])
            if rnd.random() < 0.1:
                extra["batch_size"] = 32
            value = round(base * rnd.uniform(0.8, 1.2), decimals) if ok else None
            runs.append(run(model, number, value, "ok" if ok else rnd.choice(["oom", "crashed"]), **extra))
    if rnd.random() < 0.3:
        rnd.shuffle(runs)
    return runs


def test_random_sweeps_summarise_to_the_rows_pandas_gives():
    rnd = random.Random(39)
    for _ in range(300):
        runs = random_sweep(rnd)
        assert aggregate.summarize_plain(runs) == aggregate.summarize(runs), runs


def test_the_plan_order_and_the_scaling_columns_as_summarize_gives_them():
    runs = [run("vgg16", 1, 140.0, num_gpus=2), run("resnet50", 1, 180.5, num_gpus=1), run("resnet50", 2, 181.25)]
    runs.append(run("resnet50", 1, 350.0, num_gpus=2))
    order = [("vgg16", 64), ("resnet50", 64)]
    assert aggregate.summarize_plain(runs, order) == aggregate.summarize(runs, order)
    assert aggregate.summarize_plain([]) == [] and aggregate.summarize_plain([run("vgg16", 1, None, "oom")])


@pytest.mark.parametrize(
    "values",
    [
        [1.7e308, 1.7e308, 1.7e308],  # a float sum that overflows: pandas and the exact fallback as always
        [1e300, 2e300],
        [0.1234567895, 0.1234567895, 0.1234567895],  # a mean on a rounding edge of the 9 decimals kept
    ],
)
def test_figures_the_plain_sums_cannot_promise_are_left_to_pandas(values, monkeypatch):
    runs = [run("resnet50", i, v) for i, v in enumerate(values, 1)]
    assert aggregate.plain_stats([r.value for r in runs]) is None
    calls = []
    monkeypatch.setattr(aggregate, "summarize", lambda *a: calls.append(a) or ["pandas"])
    assert aggregate.summarize_plain(runs) == ["pandas"] and calls


def test_std_is_pandas_own_welford_to_the_bit():
    values = [2452.2, 1531.51845, 3679.45119, 2849.5336, 2000.125]
    stats = aggregate.plain_stats(values)
    frame = aggregate.runs_frame([run("m", i, v) for i, v in enumerate(values, 1)])
    grouped = frame.groupby("model")["images_per_sec"]  # a group-by's std is Welford's, not Series.std's
    assert stats["std"] == grouped.std().iloc[0] and stats["median"] == grouped.median().iloc[0]
    assert aggregate.plain_stats([None, None]) is not None and aggregate.plain_stats([None])["count"] == 0
