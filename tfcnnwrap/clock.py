"""Timestamps as every file of tfcnnwrap writes them."""

from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> str:
    """Now, UTC, ISO 8601 to the second: ``2026-11-30T10:15:00Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
