"""GPU set-up that works the first time (issue 22.13): the `gpu` extra, and doctor saying plainly what to
install when nvidia-smi sees a GPU that TensorFlow does not, for the TensorFlow version in use."""

import os
import sys
from pathlib import Path

import pytest
from test_doctor import WITH_FAKE_SMI, check, doctor_json

from tfcnnwrap.environment import gpusetup
from tfcnnwrap.environment.gpusetup import install_hint

ROOT = Path(__file__).resolve().parent.parent
POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="the stand-in nvidia-smi is a shebang script")


def _toml(path):
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_the_gpu_extra_installs_tensorflow_with_cuda_and_tf_keras_on_linux_only():
    extra = _toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]["gpu"]
    from packaging.requirements import Requirement

    reqs = {Requirement(r).name: Requirement(r) for r in extra}
    assert set(reqs) == {"tensorflow", "tf-keras"}
    assert reqs["tensorflow"].extras == {"and-cuda"}
    for req in reqs.values():
        assert req.marker is not None
        assert req.marker.evaluate({"sys_platform": "linux"}) and not req.marker.evaluate({"sys_platform": "win32"})


def test_readmes_gpu_line_uses_the_extra():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install -e ".[gpu]"' in readme


@pytest.mark.parametrize(
    "version, build",
    [
        ((1, 12), ("9", "7")),
        ((2, 0), ("10.0", "7.4")),
        ((2, 4), ("11.0", "8.0")),
        ((2, 10), ("11.2", "8.1")),
        ((2, 13), ("11.8", "8.6")),
        ((2, 16), ("12.3", "8.9")),
        ((2, 21), None),
    ],
)
def test_tested_builds(version, build):
    assert gpusetup.tested_cuda(version) == build


def test_from_2_14_on_linux_the_and_cuda_extra_pinned_to_the_version_in_use():
    hint = install_hint((2, 21), "tensorflow", "/env/bin/python", False, True, "12.5.1", "9")
    assert "/env/bin/python -m pip install 'tensorflow[and-cuda]==2.21.*'" in hint
    cpu = install_hint((2, 21), "tensorflow-cpu", "/env/bin/python", False)
    assert cpu.startswith("replace this CPU-only build") and "tensorflow[and-cuda]==2.21.*" in cpu


def test_native_windows_after_2_10_says_wsl2_or_2_10():
    hint = install_hint((2, 21), "tensorflow", "C:/env/python.exe", True)
    assert "no GPU support on native Windows" in hint and "WSL2" in hint and "tensorflow==2.10.*" in hint
    assert "<" not in hint  # cmd.exe would read a `<` as a redirection


def test_before_2_1_the_gpu_package_was_tensorflow_gpu():
    hint = install_hint((1, 12), "tensorflow", "/env/bin/python", False)
    assert "tensorflow-gpu==1.12.*" in hint and "CUDA 9 and cuDNN 7" in hint
    assert install_hint((1, 12), "tensorflow-gpu", "/env/bin/python", False).startswith("install CUDA 9 and cuDNN 7")


def test_a_cuda_build_between_names_the_cuda_it_was_built_with():
    hint = install_hint((2, 4), "tensorflow", "/env/bin/python", False, True, "11.0", "8")
    assert (
        hint == "install CUDA 11.0 and cuDNN 8 (what TensorFlow 2.4 was built with), their libraries on LD_LIBRARY_PATH"
    )


@pytest.mark.slow
@POSIX_ONLY
@pytest.mark.parametrize(
    "version, dist, needle",
    [
        ("2.21.0", "tensorflow", "-m pip install 'tensorflow[and-cuda]==2.21.*'"),
        ("2.21.0", "tensorflow-cpu", "replace this CPU-only build: "),
        ("2.4.0", "tensorflow", "install CUDA 11.2 and cuDNN 8 (what TensorFlow 2.4 was built with)"),
    ],
)
def test_doctor_names_what_to_install_when_only_nvidia_smi_sees_the_gpu(cli, fake_tf, tmp_path, version, dist, needle):
    python = fake_tf(version, dist=dist)
    report = doctor_json(cli, python, env=dict(WITH_FAKE_SMI, FAKE_TF_GPUS=""), cwd=tmp_path)
    row = check(report, "GPUs TensorFlow sees")
    assert row["status"] == "fail"
    assert row["hint"].startswith("nvidia-smi sees NVIDIA GeForce RTX 2070 but TensorFlow does not: "), row
    assert needle in row["hint"], row
    if version.startswith("2.21"):
        assert str(python) in row["hint"]
