"""A CPU sweep of several counts runs tf_cnn_benchmarks' towers on /cpu:0, /cpu:1, ...: its report says towers
wherever it counts them, as its title does, never GPUs (issue 22.9: a CPU sweep names no GPU).

In process, on the docs' sample terminal (tests/test_doc_samples.py), against the CPU scaling sweep of the
docs' fixture; the JSON and CSV keep the contract's key, ``num_gpus``.
"""

import json
import re

import pytest
from test_doc_samples import run_sample


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_a_cpu_scaling_report_counts_towers(columns):
    lines, status = run_sample(["report", "results/cpu-scaling"], columns)
    text = "\n".join(lines)
    assert status == 0, text
    assert "GPU" not in text, text
    assert "Scaling (batch size per tower): speed-up over 1 tower" in " ".join(text.split()), text
    header = next(line for line in lines if line.startswith("model"))
    assert "towers" in header.split(), text


def test_a_cpu_scaling_report_in_markdown_counts_towers():
    lines, status = run_sample(["report", "results/cpu-scaling", "--format", "markdown"])
    assert status == 0 and "GPU" not in "\n".join(lines), lines
    assert "| model | towers | batch |" in "\n".join(lines)
    assert "### Scaling (batch size per tower): speed-up over 1 tower" in lines


def test_a_cpu_scalings_json_keeps_the_contracts_keys():
    lines, status = run_sample(["report", "results/cpu-scaling", "--format", "json"])
    rows = json.loads("\n".join(lines))["rows"]
    assert status == 0 and [(r["num_gpus"], r["efficiency_pct"]) for r in rows] == [
        (1, 100.0),
        (2, pytest.approx(2.09 / 2.21 / 2 * 100, abs=1e-6)),
    ]


def test_a_gpu_scaling_report_still_counts_gpus():
    lines, status = run_sample(["report", "results/egpu-F1.0"])
    assert status == 0 and "1 GPU" in lines[0], lines


def test_a_cpu_scalings_html_page_counts_towers():
    lines, status = run_sample(["report", "results/cpu-scaling", "--format", "html"])
    page = "\n".join(lines)
    assert status == 0, page
    text = re.sub(r"<[^>]+>", " ", page)
    assert not re.search(r"\bGPUs?\b", text), [m.group(0) for m in re.finditer(r".{40}\bGPUs?\b.{40}", text)]
    assert "towers" in text and "images/sec against tower count" in text
