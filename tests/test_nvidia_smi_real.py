"""The nvidia-smi parsing of doctor's "is the machine quiet?" checks and of telemetry, fed real published
outputs (tests/data/nvidia-smi/README.md cites each): a datacenter A100 on Linux (535.129.03), an RTX 4070
laptop on the Windows driver (566.36), the 535 driver's --help-query-gpu, an older driver's throttle-reason
names and a GTX 1080's supported-reasons mask."""

import re
from pathlib import Path

import pytest

from tfcnnwrap.environment import quiet
from tfcnnwrap.run import gpusamples, telemetry

DATA = Path(__file__).resolve().parent / "data" / "nvidia-smi"
A100 = "q-a100-sxm4-40gb-535.129.03-linux.txt"
LAPTOP = "q-rtx4070-laptop-566.36-wddm.txt"
HELP_535 = "help-query-gpu-535.129.03.txt"


def read(name):
    return (DATA / name).read_text(encoding="utf-8")


def q_values(text):
    """{("Section", "Sub", ..., "Label"): value} of the GPU in an ``nvidia-smi -q`` text (four spaces a
    level)."""
    values, path = {}, []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("$", "=")):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4 - 1  # the GPU's own lines are indented once
        if depth < 0:
            continue  # the log's header and the "GPU 00000000:2F:00.0" line
        label, _, value = line.strip().partition(":")
        path = path[:depth] + [label.strip()]
        if value.strip():
            values[tuple(path)] = value.strip()
    return values


# -q label -> query field (NVIDIA's correspondence; nvidia-smi(1) and --help-query-gpu describe both)
Q_LABELS = {
    "persistence_mode": ("Persistence Mode",),
    "power.limit": ("GPU Power Readings", "Current Power Limit"),
    "power.default_limit": ("GPU Power Readings", "Default Power Limit"),
    "power.draw": ("GPU Power Readings", "Power Draw"),
    "clocks.applications.graphics": ("Applications Clocks", "Graphics"),
    "clocks.default_applications.graphics": ("Default Applications Clocks", "Graphics"),
    "clocks.sm": ("Clocks", "SM"),
    "pcie.link.gen.current": ("PCI", "GPU Link Info", "PCIe Generation", "Current"),
    "pcie.link.gen.max": ("PCI", "GPU Link Info", "PCIe Generation", "Max"),
    "pcie.link.width.current": ("PCI", "GPU Link Info", "Link Width", "Current"),
    "pcie.link.width.max": ("PCI", "GPU Link Info", "Link Width", "Max"),
    "temperature.gpu": ("Temperature", "GPU Current Temp"),
    "utilization.gpu": ("Utilization", "Gpu"),
    "memory.used": ("FB Memory Usage", "Used"),
    "memory.total": ("FB Memory Usage", "Total"),
    "name": ("Product Name",),
}
# "Clocks Event Reasons" labels -> nvml.h's names, as gpusamples.REASON_BITS spells them
REASON_LABELS = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clock_setting",
}


def reasons_of(values, section="Clocks Event Reasons"):
    """{nvml name: active?} of the -q's reasons block (HW Thermal/Power Brake Slowdown sit under HW Slowdown)."""
    return {REASON_LABELS[path[-1]]: value == "Active" for path, value in values.items() if path[0] == section}


def query_line(text, fields):
    """The line ``--query-gpu=FIELDS --format=csv,noheader,nounits`` prints for the -q's first GPU: units
    dropped (``400.00 W`` -> ``400.00``, ``16x`` -> ``16``), ``N/A`` as the CSV's ``[N/A]``, the active reasons
    as the bit mask."""
    values = q_values(text)
    bits = dict((name, bit) for bit, name in gpusamples.REASON_BITS)
    out = []
    for field in fields:
        if field == "index":
            out.append("0")
        elif field == "driver_version":  # the log's header, above the GPU
            out.append(re.search(r"^Driver Version +: (\S+)", text, re.M).group(1))
        elif field == "timestamp":
            out.append("2024/01/04 14:41:13.000")  # a sample's time: only its place in the line matters
        elif field in telemetry.REASON_FIELDS:
            mask = sum(bits[name] for name, active in reasons_of(values).items() if active)
            out.append("0x%016X" % mask)
        else:
            value = values[Q_LABELS[field]]
            number = re.fullmatch(r"(-?[\d.]+) ?(?:W|MHz|MiB|C|%|x)?", value)  # nounits: the number alone
            out.append("[N/A]" if value == "N/A" else number.group(1) if number else value)
    return ", ".join(out)


# -- the fields we ask for exist, and the reasons' names are the driver's ----------------------------------


def test_every_field_tfcnnwrap_queries_is_one_the_535_driver_lists():
    help_text = read(HELP_535)
    asked = set(quiet.GPU_FIELDS + telemetry.INFO_FIELDS + telemetry.LEGACY_FIELDS + telemetry.PCIE_FIELDS)
    missing = sorted(f for f in asked if '"%s"' % f not in help_text)
    assert missing == [], missing  # one unknown field and nvidia-smi refuses the whole query
    assert '"clocks_event_reasons.active" or "clocks_throttle_reasons.active"' in help_text


def test_choose_fields_picks_the_event_reasons_and_the_pcie_link_from_the_real_535_help(monkeypatch):
    asked = []
    monkeypatch.setattr(telemetry, "run_smi", lambda args, *a, **k: asked.append(args) or (0, read(HELP_535)))
    fields = telemetry.choose_fields("nvidia-smi")
    assert fields == telemetry.LEGACY_FIELDS + ("clocks_event_reasons.active",) + telemetry.PCIE_FIELDS
    assert asked == [["nvidia-smi", "--help-query-gpu"]]  # the help was enough: no trial query


@pytest.mark.parametrize(
    "name, section, count",
    [
        (A100, "Clocks Event Reasons", 9),
        (LAPTOP, "Clocks Event Reasons", 9),
        ("q-throttle-reasons-kubeflow-68.txt", "Clocks Throttle Reasons", 8),
    ],
)
def test_every_reason_a_real_driver_names_has_its_bit(name, section, count):
    named = reasons_of(q_values(read(name)), section)
    assert len(named) == count
    ours = {name for _, name in gpusamples.REASON_BITS}
    assert set(named) <= ours
    assert named["gpu_idle"] is True and not any(v for k, v in named.items() if k != "gpu_idle")  # both idle


def test_a_gtx_1080s_supported_reasons_mask_is_read_and_every_bit_has_a_name():
    header, value = read("query-throttle-supported-gtx1080.csv").split()
    assert header == "clocks_throttle_reasons.supported"
    mask = gpusamples.sample_number(value)
    assert mask == 0x1FF
    assert sorted(gpusamples.reason_names(mask)) == sorted(name for _, name in gpusamples.REASON_BITS)


# -- is the machine quiet? ------------------------------------------------------------------------------------


def test_the_a100_reads_persistence_off_and_nothing_else_to_fix():
    gpus = quiet.parse_gpu_state(query_line(read(A100), quiet.GPU_FIELDS))
    assert gpus == {
        0: {
            "index": 0.0,
            "persistence_mode": "Disabled",
            "power.limit": 400.0,
            "power.default_limit": 400.0,
            "clocks.applications.graphics": 1095.0,
            "clocks.default_applications.graphics": 1095.0,
            "pcie.link.width.current": 16.0,
            "pcie.link.width.max": 16.0,
        }
    }
    findings = quiet.gpu_findings(gpus, quiet.parse_compute_apps(""), on_linux=True)
    assert findings == [
        ("GPU 0: persistence mode is off (the driver re-initialises before each run)", "`sudo nvidia-smi -pm 1`")
    ]


def test_the_laptop_reads_n_a_application_clocks_and_a_boosted_power_limit_as_nothing_to_fix():
    gpus = quiet.parse_gpu_state(query_line(read(LAPTOP), quiet.GPU_FIELDS))
    gpu = gpus[0]
    assert gpu["persistence_mode"] == "Enabled"
    assert gpu["clocks.applications.graphics"] is None and gpu["clocks.default_applications.graphics"] is None
    assert (gpu["power.limit"], gpu["power.default_limit"]) == (61.24, 55.0)  # Dynamic Boost: above the default
    assert (gpu["pcie.link.width.current"], gpu["pcie.link.width.max"]) == (8.0, 8.0)  # a laptop's x8 is whole
    assert quiet.gpu_findings(gpus, [], on_linux=True) == []


# -- telemetry ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        (
            A100,
            {
                "temp_c": 22,
                "sm_clock_mhz": 210,
                "power_w": 52.12,
                "util_pct": 0,
                "memory_used_mib": 4,
                "reasons": 0x1,
                "pcie_gen": 4,
                "pcie_gen_max": 4,
                "pcie_width": 16,
                "pcie_width_max": 16,
            },
        ),
        (
            LAPTOP,
            {
                "temp_c": 42,
                "sm_clock_mhz": 210,
                "power_w": 1.97,
                "util_pct": 0,
                "memory_used_mib": 0,
                "reasons": 0x1,
                "pcie_gen": 4,
                "pcie_gen_max": 4,
                "pcie_width": 8,
                "pcie_width_max": 8,
            },
        ),
    ],
)
def test_a_sample_line_of_the_fields_the_535_driver_is_asked_for_reads_what_q_shows(name, expected):
    fields = telemetry.LEGACY_FIELDS + ("clocks_event_reasons.active",) + telemetry.PCIE_FIELDS
    line = query_line(read(name), fields)
    sample = telemetry.parse_sample_line(line, fields)
    assert sample is not None, line
    assert {k: sample[k] for k in expected} == expected
    assert gpusamples.reason_names(sample["reasons"]) == ["gpu_idle"]  # idle: benign, not throttled
    summary = gpusamples.summarize_samples([", ".join(fields), line])
    assert summary["samples"] == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, gpu",
    [
        (
            A100,
            {"index": 0, "name": "NVIDIA A100-SXM4-40GB", "driver_version": "535.129.03", "memory_total_mib": 40960},
        ),
        (
            LAPTOP,
            {
                "index": 0,
                "name": "NVIDIA GeForce RTX 4070 Laptop GPU",
                "driver_version": "566.36",
                "memory_total_mib": 8188,
            },
        ),
    ],
)
def test_query_gpus_reads_the_name_driver_and_memory_a_person_reads_in_q(monkeypatch, name, gpu):
    line = query_line(read(name), telemetry.INFO_FIELDS) + "\n"
    monkeypatch.setattr(telemetry, "find_nvidia_smi", lambda explicit=None: "nvidia-smi")
    monkeypatch.setattr(telemetry, "run_smi", lambda args, *a, **k: (0, line))
    info = telemetry.query_gpus()
    assert info == {"path": "nvidia-smi", "driver_version": gpu["driver_version"], "gpus": [gpu]}
