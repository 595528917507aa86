"""What a sweep settles about the path images take before its first run (issue 36): the records host-fed
runs read (`--data-dir`, `--data generated[:N]`), and, on a GPU, the link they cross, timed once with the
target's TensorFlow (what `doctor --bandwidth` does) and kept in sweep.json's environment as ``link_bandwidth``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict

from tfcnnwrap.environment import datagen, probe
from tfcnnwrap.errors import SetupError, UsageError

if TYPE_CHECKING:
    from tfcnnwrap.sweep.runlife import SweepContext

# Eight 128 MiB copies each way take about a second on any PCIe link; importing TensorFlow and a first CUDA
# initialisation take the rest.
LINK_TIMEOUT_S = 300.0


def prepare_data(ctx: SweepContext, dry_run: bool = False) -> None:
    """Fill in ``ctx.plan.data_dir``: the user's checked directory, or the generated set (made by the target's
    TensorFlow now unless cached; a dry run only names where it would be)."""
    plan = ctx.plan
    if plan.data_source == "data-dir":
        if not plan.data_dir:
            raise UsageError("the sweep's recorded plan reads --data-dir but names no directory; start a new sweep")
        plan.data_dir = datagen.check_data_dir(plan.data_dir)
        return
    count = plan.generated_count
    if count is None:
        return
    if dry_run:
        plan.data_dir = str(datagen.cache_dir(count))
        return
    cached = datagen.read_manifest(datagen.cache_dir(count)) is not None
    if not cached:
        sys.stderr.write(
            "tfcnnwrap sweep: writing %d generated images as ImageNet TFRecords with TensorFlow %s "
            "(once; cached in %s)\n" % (count, ctx.tf_version, datagen.cache_dir(count))
        )
        sys.stderr.flush()
    made = datagen.ensure_generated(ctx.python, count)
    plan.data_dir = str(made["directory"])
    if not cached:
        sys.stderr.write("tfcnnwrap sweep: %s\n" % generated_text(made))


def generated_text(made: Dict[str, Any]) -> str:
    """``512 images, 32.5 MB in 5 files, written in 9.0 s by TensorFlow 2.21.0``."""
    size = made.get("bytes") or 0
    return "%s images, %.1f MB in %d files, written in %s s by TensorFlow %s" % (
        made.get("train_images"),
        size / 1e6,
        len(made.get("files") or []),
        made.get("seconds"),
        made.get("tensorflow"),
    )


def measure_link(ctx: SweepContext) -> Dict[str, Any]:
    """Host->GPU and GPU->host copy bandwidth in GB/s with the target's TensorFlow, or why there is none;
    never fails the sweep (a sweep's figures do not depend on it)."""
    if ctx.device != "gpu":
        return {"h2d_gbps": None, "d2h_gbps": None, "reason": "a CPU sweep: no link to measure"}
    try:
        answer = probe.run_probe(ctx.python, bandwidth=True, timeout=LINK_TIMEOUT_S, partial=True)
    except SetupError as exc:
        return {"h2d_gbps": None, "d2h_gbps": None, "reason": "the bandwidth probe failed: %s" % exc.message[:300]}
    found = answer.bandwidth
    if found is None:
        return {"h2d_gbps": None, "d2h_gbps": None, "reason": "the probe stopped before timing copies"}
    return found.to_dict()


def header_text(ctx: SweepContext) -> str:
    """The sweep header's line on the images' path: ``data: generated:512 (real, host-fed); link: host->GPU
    11.8 GB/s, GPU->host 12.6 GB/s`` (each part only where there is something to say)."""
    parts = []
    if ctx.plan.data_kinds:
        parts.append("data: %s, each model's both kinds side by side" % ctx.plan.data_origin().replace(",", " and "))
    elif ctx.plan.data_dir:
        parts.append("data: %s (real, decoded on the host)" % ctx.plan.data_origin())
    timed = ctx.meta.environment.get("link_bandwidth") if ctx.meta is not None else None
    if isinstance(timed, dict) and timed.get("h2d_gbps") and timed.get("d2h_gbps"):
        parts.append("link: host->GPU %.1f GB/s, GPU->host %.1f GB/s" % (timed["h2d_gbps"], timed["d2h_gbps"]))
    return "; ".join(parts)
