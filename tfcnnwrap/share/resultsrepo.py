"""A community results repository anyone can run: `init-repo DIR` and `verify --repo DIR`.

init-repo makes (or adds to) a git repository that `publish --to` can push bundles into: a README saying how to
submit, an ``allowed_signers`` file (OpenSSH's format: whose signatures the repository trusts), ``bundles/``, and
a CI workflow that runs ``tfcnnwrap verify --repo .`` on every push and pull request and, on the default
branch, builds the site and publishes it to Pages. The workflow lives in ``.github/workflows``, which GitHub
Actions reads and Forgejo and Gitea Actions read too when they have no folder of their own. Files that exist are
left as they are (said so), so running it on an existing repository adds only what is missing.

verify --repo checks every bundle of such a tree as `verify` does, and also that each lies where `publish` would
put it (``bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz``): a bundle anywhere else, or a link, is not accepted.
The tree is someone else's: links are never followed, and only regular files are read.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import List, Optional, Tuple

from tfcnnwrap import __version__, safefs
from tfcnnwrap.environment import gitremote
from tfcnnwrap.errors import EXIT_OK, SetupError, UsageError
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import signing
from tfcnnwrap.share.gitrepo import ensure_identity, repo_path
from tfcnnwrap.share.verify import verify

WORKFLOW = ".github/workflows/tfcnnwrap-results.yml"
SIGNERS = "allowed_signers"
# what init-repo writes: repository path -> packaged template (tfcnnwrap/data/resultsrepo/)
FILES = (
    ("README.md", "README.md"),
    (SIGNERS, "allowed_signers"),
    (WORKFLOW, "workflow.yml"),
    ("bundles/.gitkeep", None),
)
SKIP_DIRS = frozenset({".git"})
EXIT_NOT_VERIFIED, EXIT_UNREADABLE = 1, 2


def _template(name: str, install: str) -> bytes:
    text = resources.files("tfcnnwrap").joinpath("data/resultsrepo/" + name).read_text(encoding="utf-8")
    return text.replace("@INSTALL@", install).replace("@VERSION@", __version__).encode("utf-8")


def _write_missing(root: Path, install: str) -> Tuple[List[str], List[str]]:
    """(written, kept): each file of FILES created without following a link; an existing one is kept."""
    written, kept = [], []
    for rel, template in FILES:
        target = root / rel
        if os.path.lexists(target):
            kept.append(rel)
            continue
        safefs.refuse_links_outside(root, rel.split("/")[:-1], "the repository")
        target.parent.mkdir(parents=True, exist_ok=True)
        with safefs.create_new(target) as fh:
            fh.write(_template(template, install) if template else b"")
        written.append(rel)
    return written, kept


def init_repo(root: Path, install: str) -> Tuple[List[str], List[str], bool]:
    """(written, kept, committed): the repository at ``root`` made or completed, its new files committed."""
    git = gitremote.import_git()
    if root.exists() and not root.is_dir():
        raise UsageError("%s is a file; give a folder for the results repository" % root)
    root.mkdir(parents=True, exist_ok=True)
    try:
        repo = git.Repo(root) if (root / ".git").exists() else git.Repo.init(root)
    except (git.exc.GitError, OSError) as exc:
        raise SetupError("%s is not a git repository git can open (%s)" % (root, exc)) from None
    if repo.bare:
        raise UsageError(
            "%s is a bare repository; init-repo needs a work tree (clone it, or give a new folder; "
            "a bare clone of the result is what a git host serves)" % root
        )
    written, kept = _write_missing(root, install)
    if not written:
        return written, kept, False
    ensure_identity(repo)
    repo.git.execute(["git", "add", "--", *written], env=gitremote.git_env())
    repo.git.execute(
        ["git", "commit", "-q", "-m", "Results repository for tfcnnwrap bundles", "--", *written],
        env=gitremote.git_env(),
    )
    return written, kept, True


@dataclass(frozen=True)
class InitRepoArgs:
    """`init-repo DIR`: ``install`` what the workflow installs with pip (None: this tfcnnwrap's version)."""

    dir: str
    install: Optional[str] = None


def cmd_init_repo(args: InitRepoArgs) -> int:
    root = Path(args.dir)
    written, kept, committed = init_repo(root, args.install or "tfcnnwrap==%s" % __version__)
    for rel in written:
        sys.stdout.write("wrote %s\n" % (root / rel))
    for rel in kept:
        sys.stdout.write("kept %s (it exists)\n" % (root / rel))
    if committed:
        sys.stdout.write("committed %d file%s in %s\n" % (len(written), "" if len(written) == 1 else "s", root))
    sys.stdout.write(
        "next: add signers' keys to %s, push the repository to your git host, and submit with "
        "`tfcnnwrap publish SWEEP_DIR --to GIT_URL`\n" % (root / SIGNERS)
    )
    return EXIT_OK


# -- verify --repo ---------------------------------------------------------------------------------------------


def bundle_files(root: Path) -> Tuple[List[Path], List[Path]]:
    """(bundles, links): every ``*.tfcw.json.gz`` under root, regular files apart from links and others,
    without entering ``.git`` or following a linked folder."""
    found: List[Path] = []
    refused: List[Path] = []
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if not name.endswith(bundles.SUFFIX):
                continue
            path = Path(top) / name
            mode = os.lstat(path).st_mode
            (found if stat.S_ISREG(mode) else refused).append(path)
    return found, refused


def check_one(root: Path, path: Path, allowed: Optional[Path] = None) -> Tuple[int, List[str], str]:
    """(exit code, findings and signers, summary line) of one bundle of the repository; signers named from
    ``allowed`` (an OpenSSH allowed_signers file)."""
    rel = path.relative_to(root).as_posix()
    try:
        bundle = bundles.read_path(path)
    except bundles.BundleRefused as exc:
        return EXIT_UNREADABLE, [], "%s: unreadable: %s" % (rel, exc.message)
    verdict = verify(bundle, allowed)
    findings = list(verdict.findings) + [signer.describe() for signer in verdict.signers if signer.valid]
    code = EXIT_OK if verdict.verified else EXIT_NOT_VERIFIED
    expected = repo_path(bundle)
    if rel != expected:
        findings.append("it lies at %s; publish puts it at %s" % (rel, expected))
        code = EXIT_NOT_VERIFIED
    state = verdict.state if rel == expected else "not verified"
    line = "%s: %s (%s, %d runs, bundle %s)" % (
        rel,
        state,
        bundle.gpu,
        len(bundle.runs),
        bundle.short_id,
    )
    return code, ["%s: %s" % (rel, f) for f in findings], line


def signers_file(root: Path, flag: Optional[str]) -> Optional[Path]:
    """``--allowed-signers FILE``, else the repository's own allowed_signers (what init-repo writes; a regular
    file only: a link in someone's repository is not followed), else the user's default."""
    if flag:
        return signing.allowed_signers_path(flag)
    own = root / SIGNERS
    try:
        if stat.S_ISREG(os.lstat(own).st_mode):
            return own
    except OSError:
        pass
    return signing.allowed_signers_path(None)


def check_repo(root: Path, allowed_signers: Optional[str] = None) -> int:
    """Every bundle of the tree at ``root`` checked; one line per finding and per bundle, a total at the end."""
    write = sys.stdout.write
    if not root.is_dir():
        raise UsageError("%s is not a folder; give the results repository's work tree (a clone)" % root)
    found, refused = bundle_files(root)
    allowed = signers_file(root, allowed_signers)
    code, counts = EXIT_OK, {EXIT_OK: 0, EXIT_NOT_VERIFIED: 0, EXIT_UNREADABLE: 0}
    for path in refused:
        write(
            "%s: not a regular file (a link or a special file); a bundle must be the file itself\n"
            % path.relative_to(root).as_posix()
        )
        code, counts[EXIT_NOT_VERIFIED] = max(code, EXIT_NOT_VERIFIED), counts[EXIT_NOT_VERIFIED] + 1
    for path in found:
        one, findings, line = check_one(root, path, allowed)
        for finding in findings:
            write(finding + "\n")
        write(line + "\n")
        code, counts[one] = max(code, one), counts[one] + 1
    total = len(found) + len(refused)
    if not total:
        write("%s holds no bundles yet (publish puts them under bundles/)\n" % root)
        return EXIT_OK
    write(
        "%d bundle%s: %d verified, %d not verified, %d unreadable\n"
        % (total, "" if total == 1 else "s", counts[EXIT_OK], counts[EXIT_NOT_VERIFIED], counts[EXIT_UNREADABLE])
    )
    return code


@dataclass(frozen=True)
class VerifyRepoArgs:
    """`verify --repo DIR`: ``bundles`` the bundle files also given, which --repo refuses; ``allowed_signers``
    the file naming whom the user trusts (None: the repository's own, else the user's default)."""

    repo: str
    bundles: Tuple[str, ...] = ()
    allowed_signers: Optional[str] = None


def cmd_verify_repo(args: VerifyRepoArgs) -> int:
    if args.bundles:
        raise UsageError("give bundles or --repo DIR, not both")
    return check_repo(Path(args.repo), args.allowed_signers)
