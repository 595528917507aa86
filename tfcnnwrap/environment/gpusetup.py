"""What to install so that TensorFlow sees the GPU nvidia-smi sees (the most common set-up failure), for the
TensorFlow version in use: doctor's hint on its "GPUs TensorFlow sees" row.

Pure: facts in, one sentence out. The CUDA and cuDNN each release was built and tested with come from
tensorflow.org's "tested build configurations" (Linux GPU); from 2.14 pip brings them itself with the
``tensorflow[and-cuda]`` extra (tfcnnwrap's own ``gpu`` extra installs it on Linux).
"""

from __future__ import annotations

from typing import Optional, Tuple

from tfcnnwrap.run.procs import pip_install_command

AND_CUDA_SINCE = (2, 14)  # the first TensorFlow whose pip package has the and-cuda extra
LAST_NATIVE_WINDOWS_GPU = (2, 10)
FIRST_UNIFIED_PACKAGE = (2, 1)  # from 2.1 `tensorflow` itself has GPU support; before, `tensorflow-gpu` did

_BUILDS = (
    (((1, 0), (1, 2)), ("8", "5.1")),
    (((1, 3), (1, 4)), ("8", "6")),
    (((1, 5), (1, 12)), ("9", "7")),
    (((1, 13), (2, 0)), ("10.0", "7.4")),
    (((2, 1), (2, 3)), ("10.1", "7.6")),
    (((2, 4), (2, 4)), ("11.0", "8.0")),
    (((2, 5), (2, 11)), ("11.2", "8.1")),
    (((2, 12), (2, 13)), ("11.8", "8.6")),
    (((2, 14), (2, 14)), ("11.8", "8.7")),
    (((2, 15), (2, 15)), ("12.2", "8.9")),
    (((2, 16), (2, 17)), ("12.3", "8.9")),
)


def tested_cuda(version: Optional[Tuple[int, int]]) -> Optional[Tuple[str, str]]:
    """(CUDA, cuDNN) TensorFlow ``(major, minor)`` was tested with on Linux, or None when not in the table."""
    if not version:
        return None
    for (low, high), build in _BUILDS:
        if low <= tuple(version[:2]) <= high:
            return build
    return None


def _pin(version: Tuple[int, ...]) -> str:
    return "%d.%d.*" % tuple(version[:2])


def install_hint(
    version: Optional[Tuple[int, int]],
    distribution: Optional[str],
    python: Optional[str],
    on_windows: bool,
    is_cuda_build: Optional[bool] = None,
    build_cuda: Optional[str] = None,
    build_cudnn: Optional[str] = None,
) -> str:
    """What to do so that this TensorFlow (``version`` as (major, minor), ``distribution`` its pip name)
    sees the GPU: one sentence with the command for ``python``."""
    dist = (distribution or "").lower()
    if version is None:
        return "check that TensorFlow is a GPU build and finds CUDA and cuDNN (`doctor --python` on its interpreter)"
    label = "TensorFlow %d.%d" % tuple(version[:2])
    if on_windows and version > LAST_NATIVE_WINDOWS_GPU:
        return (
            "%s has no GPU support on native Windows (2.10 was the last): run it in WSL2 with `%s`, or use "
            "2.10 here: `%s` with CUDA 11.2 and cuDNN 8.1"
            % (
                label,
                pip_install_command("python3", "tensorflow[and-cuda]"),
                pip_install_command(python, "tensorflow==2.10.*"),
            )
        )
    if version >= AND_CUDA_SINCE and not on_windows:
        cpu_only = dist.endswith("-cpu") or is_cuda_build is False
        first = "replace this CPU-only build: " if cpu_only else ""
        return "%s`%s` (pip brings CUDA and cuDNN; only the NVIDIA driver is needed)" % (
            first,
            pip_install_command(python, "tensorflow[and-cuda]==%s" % _pin(version)),
        )
    cuda, cudnn = (build_cuda, build_cudnn) if build_cuda else (tested_cuda(version) or (None, None))
    libs = (
        (
            "CUDA %s and cuDNN %s (what %s was built with), their libraries on %s"
            % (cuda, cudnn or "?", label, "PATH" if on_windows else "LD_LIBRARY_PATH")
        )
        if cuda
        else "the CUDA and cuDNN %s was built with" % label
    )
    if version < FIRST_UNIFIED_PACKAGE and not dist.endswith("-gpu"):
        return "%s's `%s` package is CPU-only: `%s`, and %s" % (
            label,
            dist or "tensorflow",
            pip_install_command(python, "tensorflow-gpu==%s" % _pin(version)),
            libs,
        )
    if dist.endswith("-cpu") or is_cuda_build is False:
        return "this is a CPU-only build: `%s`, and %s" % (
            pip_install_command(python, "tensorflow==%s" % _pin(version)),
            libs,
        )
    return "install %s" % libs
