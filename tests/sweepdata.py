"""Write sweep directories by hand (the contract's format), for tests and benchmarks that read sweeps.

    from sweepdata import write_sweep, SEED_2070
    write_sweep(tmp_path / "s", {("resnet50", 64): [176.93, 176.93, 176.93]})

Values are images/sec of ok runs; a string instead of a number records a failed run with that status
(``"oom"``, ``"crashed"``...).
"""

import dataclasses
import json
from pathlib import Path

from tfcnnwrap.results.plan import Plan
from tfcnnwrap.results.records import RunRecord, Status, SweepMeta, Upstream

SEED_BATCH = {"resnet50": 64, "resnet152": 32, "inception3": 64, "vgg16": 64, "alexnet": 512}
SEED_2070 = {"resnet50": 176.93, "resnet152": 62.22, "inception3": 113.24, "vgg16": 110.23, "alexnet": 2258.94}


def seed_runs(runs=3, values=None):
    """{(model, batch_size): [value] * runs} for the seed's five models (default: the seed's 2070 figures)."""
    values = values or SEED_2070
    return {(m, SEED_BATCH[m]): [values[m]] * runs for m in SEED_BATCH}


def sweep_meta(pairs, runs=3, gpus=None, **plan):
    """The SweepMeta of a sweep of ``pairs``; ``plan``: Plan fields (a field Plan lacks is a TypeError, so
    test data cannot record a plan key the real writer never writes)."""
    settings = dict(device="gpu")
    settings.update(plan)
    the_plan = Plan(models=list(pairs), runs=runs, **settings)
    return SweepMeta(
        tfcnnwrap_version="0.1.0",
        created_at="2026-11-30T10:15:00Z",
        plan=the_plan.to_dict(),
        device="gpu",
        upstream=Upstream("https://github.com/tensorflow/benchmarks.git", "cnn_tf_v1.12_compatible", "0" * 40),
        environment={"gpus": list(gpus) if gpus is not None else ["GeForce RTX 2070"]},
        extra={"command_template": ["python", "tf_cnn_benchmarks.py", "--model={model}", "--batch_size={batch_size}"]},
    )


def run_record(model, batch_size, run, value):
    ok = not isinstance(value, str)
    return RunRecord(
        model=model,
        batch_size=batch_size,
        run=run,
        status=Status.OK if ok else Status(value),
        images_per_sec=float(value) if ok else None,
        exit_code=0 if ok else 1,
        duration_s=60.0,
        started_at="2026-11-30T10:%02d:00Z" % (run % 60),
        log="logs/%s-bs%d-run%d.log" % (model, batch_size, run),
        command=("python", "tf_cnn_benchmarks.py", "--model=%s" % model, "--batch_size=%d" % batch_size),
    )


def write_sweep(path, results, planned=None, gpus=None, **plan):
    """A sweep directory at ``path`` holding ``results`` {(model, batch_size): [value or status, ...]}.

    ``planned``: the plan's (model, batch_size) pairs (default: the keys of ``results``); ``plan``: other
    Plan fields (num_gpus=2, extra_args=["--use_fp16"], ...).
    """
    path = Path(path)
    (path / "logs").mkdir(parents=True, exist_ok=True)
    pairs = list(planned) if planned is not None else list(results)
    runs = max([len(v) for v in results.values()] + [1])
    meta = sweep_meta(pairs, runs=runs, gpus=gpus, **plan)
    (path / "sweep.json").write_text(json.dumps(meta.to_dict(), indent=2, allow_nan=False), encoding="utf-8")
    with open(path / "runs.jsonl", "w", encoding="utf-8") as fh:
        for (model, batch_size), values in results.items():
            for i, value in enumerate(values, 1):
                fh.write(json.dumps(run_record(model, batch_size, i, value).to_dict(), allow_nan=False) + "\n")
    return path


BOTH_KINDS = dict(  # the plan of `sweep --data synthetic,generated:64`
    data_kinds=["synthetic", "real"], data_source="generated:64", data_dir="/cache/data/x", order="interleaved"
)


def write_both_kinds(path, figures):
    """A sweep of both data kinds as `sweep --data synthetic,generated:64` writes it; ``figures``:
    {(model, batch_size): {"synthetic": [images/sec...], "real": [...]}}."""
    (path / "logs").mkdir(parents=True)
    meta = sweep_meta(list(figures), runs=2, **BOTH_KINDS)
    (path / "sweep.json").write_text(json.dumps(meta.to_dict(), allow_nan=False), encoding="utf-8")
    records = [
        dataclasses.replace(
            run_record(model, batch, run, value), data=kind, log="logs/%s-bs%d-%s-run%d.log" % (model, batch, kind, run)
        )
        for (model, batch), kinds in figures.items()
        for kind, values in kinds.items()
        for run, value in enumerate(values, 1)
    ]
    (path / "runs.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records), encoding="utf-8")
    return path


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
