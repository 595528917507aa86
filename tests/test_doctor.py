"""`doctor` against stand-in TensorFlow installs and a stand-in nvidia-smi, and the environment record."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean_error, make_fake_tf_env, make_vendor, site_packages

from tfcnnwrap.environment import doctor, envinfo
from tfcnnwrap.run import telemetry

FAKE_DIR = Path(__file__).resolve().parent / "fake"
POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="the stand-in nvidia-smi is a shebang script")
CONTRACT_KEYS = {
    "python",
    "tensorflow_version",
    "tensorflow_distribution",
    "gpus",
    "cuda_version",
    "cudnn_version",
    "recommended_branch",
    "git",
    "nvidia_smi",
    "vendor",
    "matmul",
}
NO_SMI = {telemetry.ENV_NVIDIA_SMI: "none"}
WITH_FAKE_SMI = {"PATH": str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", "")}


def doctor_json(cli, python, *extra, env=None, cwd=None):
    result = cli("doctor", "--python", python, "--format", "json", *extra, env=env, cwd=cwd)
    assert result.returncode == 0, result
    assert "Traceback" not in result.stdout + result.stderr, result
    return result.json()


def check(report, name):
    return next(row for row in report["checks"] if row["check"] == name)


@pytest.mark.slow
def test_tf_1_12_reports_its_version_and_branch_without_a_traceback(cli, fake_tf, tmp_path):
    report = doctor_json(cli, fake_tf("1.12.0", dist="tensorflow-gpu"), env=NO_SMI, cwd=tmp_path)
    assert CONTRACT_KEYS <= set(report)
    assert report["tensorflow_version"] == "1.12.0"
    assert report["tensorflow_distribution"] == "tensorflow-gpu"
    assert report["recommended_branch"] == "cnn_tf_v1.12_compatible"
    assert report["gpus"] is None  # the stand-in has no device_lib: cannot tell
    assert any("device_lib" in w for w in report["warnings"])
    # TF 1.12 cannot say its CUDA; the official tensorflow-gpu 1.12 build used CUDA 9 / cuDNN 7
    assert (report["cuda_version"], report["cudnn_version"]) == ("9", "7")
    assert "official" in report["cuda_source"]
    assert report["matmul"] is None and report["nvidia_smi"] is None and report["vendor"] is None
    assert report["legacy_keras_needed"] is False
    assert check(report, "GPUs TensorFlow sees")["status"] == "warn"


@pytest.mark.slow
def test_table_has_a_verdict_per_check(cli, fake_tf, tmp_path):
    result = cli("doctor", "--python", fake_tf("1.12.0", dist="tensorflow-gpu"), env=NO_SMI, cwd=tmp_path)
    assert result.returncode == 0, result
    out = result.stdout
    assert "1.12.0 (tensorflow-gpu)" in out and "cnn_tf_v1.12_compatible" in out
    assert "✓" in out and "!" in out
    assert "warning: could not list GPUs through device_lib" in out
    assert "run `python -m tfcnnwrap setup`" in out
    assert "add --matmul" in out
    assert result.stderr == ""


@pytest.mark.slow
def test_tf2_with_a_gpu_and_nvidia_smi(cli, fake_tf, tmp_path):
    env = dict(WITH_FAKE_SMI, FAKE_TF_GPUS="GeForce RTX 2070")
    report = doctor_json(cli, fake_tf("2.4.0"), env=env, cwd=tmp_path)
    assert report["gpus"] == ["GeForce RTX 2070"]
    assert (report["cuda_version"], report["cudnn_version"]) == ("11.2", "8")
    assert report["recommended_branch"] == "master"
    smi = report["nvidia_smi"]
    assert smi["driver_version"] == "417.35"
    assert smi["gpus"] == [
        {"index": 0, "name": "NVIDIA GeForce RTX 2070", "driver_version": "417.35", "memory_total_mib": 8192}
    ]
    assert all(row["status"] != "fail" for row in report["checks"]), report["checks"]


@pytest.mark.slow
def test_nvidia_smi_sees_a_gpu_tensorflow_does_not(cli, fake_tf, tmp_path):
    report = doctor_json(cli, fake_tf("2.4.0"), env=dict(WITH_FAKE_SMI, FAKE_TF_GPUS=""), cwd=tmp_path)
    assert report["gpus"] == []
    row = check(report, "GPUs TensorFlow sees")
    assert row["status"] == "fail" and "nvidia-smi sees NVIDIA GeForce RTX 2070" in row["hint"]


@pytest.mark.slow
def test_matmul_that_the_stand_in_cannot_do_is_a_warning(cli, fake_tf, tmp_path):
    report = doctor_json(
        cli, fake_tf("2.4.0"), "--matmul", env=dict(NO_SMI, FAKE_TF_GPUS="GeForce RTX 2070"), cwd=tmp_path
    )
    assert report["matmul"] == {"cpu_gflops": None, "gpu_gflops": None, "speedup": None}
    assert any(w.startswith("matmul on /cpu:0 failed") for w in report["warnings"])
    assert check(report, doctor.MATMUL)["status"] == "fail"


@pytest.mark.slow
def test_no_tensorflow_at_all_is_exit_0_with_a_fix(cli, tmp_path):
    python = make_fake_tf_env(tmp_path / "env", "2.4.0", with_module=False, with_metadata=False)
    report = doctor_json(cli, python, env=NO_SMI, cwd=tmp_path)
    assert report["tensorflow_version"] is None and report["recommended_branch"] is None
    assert report["gpus"] is None
    assert any("-m pip install tensorflow" in w for w in report["warnings"])
    assert check(report, "TensorFlow")["status"] == "fail"


@pytest.mark.slow
def test_missing_interpreter_is_a_clean_exit_2(cli, tmp_path):
    result = cli("doctor", "--python", tmp_path / "nope" / "python", cwd=tmp_path)
    assert_clean_error(result, 2, "--python")


@pytest.mark.slow
def test_crashing_tensorflow_still_reports_its_version(cli, tmp_path):
    if os.name == "nt":
        pytest.skip("os.abort's exit code differs on Windows; the probe test covers the logic")
    python = make_fake_tf_env(tmp_path / "env", "1.12.0", dist="tensorflow-gpu")
    (site_packages(tmp_path / "env") / "tensorflow" / "__init__.py").write_text("import os\nos.abort()\n")
    report = doctor_json(cli, python, env=NO_SMI, cwd=tmp_path)
    assert report["tensorflow_version"] == "1.12.0"
    assert report["recommended_branch"] == "cnn_tf_v1.12_compatible"
    assert report["probe_complete"] is False
    assert any("SIGABRT" in w and "importing tensorflow" in w for w in report["warnings"])
    assert check(report, "TensorFlow")["status"] == "fail"
    assert "crashed or hung" in check(report, "TensorFlow")["hint"]


@pytest.mark.slow
def test_crash_before_any_version_is_known_is_not_called_missing(cli, tmp_path):
    if os.name == "nt":
        pytest.skip("os.abort's exit code differs on Windows")
    python = make_fake_tf_env(tmp_path / "env", "1.12.0", with_metadata=False)
    (site_packages(tmp_path / "env") / "tensorflow" / "__init__.py").write_text("import os\nos.abort()\n")
    report = doctor_json(cli, python, env=NO_SMI, cwd=tmp_path)
    assert report["tensorflow_version"] is None and report["probe_complete"] is False
    assert not any("pip install tensorflow" in w for w in report["warnings"])
    assert check(report, "TensorFlow")["value"] == "unknown"


@pytest.mark.slow
def test_import_error_shows_in_the_tensorflow_check(cli, fake_tf, tmp_path):
    env = dict(NO_SMI, FAKE_TF_IMPORT_ERROR="DLL load failed: The specified module could not be found.")
    report = doctor_json(cli, fake_tf("1.12.0", dist="tensorflow-gpu"), env=env, cwd=tmp_path)
    row = check(report, "TensorFlow")
    assert row["status"] == "fail" and "conda activate" in row["hint"]
    assert report["tensorflow_version"] == "1.12.0"


@pytest.mark.slow
def test_vendor_checkout_branch_and_commit(cli, fake_tf, tmp_path):
    make_vendor(tmp_path / "vendor")
    report = doctor_json(cli, fake_tf("1.12.0", dist="tensorflow-gpu"), env=NO_SMI, cwd=tmp_path)
    assert report["vendor"]["branch"] == "cnn_tf_v1.12_compatible"
    assert report["vendor"]["commit"] == "0" * 40
    assert check(report, "vendor checkout")["status"] == "ok"

    newer = doctor_json(cli, fake_tf("2.4.0"), "--vendor-dir", tmp_path / "vendor", env=NO_SMI)
    row = check(newer, "vendor checkout")
    assert row["status"] == "warn" and "calls for master" in row["hint"]


@pytest.mark.slow
@pytest.mark.parametrize("tf_keras, status", [(False, "fail"), (True, "ok")])
def test_keras_3_needs_tf_keras(cli, fake_tf, tmp_path, tf_keras, status):
    report = doctor_json(cli, fake_tf("2.17.0", tf_keras=tf_keras), env=NO_SMI, cwd=tmp_path)
    assert report["legacy_keras_needed"] is True and report["tf_keras"] is tf_keras
    assert check(report, "tf-keras")["status"] == status


@pytest.mark.slow
def test_tensorflow_older_than_every_branch_gets_no_branch_but_no_error(cli, fake_tf, tmp_path):
    report = doctor_json(cli, fake_tf("0.12.1"), env=NO_SMI, cwd=tmp_path)
    assert report["recommended_branch"] is None
    assert any("--branch" in w for w in report["warnings"])


@pytest.mark.slow
@POSIX_ONLY
def test_no_git_is_reported_not_raised(cli, fake_tf, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = dict(NO_SMI, PATH=str(empty), GIT_PYTHON_GIT_EXECUTABLE="")
    report = doctor_json(cli, fake_tf("1.12.0", dist="tensorflow-gpu"), env=env, cwd=tmp_path)
    assert report["git"] is None
    assert check(report, "git")["status"] == "fail"


@pytest.mark.slow
def test_git_version_is_found_here():
    version, path = doctor.git_info()
    assert version and version[0].isdigit() and path


def synthetic_report(**overrides):
    report = {
        "python": "/envs/tf/bin/python",
        "python_version": "3.6.8",
        "tensorflow_version": "1.12.0",
        "tensorflow_distribution": "tensorflow-gpu",
        "tensorflow_location": "/envs/tf/lib/site-packages",
        "tensorflow_importable": True,
        "version_source": "metadata",
        "gpus": ["GeForce RTX 2070"],
        "cuda_version": "9",
        "cudnn_version": "7",
        "cuda_source": "tensorflow build info",
        "is_cuda_build": True,
        "tf_keras": False,
        "legacy_keras_needed": False,
        "recommended_branch": "cnn_tf_v1.12_compatible",
        "branch_reason": "its own branch",
        "git": None,
        "git_path": None,
        "nvidia_smi": None,
        "vendor": None,
        "matmul": {"cpu_gflops": 180.0, "gpu_gflops": 7200.0, "speedup": 40.0},
        "warnings": ["look here"],
        "probe_complete": True,
        "probe_stage": "done",
    }
    report.update(overrides)
    return doctor.DoctorReport.from_json(report).with_checks()


@pytest.mark.slow
def test_ascii_console_gets_words_instead_of_symbols(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")

    class AsciiStream(io.StringIO):
        encoding = "ascii"

    stream = AsciiStream()
    doctor.print_table(synthetic_report(), stream=stream)
    out = stream.getvalue()
    out.encode("ascii")  # nothing a cp1252/ascii console cannot print
    assert "FAIL" in out and "ok" in out  # git is missing, Python is fine
    assert "CPU 180.0 GFLOP/s, GPU 7200.0 GFLOP/s, GPU 40.0x faster" in out
    assert "warning: look here" in out
    assert "not ready: vendor checkout, git" in out


CHECKOUT = {
    "dir": "vendor",
    "branch": "cnn_tf_v1.12_compatible",
    "commit": "0" * 40,
    "url": "u",
    "tf_version": "1.12.0",
    "script_present": True,
    "branch_source": "rule",
    "branch_warning": None,
}


@pytest.mark.slow
def test_verdict_line_names_the_device_sweep_would_pick(monkeypatch):
    monkeypatch.setenv("TFCNNWRAP_NVIDIA_SMI", "none")
    ready = synthetic_report(git="2.39.5", vendor=CHECKOUT)
    assert doctor.verdict(ready) == "ready: a sweep would run on the GPU (GeForce RTX 2070)"
    assert doctor.verdict(synthetic_report(git="2.39.5", gpus=[], vendor=CHECKOUT)) == (
        "ready: a sweep would run on the CPU (TensorFlow sees no GPU)"
    )
    # TensorFlow cannot tell and there is no nvidia-smi: sweep --device auto runs on the CPU, and so says doctor
    assert doctor.verdict(synthetic_report(git="2.39.5", gpus=None, vendor=CHECKOUT)) == (
        "ready: a sweep would run on the CPU (TensorFlow could not say whether it sees a GPU)"
    )


@pytest.mark.slow
def test_cannot_tell_with_nvidia_smi_is_the_gpu_as_sweep_decides(monkeypatch):
    from tfcnnwrap.environment.probe import resolve_device

    monkeypatch.setenv("TFCNNWRAP_NVIDIA_SMI", str(FAKE_DIR / "nvidia-smi"))
    smi = {
        "path": "nvidia-smi",
        "gpus": [{"name": "NVIDIA GeForce RTX 2070", "driver_version": "417.35", "memory_total_mib": 8192}],
    }
    report = synthetic_report(git="2.39.5", gpus=None, vendor=CHECKOUT, nvidia_smi=smi).with_readiness().to_json()
    assert report["device"] == resolve_device("auto", type("P", (), {"gpus": None}))[0] == "gpu"
    assert report["ready"] is True
    assert report["verdict"] == (
        "ready: a sweep would run on the GPU (nvidia-smi sees NVIDIA GeForce RTX 2070; TensorFlow could not say)"
    )


@pytest.mark.slow
def test_readiness_blockers():
    assert doctor.readiness(synthetic_report(git="2.39.5", vendor=CHECKOUT)).blockers == []
    # no checkout: not ready, and then git (which setup needs) is a failure too
    assert doctor.readiness(synthetic_report()).blockers == ["vendor checkout", "git"]
    # a checkout is there: sweeps need no git
    facts = doctor.readiness(synthetic_report(vendor=CHECKOUT))
    assert facts.ready and facts.blockers == []
    mismatch = dict(CHECKOUT, branch_warning="fetched for TensorFlow 2.4")
    assert doctor.readiness(synthetic_report(git="2.39.5", vendor=mismatch)).blockers == ["vendor checkout"]
    gone = dict(CHECKOUT, script_present=False)
    assert doctor.readiness(synthetic_report(git="2.39.5", vendor=gone)).ready is False
    keras = synthetic_report(git="2.39.5", vendor=CHECKOUT, tensorflow_version="2.17.0", legacy_keras_needed=True)
    assert doctor.readiness(keras).blockers == ["tf-keras"]
    broken = synthetic_report(git="2.39.5", vendor=CHECKOUT, tensorflow_importable=False)
    assert doctor.readiness(broken).blockers == ["TensorFlow"]


@pytest.mark.slow
def test_slow_gpu_matmul_is_a_warning():
    report = synthetic_report(matmul={"cpu_gflops": 180.0, "gpu_gflops": 200.0, "speedup": 1.1}).to_json()
    assert check(report, doctor.MATMUL)["status"] == "warn"


# --- envinfo --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_capture_environment_holds_the_listed_facts(fake_tf, monkeypatch):
    monkeypatch.setenv("PATH", str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv(telemetry.ENV_NVIDIA_SMI, raising=False)
    probe = {
        "python": "/envs/tf/bin/python",
        "python_version": "3.6.8",
        "tensorflow_version": "1.12.0",
        "tensorflow_distribution": "tensorflow-gpu",
        "gpus": ["GeForce RTX 2070"],
        "cuda_version": "9.0",
        "cudnn_version": "7",
    }
    manifest = {
        "url": "https://github.com/tensorflow/benchmarks.git",
        "branch": "cnn_tf_v1.12_compatible",
        "commit": "a" * 40,
        "tf_version": "1.12.0",
    }
    argv = ["tfcnnwrap", "sweep", "--models", "resnet50", "--", "--use_fp16=True"]
    from tfcnnwrap.environment.probe import ProbeAnswer

    env = envinfo.capture_environment(probe=ProbeAnswer.from_json(probe), manifest=manifest, argv=argv).to_json()
    assert env["host"]
    assert env["os"]["system"] and env["os"]["platform"]
    assert env["cpu_model"]
    assert env["cpu_logical_cores"] >= 1
    assert env["ram_bytes"] > 100 * 2**20
    assert env["tfcnnwrap_python"] == {"path": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3]}
    assert env["target_python"] == {"path": "/envs/tf/bin/python", "version": "3.6.8"}
    assert env["tensorflow_version"] == "1.12.0" and env["tensorflow_distribution"] == "tensorflow-gpu"
    assert env["gpus"] == ["GeForce RTX 2070"]
    assert (env["cuda_version"], env["cudnn_version"]) == ("9.0", "7")
    if os.name != "nt":
        assert env["nvidia_driver"] == "417.35"
        assert env["nvidia_smi_gpus"][0]["name"] == "NVIDIA GeForce RTX 2070"
    assert env["upstream"] == {"url": manifest["url"], "branch": manifest["branch"], "commit": "a" * 40}
    assert env["tfcnnwrap_version"]
    assert env["command_line"]["argv"] == argv
    assert env["command_line"]["text"].endswith("--use_fp16=True")
    assert env["captured_at"].endswith("Z")


@pytest.mark.slow
def test_capture_environment_asks_the_probe_itself(fake_tf):
    env = envinfo.capture_environment(python=fake_tf("1.12.0", dist="tensorflow-gpu")).to_json()
    assert env["tensorflow_version"] == "1.12.0"
    assert env["upstream"] == {"url": None, "branch": None, "commit": None}


@pytest.mark.slow
def test_capture_environment_never_raises(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise OSError("no such thing")

    monkeypatch.setattr(envinfo, "_read_text", broken)
    monkeypatch.setattr(envinfo, "_sysctl", broken)
    monkeypatch.setattr(envinfo.socket, "gethostname", broken)
    monkeypatch.setattr(envinfo, "_windows_cpu_model", broken)
    monkeypatch.setattr(envinfo, "_windows_ram_bytes", broken)
    env = envinfo.capture_environment(python=tmp_path / "no-python", manifest="not a dict").to_json()
    assert env["host"] is None
    assert env["tensorflow_version"] is None
    assert "--python" in env["probe_error"]
    assert env["upstream"]["url"] is None
    assert env["cpu_logical_cores"] >= 1  # os.cpu_count still answers


def test_command_line_for_python_dash_m(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(Path("x") / "tfcnnwrap" / "__main__.py"), "doctor", "--python", "a b"])
    cmd = envinfo.command_line().to_json()
    assert cmd["argv"] == [sys.executable, "-m", "tfcnnwrap", "doctor", "--python", "a b"]
    assert ('"a b"' if os.name == "nt" else "'a b'") in cmd["text"]
    given = envinfo.command_line([str(Path("t") / "__main__.py"), "sweep"]).to_json()  # what sweep passes: sys.argv
    assert given["argv"] == [sys.executable, "-m", "tfcnnwrap", "sweep"]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TFCNNWRAP_OLD_PYTHON"), reason="set TFCNNWRAP_OLD_PYTHON to e.g. a Python 3.6")
def test_doctor_questions_an_old_python(cli, tmp_path):
    """The seed's interpreter is Python 3.6 with TF 1.12: the probe must run there."""
    env_dir = tmp_path / "old-env"
    subprocess.run(
        [os.environ["TFCNNWRAP_OLD_PYTHON"], "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120
    )
    python = make_fake_tf_env(env_dir, "1.12.0", dist="tensorflow-gpu")
    report = doctor_json(cli, python, env=NO_SMI, cwd=tmp_path)
    old_version = (
        subprocess.run(
            [os.environ["TFCNNWRAP_OLD_PYTHON"], "-c", "import platform; print(platform.python_version())"],
            stdout=subprocess.PIPE,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .strip()
    )
    assert report["python_version"] == old_version
    assert report["tensorflow_version"] == "1.12.0"
    assert report["recommended_branch"] == "cnn_tf_v1.12_compatible"
    assert report["probe_complete"] is True


@pytest.mark.slow
def test_a_branch_chosen_with_setup_branch_is_not_second_guessed(cli, fake_tf, tmp_path):
    vendor = make_vendor(tmp_path / "vendor", branch="cnn_tf_v1.11_compatible")
    manifest = json.loads((vendor / "tfcnnwrap-setup.json").read_text())
    manifest["branch_source"] = "--branch"
    (vendor / "tfcnnwrap-setup.json").write_text(json.dumps(manifest))
    report = doctor_json(cli, fake_tf("1.12.0", dist="tensorflow-gpu"), env=NO_SMI, cwd=tmp_path)
    row = check(report, "vendor checkout")
    assert row["status"] == "ok" and "--branch" in row["hint"]
    assert report["recommended_branch"] == "cnn_tf_v1.12_compatible"


# --- ready and --strict ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_strict_exits_1_until_a_sweep_would_run(cli, fake_tf, tmp_path):
    python = fake_tf("2.4.0")
    env = dict(WITH_FAKE_SMI, FAKE_TF_GPUS="GeForce RTX 2070")
    report = doctor_json(cli, python, env=env, cwd=tmp_path)
    assert report["ready"] is False and report["blockers"] == ["vendor checkout"]
    strict = cli("doctor", "--python", python, "--strict", env=env, cwd=tmp_path)
    assert strict.returncode == 1, strict
    assert strict.stdout.rstrip().splitlines()[-1] == "not ready: vendor checkout"
    assert cli("doctor", "--python", python, env=env, cwd=tmp_path).returncode == 0  # without --strict: facts

    make_vendor(tmp_path / "vendor", branch="master", tf_version="2.4.0")
    report = doctor_json(cli, python, env=env, cwd=tmp_path)
    assert report["ready"] is True and report["device"] == "gpu"
    strict = cli("doctor", "--python", python, "--strict", env=env, cwd=tmp_path)
    assert strict.returncode == 0, strict
    assert strict.stdout.rstrip().splitlines()[-1] == "ready: a sweep would run on the GPU (GeForce RTX 2070)"


@pytest.mark.slow
def test_strict_json_still_prints_the_report(cli, fake_tf, tmp_path):
    result = cli(
        "doctor",
        "--python",
        fake_tf("2.17.0", tf_keras=False),
        "--strict",
        "--format",
        "json",
        env=NO_SMI,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ready"] is False and "tf-keras" in report["blockers"]
    assert report["verdict"].startswith("not ready: ")


@pytest.fixture
def tf112(fake_tf):
    return fake_tf("1.12.0", dist="tensorflow-gpu")


@pytest.mark.slow
def test_doctor_never_says_the_seed(cli, tf112, tmp_path):
    # "the seed" is the project's private name for the original write-up; a user does not know it
    result = cli("doctor", "--python", tf112, "--vendor-dir", tmp_path / "vendor", cwd=tmp_path)
    assert result.returncode == 0, result
    assert "seed" not in (result.stdout + result.stderr).lower(), result.stdout


@pytest.mark.slow
def test_doctor_reports_the_machine_from_the_sweeps_environment_snapshot(cli, tmp_path, fake_tf):
    result = cli(
        "doctor",
        "--python",
        fake_tf("2.4.0"),
        "--format",
        "json",
        "--vendor-dir",
        tmp_path,
        env={"FAKE_TF_GPUS": "Tesla V100", "TFCNNWRAP_NVIDIA_SMI": "none"},
    )
    assert result.returncode == 0, result
    report = result.json()
    assert report["gpus"] == ["Tesla V100"] and report["tensorflow_version"] == "2.4.0"
    assert report["machine"]["host"] and report["machine"]["cpu_logical_cores"] >= 1
    assert report["nvidia_smi"] is None and report["machine"]["nvidia_driver"] is None
