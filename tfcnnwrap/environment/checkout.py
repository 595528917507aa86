"""Where setup puts the tensorflow/benchmarks checkout, and the manifest that sweep and doctor read.

Layout of a vendor directory::

    vendor/
      benchmarks/                         the clone (depth 1, single branch)
        scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
      tfcnnwrap-setup.json                the manifest: url, branch, commit, tf_version, ...
      .tfcnnwrap-setup.lock               the vendor lock: setup holds it exclusively, sweeps shared
      .benchmarks-new-1a2b3c4d/           setup's staging clone, swapped in only when complete
      .benchmarks-old-1a2b3c4d/           the previous checkout while it is being replaced

Setup replaces or deletes only what it made itself: a checkout carrying its marker file in ``.git`` (or, from
before the marker, a git checkout of the manifest's URL) and leftovers with its own staging/retired names.
Nothing here is written, chmod-ed or deleted through a symbolic link.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from tfcnnwrap import jsontext, safefs, settings
from tfcnnwrap.environment import versions
from tfcnnwrap.errors import SetupError, TfcnnwrapError
from tfcnnwrap.filelock import FileLock

CHECKOUT_NAME = "benchmarks"
MANIFEST_NAME = "tfcnnwrap-setup.json"
SCRIPT_RELPATH = Path("scripts", "tf_cnn_benchmarks", "tf_cnn_benchmarks.py")
VENDOR_LOCK_NAME = ".tfcnnwrap-setup.lock"
STAGING_PREFIX = ".benchmarks-new-"
RETIRED_PREFIX = ".benchmarks-old-"
MARKER_NAME = "tfcnnwrap-setup-checkout"  # in the checkout's .git: setup made this checkout
_OWN_LEFTOVER = re.compile(r"^\.benchmarks-(new|old)-[0-9a-f]{8}$")


def vendor_lock(vendor_dir: Path, shared: bool) -> FileLock:
    """The vendor directory's lock: ``setup`` takes it exclusively (it clones, swaps and cleans up there),
    a running sweep shared, so that setup cannot swap the checkout under a sweep."""
    vendor_dir = Path(vendor_dir)
    if shared:
        busy = "%s is being changed by `tfcnnwrap setup`; wait for it to finish, then run the sweep" % vendor_dir
    else:
        busy = "%s is in use by another `tfcnnwrap setup` or a running sweep; wait for it to finish" % vendor_dir
    return FileLock(vendor_dir / VENDOR_LOCK_NAME, busy, shared=shared)


def checkout_dir(vendor_dir: Union[Path, str]) -> Path:
    return Path(vendor_dir) / CHECKOUT_NAME


def manifest_path(vendor_dir: Union[Path, str]) -> Path:
    return Path(vendor_dir) / MANIFEST_NAME


def script_path(vendor_dir: Union[Path, str]) -> Path:
    return checkout_dir(vendor_dir) / SCRIPT_RELPATH


def read_manifest(vendor_dir: Union[Path, str]) -> Any:
    """The manifest as a dict, or None when there is no (readable) manifest."""
    path = manifest_path(vendor_dir)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(vendor_dir: Path, manifest: Dict[str, Any]) -> None:
    """Replace the manifest all at once, never writing through a link planted at its name or a temp name."""
    text = jsontext.dumps(manifest, indent=2, sort_keys=True) + "\n"
    try:
        safefs.atomic_write(manifest_path(vendor_dir), text)
    except OSError as exc:
        raise SetupError(
            "cannot write %s (%s): free some disk space or make the folder writable, then run setup again"
            % (manifest_path(vendor_dir), exc.strerror or exc)
        ) from None


def remembered(vendor_dir: Path) -> Tuple[Optional[str], ...]:
    """(python, repo_url) that the last setup in ``vendor_dir`` was given, each None when unknown.

    ``python`` is None when setup used the interpreter running tfcnnwrap (nothing chosen to remember).
    A manifest from before these were recorded still yields its URL.
    """
    manifest = read_manifest(vendor_dir) or {}
    settings = manifest.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    python = settings.get("python")
    url = settings.get("repo_url") or manifest.get("url")
    return (python if isinstance(python, str) and python else None, url if isinstance(url, str) and url else None)


def branch_for(tf_version: str, manifest: Optional[Mapping[str, Any]]) -> Tuple[str, str]:
    """(branch, reason) setup would choose for ``tf_version``, offline: from the branch list the manifest
    cached when setup last asked the remote, else from the branches known to exist upstream."""
    names = (manifest or {}).get("upstream_branches") or versions.KNOWN_BRANCHES
    return versions.choose_branch(tf_version, names)


def branch_mismatch(tf_version: str, manifest: Mapping[str, Any]) -> Optional[str]:
    """A warning when the checkout was fetched for another TensorFlow than ``tf_version``, else None.

    A branch the user chose with ``setup --branch`` is never second-guessed.
    """
    if not manifest or not manifest.get("branch") or manifest.get("branch_source") == "--branch":
        return None
    try:
        wanted, _ = branch_for(tf_version, manifest)
    except TfcnnwrapError:
        return None
    if wanted == manifest["branch"]:
        return None
    return (
        "the checkout is %s but TensorFlow %s calls for %s; run `python -m tfcnnwrap setup` with the same "
        "--python to switch" % (manifest["branch"], tf_version, wanted)
    )


def require_script(vendor_dir: Path) -> Path:
    """Path of tf_cnn_benchmarks.py in the checkout, or a SetupError naming the fix."""
    script = script_path(vendor_dir)
    if not script.is_file():
        raise SetupError(
            "no tf_cnn_benchmarks checkout in %s: run `python -m tfcnnwrap setup` first "
            "(or pass --vendor-dir)" % Path(vendor_dir)
        )
    return script


# --- the checkout on disk (setup) ---------------------------------------------------------------------------


def read_head(repo_dir: Path) -> Tuple[Optional[str], ...]:
    """(branch, sha) of a checkout's HEAD read from .git files (no git needed); None parts when unknown."""
    git_dir = Path(repo_dir) / ".git"
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return None, None
    if not head.startswith("ref: "):
        return None, head or None
    ref = head[len("ref: ") :]
    branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
    try:
        return branch, (git_dir / ref).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        pass
    try:
        for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
            parts = line.split(" ")
            if len(parts) == 2 and parts[1] == ref:
                return branch, parts[0]
    except (OSError, ValueError):
        pass
    return branch, None


def read_origin_url(repo_dir: Path) -> Optional[str]:
    """The ``origin`` remote's URL from ``.git/config`` (no git needed), or None."""
    try:
        lines = (Path(repo_dir) / ".git" / "config").read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return None
    section = None
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == '[remote "origin"]' and line.partition("=")[0].strip() == "url":
            return line.partition("=")[2].strip()
    return None


def checkout_matches(vendor_dir: Path, manifest: Dict[str, Any]) -> bool:
    """True when the checkout is whole and is what the manifest says (branch, and commit when readable)."""
    if not manifest or safefs.is_link(checkout_dir(vendor_dir)) or not script_path(vendor_dir).is_file():
        return False
    branch, sha = read_head(checkout_dir(vendor_dir))
    return branch == manifest.get("branch") and (sha is None or sha == manifest.get("commit"))


def made_by_setup(path: Path, manifest: Optional[Dict[str, Any]]) -> bool:
    """True when the directory ``path`` is a checkout setup made (its marker, or a git checkout of the
    manifest's URL), or holds nothing at all; a link never is."""
    path = Path(path)
    if safefs.is_link(path) or not path.is_dir():
        return False
    if (path / ".git" / MARKER_NAME).is_file():
        return True
    if manifest and manifest.get("url") and read_origin_url(path) == manifest.get("url"):
        return True
    try:
        return not any(path.iterdir())
    except OSError:
        return False


def mark_as_made_by_setup(clone_dir: Path) -> None:
    with safefs.create_new(Path(clone_dir) / ".git" / MARKER_NAME) as fh:
        fh.write(b"made by tfcnnwrap setup; setup may replace or delete this checkout\n")


def own_leftovers(vendor_dir: Path) -> List[Any]:
    """Staging and retired directories that setup itself names (and only those)."""
    try:
        names = sorted(os.listdir(str(vendor_dir)))
    except OSError:
        return []
    return [Path(vendor_dir) / name for name in names if _OWN_LEFTOVER.match(name)]


def refuse_unsafe_vendor(vendor_dir: Path) -> None:
    """SetupError/LinkRefused (exit 2) for a vendor directory setup must not work in: a file where the
    directory should be, or parts that are links leading out of it."""
    vendor_dir = Path(vendor_dir)
    if vendor_dir.exists() and not vendor_dir.is_dir():
        raise SetupError("%s is a file, not a folder: pass --vendor-dir with a folder for the checkout" % vendor_dir)
    if not vendor_dir.is_dir():
        return
    names = [CHECKOUT_NAME, MANIFEST_NAME, VENDOR_LOCK_NAME] + [p.name for p in own_leftovers(vendor_dir)]
    safefs.refuse_links_outside(vendor_dir, names, "vendor directory")


def refuse_foreign_checkout(vendor_dir: Path, manifest: Optional[Dict[str, Any]]) -> None:
    """SetupError (exit 2) when ``benchmarks/`` exists but setup did not make it: it is the user's."""
    target = checkout_dir(vendor_dir)
    if (target.exists() or safefs.is_link(target)) and not made_by_setup(target, manifest):
        raise SetupError(
            "%s was not made by tfcnnwrap setup (no manifest of it, or not a git checkout of the manifest's URL); "
            "setup will not replace it: move it elsewhere, or pass another --vendor-dir" % target
        )


def _make_writable(path: str, is_dir: bool) -> None:
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    os.chmod(path, mode | stat.S_IWRITE | ((stat.S_IREAD | stat.S_IEXEC) if is_dir else 0))


def remove_tree(path: Union[Path, str]) -> None:
    """Delete ``path`` and all under it without following links: a link is unlinked, never entered, and
    nothing is chmod-ed through one (a planted link must not make its target writable)."""
    path = str(path)
    if safefs.is_link(path) or not os.path.isdir(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    top_parent = os.path.dirname(os.path.abspath(path))

    def retry(func: Callable[[str], object], failed: str, _exc: object) -> None:
        # Git marks pack files read-only (Windows then refuses to delete them) and a read-only folder
        # keeps its entries on POSIX: clear those flags on real files and folders only, then try again.
        try:
            st = os.lstat(failed)
            parent = os.path.dirname(os.path.abspath(failed))
            if parent != top_parent and not stat.S_ISLNK(os.lstat(parent).st_mode):
                _make_writable(parent, is_dir=True)
            if stat.S_ISLNK(st.st_mode):
                os.unlink(failed)
                return
            _make_writable(failed, is_dir=stat.S_ISDIR(st.st_mode))
            func(failed)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def recover_interrupted(vendor_dir: Path) -> None:
    """Undo what a killed setup left: put back a checkout moved aside, delete its own staging and retired
    copies (nothing else)."""
    vendor_dir = Path(vendor_dir)
    target = checkout_dir(vendor_dir)
    leftovers = own_leftovers(vendor_dir)
    retired = [p for p in leftovers if p.name.startswith(RETIRED_PREFIX) and p.is_dir() and not safefs.is_link(p)]
    retired.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    if retired and not target.exists() and not safefs.is_link(target):
        try:
            retired[0].rename(target)
            leftovers.remove(retired[0])
        except OSError:
            pass
    for leftover in leftovers:
        remove_tree(leftover)


def new_staging(vendor_dir: Path) -> Path:
    """A new empty staging directory inside the existing ``vendor_dir``."""
    vendor_dir = Path(vendor_dir)
    # Named by hand rather than tempfile.mkdtemp, whose 0700 mode would follow the checkout into place.
    staging = vendor_dir / (STAGING_PREFIX + uuid.uuid4().hex[:8])
    try:
        staging.mkdir()
    except OSError as exc:
        raise SetupError(
            "cannot create %s (%s): make it writable or choose another place with --vendor-dir"
            % (vendor_dir, exc.strerror or exc)
        ) from None
    return staging


def swap_into_place(staging: Path, target: Path) -> None:
    """Put the complete clone ``staging`` at ``target``; the old checkout is restored if that fails.

    Windows cannot replace a non-empty directory in one rename: move the old one aside, move the new one
    in, then delete the old one.
    """
    staging, target = Path(staging), Path(target)
    retired = None
    try:
        if target.exists() or safefs.is_link(target):
            retired = target.with_name(RETIRED_PREFIX + uuid.uuid4().hex[:8])
            target.rename(retired)
        staging.rename(target)
    except OSError as exc:
        if retired is not None and (retired.exists() or safefs.is_link(retired)) and not target.exists():
            retired.rename(target)
        raise SetupError(
            "could not move the new checkout into %s (%s); is a program using that folder? Close it and "
            "run setup again; the previous checkout is untouched" % (target, exc.strerror or exc)
        ) from None
    if retired is not None:
        remove_tree(retired)


def target_python(
    flag: Optional[str], vendor: Path, environ: Optional[Mapping[str, str]] = None
) -> Tuple[Optional[str], Optional[str]]:
    """(python or None, where it came from): --python > TFCNNWRAP_PYTHON > the config file's python > the
    last setup's in ``vendor``'s manifest > None (the interpreter running tfcnnwrap)."""
    if flag:
        return flag, "--python"
    value = (os.environ if environ is None else environ).get(settings.ENV_PYTHON)
    if value:
        return value, settings.ENV_PYTHON
    value, source = settings.from_config("python", environ)
    if value:
        return value, source
    last_python, _ = remembered(vendor)
    if last_python:
        return last_python, "the last setup (%s)" % manifest_path(vendor)
    return None, None
