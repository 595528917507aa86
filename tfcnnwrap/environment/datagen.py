"""Host-fed data for `sweep --data generated[:N]`: N random images as ImageNet-format TFRecords, written by the
target's own TensorFlow (``_datagen.py`` runs in ``--python``'s interpreter, TF 1.x on Python 3.6 too), cached
under the user cache directory and reused; and the check of a user's `--data-dir`.

A cache entry is complete when its manifest (``tfcnnwrap-data.json``) is there: the records are written into a
fresh temporary directory beside it and renamed into place whole, so a killed generator or two sweeps at once
never leave half a set under the final name.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from tfcnnwrap import jsontext, safefs
from tfcnnwrap.environment.probe import quiet_tf_env
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.run.procs import run_captured

GENERATOR_SCRIPT = Path(__file__).with_name("_datagen.py")
MARKER = "TFCNNWRAP-DATAGEN-JSON: "
MANIFEST = "tfcnnwrap-data.json"
DATA_FORMAT = "imagenet-tfrecord-v1"  # bump when the generated records change: a new cache entry
ENV_CACHE = "TFCNNWRAP_CACHE"
SEED = 0
# The generator takes ~15 ms an image on a laptop's CPU; the bound is generous for a slow one.
BASE_TIMEOUT_S = 120.0
PER_IMAGE_TIMEOUT_S = 0.5


def cache_root() -> Path:
    """``$TFCNNWRAP_CACHE``, else the user cache directory platformdirs names for tfcnnwrap."""
    given = os.environ.get(ENV_CACHE)
    if given:
        return Path(given)
    import platformdirs  # lazy: only a sweep on generated data needs it

    return Path(platformdirs.user_cache_dir("tfcnnwrap", appauthor=False))


def cache_dir(count: int) -> Path:
    """Where N generated images live (keyed by N and the records' format)."""
    return cache_root() / "data" / ("%s-%d" % (DATA_FORMAT, count))


def read_manifest(directory: Path) -> Optional[Dict[str, Any]]:
    """The manifest of a complete generated set whose files are all there, else None."""
    try:
        data = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not files:
        return None
    if not all(isinstance(f, str) and "/" not in f and (Path(directory) / f).is_file() for f in files):
        return None
    return data


def ensure_generated(python: str, count: int) -> Dict[str, Any]:
    """The manifest of N generated images (``directory`` added), made by ``python``'s TensorFlow when the
    cache does not hold them yet. SetupError when the target cannot write them."""
    final = cache_dir(count)
    found = read_manifest(final)
    if found is not None:
        return dict(found, directory=str(final), cached=True)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".generating-", dir=str(final.parent)))
    except OSError as exc:
        raise SetupError(
            "cannot make the generated-data cache under %s (%s); set %s to a writable directory"
            % (final.parent, exc.strerror or exc, ENV_CACHE)
        ) from None
    try:
        summary = _run_generator(python, work, count)
        manifest = dict(summary, format=DATA_FORMAT, count=count, made_by_python=python)
        safefs.atomic_write(work / MANIFEST, jsontext.dumps(manifest) + "\n")
        if final.is_dir() and not final.is_symlink() and read_manifest(final) is None:
            shutil.rmtree(str(final))  # our own entry left without its manifest or a file: made again whole
        try:
            os.rename(str(work), str(final))
        except OSError:
            if read_manifest(final) is None:  # not another sweep's complete set: a real failure
                raise
        return dict(read_manifest(final) or manifest, directory=str(final), cached=False)
    except OSError as exc:
        raise SetupError(
            "cannot write the generated data under %s (%s)" % (final.parent, exc.strerror or exc)
        ) from None
    finally:
        if work.exists():
            shutil.rmtree(str(work), ignore_errors=True)


def _run_generator(python: str, work: Path, count: int) -> Dict[str, Any]:
    argv = [python, str(GENERATOR_SCRIPT), str(work), str(count), str(SEED)]
    timeout = BASE_TIMEOUT_S + PER_IMAGE_TIMEOUT_S * count
    returncode, stdout, stderr = run_captured(argv, timeout, env=quiet_tf_env())
    summary = _summary(stdout.decode("utf-8", "replace"))
    if returncode == 0 and summary is not None:
        return summary
    if returncode is None:
        why = "it did not finish within %.0f s" % timeout
    else:
        tail = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()][-1:]
        why = "it exited %s%s" % (returncode, ": %s" % tail[0][:300] if tail else "")
    raise SetupError(
        "%s could not write the generated ImageNet TFRecords (%s); check that its TensorFlow "
        "imports (`python -m tfcnnwrap doctor --python %s`), or use --data-dir with your own" % (python, why, python)
    )


def _summary(text: str) -> Optional[Dict[str, Any]]:
    for line in reversed(text.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def record_files(directory: Path, subset: str = "train") -> List[Path]:
    """The TFRecord files tf_cnn_benchmarks' imagenet dataset reads (``<subset>-*-of-*``)."""
    return sorted(Path(directory).glob("%s-*-of-*" % subset))


def check_data_dir(directory: str) -> str:
    """``--data-dir DIR`` as an absolute path, or UsageError when it holds no ImageNet training records."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise UsageError(
            "--data-dir %s is not a directory; give the directory holding ImageNet TFRecords "
            "(train-00000-of-01024, ...)" % directory
        )
    if not record_files(path):
        raise UsageError(
            "--data-dir %s holds no train-*-of-* files, the ImageNet TFRecords tf_cnn_benchmarks "
            "reads; point it at them, or use --data generated" % directory
        )
    return str(path.resolve())
