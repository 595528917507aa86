"""Is the machine quiet? (issue 22.6): doctor checks, and a sweep warns once at its start, about other GPU
processes, persistence mode, the power limit, application clocks, the PCIe width, the CPU governor and a
laptop on battery; each finding with what to do."""

import os

import pytest
from test_doctor import FAKE_DIR, check, doctor_json

from tfcnnwrap.environment import quiet

POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="the stand-in nvidia-smi is a shebang script")
NOISY = {"FAKE_NVSMI_QUIET": "Disabled,200.00,250.00,1380,1530,8,16", "FAKE_NVSMI_APPS": "4242,/usr/bin/python3,1024"}

# The shape nvidia-smi prints with --format=csv,noheader,nounits: ", " between fields, [N/A] / [Not Supported]
# where a board or a Windows (WDDM) driver has no figure.
DATACENTER = "0, Enabled, 300.00, 300.00, 1410, 1410, 16, 16\n1, Enabled, 250.00, 300.00, 1410, 1410, 8, 16\n"
GEFORCE_WINDOWS = "0, [N/A], 175.00, 175.00, [N/A], [N/A], 16, 16\n"
APPS = "12345, /usr/bin/python3, 15870\n2222, C:\\Program Files\\app, with comma.exe, [N/A]\n"


def test_gpu_state_parses_numbers_words_and_not_available():
    gpus = quiet.parse_gpu_state(DATACENTER + "garbage line\n")
    assert sorted(gpus) == [0, 1]
    assert gpus[1]["power.limit"] == 250.0 and gpus[1]["pcie.link.width.current"] == 8.0
    assert gpus[0]["persistence_mode"] == "Enabled"
    windows = quiet.parse_gpu_state(GEFORCE_WINDOWS)[0]
    assert windows["persistence_mode"] is None and windows["clocks.applications.graphics"] is None


def test_compute_apps_keep_a_name_with_a_comma_and_memory_not_available():
    apps = quiet.parse_compute_apps(APPS + "No running processes found\n")
    assert apps == [
        {"pid": 12345, "name": "/usr/bin/python3", "used_mib": 15870.0},
        {"pid": 2222, "name": "C:\\Program Files\\app, with comma.exe", "used_mib": None},
    ]
    assert quiet.parse_compute_apps("") == []


def test_findings_name_each_problem_and_its_fix():
    found = quiet.gpu_findings(quiet.parse_gpu_state(DATACENTER), quiet.parse_compute_apps(APPS))
    text = "\n".join("%s: %s" % f for f in found)
    assert "other processes use the GPU: python3 (pid 12345)" in text
    assert "GPU 1: power limit 250 W, below its default 300 W: `sudo nvidia-smi -i 1 -pl 300`" in text
    assert "GPU 1: PCIe link x8 of x16" in text
    assert "GPU 0" not in text  # a quiet GPU says nothing
    assert quiet.gpu_findings(quiet.parse_gpu_state(GEFORCE_WINDOWS), [], on_linux=False) == []


def test_persistence_off_and_application_clocks():
    gpus = quiet.parse_gpu_state("0, Disabled, 250.00, 250.00, 1380, 1530, 16, 16\n")
    text = "\n".join("%s: %s" % f for f in quiet.gpu_findings(gpus, []))
    assert "persistence mode is off" in text and "`sudo nvidia-smi -pm 1`" in text
    assert "application clocks set to 1380 MHz (default 1530 MHz)" in text and "-rac" in text


@pytest.mark.slow
def test_cpu_governor_and_battery_from_sys(tmp_path):
    for cpu, governor in (("cpu0", "powersave"), ("cpu1", "performance")):
        path = tmp_path / "sys/devices/system/cpu" / cpu / "cpufreq"
        path.mkdir(parents=True)
        (path / "scaling_governor").write_text(governor + "\n")
    battery = tmp_path / "sys/class/power_supply/BAT0"
    battery.mkdir(parents=True)
    (battery / "type").write_text("Battery\n")
    (battery / "status").write_text("Discharging\n")
    found = quiet.cpu_findings(str(tmp_path))
    assert found == [
        ("CPU frequency governor: powersave", "`sudo cpupower frequency-set -g performance` for the benchmark"),
        ("running on battery (BAT0)", "plug in the charger"),
    ]
    (battery / "status").write_text("Charging\n")
    (tmp_path / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").write_text("performance\n")
    assert quiet.cpu_findings(str(tmp_path)) == []


@pytest.mark.slow
@POSIX_ONLY
def test_doctor_says_the_machine_is_not_quiet(cli, fake_tf, tmp_path):
    env = dict(NOISY, PATH=str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", ""), FAKE_TF_GPUS="GeForce RTX 2070")
    report = doctor_json(cli, fake_tf("2.4.0"), env=env, cwd=tmp_path)
    whats = [f["what"] for f in report["quiet"]]
    assert any("python3 (pid 4242)" in w for w in whats) and any("power limit 200 W" in w for w in whats)
    row = check(report, "machine quiet")
    assert row["status"] == "warn" and "sudo nvidia-smi -pm 1" in row["hint"]
    quiet_env = dict(env, FAKE_NVSMI_QUIET="Enabled,250.00,250.00,1380,1380,16,16", FAKE_NVSMI_APPS="")
    calm = doctor_json(cli, fake_tf("2.4.0"), env=quiet_env, cwd=tmp_path)
    assert [f for f in calm["quiet"] if "GPU" in f["what"]] == []


@pytest.mark.slow
@POSIX_ONLY
def test_a_sweep_warns_once_at_its_start(cli, fake_tf, tmp_path):
    from conftest import make_vendor

    vendor = make_vendor(tmp_path / "vendor")
    env = dict(
        NOISY,
        PATH=str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", ""),
        FAKE_NVSMI_SAMPLES="60,1800,97",
        FAKE_TFCNN_IPS="alexnet=2251.87/2266.6",
    )
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        fake_tf("1.12.0", dist="tensorflow-gpu"),
        "--device",
        "gpu",
        "--models",
        "alexnet",
        "--runs",
        "2",
        "--out",
        tmp_path / "out",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result
    assert result.stderr.count("warning: other processes use the GPU: python3 (pid 4242): stop them") == 1, result
    assert result.stderr.count("power limit 200 W, below its default 250 W") == 1, result
