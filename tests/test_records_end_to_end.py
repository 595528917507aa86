"""Records end to end (issue 21.3): sweep.json is one `SweepMeta` from the sweep's start to its summary, a
resume adds a typed `Resumption`, and doctor and the environment are records that own their JSON."""

import json

import pytest
from test_doctor import CHECKOUT, synthetic_report
from test_sweep import ips_env, sweep_args

from tfcnnwrap.environment import doctor, envinfo
from tfcnnwrap.environment.probe import ProbeAnswer
from tfcnnwrap.results.records import Resumption, SweepMeta

# sweep.json's keys in the order the sweep has always written them (results-format.md)
WRITTEN_KEYS = [
    "format",
    "tool",
    "tfcnnwrap_version",
    "created_at",
    "plan",
    "device",
    "command_template",
    "script_dir",
    "upstream",
    "tensorflow_version",
    "python",
    "vendor_dir",
    "argv",
    "environment",
]


@pytest.mark.slow
def test_a_new_and_a_resumed_sweep_write_one_sweep_meta(cli, tmp_path, vendor, fake_tf):
    tf112 = fake_tf("1.12.0", dist="tensorflow-gpu")
    out = tmp_path / "sweep"
    args = sweep_args(vendor, tf112, out, "--models", "alexnet", "--runs", "1")
    assert cli(*args, cwd=tmp_path, env=ips_env(tmp_path / "state")).returncode == 0
    written = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert list(written) == WRITTEN_KEYS
    assert SweepMeta.from_dict(written).to_dict() == written
    assert written["environment"]["target_python"]["version"] and written["environment"]["command_line"]["argv"]

    again = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--resume",
        out,
        cwd=tmp_path,
        env=ips_env(tmp_path / "state"),
    )
    assert again.returncode == 0, again
    resumed = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert list(resumed) == WRITTEN_KEYS + ["resumed"]
    assert {k: v for k, v in resumed.items() if k != "resumed"} == written
    (entry,) = resumed["resumed"]
    assert list(entry) == ["at", "python", "vendor_dir", "tfcnnwrap_version", "argv"]
    assert entry["python"] == written["python"] and entry["argv"][-2:] == ["--resume", str(out)]


def test_sweep_meta_reads_where_a_sweep_ran_and_its_resumes_typed():
    data = {
        "format": 1,
        "plan": {},
        "python": "/envs/tf/bin/python",
        "vendor_dir": "/v",
        "argv": ["tfcnnwrap"],
        "resumed": [
            {
                "at": "2026-12-01T10:00:00Z",
                "python": "/p",
                "vendor_dir": "/v",
                "argv": ["a", "b"],
                "tfcnnwrap_version": "0.1.0",
                "note": "kept",
            }
        ],
    }
    meta = SweepMeta.from_dict(data)
    assert (meta.python, meta.vendor_dir, meta.argv) == ("/envs/tf/bin/python", "/v", ("tfcnnwrap",))
    assert meta.resumed == (Resumption("2026-12-01T10:00:00Z", "/p", "/v", "0.1.0", ("a", "b"), {"note": "kept"}),)
    assert meta.to_dict() == dict(
        data,
        device=None,
        tfcnnwrap_version=None,
        created_at=None,
        environment={},
        tensorflow_version=None,
        upstream={"url": None, "branch": None, "commit": None},
    )
    twice = meta.resumed_by(Resumption(at="later"))
    assert [r.at for r in twice.resumed or ()] == ["2026-12-01T10:00:00Z", "later"] and meta.resumed is not None


@pytest.mark.slow
def test_environment_is_a_record_that_reads_back_its_own_json(monkeypatch):
    monkeypatch.setenv("TFCNNWRAP_NVIDIA_SMI", "none")
    probe = ProbeAnswer(python="/envs/tf/bin/python", python_version="3.6.8", tf_version="1.12.0", gpus=("A",))
    env = envinfo.capture_environment(
        probe=probe, manifest={"url": "u", "branch": "b", "commit": "c"}, argv=["tfcnnwrap", "sweep"]
    )
    assert isinstance(env, envinfo.Environment) and env.upstream.branch == "b" and env.gpus == ("A",)
    assert envinfo.Environment.from_json(env.to_json()) == env
    assert "probe_error" not in env.to_json()
    assert envinfo.Environment.from_json({"host": 7, "gpus": "A", "os": []}) == envinfo.Environment()


@pytest.mark.slow
def test_doctor_report_is_a_record_that_reads_back_its_own_json():
    report = synthetic_report(
        git="2.39.5",
        vendor=CHECKOUT,
        quiet=[{"what": "w", "fix": "f"}],
        bandwidth={"h2d_gbps": 2.5, "d2h_gbps": 2.75, "reason": None},
    ).with_readiness()
    assert isinstance(report.vendor, doctor.VendorInfo) and report.readiness is not None
    assert report.quiet == (doctor.Finding("w", "f"),)
    text = report.to_json()
    assert doctor.DoctorReport.from_json(text).to_json() == text
    assert text["bandwidth"] == {"h2d_gbps": 2.5, "d2h_gbps": 2.75, "reason": None}
    assert [row["check"] for row in text["checks"]][-2:] == [doctor.BANDWIDTH, "machine quiet"]
    assert list(text)[-5:] == ["ready", "blockers", "device", "device_note", "verdict"]


def test_a_fleet_task_record_is_read_as_a_host_run_whatever_its_shape():
    from tfcnnwrap.sweep.fleet import HostRun

    assert HostRun.from_json({"task": 1, "node": "n2", "exit_code": 0, "job_id": "7"}) == HostRun("n2", 0)
    assert HostRun.from_json({"node": "", "exit_code": True}) == HostRun()
    assert HostRun.from_json(["n2", 0]) == HostRun()
