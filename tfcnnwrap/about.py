"""What `tfcnnwrap --version` says: the version (kept once, in ``tfcnnwrap.__version__``), the Python and the
platform it runs on, and, when the package is imported from a git checkout, the commit. The commit is read
from the checkout's files rather than by running git: `--version` stays as fast as `--help` and works where
git is not installed."""

import platform
import sys
from pathlib import Path
from typing import Optional

from tfcnnwrap import __version__

_HEX = frozenset("0123456789abcdef")


def _git_dir(top: Path) -> Optional[Path]:
    """The git directory of a checkout rooted at ``top``: ``.git`` itself, or where a worktree's ``.git``
    file points."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if text.startswith("gitdir:"):
        return (top / text[len("gitdir:") :].strip()).resolve()
    return None


def _ref_commit(git_dir: Path, ref: str) -> Optional[str]:
    """The sha a ref names: its loose file, else its line in packed-refs (a worktree keeps its refs in the
    common directory)."""
    common = git_dir
    try:
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        pass
    for where in (git_dir, common):
        try:
            return (where / ref).read_text(encoding="utf-8").strip()
        except OSError:
            continue
    try:
        packed = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in packed.splitlines():
        if line.endswith(" " + ref):
            return line.split(" ", 1)[0]
    return None


def checkout_commit(package_dir: Optional[Path] = None) -> Optional[str]:
    """The commit of the git checkout this package was imported from, or None (an installed wheel)."""
    top = (package_dir or Path(__file__).resolve().parent).parent
    git_dir = _git_dir(top)
    if git_dir is None:
        return None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    sha = _ref_commit(git_dir, head[len("ref:") :].strip()) if head.startswith("ref:") else head
    if not sha or len(sha) < 7 or not set(sha.lower()) <= _HEX:
        return None
    return sha[:12]


def platform_text() -> str:
    """The operating system, its release and the machine, e.g. ``Linux 6.1.0 x86_64``. Not
    ``platform.platform()``: it asks ``uname -p`` for the processor, a process started for a version line."""
    return " ".join(part for part in (platform.system(), platform.release(), platform.machine()) if part)


def version_text() -> str:
    """`tfcnnwrap --version`: first line the version alone (scripts read it), then where it runs."""
    commit = checkout_commit()
    lines = ["tfcnnwrap %s" % __version__]
    if commit:
        lines.append("commit %s (a git checkout)" % commit)
    lines.append("Python %s (%s) on %s" % (platform.python_version(), sys.executable, platform_text()))
    return "\n".join(lines)
