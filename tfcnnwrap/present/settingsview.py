"""``tfcnnwrap config``: the settings a verb run now without flags would use, and where each came from.

The answers are the ones the verbs themselves get (settings.py, checkout.target_python, the last setup's
manifest, library.data_dir), asked the same way, so this view cannot disagree with what a sweep does.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Literal, Optional

from tfcnnwrap import settings
from tfcnnwrap.environment import checkout
from tfcnnwrap.environment.setup import DEFAULT_REPO_URL
from tfcnnwrap.render import emit
from tfcnnwrap.share import library

DEFAULT = "default"
COLUMNS = [("setting", "setting"), ("value", "value"), ("from", "from")]


def _row(setting: str, value: object, source: Optional[str]) -> Dict[str, str]:
    return {"setting": setting, "value": str(value), "from": source or DEFAULT}


def _config_file_row() -> Dict[str, str]:
    path = settings.config_path()
    named = bool(os.environ.get(settings.ENV_CONFIG))
    if path.is_file() or (named and os.path.exists(path)):
        source = settings.ENV_CONFIG if named else DEFAULT
    else:
        source = "%s (not there: nothing set by it)" % (settings.ENV_CONFIG if named else DEFAULT)
    return _row("config file", path, source)


def _env_or(name: str) -> Optional[str]:
    return name if os.environ.get(name, "").strip() else None


def effective_settings() -> List[Dict[str, str]]:
    """One row per setting: {setting, value, from}; ``from`` names the variable, the config file, the last
    setup's manifest or ``default``."""
    rows = [_config_file_row()]
    vendor, vendor_from = settings.vendor_dir()
    python, python_from = checkout.target_python(None, vendor)
    rows.append(_row("python", python or sys.executable, python_from or "default: the Python running tfcnnwrap"))
    rows.append(_row("vendor_dir", vendor, vendor_from))
    repo_url = checkout.remembered(vendor)[1] if checkout.manifest_path(vendor).is_file() else None
    rows.append(
        _row(
            "repo_url",
            repo_url or DEFAULT_REPO_URL,
            "the last setup (%s)" % checkout.manifest_path(vendor) if repo_url else None,
        )
    )
    results_from = _env_or(settings.ENV_RESULTS) or settings.from_config("results_dir")[1]
    rows.append(_row("results_dir", settings.results_dir(), results_from))
    rows.append(_row("library", library.data_dir(), _env_or(library.ENV_DATA)))
    return rows


@dataclass(frozen=True)
class ConfigArgs:
    """What `config` was asked (cli/config.py builds it)."""

    format: Literal["table", "markdown", "csv", "json"]


def cmd_config(args: ConfigArgs) -> int:
    rows = effective_settings()
    emit(
        rows,
        args.format,
        columns=COLUMNS,
        title="tfcnnwrap settings (a flag given to a verb wins over these)",
        kind="config",
    )
    return 0
