"""A folder of varied bundles for a before/after `diff -r` of `site` (issue 39: the pages must stay the same bytes):
1-6 runs of 2-5 models with random figures, some failed runs, 1 or 2 GPUs, nine GPU spellings (two spellings of
one GPU, and a name with markup that verify refuses), every 17th bundle without logs (unverified), every 23rd
changed after export (refused).

Usage:
    python benchmarks/varied_bundles.py 200 DIR
    PYTHONPATH=CODE python -m tfcnnwrap site DIR --out OUT     # for the code before and after; then diff -r
"""

import gzip
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bundledata import log_text  # noqa: E402
from sweepdata import SEED_2070, SEED_BATCH  # noqa: E402

from tfcnnwrap.results.bundlerecords import LogEntry  # noqa: E402
from tfcnnwrap.share import bundle as bundles  # noqa: E402

GPUS = [
    "GeForce RTX 2070",
    "NVIDIA GeForce RTX 2070",
    "Tesla V100",
    "Tesla V100-SXM2-16GB",
    "GeForce GTX 1080 Ti",
    "Radeon RX Vega 64",
    "A100-SXM4-40GB",
    "<b>x&y</b> GPU",
    "H100 PCIe",
]


def runs_of(i, rnd, gpus):
    runs, logs, summary = [], {}, []
    count = 1 + i % 6
    for model, batch in list(SEED_BATCH.items())[: 2 + i % 4]:
        base = SEED_2070[model] * rnd.uniform(0.3, 0.9) * gpus
        for run in range(1, count + 1):
            ips = round(base * rnd.uniform(0.9, 1.1), rnd.choice([1, 2, 2, 2]))
            ok = rnd.random() > 0.08
            name = "%s-bs%d-g%d-run%d.log" % (model, batch, gpus, run)
            text = log_text(model, batch, ips, num_gpus=gpus) if ok else "error here\n"
            logs[name] = LogEntry(text=text, sha256=bundles.sha256_text(text))
            runs.append(
                {
                    "model": model,
                    "batch_size": batch,
                    "run": run,
                    "status": "ok" if ok else "crashed",
                    "images_per_sec": ips if ok else None,
                    "exit_code": 0 if ok else 1,
                    "duration_s": 60.0,
                    "started_at": "2026-11-30T10:00:00Z",
                    "num_gpus": gpus,
                    "log": name,
                }
            )
        oks = [r["images_per_sec"] for r in runs if r["model"] == model and r["status"] == "ok"]
        mean = sum(oks) / len(oks) if oks else None
        summary.append(
            {"model": model, "batch_size": batch, "runs_ok": len(oks), "runs_failed": count - len(oks), "mean": mean}
        )
        summary[-1]["num_gpus"] = gpus
    return runs, logs, summary, count


def one(i, rnd):
    gpu, gpus = GPUS[i % len(GPUS)], 1 if i % 5 else 2
    runs, logs, summary, count = runs_of(i, rnd, gpus)
    conditions = {
        "gpu": gpu,
        "gpus": [gpu],
        "vendor": bundles.vendor_of(gpu),
        "precision": ["fp32", "fp16"][i % 2],
        "xla": ["no", "yes"][i % 3 == 0],
        "num_gpus": [gpus],
        "variable_update": "parameter_server",
        "data": "synthetic",
        "batch_sizes": dict(SEED_BATCH),
        "tensorflow_version": "1.12.0",
        "host": "<host>",
    }
    created = "2026-%02d-%02dT%02d:%02d:00Z" % (1 + i % 12, 1 + i % 28, i % 24, i % 60)
    firsts = [r for r in runs if r["run"] == 1]
    plan = {
        "runs": count,
        "until_ci": None,
        "max_runs": None,
        "not_started": [],
        "configurations": [{"model": r["model"], "batch_size": r["batch_size"], "num_gpus": gpus} for r in firsts],
    }
    return bundles.new_bundle(conditions, runs, summary, None if i % 17 == 3 else logs, created, plan=plan)


def main():
    count, out = int(sys.argv[1]), Path(sys.argv[2])
    rnd = random.Random(39)
    out.mkdir(parents=True)
    for i in range(count):
        item = one(i, rnd)
        data = bundles.to_bytes(item)
        if i % 23 == 5:  # changed after export: its id no longer matches
            changed = json.loads(gzip.decompress(data))
            changed["runs"][0]["images_per_sec"] = 1.0
            data = bundles.to_bytes(changed)
        (out / bundles.file_name(item)).write_bytes(data)
    print("made %d bundles in %s" % (count, out))


if __name__ == "__main__":
    main()
