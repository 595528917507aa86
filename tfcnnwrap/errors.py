"""Errors the CLI turns into one line on stderr and an exit code (never a traceback)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUNS_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class TfcnnwrapError(Exception):
    """A failure the user can fix; the message names the fix.

    ``exit_code`` is 2 (usage or set-up error, nothing run) unless a caller says otherwise.
    """

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(TfcnnwrapError):
    """Bad flags or arguments."""


class SetupError(TfcnnwrapError):
    """The environment is not ready: no checkout, no git, no TensorFlow, upstream unreachable."""


class DamagedFile(TfcnnwrapError):
    """A file that is not what its format says: a sweep's record cut short, a plan or cluster plan that is not
    JSON, a reference CSV or a bundle from someone else that cannot be read or trusted. Apart from
    ``UsageError`` (the flags were wrong) because the fix is to the file, not to the command."""
