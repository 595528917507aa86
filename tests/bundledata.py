"""Sweeps with logs, and bundles made from them, for the bundle, library and sharing tests and the benchmark.

    from bundledata import logged_sweep
    sweep = logged_sweep(tmp_path / "s")            # the seed's five models x 3 runs, GeForce RTX 2070

Each run's log is what tf_cnn_benchmarks prints (header, step lines, ``total images/sec``), so verify parses it
as it would a real one.
"""

import json
from pathlib import Path

from sweepdata import SEED_2070, SEED_BATCH, write_sweep

HOST = "desk-7f3a"


def log_text(model, batch_size, ips, num_gpus=1, device_line=None, tf="1.12"):
    lines = []
    if device_line:
        lines.append(device_line)
    lines += [
        "TensorFlow:  %s" % tf,
        "Model:       %s" % model,
        "Dataset:     imagenet (synthetic)",
        "Mode:        training",
        "SingleSess:  False",
        "Batch size:  %d global" % (batch_size * num_gpus),
        "             %d per device" % batch_size,
        "Num batches: 100",
        "Num epochs:  0.00",
        "Devices:     %s" % ["/gpu:%d" % i for i in range(num_gpus)],
        "NUMA bind:   False",
        "Data format: NCHW",
        "Optimizer:   sgd",
        "Variables:   parameter_server",
        "==========",
        "Generating training model",
        "Running warm up",
        "Done warm up",
        "Step\tImg/sec\ttotal_loss",
        "1\timages/sec: %.1f +/- 0.3 (jitter = 0.8)\t8.200" % ips,
        "100\timages/sec: %.1f +/- 0.3 (jitter = 0.8)\t7.700" % ips,
        "-" * 64,
        "total images/sec: %.2f" % ips,
        "-" * 64,
        "",
    ]
    return "\n".join(lines)


def logged_sweep(
    path, values=None, runs=3, gpus=("GeForce RTX 2070",), home="/home/alice", host=HOST, device_line=None, tf="1.12"
):
    """A finished sweep at ``path`` with a log per run; ``values`` {model: images/sec, or a list: one per run}
    (default the seed's)."""
    values = values or SEED_2070
    results = {
        (m, SEED_BATCH.get(m, 64)): list(v) if isinstance(v, (list, tuple)) else [v] * runs for m, v in values.items()
    }
    path = write_sweep(path, results, gpus=list(gpus) if gpus is not None else [])
    meta = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    meta["tensorflow_version"] = tf + ".0"
    meta["environment"]["host"] = host
    meta["environment"]["target_python"] = {"path": home + "/tf112/bin/python", "version": "3.6.9"}
    (path / "sweep.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    records = [json.loads(line) for line in (path / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    with open(path / "runs.jsonl", "w", encoding="utf-8") as fh:
        for record in records:
            record["command"][0] = home + "/tf112/bin/python"
            fh.write(json.dumps(record) + "\n")
            (path / record["log"]).write_text(
                log_text(
                    record["model"], record["batch_size"], record["images_per_sec"], device_line=device_line, tf=tf
                )
                + "I1130 10:00:00.000 host %s cwd %s/bench\n" % (host, home),
                encoding="utf-8",
            )
    return Path(path)


def variants(bundle, count):
    """``count`` bundles like ``bundle`` but for their creation time: as many distinct, verifiable sweeps."""
    from tfcnnwrap.share import bundle as bundles

    out = []
    for i in range(count):
        content = {k: v for k, v in bundle.items() if k != "id"}
        content["created_at"] = "2026-12-%02dT%02d:%02d:00Z" % (1 + i // 1440 % 28, i // 60 % 24, i % 60)
        out.append(bundles.with_id(content))
    return out


def write_bundles(folder, items):
    from tfcnnwrap.share import bundle as bundles

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        (folder / bundles.file_name(item)).write_bytes(bundles.to_bytes(item))
    return folder


def build(sweep, **options):
    """The bundle `export` makes of ``sweep``, as the JSON object its file holds: what a reader (or a forger)
    edits before writing it back with bundle.to_bytes."""
    from tfcnnwrap.share import export

    return export.build(sweep, **options).to_dict()


def verify(bundle, allowed_signers=None):
    """verify's Verdict of a bundle's JSON object (or a Bundle), read into its records as a bundle file is."""
    from tfcnnwrap.results.bundlerecords import Bundle
    from tfcnnwrap.share import verify as verifying

    return verifying.verify(bundle if isinstance(bundle, Bundle) else Bundle.from_dict(bundle), allowed_signers)
