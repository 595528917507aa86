"""Git for `setup`: the URL safety check, ``git ls-remote --heads`` and a depth-1 single-branch clone.

URLs are checked before git (or the disk) is touched, so nothing git could read as an option or a command
ever reaches it. GitPython is imported inside functions: the no-op re-run needs neither git nor the network.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Dict, List, Optional

if TYPE_CHECKING:
    from rich.console import Console
from urllib.parse import urlsplit
from urllib.request import url2pathname

from tfcnnwrap.environment import versions
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.run.procs import pip_install_command

SAFE_SCHEMES = ("https", "http", "ssh", "git", "file")
LS_REMOTE_TIMEOUT_S = 60
GIT_INSTALL_HINT = (
    "install git and make sure it is on PATH: `conda install git` (Anaconda), Git for Windows "
    "(https://git-scm.com/download/win), or `apt install git` / `brew install git`"
)

_REMOTE_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.\-]*::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:$")
# What git says when the disk, not the network or the URL, is the trouble.
_DISK_TROUBLE = ("no space left", "file too large", "disk quota", "read-only file system", "permission denied")


# --- pure helpers -----------------------------------------------------------------------------------------


def normalise_repo_url(raw: str, flag: str = "--repo-url") -> str:
    """The URL git will be given, or UsageError for anything git could read as an option or a command.

    A local path becomes an absolute ``file://`` URL (so that ``--depth`` applies); an ``https://``,
    ``http://``, ``ssh://``, ``git://`` or ``file://`` URL or scp-like ``user@host:path`` is kept as is.
    ``flag``: the option the URL came from, as the messages name it (publish's ``--to``, pull's GIT_URL).
    """
    try:
        return _normalise_repo_url(raw)
    except UsageError as exc:
        if flag == "--repo-url":
            raise
        raise UsageError(exc.message.replace("--repo-url", flag)) from None


def _normalise_repo_url(raw: str) -> str:
    text = "" if raw is None else str(raw)
    if not text.strip():
        raise UsageError("--repo-url is empty: give https://github.com/tensorflow/benchmarks.git or a mirror's path")
    if text != text.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise UsageError("refusing --repo-url %r: it holds spaces at the ends or control characters" % text)
    if text.startswith("-"):
        raise UsageError(
            "refusing --repo-url %r: it starts with '-', which git would read as an option; give a URL, "
            "or write a local path as ./%s" % (text, text)
        )
    if re.search(r"(://|@)-", text):
        raise UsageError("refusing --repo-url %r: a host name that starts with '-' would reach ssh as an option" % text)
    if _REMOTE_HELPER.match(text):
        raise UsageError(
            "refusing --repo-url %r: the '<transport>::' form (ext::, fd::) makes git run commands; give an "
            "https://, ssh://, git:// or file:// URL or a local path" % text
        )
    scheme = _SCHEME.match(text)
    if scheme:
        if scheme.group(1).lower() not in SAFE_SCHEMES:
            raise UsageError(
                "refusing --repo-url %r: scheme %r is not one of %s" % (text, scheme.group(1), ", ".join(SAFE_SCHEMES))
            )
        return text
    head = re.split(r"[\\/]", text, maxsplit=1)[0]
    if ":" in head and not _WINDOWS_DRIVE.match(head):
        return text  # scp-like user@host:path, which git reads as ssh
    return Path(text).expanduser().resolve().as_uri()


def validate_branch_name(name: str) -> str:
    if not name or name.startswith("-") or any(ord(ch) <= 32 or ord(ch) == 127 for ch in name):
        raise UsageError("refusing --branch %r: not a branch name; e.g. --branch cnn_tf_v1.12_compatible" % name)
    return name


def parse_ls_remote(text: str) -> Dict[str, str]:
    """``git ls-remote --heads`` output -> {branch: sha}."""
    heads = {}
    for line in text.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and parts[1].startswith("refs/heads/"):
            heads[parts[1][len("refs/heads/") :]] = parts[0]
    return heads


def choice_inputs(branch_names: Dict[str, str]) -> List[str]:
    """The branch names that choosing needs (compat branches and master), cached in the manifest."""
    names = versions.compat_branches(branch_names)
    if versions.MASTER in branch_names:
        names.append(versions.MASTER)
    return names


def git_env() -> Dict[str, str]:
    """Git must never wait for a person: no credential prompts, and stalled transfers abort."""
    return {
        "GIT_TERMINAL_PROMPT": "0",
        "GCM_INTERACTIVE": "never",
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
        "GIT_HTTP_LOW_SPEED_TIME": "30",
    }


def git_message(stderr: str) -> str:
    """The line of git's stderr (as GitPython quotes it) that says what went wrong."""
    text = str(stderr or "").strip()
    if text.startswith("stderr:"):
        text = text[len("stderr:") :].strip().strip("'")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith(("fatal:", "error:")) or "Timeout:" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no message from git"


# --- git (GitPython) --------------------------------------------------------------------------------------


def import_git() -> ModuleType:
    try:
        import git  # GitPython; checks for the git executable on import
    except ImportError as exc:
        if "git" in str(exc).lower() and "no module named" not in str(exc).lower():
            raise SetupError("git is not installed or not on PATH: " + GIT_INSTALL_HINT) from None
        raise SetupError(
            "GitPython is missing from the interpreter running tfcnnwrap: `%s`"
            % pip_install_command(sys.executable, "GitPython")
        ) from None
    return git


def local_path_of(url: str) -> Optional[Path]:
    """The directory a ``file://`` URL names, or None for other URLs."""
    if not url.lower().startswith("file://"):
        return None
    parts = urlsplit(url)
    return Path(url2pathname(parts.path)) if parts.netloc in ("", "localhost") else None


def _unreachable(url: str, detail: str) -> SetupError:
    local = local_path_of(url)
    if local is not None and not local.exists():
        return SetupError(
            "no repository at %s (from --repo-url): give the path of a clone or mirror of "
            "tensorflow/benchmarks, or leave --repo-url out to use GitHub" % local
        )
    return SetupError(
        "cannot reach the upstream %s (%s): check the URL and your network, or clone tensorflow/benchmarks "
        "somewhere you can reach and pass its path with --repo-url" % (url, detail)
    )


def list_remote_heads(url: str) -> Dict[str, str]:
    """{branch: sha} of the remote's branches, from ``git ls-remote --heads``."""
    git = import_git()
    kwargs = {"heads": True, "env": git_env()}
    if sys.platform != "win32":  # GitPython's watchdog is POSIX-only
        kwargs["kill_after_timeout"] = LS_REMOTE_TIMEOUT_S
    try:
        out = git.cmd.Git().ls_remote("--", url, **kwargs)
    except git.exc.GitCommandNotFound:
        raise SetupError("git is not installed or not on PATH: " + GIT_INSTALL_HINT) from None
    except git.exc.GitCommandError as exc:
        raise _unreachable(url, git_message(exc.stderr)) from None
    heads = parse_ls_remote(out)
    if not heads:
        raise SetupError("the upstream %s has no branches: check --repo-url" % url)
    return heads


def clone_branch(url: str, branch: str, dest: Path, console: Optional[Console] = None) -> str:
    """Clone ``branch`` of ``url`` (depth 1, single branch, no tags) into the empty directory ``dest``;
    returns the commit sha. Every git failure is a SetupError naming the fix."""
    git = import_git()
    status = console.status("Cloning %s from %s ..." % (branch, url), refresh_per_second=4) if console else None
    if status:
        status.start()
    try:
        repo = git.Repo.clone_from(
            url, str(dest), depth=1, branch=branch, single_branch=True, no_tags=True, env=git_env()
        )
        try:
            return repo.head.commit.hexsha
        finally:
            repo.close()
    except git.exc.GitCommandNotFound:
        raise SetupError("git is not installed or not on PATH: " + GIT_INSTALL_HINT) from None
    except git.exc.GitCommandError as exc:
        raise clone_failure(url, branch, dest, git_message(exc.stderr)) from None
    finally:
        if status:
            status.stop()


def clone_failure(url: str, branch: str, dest: Path, detail: str) -> SetupError:
    if any(word in detail.lower() for word in _DISK_TROUBLE):
        return SetupError(
            "cloning %s into %s failed (%s); the previous checkout is untouched; free some disk space there "
            "or choose another place with --vendor-dir" % (branch, Path(dest).parent, detail)
        )
    return SetupError(
        "cloning %s from %s failed (%s); the previous checkout is untouched; check the URL and your "
        "network, or pass a local mirror with --repo-url" % (branch, url, detail)
    )
