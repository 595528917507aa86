"""The TensorFlow probe: version from metadata, full questions, and what survives a crash or a hang."""

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import make_fake_tf_env, site_packages

from tfcnnwrap.environment import _probe, probe
from tfcnnwrap.errors import SetupError

POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="signals and shebang scripts are POSIX")
FAKE_NVSMI = Path(__file__).resolve().parent / "fake" / "nvidia-smi"


def stand_in_tf(env_dir, version, body, dist="tensorflow"):
    """A venv whose ``import tensorflow`` runs ``body`` (with metadata for ``version``)."""
    python = make_fake_tf_env(env_dir, version, dist=dist)
    (site_packages(env_dir) / "tensorflow" / "__init__.py").write_text(body, encoding="utf-8")
    return python


@pytest.mark.slow
def test_version_mode_reads_metadata_without_importing(fake_tf):
    answer = probe.run_probe(fake_tf("1.12.0", dist="tensorflow-gpu"))
    assert answer.tf_version == "1.12.0"
    assert answer.distribution == "tensorflow-gpu"
    assert answer.version_source == "metadata"
    assert answer.importable is None  # never imported
    assert answer.complete is True and answer.stage == "done"
    assert answer.warnings == ()


@pytest.mark.slow
def test_version_comes_from_import_when_metadata_is_missing(fake_tf):
    answer = probe.run_probe(fake_tf("1.9.0", with_metadata=False))
    assert answer.tf_version == "1.9.0"
    assert answer.version_source == "import"
    assert answer.importable is True


@pytest.mark.slow
def test_full_mode_lists_gpus_and_build_info(fake_tf):
    python = fake_tf("2.4.0")
    answer = probe.run_probe(python, full=True, env={"FAKE_TF_GPUS": "GeForce RTX 2070,Tesla V100"})
    assert answer.gpus == ("GeForce RTX 2070", "Tesla V100")
    assert (answer.cuda_version, answer.cudnn_version, answer.is_cuda_build) == ("11.2", "8", True)
    none = probe.run_probe(python, full=True, env={"FAKE_TF_GPUS": ""})
    assert none.gpus == ()


@pytest.mark.slow
def test_tf1_without_device_lib_cannot_tell_its_gpus(fake_tf):
    answer = probe.run_probe(fake_tf("1.12.0", dist="tensorflow-gpu"), full=True)
    assert answer.tf_version == "1.12.0"
    assert answer.gpus is None
    assert any("device_lib" in w for w in answer.warnings)
    assert answer.complete is True


@pytest.mark.slow
def test_import_error_is_a_warning_not_a_failure(fake_tf):
    answer = probe.run_probe(
        fake_tf("2.4.0"), full=True, env={"FAKE_TF_IMPORT_ERROR": "DLL load failed: cudart64_110.dll"}
    )
    assert answer.tf_version == "2.4.0"
    assert answer.importable is False
    assert any("DLL load failed" in w for w in answer.warnings)


@pytest.mark.slow
def test_probe_prints_a_snapshot_after_every_stage(fake_tf):
    proc = subprocess.run(
        [str(fake_tf("2.4.0")), str(probe.PROBE_SCRIPT), "--full"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    stages = [
        json.loads(line[len(probe.MARKER) :])["stage"]
        for line in proc.stdout.decode().splitlines()
        if line.startswith(probe.MARKER)
    ]
    assert stages == ["metadata", "import", "build_info", "devices", "done"]


@pytest.mark.slow
@POSIX_ONLY
def test_a_crash_keeps_what_earlier_stages_learned(tmp_path):
    python = stand_in_tf(tmp_path / "env", "2.4.0", "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    answer = probe.run_probe(python, full=True, partial=True)
    assert answer.complete is False and answer.stage == "metadata"
    assert answer.tf_version == "2.4.0"
    warning = answer.warnings[-1]
    assert "SIGILL" in warning and "importing tensorflow" in warning and "AVX" in warning

    with pytest.raises(probe.ProbeFailed) as info:
        probe.run_probe(python, full=True)
    assert isinstance(info.value, SetupError)
    assert "SIGILL" in info.value.message and "--python" in info.value.message


@pytest.mark.slow
def test_a_hang_keeps_what_earlier_stages_learned(tmp_path):
    python = stand_in_tf(tmp_path / "env", "1.12.0", "import threading\nthreading.Event().wait()\n")
    answer = probe.run_probe(python, full=True, partial=True, timeout=3)
    assert answer.complete is False
    assert answer.tf_version == "1.12.0"
    assert "no answer within 3 s while importing tensorflow" in answer.warnings[-1]

    with pytest.raises(probe.ProbeTimeout) as info:
        probe.run_probe(python, full=True, timeout=0.5)
    assert "did not answer" in info.value.message


@pytest.mark.slow
def test_missing_interpreter_is_a_setup_error_naming_python(tmp_path):
    with pytest.raises(probe.InterpreterNotFound) as info:
        probe.run_probe(tmp_path / "no-such-python")
    assert "--python" in info.value.message
    assert info.value.exit_code == 2


@pytest.mark.slow
def test_a_directory_is_not_an_interpreter(tmp_path):
    with pytest.raises(probe.InterpreterNotFound) as info:
        probe.run_probe(tmp_path)
    assert "--python" in info.value.message


@pytest.mark.slow
@POSIX_ONLY
def test_a_program_that_is_not_python_gives_a_clear_error():
    with pytest.raises(probe.ProbeFailed) as info:
        probe.run_probe(FAKE_NVSMI, partial=True)
    assert "did not run the TensorFlow probe" in info.value.message
    assert "exit code 2" in info.value.message


def test_parse_answer_takes_the_last_whole_snapshot():
    text = 'noise\n%s{"stage": "metadata"}\nTF noise %s\n%s{"stage": "imp' % (
        probe.MARKER,
        probe.MARKER,
        probe.MARKER,
    )
    assert probe.parse_answer(text) == {"stage": "metadata"}
    assert probe.parse_answer("nothing here") is None


def test_describe_exit_names_signals_and_windows_codes():
    if hasattr(signal, "SIGSEGV"):
        assert probe.describe_exit(-signal.SIGSEGV) == "killed by signal SIGSEGV"
    assert probe.describe_exit(0xC000001D) == "exit code 0xC000001D"
    assert probe.describe_exit(3) == "exit code 3"
    assert "AVX" in probe.crash_hint(0xC000001D)
    assert probe.crash_hint(1) == ""


@pytest.mark.parametrize(
    "name, dist, version",
    [
        ("tensorflow_gpu-1.12.0.dist-info", "tensorflow_gpu", "1.12.0"),
        ("tensorflow-1.12.0-py3.6.egg-info", "tensorflow", "1.12.0"),
        ("tf_nightly-2.23.0.dev20261026.dist-info", "tf_nightly", "2.23.0.dev20261026"),
    ],
)
def test_metadata_directory_names(name, dist, version):
    match = _probe._META_DIR.match(name)
    assert _probe._normalise(match.group("name")) == dist
    assert match.group("version") == version


def test_probe_script_runs_on_the_oldest_syntax_we_promise():
    source = probe.PROBE_SCRIPT.read_text(encoding="utf-8")
    compile(source, str(probe.PROBE_SCRIPT), "exec")
    assert not re.search(r"\b[fF][\"']", source)  # Python 3.5 has no f-strings
    assert "import importlib.metadata" not in source and "from importlib.metadata" not in source


def test_probe_answer_keeps_the_gpu_tri_state_and_drops_wrong_types():
    from tfcnnwrap.environment.probe import ProbeAnswer

    seen = ProbeAnswer.from_json(
        {
            "gpus": ["Tesla V100", {"name": "RTX 2070"}],
            "tensorflow_version": "2.4.0",
            "complete": True,
            "matmul": {"cpu_gflops": 12, "gpu_gflops": "fast"},
        }
    )
    assert seen.gpus == ("Tesla V100", "RTX 2070") and seen.gpu_list() == ["Tesla V100", "RTX 2070"]
    assert seen.tf_version == "2.4.0" and seen.complete is True
    assert (seen.matmul.cpu_gflops, seen.matmul.gpu_gflops) == (12.0, None)
    assert ProbeAnswer.from_json({"gpus": []}).gpus == ()
    unknown = ProbeAnswer.from_json({"gpus": "yes", "tf_keras": "no", "warnings": "w", "complete": False})
    assert unknown.gpus is None and unknown.tf_keras is None and unknown.warnings == ()
    assert unknown.complete is False and unknown.matmul is None
    assert ProbeAnswer.from_json([1, 2]) is None
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.tf_version = "1.0"  # frozen
    assert seen.with_warning("w").warnings == ("w",) and seen.warnings == ()
