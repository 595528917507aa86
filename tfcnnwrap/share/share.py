"""`publish` and `pull`: bundles shared through any git repository (GitPython; no server of our own).

publish: a shallow clone of the branch in a temporary directory, the bundle added at
``bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz``, one commit, a push. A push rejected because someone pushed
first is answered by fetching the new tip and rebasing the one commit onto it (one file per bundle: no
conflict is possible), at most ``PUSH_TRIES`` times.

pull: the branch's tip fetched (depth 1) into a bare cache repository under the library
(``<data>/remotes/<hash of the URL>``), its tree listed with ``git ls-tree`` and each new bundle read from git's
object store: nothing of a pulled repository is ever checked out, so none of its paths is followed. A tree
entry that is a symbolic link, or a blob over the size limit, is refused before it is read.

URLs go through setup's safety check (tfcnnwrap.target.gitremote): ext::, fd:: and option-looking URLs are refused.
GitPython is imported inside functions: it finds and starts git on import.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, TextIO, Tuple, Union

from tfcnnwrap.errors import SetupError, TfcnnwrapError, UsageError
from tfcnnwrap.filelock import FileLock
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.bundlecheck import FAILED, verify
from tfcnnwrap.share.bundleexport import build
from tfcnnwrap.share.library import Library, import_one
from tfcnnwrap.share.signing import add_signature, allowed_signers_path
from tfcnnwrap.target import gitremote

if TYPE_CHECKING:
    from argparse import Namespace

    from git.exc import GitCommandError
    from git.repo.base import Repo



PUSH_TRIES = 8
REMOTES = "remotes"
_RETRYABLE = ("fetch first", "non-fast-forward", "rejected", "cannot lock ref", "failed to update ref",
              "failed to lock", "stale info", "incorrect old value")
_EMPTY_REMOTE = ("couldn't find remote ref", "could not find remote ref")
FALLBACK_IDENTITY = ("tfcnnwrap", "tfcnnwrap@localhost")


def _git_error(what: str, url: str, exc: GitCommandError) -> SetupError:
    detail = gitremote.git_message(getattr(exc, "stderr", "") or str(exc))
    local = gitremote.local_path_of(url)
    if local is not None and not local.exists():
        return SetupError("%s: no repository at %s; create one with `git init --bare %s`" % (what, local, local))
    return SetupError("%s %s failed (%s); check the URL, your access and your network" % (what, url, detail))


def _bundle_bytes(source: Union[Path, str]) -> Tuple[Dict[str, Any], bytes]:
    """(bundle, file bytes) of a sweep directory (exported now) or a bundle file; a bundle that fails
    verification is refused (exit 1), an unverified one (no logs) goes with a warning."""

    path = Path(source)
    if path.is_dir():

        bundle = build(path)
        data = bundles.to_bytes(bundle)
    else:
        if not path.exists():
            raise UsageError("%s does not exist; give a sweep directory or a .tfcw.json.gz bundle" % path)
        data = bundles.read_path_bytes(path)
        bundle = bundles.read_bytes(data, str(path))
    verdict = verify(bundle)
    if verdict.state == FAILED:
        raise TfcnnwrapError("%s is not verified (%s); nothing published" % (source, verdict.findings[0]),
                             exit_code=1)
    if not verdict.verified:
        sys.stderr.write("tfcnnwrap publish: warning: %s has no logs; it is published unverified\n" % source)
    return bundle, data


def repo_path(bundle: Dict[str, Any]) -> str:
    """``bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz`` (always with ``/``: a path in the repository)."""
    gpu = bundle["conditions"]["gpu"]
    return "bundles/%s/%s/%s" % (bundles.vendor_of(gpu), bundles.slug(gpu), bundles.file_name(bundle))


def commit_message(bundle: Dict[str, Any]) -> str:
    cond = bundle["conditions"]
    counts = cond.get("num_gpus") or [1]
    gpus = "+".join(str(n) for n in counts) if isinstance(counts, list) else str(counts)
    parts = [cond.get("precision"), "%s GPU%s" % (gpus, "" if gpus == "1" else "s"), cond.get("variable_update"),
             cond.get("data"), "XLA" if cond.get("xla") == "yes" else None,
             "TF %s" % cond["tensorflow_version"] if cond.get("tensorflow_version") else None]
    models = sorted({r["model"] for r in bundle["runs"]})
    return "Add %s: %s (%s)\n\nbundle %s, %d runs\n" % (
        cond["gpu"], ", ".join(str(p) for p in parts if p), ", ".join(models), bundle["id"], len(bundle["runs"]))


def _run(repo: Repo, *args) -> str:
    return repo.git.execute(["git", *args], env=gitremote.git_env())


def _identity(repo: Repo) -> None:
    """A commit needs a name and e-mail; where the user has set none, the repository-local fallback."""
    git = gitremote.import_git()
    for key, value in zip(("user.name", "user.email"), FALLBACK_IDENTITY):
        try:
            repo.git.config("--get", key)
        except git.exc.GitCommandError:
            repo.git.config(key, value)


def _checkout_branch(repo: Repo, branch: Optional[str]) -> Tuple[str, Optional[str]]:
    """Put HEAD on ``branch`` (None: the clone's own, the remote's default); returns (name, tip or None)."""
    git = gitremote.import_git()
    try:
        current = repo.git.symbolic_ref("--short", "HEAD")
    except git.exc.GitCommandError:
        current = None
    empty = not repo.git.rev_parse("--verify", "-q", "HEAD", with_exceptions=False)
    if branch and branch != current:
        try:
            _run(repo, "fetch", "--depth=1", "--no-tags", "origin", "refs/heads/%s" % branch)
            _run(repo, "checkout", "-q", "-B", branch, "FETCH_HEAD")
        except git.exc.GitCommandError:  # a branch the remote lacks starts empty: results of its own
            if empty:
                _run(repo, "symbolic-ref", "HEAD", "refs/heads/%s" % branch)
            else:
                _run(repo, "switch", "-q", "--orphan", branch)
        current = branch
    tip = repo.git.rev_parse("--verify", "-q", "HEAD", with_exceptions=False) or None
    return current or "master", tip


def _push(repo: Repo, branch: str, base: Optional[str], where: str) -> int:
    """Push HEAD to ``branch``; a rejection is answered by fetch + rebase of our one commit, then again."""
    git = gitremote.import_git()
    for attempt in range(1, PUSH_TRIES + 1):
        try:
            _run(repo, "push", "--porcelain", "origin", "HEAD:refs/heads/%s" % branch)
            return attempt
        except git.exc.GitCommandError as exc:
            text = str(exc.stderr or "") + str(exc.stdout or "")
            if attempt == PUSH_TRIES or not any(word in text for word in _RETRYABLE):
                raise _git_error("pushing to", where, exc) from None
        try:
            _run(repo, "fetch", "--depth=1", "--no-tags", "origin", "refs/heads/%s" % branch)
            onto = ["--onto", "FETCH_HEAD"] + ([base] if base else ["--root"])
            _run(repo, "rebase", "-q", *onto)
            base = repo.git.rev_parse("FETCH_HEAD")
        except git.exc.GitCommandError as exc:
            raise _git_error("catching up with", where, exc) from None
    return PUSH_TRIES


def publish(source: Union[Path, str], url: str, branch: Optional[str] = None) -> Tuple[Dict[str, Any], str, str, bool]:
    """Publish ``source`` to ``url``; returns (bundle, path in the repository, branch, pushed?)."""
    url = gitremote.normalise_repo_url(url, flag="--to")
    if branch:
        gitremote.validate_branch_name(branch)
    bundle, data = _bundle_bytes(source)
    git = gitremote.import_git()
    rel = repo_path(bundle)
    with tempfile.TemporaryDirectory(prefix="tfcnnwrap-publish-") as tmp:
        try:
            repo = git.Repo.clone_from(url, str(Path(tmp) / "repo"), depth=1, no_tags=True, env=gitremote.git_env())
        except git.exc.GitCommandError as exc:
            raise _git_error("cloning", url, exc) from None
        try:
            return _publish_in(repo, bundle, data, rel, branch, url)
        finally:
            repo.close()


def _publish_in(repo: Repo, bundle: Dict[str, Any], data: bytes, rel: str, branch: Optional[str],
                url: str) -> Tuple[Dict[str, Any], str, str, bool]:
    git = gitremote.import_git()
    try:
        branch, base = _checkout_branch(repo, branch)
        target = Path(repo.working_tree_dir, *rel.split("/"))  # type: ignore[arg-type]  # a clone has one
        message = commit_message(bundle)
        if target.exists():
            merged, message = _with_their_signatures(target, bundle, rel)
            if merged is None:
                return bundle, rel, branch, False
            data = merged
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        _identity(repo)
        _run(repo, "add", "--", rel)
        _run(repo, "commit", "-q", "-m", message)
    except git.exc.GitCommandError as exc:
        raise _git_error("committing to a clone of", url, exc) from None
    _push(repo, branch, base, url)
    return bundle, rel, branch, True


def _with_their_signatures(target: Path, bundle: Dict[str, Any], rel: str) -> Tuple[Optional[bytes], str]:
    """(new file bytes, commit message) when ``bundle`` (verified, its signatures good) has signatures the
    repository's copy lacks: that copy gains them; (None, "") when it has them all."""
    try:
        theirs = bundles.read_path(target)
    except bundles.BundleRefused as exc:
        raise TfcnnwrapError("the repository's %s is not a sound bundle (%s); fix the repository first"
                             % (rel, exc.message), exit_code=1) from None
    added = [e["fingerprint"] for e in bundle.get("signatures", []) if add_signature(theirs, e)]
    if not added:
        return None, ""
    return bundles.to_bytes(theirs), "Sign %s: bundle %s\n\nsigned by %s\n" % (
        bundle["conditions"]["gpu"], bundle["id"], ", ".join(added))


def cmd_publish(args: Namespace) -> int:
    bundle, rel, branch, pushed = publish(args.source, args.to, args.branch)
    if not pushed:
        sys.stdout.write("%s is already in %s (branch %s); nothing to push\n" % (rel, args.to, branch))
        return 0
    sys.stdout.write("published %s (%s) to %s, branch %s\n" % (rel, bundle["conditions"]["gpu"], args.to, branch))
    return 0


# -- pull --------------------------------------------------------------------------------------------------

_ENTRY = re.compile(r"^(\d{6}) (\w+) ([0-9a-f]{40,64}) +(-|\d+)\t(.*)$", re.DOTALL)


def tree_entries(listing: str) -> List[Tuple[str, str, str, Optional[int], str]]:
    """``git ls-tree -r -l -z`` output -> [(mode, type, sha, size or None, path)]."""
    out = []
    for item in listing.split("\0"):
        found = _ENTRY.match(item)
        if found:
            mode, kind, sha, size, path = found.groups()
            out.append((mode, kind, sha, None if size == "-" else int(size), path))
    return out


def cache_path(library: Library, url: str) -> Path:
    return library.root / REMOTES / hashlib.sha256(url.encode("utf-8")).hexdigest()[:24]


def _cache_lock(library: Library, url: str) -> FileLock:
    """The lock of ``url``'s pull cache, held for the whole pull: two pulls fetching into one cache at once
    made git fail on its shallow.lock, reported as a network error."""

    path = cache_path(library, url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SetupError("cannot make the pull cache %s (%s)" % (path.parent, exc.strerror or exc)) from None
    return FileLock(path.parent / (path.name + ".lock"),
                    busy_message="another tfcnnwrap pull of %s into %s is running; wait for it to finish and "
                                 "pull again" % (url, library.root)).acquire()


def _cache_repo(library: Library, url: str) -> Repo:
    git = gitremote.import_git()
    path = cache_path(library, url)
    if (path / "HEAD").is_file():
        try:
            return git.Repo(str(path))
        except git.exc.GitError:
            raise SetupError("the pull cache %s is damaged; delete that directory and pull again" % path) from None
    try:
        return git.Repo.init(str(path), bare=True, mkdir=True)
    except (git.exc.GitCommandError, OSError) as exc:
        raise SetupError("cannot make the pull cache %s (%s)" % (path, getattr(exc, "strerror", exc))) from None


def fetch_tip(repo: Repo, url: str, branch: Optional[str]) -> Optional[str]:
    """The commit of ``branch`` (None: the remote's HEAD) after a depth-1 fetch; None: an empty repository."""
    git = gitremote.import_git()
    ref = "refs/heads/%s" % branch if branch else "HEAD"
    try:
        _run(repo, "fetch", "--depth=1", "--no-tags", "--no-write-fetch-head", "--", url,
             "+%s:refs/tfcnnwrap/pulled" % ref)
    except git.exc.GitCommandError as exc:
        text = str(exc.stderr or "").lower()
        if any(word in text for word in _EMPTY_REMOTE) and not branch:
            return None
        if any(word in text for word in _EMPTY_REMOTE):
            raise UsageError("%s has no branch %s; leave --branch out for its default branch" % (url, branch)) from None
        raise _git_error("fetching", url, exc) from None
    return repo.git.rev_parse("refs/tfcnnwrap/pulled")


def _entry_refusal(mode: str, kind: str, size: Optional[int], path: str) -> Optional[str]:
    if mode == "120000":
        return "%s: a symbolic link; bundles are files, links are never followed" % path
    if kind != "blob":
        return "%s: a %s, not a file" % (path, kind)
    limit = bundles.max_bytes()
    if size is None or size > limit:
        return "%s: %s bytes, over the %d-byte limit of a bundle; not read" % (path, size, limit)
    return None


def pull(url: str, branch: Optional[str] = None, out: TextIO = sys.stdout,
         err: TextIO = sys.stderr) -> Tuple[Dict[str, int], Optional[str]]:
    """Fetch, verify and import; returns {'imported', 'present', 'refused'} counts."""
    url = gitremote.normalise_repo_url(url, flag="GIT_URL")
    if branch:
        gitremote.validate_branch_name(branch)
    allowed = allowed_signers_path()
    library = Library()
    try:
        lock = _cache_lock(library, url)
    except TfcnnwrapError:
        library.close()
        raise
    try:
        repo = _cache_repo(library, url)
    except TfcnnwrapError:
        lock.release()
        library.close()
        raise
    counts = {"imported": 0, "present": 0, "refused": 0}
    try:
        tip = fetch_tip(repo, url, branch)
        entries = tree_entries(repo.git.ls_tree("-r", "-l", "-z", tip)) if tip else []
        known = library.known_ids()
        for mode, kind, sha, size, path in entries:
            name = path.rsplit("/", 1)[-1]
            if not name.endswith(bundles.SUFFIX):
                continue
            if name[: -len(bundles.SUFFIX)] in known and _same_size(library, name[: -len(bundles.SUFFIX)], size):
                counts["present"] += 1  # a copy of another size may carry signatures ours lacks: read below
                continue
            outcome, message = _pull_one(repo, library, (mode, kind, sha, size, path), url, allowed)
            counts[outcome] += 1
            if outcome != "present" or "new signature" in message:
                (err if outcome == "refused" else out).write(("refused: " if outcome == "refused" else "")
                                                             + message + "\n")
    finally:
        repo.close()
        library.close()
        lock.release()
    return counts, tip


def _same_size(library: Library, ident: str, size: Optional[int]) -> bool:
    """The library's copy of bundle ``ident`` has ``size`` bytes (signatures only add bytes)."""
    try:
        return library.path_of(ident).stat().st_size == size
    except OSError:
        return False


def _pull_one(repo: Repo, library: Library, entry: Tuple[str, str, str, Optional[int], str],
              url: str, allowed: Optional[Path] = None) -> Tuple[str, ...]:
    mode, kind, sha, size, path = entry
    path = path if path.isprintable() else ascii(path)  # their file names: one line each, whatever they hold
    refusal = _entry_refusal(mode, kind, size, path)
    if refusal:
        return "refused", refusal
    try:
        data = repo.odb.stream(bytes.fromhex(sha)).read()
    except Exception as exc:  # noqa: BLE001 - a damaged object in their repository refuses that file only
        return "refused", "%s: git cannot read it (%s)" % (path, str(exc)[:120] or type(exc).__name__)
    outcome, message = import_one(library, data, path, origin=url,
                                  expected_id=path.rsplit("/", 1)[-1][: -len(bundles.SUFFIX)], allowed=allowed)
    return outcome, message


def cmd_pull(args: Namespace) -> int:
    counts, tip = pull(args.url, args.branch)
    if tip is None:
        sys.stderr.write("tfcnnwrap pull: %s has no commits yet; nothing to pull\n" % args.url)
        return 0
    sys.stderr.write("tfcnnwrap pull: %d imported, %d already there, %d refused (from %s at %s)\n"
                     % (counts["imported"], counts["present"], counts["refused"], args.url, tip[:12]))
    return 1 if counts["refused"] else 0
