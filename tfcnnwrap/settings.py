"""Where a setting comes from when no flag gives it: environment variable, then the config file, then what
setup remembered, then the built-in default. One place, so setup, sweep, doctor and report agree
(docs/usage.md's table).

Standard library (platformdirs, and tomli on Python < 3.11) only; the last setup's python is
checkout.target_python's (it reads the manifest and asks ``from_config`` first).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from tfcnnwrap.boundedread import read_regular
from tfcnnwrap.errors import UsageError

ENV_PYTHON = "TFCNNWRAP_PYTHON"
ENV_VENDOR_DIR = "TFCNNWRAP_VENDOR_DIR"
ENV_RESULTS = "TFCNNWRAP_RESULTS"
ENV_CONFIG = "TFCNNWRAP_CONFIG"
ENV_DATA = "TFCNNWRAP_DATA"
DEFAULT_VENDOR_DIR = "vendor"
DEFAULT_RESULTS = "results"
CONFIG_NAME = "tfcnnwrap.toml"
CONFIG_KEYS = ("python", "vendor_dir", "results_dir", "allowed_signers")
# a settings file is a few lines; anything bigger is not one (and is not read into memory). It is read as any file
# from outside is (boundedread.read_regular): a FIFO at its path would otherwise block every verb for ever.
MAX_CONFIG_BYTES = 64 * 1024


def _environ(environ: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def config_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """$TFCNNWRAP_CONFIG, else ``tfcnnwrap.toml`` in the user config directory (platformdirs)."""
    value = _environ(environ).get(ENV_CONFIG)
    if value:
        return Path(value)
    import platformdirs  # lazy: ~3 ms (tempfile, random) that `list DIR` and a `report DIR` never need

    return Path(platformdirs.user_config_dir("tfcnnwrap", appauthor=False)) / CONFIG_NAME


def _toml_loads(text: str) -> Dict[str, Any]:
    # lazy: only when a config file exists; `list`, `report` and `compare` import settings for its defaults
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the tomli dependency is conditional on Python < 3.11
        import tomli as tomllib
    return tomllib.loads(text)


def _is_null_device(path: Path) -> bool:
    try:
        return os.path.samestat(os.stat(path), os.stat(os.devnull))
    except OSError:
        return False


def _bad(path: Path, why: str) -> UsageError:
    return UsageError("config file %s: %s; fix it or delete it" % (path, " ".join(str(why).split())))


def read_config(environ: Optional[Mapping[str, str]] = None) -> dict:
    """The config file's settings ({key: str}, ``~`` expanded); {} when the default file does not exist.
    A file that cannot be read or parsed, an unknown key or a value that is not a non-empty string is one
    UsageError naming the file (exit 2)."""
    path = config_path(environ)
    if not os.path.lexists(path):
        if _environ(environ).get(ENV_CONFIG):
            raise UsageError("config file %s (from %s) does not exist" % (path, ENV_CONFIG))
        return {}
    if _is_null_device(path):  # TFCNNWRAP_CONFIG=/dev/null: the usual way to say "no config file"
        return {}
    data = read_regular(path, MAX_CONFIG_BYTES, "a config file (TOML), or delete it")
    try:
        table = _toml_loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise _bad(path, "not valid TOML (%s)" % exc) from None
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise _bad(path, "unknown setting %r (known: %s)" % (unknown[0], ", ".join(CONFIG_KEYS)))
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip():
            raise _bad(path, "%s must be a non-empty string in quotes" % key)
    return {key: os.path.expanduser(value) for key, value in table.items()}


def from_config(key: str, environ: Optional[Mapping[str, str]] = None) -> Tuple[Optional[str], ...]:
    """(value, where it came from) from the config file, or (None, None)."""
    value = read_config(environ).get(key)
    if value:
        return value, "the config file (%s)" % config_path(environ)
    return None, None


def vendor_dir(flag: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> Tuple[Path, Optional[str]]:
    """(Path, where it came from or None for the flag/default): --vendor-dir > TFCNNWRAP_VENDOR_DIR > the
    config file's vendor_dir > ./vendor."""
    if flag:
        return Path(flag), None
    value = _environ(environ).get(ENV_VENDOR_DIR)
    if value:
        return Path(value), ENV_VENDOR_DIR
    value, source = from_config("vendor_dir", environ)
    if value:
        return Path(value), source
    return Path(DEFAULT_VENDOR_DIR), None


def data_dir(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The library's folder: ``$TFCNNWRAP_DATA``, else the user data directory platformdirs names for tfcnnwrap."""
    value = _environ(environ).get(ENV_DATA, "")
    if value.strip():
        return Path(value).expanduser()
    import platformdirs  # lazy: only a verb that opens the library (or the allowed signers) asks where it lives

    return Path(platformdirs.user_data_dir("tfcnnwrap", appauthor=False))


def results_dir(environ: Optional[Mapping[str, str]] = None) -> Path:
    """Where new sweeps go and where report looks for the newest one: TFCNNWRAP_RESULTS > the config file's
    results_dir > ./results."""
    value = _environ(environ).get(ENV_RESULTS) or from_config("results_dir", environ)[0]
    return Path(value or DEFAULT_RESULTS)
