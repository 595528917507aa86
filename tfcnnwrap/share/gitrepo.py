"""`publish` and `pull`: bundles shared through any git repository (GitPython; no server of our own).

publish: a shallow bare clone of the branch in a temporary directory; the bundle's blob and a tree holding it
at ``bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz`` are written in git's object database with an index of our
own, then one commit and a push. Nothing of their repository is ever checked out, so no path in it (a folder
that is a symbolic link, say) decides where a file is written; a folder on the bundle's way that is a link or
a file in their tree is refused. A push rejected because someone pushed first is answered by fetching the new
tip and making the one commit again on top of it (one file per bundle: no conflict is possible), at most
``PUSH_TRIES`` times.

pull: the branch's tip fetched (depth 1) into a bare cache repository under the library
(``<data>/remotes/<hash of the URL>``), its tree listed with ``git ls-tree`` and each new bundle read from git's
object store: nothing of a pulled repository is ever checked out, so none of its paths is followed. A tree
entry that is a symbolic link, or a blob over the size limit, is refused before it is read.

URLs go through setup's safety check (tfcnnwrap.environment.gitremote): ext::, fd:: and option-looking URLs are refused.
GitPython is imported inside functions: it finds and starts git on import.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, TextIO, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.environment import gitremote
from tfcnnwrap.errors import DamagedFile, SetupError, TfcnnwrapError, UsageError
from tfcnnwrap.filelock import FileLock
from tfcnnwrap.results.bundlerecords import Bundle
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.export import build
from tfcnnwrap.share.library import Checked, Library, Refused, check, store
from tfcnnwrap.share.signing import allowed_signers_path
from tfcnnwrap.share.verify import FAILED, verify

if TYPE_CHECKING:
    from git.exc import GitCommandError
    from git.repo.base import Repo


PUSH_TRIES = 8
REMOTES = "remotes"
_RETRYABLE = (
    "fetch first",
    "non-fast-forward",
    "rejected",
    "cannot lock ref",
    "failed to update ref",
    "failed to lock",
    "stale info",
    "incorrect old value",
)
_EMPTY_REMOTE = ("couldn't find remote ref", "could not find remote ref")
FALLBACK_IDENTITY = ("tfcnnwrap", "tfcnnwrap@localhost")


_DISK_FULL = ("no space left", "out of diskspace", "disk quota exceeded")


def git_error(what: str, url: str, exc: GitCommandError) -> SetupError:
    text = str(getattr(exc, "stderr", "") or "") or str(exc)
    detail = gitremote.git_message(text)
    local = gitremote.local_path_of(url)
    if local is not None and not local.exists():
        return SetupError("%s: no repository at %s; create one with `git init --bare %s`" % (what, local, local))
    if any(word in text.lower() for word in _DISK_FULL):  # git's own words; the library is kept as it was
        return SetupError(
            "%s %s failed: the disk git writes to (the library's pull cache, or a temporary "
            "directory for publish) is full (%s); free some space and try again" % (what, url, detail)
        )
    return SetupError("%s %s failed (%s); check the URL, your access and your network" % (what, url, detail))


def _bundle_bytes(source: Union[Path, str]) -> Tuple[Bundle, bytes]:
    """(bundle, file bytes) of a sweep directory (exported now) or a bundle file; a bundle that fails
    verification is refused (exit 1), an unverified one (no logs) goes with a warning."""

    path = Path(source)
    if path.is_dir():
        bundle = build(path, verb="publish")
        data = bundles.to_bytes(bundle)
    else:
        if not path.exists():
            raise UsageError("%s does not exist; give a sweep directory or a .tfcw.json.gz bundle" % path)
        data = bundles.read_path_bytes(path)
        bundle = bundles.read_bytes(data, str(path))
    verdict = verify(bundle)
    if verdict.state == FAILED:
        raise TfcnnwrapError("%s is not verified (%s); nothing published" % (source, verdict.findings[0]), exit_code=1)
    if not verdict.verified:
        sys.stderr.write("tfcnnwrap publish: warning: %s has no logs; it is published unverified\n" % source)
    return bundle, data


def repo_path(bundle: Bundle) -> str:
    """``bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz`` (always with ``/``: a path in the repository)."""
    gpu = bundle.gpu
    return "bundles/%s/%s/%s" % (bundles.vendor_of(gpu), bundles.slug(gpu), bundles.file_name(bundle))


def commit_message(bundle: Bundle) -> str:
    cond = bundle.conditions
    gpus = cond.gpu_counts()
    parts = [
        cond.precision,
        "%s GPU%s" % (gpus, "" if gpus == "1" else "s"),
        cond.variable_update,
        cond.data,
        "XLA" if cond.xla == "yes" else None,
        "TF %s" % cond.tensorflow_version if cond.tensorflow_version else None,
    ]
    models = sorted({r.model for r in bundle.runs})
    return "Add %s: %s (%s)\n\nbundle %s, %d runs\n" % (
        cond.gpu,
        ", ".join(str(p) for p in parts if p),
        ", ".join(models),
        bundle.id,
        len(bundle.runs),
    )


def _run(repo: Repo, *args) -> str:
    return repo.git.execute(["git", *args], env=gitremote.git_env())


def ensure_identity(repo: Repo) -> None:
    """A commit needs a name and e-mail; where the user has set none, the repository-local fallback."""
    git = gitremote.import_git()
    for key, value in zip(("user.name", "user.email"), FALLBACK_IDENTITY):
        try:
            repo.git.config("--get", key)
        except git.exc.GitCommandError:
            repo.git.config(key, value)


def _branch_tip(repo: Repo, branch: Optional[str]) -> Tuple[str, Optional[str]]:
    """(branch name, its tip or None) in the bare clone: ``branch`` fetched when it is not the clone's own
    (None: the remote's default); a branch the remote lacks starts empty, results of its own."""
    git = gitremote.import_git()
    try:
        current = repo.git.symbolic_ref("--short", "HEAD")
    except git.exc.GitCommandError:
        current = None
    if branch and branch != current:
        try:
            _run(repo, "fetch", "--depth=1", "--no-tags", "origin", "refs/heads/%s" % branch)
        except git.exc.GitCommandError:
            return branch, None
        return branch, repo.git.rev_parse("FETCH_HEAD^{commit}")
    return current or "master", repo.git.rev_parse("--verify", "-q", "HEAD", with_exceptions=False) or None


def _tree_entry(repo: Repo, base: str, path: str) -> Optional[Tuple[str, str]]:
    """(mode, type) of ``path`` in ``base``'s tree (git's own lookup: a link in the tree is never followed)."""
    listing = _run(repo, "ls-tree", "-z", base, "--", path)
    for item in listing.split("\0"):
        found = re.match(r"^(\d{6}) (\w+) [0-9a-f]+\t(.*)$", item, re.DOTALL)
        if found and found.group(3) == path:
            return found.group(1), found.group(2)
    return None


def _already_there(repo: Repo, base: Optional[str], rel: str) -> bool:
    """Whether ``base`` holds ``rel`` as a file; DamagedFile when a folder on its way (or the name itself) is a
    link or a file in their repository: publish writes bundles only into real folders."""
    if base is None:
        return False
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        path = "/".join(parts[:depth])
        entry = _tree_entry(repo, base, path)
        if entry is None:
            return False
        last = depth == len(parts)
        if entry[1] == ("blob" if last else "tree") and entry[0] != "120000":
            continue
        kind = (
            "a symbolic link"
            if entry[0] == "120000"
            else "a %s" % {"blob": "file", "tree": "folder"}.get(entry[1], entry[1])
        )
        raise DamagedFile(
            "the repository's %s is %s, where publish writes %s; nothing published: fix the "
            "repository (bundles go in folders bundles/<vendor>/<gpu>/)" % (path, kind, rel)
        )
    return True


def _commit_onto(
    repo: Repo, base: Optional[str], rel: str, blob: str, message: str, replace: bool = False
) -> Optional[str]:
    """A commit of ``base``'s tree plus ``blob`` at ``rel``, made in git's object database with an index of its
    own (nothing is checked out, so no path of their repository decides where a file is written); None when
    ``base`` already holds a file there (``replace``: the copy gains signatures, committed over it)."""
    if _already_there(repo, base, rel) and not replace:
        return None
    env = dict(gitremote.git_env(), GIT_INDEX_FILE=str(Path(repo.git_dir) / "tfcnnwrap-index"))
    repo.git.execute(["git", "read-tree"] + ([base] if base else ["--empty"]), env=env)
    repo.git.execute(["git", "update-index", "--add", "--cacheinfo", "100644,%s,%s" % (blob, rel)], env=env)
    tree = repo.git.execute(["git", "write-tree"], env=env).strip()
    return _run(repo, "commit-tree", tree, *(["-p", base] if base else []), "-m", message).strip()


def _store_blob(repo: Repo, data: bytes) -> str:
    """The bundle's bytes as a blob in the clone's object database; its sha."""
    path = Path(repo.git_dir) / "tfcnnwrap-bundle"
    with safefs.create_replacing(path) as fh:  # our own fresh clone's git directory, written once
        fh.write(data)
    return _run(repo, "hash-object", "-w", "--", str(path)).strip()


def _push(repo: Repo, branch: str, commit: str, added: Tuple[str, str, str], where: str) -> bool:
    """Push ``commit`` to ``branch``; a rejection (someone pushed first) is answered by fetching the new tip and
    making our one commit again on top of it, then pushing again. False: the new tip already holds ``rel``."""
    git = gitremote.import_git()
    rel, blob, message = added
    for attempt in range(1, PUSH_TRIES + 1):
        try:
            _run(repo, "push", "--porcelain", "origin", "%s:refs/heads/%s" % (commit, branch))
            return True
        except git.exc.GitCommandError as exc:
            text = str(exc.stderr or "") + str(exc.stdout or "")
            if attempt == PUSH_TRIES or not any(word in text for word in _RETRYABLE):
                raise git_error("pushing to", where, exc) from None
        try:
            _run(repo, "fetch", "--depth=1", "--no-tags", "origin", "refs/heads/%s" % branch)
            again = _commit_onto(repo, repo.git.rev_parse("FETCH_HEAD^{commit}"), rel, blob, message)
        except git.exc.GitCommandError as exc:
            raise git_error("catching up with", where, exc) from None
        if again is None:
            return False
        commit = again
    return True


def publish(source: Union[Path, str], url: str, branch: Optional[str] = None) -> Tuple[Bundle, str, str, bool]:
    """Publish ``source`` to ``url``; returns (bundle, path in the repository, branch, pushed?)."""
    url = gitremote.normalise_repo_url(url, flag="--to")
    if branch:
        gitremote.validate_branch_name(branch)
    bundle, data = _bundle_bytes(source)
    git = gitremote.import_git()
    rel = repo_path(bundle)
    with tempfile.TemporaryDirectory(prefix="tfcnnwrap-publish-") as tmp:
        try:  # bare: their tree is never checked out
            repo = git.Repo.clone_from(
                url, str(Path(tmp) / "repo.git"), bare=True, depth=1, no_tags=True, env=gitremote.git_env()
            )
        except git.exc.GitCommandError as exc:
            raise git_error("cloning", url, exc) from None
        try:
            return _publish_in(repo, bundle, data, rel, branch, url)
        finally:
            repo.close()


def _publish_in(
    repo: Repo, bundle: Bundle, data: bytes, rel: str, branch: Optional[str], url: str
) -> Tuple[Bundle, str, str, bool]:
    git = gitremote.import_git()
    message = commit_message(bundle)
    try:
        branch, base = _branch_tip(repo, branch)
        if _already_there(repo, base, rel):
            merged, message = _with_their_signatures(_blob_at(repo, base, rel), bundle, rel)
            if merged is None:
                return bundle, rel, branch, False
            data = merged
        blob = _store_blob(repo, data)
        ensure_identity(repo)
        commit = _commit_onto(repo, base, rel, blob, message, replace=True)
    except git.exc.GitCommandError as exc:
        raise git_error("committing to a clone of", url, exc) from None
    if commit is None:
        return bundle, rel, branch, False
    return bundle, rel, branch, _push(repo, branch, commit, (rel, blob, message), url)


def _blob_at(repo: Repo, base: Optional[str], rel: str) -> bytes:
    """The bytes of the file at ``rel`` in commit ``base`` (read from git's object database: nothing checked
    out); bounded like any bundle before it is read."""
    size = int(_run(repo, "cat-file", "-s", "%s:%s" % (base, rel)).strip() or 0)
    if size > bundles.max_bytes():
        raise TfcnnwrapError(
            "the repository's %s is over the size limit of a bundle; fix the repository first" % rel, exit_code=1
        )
    return repo.git.execute(
        ["git", "cat-file", "blob", "%s:%s" % (base, rel)], env=gitremote.git_env(), stdout_as_string=False
    )


def _with_their_signatures(data: bytes, bundle: Bundle, rel: str) -> Tuple[Optional[bytes], str]:
    """(new file bytes, commit message) when ``bundle`` (verified, its signatures good) has signatures the
    repository's copy (``data``) lacks: that copy gains them; (None, "") when it has them all."""
    try:
        theirs = bundles.read_bytes(data, rel)
    except bundles.BundleRefused as exc:
        raise TfcnnwrapError(
            "the repository's %s is not a sound bundle (%s); fix the repository first" % (rel, exc.message), exit_code=1
        ) from None
    added = []
    for entry in bundle.signatures:
        signed = theirs.signed(entry)
        if signed is not None:
            theirs = signed
            added.append(str(entry.fingerprint))
    if not added:
        return None, ""
    return bundles.to_bytes(theirs), "Sign %s: bundle %s\n\nsigned by %s\n" % (bundle.gpu, bundle.id, ", ".join(added))


@dataclass(frozen=True)
class PublishArgs:
    """`publish SOURCE --to GIT_URL`: a sweep directory or a bundle file; ``branch`` None: the default one."""

    source: str
    to: str
    branch: Optional[str] = None


def cmd_publish(args: PublishArgs) -> int:
    bundle, rel, branch, pushed = publish(args.source, args.to, args.branch)
    if not pushed:
        sys.stdout.write("%s is already in %s (branch %s); nothing to push\n" % (rel, args.to, branch))
        return 0
    sys.stdout.write("published %s (%s) to %s, branch %s\n" % (rel, bundle.gpu, args.to, branch))
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
    return FileLock(
        path.parent / (path.name + ".lock"),
        busy_message="another tfcnnwrap pull of %s into %s is running; wait for it to finish and "
        "pull again" % (url, library.root),
    ).acquire()


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


def fetch_tip(repo: Repo, url: str, branch: Optional[str], err: TextIO = sys.stderr) -> Optional[str]:
    """The commit of ``branch`` (None: the remote's HEAD) after a depth-1 fetch; None: an empty repository.
    A HEAD naming a branch that does not exist falls back to the one branch holding bundles."""
    git = gitremote.import_git()
    ref = "refs/heads/%s" % branch if branch else "HEAD"
    try:
        _run(
            repo,
            "fetch",
            "--depth=1",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            url,
            "+%s:refs/tfcnnwrap/pulled" % ref,
        )
    except git.exc.GitCommandError as exc:
        text = str(exc.stderr or "").lower()
        if any(word in text for word in _EMPTY_REMOTE) and not branch:
            found = _branch_of_bundles(repo, url, err)
            return None if found is None else fetch_tip(repo, url, found, err)
        if any(word in text for word in _EMPTY_REMOTE):
            raise UsageError("%s has no branch %s; leave --branch out for its default branch" % (url, branch)) from None
        raise git_error("fetching", url, exc) from None
    return repo.git.rev_parse("refs/tfcnnwrap/pulled")


MAX_BRANCHES = 16  # a HEAD naming no branch: this many branches are fetched to see which holds bundles


def _branch_of_bundles(repo: Repo, url: str, err: TextIO) -> Optional[str]:
    """The branch to pull when the remote's HEAD names none that exists: None when it has no branch at all
    (empty), the one branch holding bundles, else UsageError naming the branches."""
    git = gitremote.import_git()
    try:
        heads = sorted(gitremote.parse_ls_remote(_run(repo, "ls-remote", "--heads", "--", url)))
    except git.exc.GitCommandError as exc:
        raise git_error("listing the branches of", url, exc) from None
    if not heads:
        return None
    names = ", ".join(h if h.isprintable() else ascii(h) for h in heads[:MAX_BRANCHES])
    names += ", and %d more" % (len(heads) - MAX_BRANCHES) if len(heads) > MAX_BRANCHES else ""
    lead = "%s's HEAD names no branch that exists; its branches: %s" % (url, names)
    if len(heads) > MAX_BRANCHES:
        raise UsageError("%s; too many to look through: give the one to pull with --branch" % lead)
    holding = _branches_holding_bundles(repo, url, heads)
    if len(holding) == 1:
        err.write("tfcnnwrap pull: %s; pulling %s, the one that holds bundles\n" % (lead, holding[0]))
        return holding[0]
    what = "none of them holds bundles" if not holding else "%s hold bundles" % ", ".join(holding)
    raise UsageError("%s; %s: give the one to pull with --branch" % (lead, what))


def _branches_holding_bundles(repo: Repo, url: str, heads: List[str]) -> List[str]:
    """Which of ``heads`` hold a bundle file, each fetched at depth 1 under a ref of our own, then let go."""
    git = gitremote.import_git()
    refs = ["refs/tfcnnwrap/probe/%d" % i for i in range(len(heads))]
    try:
        _run(
            repo,
            "fetch",
            "--depth=1",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            url,
            *["+refs/heads/%s:%s" % (head, ref) for head, ref in zip(heads, refs)],
        )
        holding = [
            head
            for head, ref in zip(heads, refs)
            if any(e[4].endswith(bundles.SUFFIX) for e in listed_entries(repo, ref))
        ]
    except git.exc.GitCommandError as exc:
        raise git_error("fetching", url, exc) from None
    finally:
        for ref in refs:
            repo.git.update_ref("-d", ref, with_exceptions=False)
    return holding


Entry = Tuple[str, str, str, Optional[int], str]


def listed_entries(repo: Repo, tip: str) -> Iterator[Entry]:
    """``git ls-tree -r -l -z`` of ``tip``, entry by entry as git lists it: a tree of millions of entries is
    never held whole (stopping early ends git)."""
    proc = repo.git.ls_tree("-r", "-l", "-z", tip, as_process=True)
    rest = b""
    try:
        while True:
            chunk = proc.stdout.read(64 * 1024)
            if not chunk:
                break
            *items, rest = (rest + chunk).split(b"\0")
            for item in items:
                yield from tree_entries(item.decode("utf-8", "surrogateescape"))
    finally:
        proc.proc.kill()
        proc.stdout.close()
        proc.proc.wait()


def _entry_refusal(mode: str, kind: str, size: Optional[int], path: str) -> Optional[str]:
    if mode == "120000":
        return "%s: a symbolic link; bundles are files, links are never followed" % path
    if kind != "blob":
        return "%s: a %s, not a file" % (path, kind)
    limit = bundles.max_bytes()
    if size is None or size > limit:
        return "%s: %s bytes, over the %d-byte limit of a bundle; not read" % (path, size, limit)
    return None


# At most this many files read (inflated and verified) per pull: some 5-20 ms each for a real bundle, so a
# pull of a repository this size takes minutes at most; the next pull goes on (files already imported are
# skipped by name, unread).
MAX_READS = 10000


def _checked_id(checked: Checked) -> Optional[str]:
    """The id of the bundle library.check read; None when refused."""
    return None if isinstance(checked, Refused) else checked.id


class _Pull:
    """One pull's reading: each blob read and checked once whatever the number of names it has in the tree
    (``seen``: mode and sha -> the id of the bundle it holds, now in the library; "!id" when it was refused
    for a name that is not its id; None when refused), at most MAX_READS read."""

    def __init__(
        self, repo: Repo, library: Library, url: str, out: TextIO, err: TextIO, allowed: Optional[Path] = None
    ) -> None:
        self.repo, self.library, self.url, self.out, self.err = repo, library, url, out, err
        self.allowed = allowed  # the allowed signers file signers are named by
        self.counts = {"imported": 0, "present": 0, "refused": 0, "unread": 0}
        self.seen: Dict[str, Optional[str]] = {}
        self.copies_refused = 0
        self.reads = 0
        self.oversized = False

    def entry(self, entry: Entry) -> None:
        mode, kind, sha, size, path = entry
        path = path if path.isprintable() else ascii(path)  # their file names: one line each, whatever they hold
        expected = path.rsplit("/", 1)[-1][: -len(bundles.SUFFIX)]
        key = mode + sha  # a link and a file may name one blob: refused for different reasons
        if key in self.seen and self.seen[key] != "!" + expected:  # "!id": read before under another name
            self._again(self.seen[key], expected)
            return
        refusal = _entry_refusal(mode, kind, size, path)
        if refusal is None and self.reads >= MAX_READS:
            self.counts["unread"] += 1
            return
        if refusal is not None:
            self.oversized = self.oversized or (mode != "120000" and kind == "blob")
            outcome, message, ident = "refused", refusal, None
        else:
            self.reads += 1
            outcome, message, ident = self._read(sha, path, expected)
        self.seen[key] = ident if outcome != "refused" else ("!" + ident if ident else None)
        self.counts[outcome] += 1
        if outcome != "present" or "new signature" in message:
            (self.err if outcome == "refused" else self.out).write(
                ("refused: " if outcome == "refused" else "") + message + "\n"
            )

    def _again(self, ident: Optional[str], expected: str) -> None:
        """Another name of a blob read before: already there when it names the bundle the blob holds."""
        if ident is not None and ident == expected:
            self.counts["present"] += 1
        else:
            self.counts["refused"] += 1
            self.copies_refused += 1

    def _read(self, sha: str, path: str, expected: str) -> Tuple[str, str, Optional[str]]:
        try:
            data = self.repo.odb.stream(bytes.fromhex(sha)).read()
        except Exception as exc:  # noqa: BLE001 - a damaged object in their repository refuses that file only
            return "refused", "%s: git cannot read it (%s)" % (path, str(exc)[:120] or type(exc).__name__), None
        checked = check(data, path, origin=self.url, known=self.library.known_ids_cached(), allowed=self.allowed)
        ident = _checked_id(checked)
        if ident is not None and ident != expected:
            return "refused", "%s: holds bundle %s, not the one its name says" % (path, ident[:12]), ident
        outcome, message = store(self.library, data, checked)
        return outcome, message, ident

    def finish(self) -> None:
        if self.copies_refused:
            self.err.write(
                "refused: %d more names of files refused above (or of files that hold another "
                "bundle than their name says)\n" % self.copies_refused
            )
        if self.counts["unread"]:
            self.err.write(
                "tfcnnwrap pull: read %d files, the most one pull reads; %d not read yet: pull again "
                "for the rest\n" % (MAX_READS, self.counts["unread"])
            )


def pull(
    url: str, branch: Optional[str] = None, out: Optional[TextIO] = None, err: Optional[TextIO] = None
) -> Tuple[Dict[str, int], Optional[str]]:
    """Fetch, verify and import; returns {'imported', 'present', 'refused', 'unread'} counts. ``out``/``err``:
    default the streams of the moment of the call (a default bound at import keeps whatever stdout was then)."""
    out, err = out or sys.stdout, err or sys.stderr
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
    reading = _Pull(repo, library, url, out, err, allowed)
    try:
        tip = fetch_tip(repo, url, branch, err)
        known = library.known_ids()
        for entry in listed_entries(repo, tip) if tip else ():
            name = entry[4].rsplit("/", 1)[-1]
            if not name.endswith(bundles.SUFFIX):
                continue
            ident = name[: -len(bundles.SUFFIX)]
            if ident in known and _same_size(library, ident, entry[3]):
                reading.counts["present"] += 1  # a copy of another size may carry signatures ours lacks: read
                continue
            reading.entry(entry)
        reading.finish()
    finally:
        repo.close()
        library.close()
        if reading.oversized:
            _drop_cache(cache_path(library, url))
        lock.release()
    return reading.counts, tip


def _drop_cache(path: Path) -> None:
    """Remove a pull cache that holds a blob refused as too large: git fetched it whole, and a cache must not
    keep it (the next pull fetches anew, at depth 1)."""
    import shutil  # only a pull that refused a large file removes its cache

    try:
        shutil.rmtree(str(path))  # never follows a link inside it; refuses a cache that is itself a link
    except OSError:
        pass


def _same_size(library: Library, ident: str, size: Optional[int]) -> bool:
    """The library's copy of bundle ``ident`` has ``size`` bytes (signatures only add bytes). A pull of an
    up-to-date repository asks this of every file it lists (100,000s): a stat of a plain string path, no
    pathlib object made per file."""
    try:
        return os.stat(os.path.join(library.bundle_folder, ident + bundles.SUFFIX)).st_size == size
    except (OSError, ValueError):  # ValueError: a NUL in a name (a repository's file name is theirs)
        return False


@dataclass(frozen=True)
class PullArgs:
    """`pull GIT_URL`: ``branch`` None: the default one (or the one branch holding bundles)."""

    url: str
    branch: Optional[str] = None


def cmd_pull(args: PullArgs) -> int:
    counts, tip = pull(args.url, args.branch)
    if tip is None:
        sys.stderr.write("tfcnnwrap pull: %s has no commits yet; nothing to pull\n" % args.url)
        return 0
    sys.stderr.write(
        "tfcnnwrap pull: %d imported, %d already there, %d refused%s (from %s at %s)\n"
        % (
            counts["imported"],
            counts["present"],
            counts["refused"],
            ", %d not read yet" % counts["unread"] if counts["unread"] else "",
            args.url,
            tip[:12],
        )
    )
    return 1 if counts["refused"] or counts["unread"] else 0
