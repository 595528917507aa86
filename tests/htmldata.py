"""Helpers of the HTML tests (test_html, test_site, test_browser): sweeps and bundles to render, the text a
page shows, the numbers a JSON output holds and how the pages write them."""

import math
import random
from html.parser import HTMLParser
from pathlib import Path

from bundledata import log_text
from sweepdata import SEED_2070, seed_runs, write_sweep

HOSTILE_GPU = '"><img src=x onerror=alert(1)> <script>alert(2)</script>'


def seed_sweep(path, factor=1.0, gpus=None, seed=1, logs=False):
    """The seed's five models at ``factor`` x the seed's 2070 figures, 3 runs each with a little noise."""
    rng = random.Random(seed)
    values = {
        k: [round(v[0] * factor * (1 + rng.uniform(-0.01, 0.01)), 2) for v in [vs] * 3] for k, vs in seed_runs().items()
    }
    path = write_sweep(path, values, gpus=gpus)
    if logs:
        for (model, batch), vals in values.items():
            for run, value in enumerate(vals, 1):
                # a whole tf_cnn_benchmarks log (header, step lines, total), as verify asks of a bundle's
                (path / "logs" / ("%s-bs%d-run%d.log" % (model, batch, run))).write_text(
                    log_text(model, batch, value), encoding="utf-8"
                )
    return path


def write_bundle(path, gpu="GeForce RTX 2070", factor=1.0, created="2026-11-30T10:15:00Z", logs=True, **extra):
    """A real bundle as `export` writes it (gzip'd JSON: format, id = sha256 of its content, tool_version,
    created_at, conditions, runs, summary, logs with each log's sha256), so `verify` and `site` check it true.
    ``logs`` None: exported with --no-logs (no logs key; the runs keep their sweep's log paths)."""

    from tfcnnwrap.share import bundle as bundles

    runs, log_texts = [], {}
    for model, value in sorted(SEED_2070.items()):
        batch = {"alexnet": 512, "resnet152": 32}.get(model, 64)
        for run in (1, 2):
            name = "%s-bs%d-run%d.log" % (model, batch, run)
            ips = round(value * factor * (1 + 0.002 * run), 2)
            runs.append(
                {
                    "model": model,
                    "batch_size": batch,
                    "run": run,
                    "status": "ok",
                    "images_per_sec": ips,
                    "exit_code": 0,
                    "duration_s": 30.0,
                    "started_at": created,
                    "log": name if logs else "logs/" + name,
                    "command": ["python"],
                    "num_gpus": 1,
                }
            )
            text = log_text(model, batch, ips)
            log_texts[name] = {"sha256": bundles.sha256_text(text), "text": text}
    content = {
        "format": 1,
        "tool_version": "0.1.0",
        "created_at": created,
        "conditions": {
            "gpu": gpu,
            "precision": "fp32",
            "xla": "no",
            "num_gpus": 1,
            "variable_update": "parameter_server",
            "data": "synthetic",
        },
        "runs": runs,
        "summary": [],
    }
    if logs:
        content["logs"] = log_texts
    content.update(extra)
    Path(path).write_bytes(bundles.to_bytes(bundles.with_id(content)))
    return Path(path)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts, self.links, self.skip = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self.skip += 1
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def page_text(html):
    """(the text a reader sees, every href/src) of a page."""
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.parts), parser.links


def json_rows(payload):
    """The rows of a `--format json` output: a bare list, or the envelope's ``rows``."""
    return payload["rows"] if isinstance(payload, dict) and "rows" in payload else payload


def numbers(value):
    """Every number in a JSON value (booleans are not numbers here)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return []


def as_written(value):
    """How the pages write a number (docs/usage.md): whole numbers whole, others with two decimals, below
    0.01 three significant digits."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return None
    if value != 0 and abs(value) < 0.01:
        return "%.3g" % value
    return "%.2f" % value


def missing_numbers(payload, text):
    """The numbers of a JSON output that the page's text does not show."""
    return sorted({as_written(n) for n in numbers(json_rows(payload)) if as_written(n) and as_written(n) not in text})
