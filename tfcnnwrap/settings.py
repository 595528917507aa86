"""Where a setting comes from when no flag gives it: environment variable, then what setup remembered, then
the built-in default. One place, so setup, sweep, doctor and report agree (docs/usage.md's table).

Standard library only; the last setup's python is checkout.target_python's (it reads the manifest).
"""

import os
from pathlib import Path

ENV_PYTHON = "TFCNNWRAP_PYTHON"
ENV_VENDOR_DIR = "TFCNNWRAP_VENDOR_DIR"
ENV_RESULTS = "TFCNNWRAP_RESULTS"
DEFAULT_VENDOR_DIR = "vendor"
DEFAULT_RESULTS = "results"


def _environ(environ):
    return os.environ if environ is None else environ


def vendor_dir(flag=None, environ=None):
    """(Path, where it came from or None for the flag/default): --vendor-dir > TFCNNWRAP_VENDOR_DIR > ./vendor."""
    if flag:
        return Path(flag), None
    value = _environ(environ).get(ENV_VENDOR_DIR)
    if value:
        return Path(value), ENV_VENDOR_DIR
    return Path(DEFAULT_VENDOR_DIR), None


def results_dir(environ=None):
    """Where new sweeps go and where report looks for the newest one: TFCNNWRAP_RESULTS > ./results."""
    return Path(_environ(environ).get(ENV_RESULTS) or DEFAULT_RESULTS)
