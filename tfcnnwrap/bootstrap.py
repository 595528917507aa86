"""`setup`: fetch the tensorflow/benchmarks branch that matches the target's TensorFlow into the vendor dir.

Steps: refuse unsafe URLs (before git or the disk is touched) -> TensorFlow version (--tf-version, or the
probe) -> when the manifest and checkout already match, say so and stop (no network) -> list the remote's
branches (``git ls-remote --heads``) -> choose the branch (``versions.choose_branch``) -> clone it (depth 1,
single branch) into a staging directory inside the vendor dir -> swap it into place -> write the manifest.

GitPython is imported inside functions: the no-op re-run needs neither git nor the network.
"""

import os
import re
import shutil
import stat
import sys
import time
import uuid
from pathlib import Path

from rich.text import Text

from tfcnnwrap import __version__, checkout, render, versions
from tfcnnwrap.clock import utc_now
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.procs import format_command, pip_install_command
from tfcnnwrap.filelock import FileLock

SAFE_SCHEMES = ("https", "http", "ssh", "git", "file")
SETUP_LOCK_NAME = ".tfcnnwrap-setup.lock"
STAGING_PREFIX = ".benchmarks-new-"
RETIRED_PREFIX = ".benchmarks-old-"
LS_REMOTE_TIMEOUT_S = 60
GIT_INSTALL_HINT = (
    "install git and make sure it is on PATH: `conda install git` (Anaconda), Git for Windows "
    "(https://git-scm.com/download/win), or `apt install git` / `brew install git`"
)

_REMOTE_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.\-]*::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:$")


# --- pure helpers -----------------------------------------------------------------------------------------


def normalise_repo_url(raw):
    """The URL git will be given, or UsageError for anything git could read as an option or a command.

    A local path becomes an absolute ``file://`` URL (so that ``--depth`` applies); an ``https://``,
    ``http://``, ``ssh://``, ``git://`` or ``file://`` URL or scp-like ``user@host:path`` is kept as is.
    """
    text = "" if raw is None else str(raw)
    if not text.strip():
        raise UsageError(
            "--repo-url is empty: give https://github.com/tensorflow/benchmarks.git or a mirror's path"
        )
    if text != text.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise UsageError("refusing --repo-url %r: it holds spaces at the ends or control characters" % text)
    if text.startswith("-"):
        raise UsageError(
            "refusing --repo-url %r: it starts with '-', which git would read as an option; give a URL, "
            "or write a local path as ./%s" % (text, text)
        )
    if re.search(r"(://|@)-", text):
        raise UsageError(
            "refusing --repo-url %r: a host name that starts with '-' would reach ssh as an option" % text
        )
    if _REMOTE_HELPER.match(text):
        raise UsageError(
            "refusing --repo-url %r: the '<transport>::' form (ext::, fd::) makes git run commands; give an "
            "https://, ssh://, git:// or file:// URL or a local path" % text
        )
    scheme = _SCHEME.match(text)
    if scheme:
        if scheme.group(1).lower() not in SAFE_SCHEMES:
            raise UsageError(
                "refusing --repo-url %r: scheme %r is not one of %s"
                % (text, scheme.group(1), ", ".join(SAFE_SCHEMES))
            )
        return text
    head = re.split(r"[\\/]", text, maxsplit=1)[0]
    if ":" in head and not _WINDOWS_DRIVE.match(head):
        return text  # scp-like user@host:path, which git reads as ssh
    return Path(text).expanduser().resolve().as_uri()


def validate_branch_name(name):
    if not name or name.startswith("-") or any(ord(ch) <= 32 or ord(ch) == 127 for ch in name):
        raise UsageError("refusing --branch %r: not a branch name; e.g. --branch cnn_tf_v1.12_compatible" % name)
    return name


def parse_ls_remote(text):
    """``git ls-remote --heads`` output -> {branch: sha}."""
    heads = {}
    for line in text.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and parts[1].startswith("refs/heads/"):
            heads[parts[1][len("refs/heads/") :]] = parts[0]
    return heads


def choice_inputs(branch_names):
    """The branch names that choosing needs (compat branches and master), cached in the manifest."""
    names = versions.compat_branches(branch_names)
    if versions.MASTER in branch_names:
        names.append(versions.MASTER)
    return names


def git_env():
    """Git must never wait for a person: no credential prompts, and stalled transfers abort."""
    return {
        "GIT_TERMINAL_PROMPT": "0",
        "GCM_INTERACTIVE": "never",
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
        "GIT_HTTP_LOW_SPEED_TIME": "30",
    }


def git_message(stderr):
    """The line of git's stderr (as GitPython quotes it) that says what went wrong."""
    text = str(stderr or "").strip()
    if text.startswith("stderr:"):
        text = text[len("stderr:") :].strip().strip("'")
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for line in lines:
        if line.lower().startswith(("fatal:", "error:")) or "Timeout:" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no message from git"


# --- the checkout on disk --------------------------------------------------------------------------------


def read_head(repo_dir):
    """(branch, sha) of a checkout's HEAD read from .git files (no git needed); None parts when unknown."""
    git_dir = Path(repo_dir) / ".git"
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref: "):
        return None, head or None
    ref = head[len("ref: ") :]
    branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
    try:
        return branch, (git_dir / ref).read_text(encoding="utf-8").strip()
    except OSError:
        pass
    try:
        for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
            parts = line.split(" ")
            if len(parts) == 2 and parts[1] == ref:
                return branch, parts[0]
    except OSError:
        pass
    return branch, None


def checkout_matches(vendor, manifest):
    """True when the checkout is whole and is what the manifest says (branch, and commit when readable)."""
    target = checkout.checkout_dir(vendor)
    if not manifest or not checkout.script_path(vendor).is_file():
        return False
    branch, sha = read_head(target)
    return branch == manifest.get("branch") and (sha is None or sha == manifest.get("commit"))


def _on_rm_error(func, path, _exc_info):
    # Git marks pack files read-only; Windows refuses to delete those until the flag is cleared.
    try:
        os.chmod(path, stat.S_IWRITE)
        func(path)
    except OSError:
        pass


def remove_tree(path):
    if sys.version_info >= (3, 12):
        shutil.rmtree(str(path), onexc=_on_rm_error)
    else:
        shutil.rmtree(str(path), onerror=_on_rm_error)


def recover_interrupted(vendor):
    """Undo what a killed setup left: restore a checkout moved aside, delete staging and retired copies."""
    vendor = Path(vendor)
    if not vendor.is_dir():
        return
    target = checkout.checkout_dir(vendor)
    retired = sorted(vendor.glob(RETIRED_PREFIX + "*"), key=lambda p: p.stat().st_mtime, reverse=True)
    if retired and not target.exists():
        try:
            retired.pop(0).rename(target)
        except OSError:
            pass
    for leftover in retired + list(vendor.glob(STAGING_PREFIX + "*")):
        remove_tree(leftover)


def swap_into_place(staging, target):
    """Put the complete clone ``staging`` at ``target``; the old checkout is restored if that fails.

    Windows cannot replace a non-empty directory in one rename: move the old one aside, move the new one
    in, then delete the old one.
    """
    staging, target = Path(staging), Path(target)
    retired = None
    try:
        if target.exists():
            retired = target.with_name(RETIRED_PREFIX + uuid.uuid4().hex[:8])
            target.rename(retired)
        staging.rename(target)
    except OSError as exc:
        if retired is not None and retired.exists() and not target.exists():
            retired.rename(target)
        raise SetupError(
            "could not move the new checkout into %s (%s); is a program using that folder? Close it and "
            "run setup again; the previous checkout is untouched" % (target, exc.strerror or exc)
        ) from None
    if retired is not None:
        remove_tree(retired)


# --- git (GitPython) --------------------------------------------------------------------------------------


def import_git():
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


def local_path_of(url):
    """The directory a ``file://`` URL names, or None for other URLs."""
    if not url.lower().startswith("file://"):
        return None
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    parts = urlsplit(url)
    return Path(url2pathname(parts.path)) if parts.netloc in ("", "localhost") else None


def _unreachable(url, detail):
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


def list_remote_heads(url):
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


def setup_lock(vendor):
    """The vendor directory's writer lock: one setup at a time may clone, swap or clean up in it."""
    return FileLock(
        Path(vendor) / SETUP_LOCK_NAME, "%s is in use by another `tfcnnwrap setup`; wait for it to finish" % vendor
    )


def clone_into_place(url, branch, vendor, console=None, lock=None):
    """Clone ``branch`` (depth 1, single branch) beside the checkout and swap it in; returns the commit sha.

    ``lock`` (see ``setup_lock``) is taken as soon as the vendor directory exists, if not held already.
    """
    git = import_git()
    vendor = Path(vendor)
    # Named by hand rather than tempfile.mkdtemp, whose 0700 mode would follow the checkout into place.
    staging = vendor / (STAGING_PREFIX + uuid.uuid4().hex[:8])
    try:
        vendor.mkdir(parents=True, exist_ok=True)
        if lock is not None and not lock.held:
            lock.acquire()
        staging.mkdir()
    except OSError as exc:
        raise SetupError(
            "cannot create %s (%s): choose another place with --vendor-dir" % (staging.parent, exc.strerror or exc)
        ) from None
    try:
        status = (
            console.status("Cloning %s from %s ..." % (branch, url), refresh_per_second=4) if console else None
        )
        if status:
            status.start()
        try:
            repo = git.Repo.clone_from(
                url, str(staging), depth=1, branch=branch, single_branch=True, no_tags=True, env=git_env()
            )
        finally:
            if status:
                status.stop()
        try:
            commit = repo.head.commit.hexsha
        finally:
            repo.close()
        if not (staging / checkout.SCRIPT_RELPATH).is_file():
            raise SetupError(
                "branch %s of %s has no %s, so sweep could not run it; pick another with --branch "
                "(the previous checkout is untouched)" % (branch, url, checkout.SCRIPT_RELPATH.as_posix())
            )
        swap_into_place(staging, checkout.checkout_dir(vendor))
    except git.exc.GitCommandNotFound:
        raise SetupError("git is not installed or not on PATH: " + GIT_INSTALL_HINT) from None
    except git.exc.GitCommandError as exc:
        raise SetupError(
            "cloning %s from %s failed (%s); the previous checkout is untouched; check the URL and your "
            "network, or pass a local mirror with --repo-url" % (branch, url, git_message(exc.stderr))
        ) from None
    finally:
        if staging.exists():
            remove_tree(staging)
    return commit


# --- TensorFlow -------------------------------------------------------------------------------------------


def resolve_tensorflow(args):
    """What setup knows about the target's TensorFlow: a dict with version, parsed, source, python, ..."""
    from tfcnnwrap import probe

    python = probe.target_python(args.python)
    info = {
        "python": python,
        "version": None,
        "parsed": None,
        "source": None,
        "distribution": None,
        "tf_keras": None,
        "warnings": [],
    }
    if args.tf_version:
        info.update(
            version=args.tf_version, parsed=versions.parse_tf_version(args.tf_version), source="--tf-version"
        )
        return info
    try:
        answer = probe.run_probe(args.python)
    except SetupError:
        if args.branch:  # the branch is given: TensorFlow is only needed for the tf_keras check
            info["warnings"].append("could not question %s about TensorFlow; --branch used as given" % python)
            return info
        raise
    info["warnings"].extend(answer.get("warnings") or [])
    info["tf_keras"] = answer.get("tf_keras")
    info["distribution"] = answer.get("tensorflow_distribution")
    version = answer.get("tensorflow_version")
    if not version:
        if args.branch:
            info["warnings"].append("no TensorFlow found in %s; --branch used as given" % python)
            return info
        raise SetupError(
            "no TensorFlow in %s: pass --python with the interpreter that has TensorFlow (e.g. "
            "C:\\Anaconda3\\envs\\tf\\python.exe), or skip probing with --tf-version X.Y" % python
        )
    info.update(version=str(version), source=answer.get("version_source") or "probe")
    try:
        info["parsed"] = versions.parse_tf_version(version)
    except UsageError:
        if not args.branch:
            raise SetupError(
                "%s reports TensorFlow version %r, which has no X.Y: pass --tf-version X.Y or --branch NAME"
                % (python, version)
            ) from None
    return info


def describe_tf(tf):
    if not tf["version"]:
        return "unknown (%s)" % tf["python"]
    if tf["source"] == "--tf-version":
        return "%s (given with --tf-version)" % tf["version"]
    if tf["source"] == "metadata":
        return "%s (package metadata of %s in %s)" % (
            tf["version"],
            tf["distribution"] or "tensorflow",
            tf["python"],
        )
    return "%s (import tensorflow in %s)" % (tf["version"], tf["python"])


def keras_notes(tf):
    """(row text or None, warning or None) about tf-keras for TensorFlow >= 2.16."""
    if not tf["parsed"] or not versions.needs_legacy_keras(tf["parsed"]):
        return None, None
    install = pip_install_command(tf["python"], "tf-keras")
    if tf["tf_keras"] is True:
        return "tf-keras found; sweep runs tf_cnn_benchmarks with TF_USE_LEGACY_KERAS=1", None
    if tf["tf_keras"] is False:
        return "tf-keras MISSING", (
            "TensorFlow %s uses Keras 3 and tf_cnn_benchmarks needs tf-keras, which %s lacks: run `%s`"
            % (versions.format_version(tf["parsed"]), tf["python"], install)
        )
    return "not checked (--tf-version)", (
        'TensorFlow %s uses Keras 3 and tf_cnn_benchmarks needs tf-keras; if `%s -c "import tf_keras"` '
        "fails, run `%s`" % (versions.format_version(tf["parsed"]), format_command([tf["python"]]), install)
    )


# --- the verb ---------------------------------------------------------------------------------------------


def offline_choice(manifest, vendor, url, branch_arg, tf):
    """(branch, reason) when the checkout in place already is what this run would fetch; else None.

    Without --branch the choice is made again from the branch list cached in the manifest, so a changed
    TensorFlow version that needs another branch is noticed without the network.
    """
    if not manifest or manifest.get("url") != url or not checkout_matches(vendor, manifest):
        return None
    if branch_arg:
        wanted, reason = branch_arg, "given with --branch"
    else:
        cached = manifest.get("upstream_branches")
        if not isinstance(cached, list) or tf["parsed"] is None:
            return None
        try:
            wanted, reason = versions.choose_branch(tf["parsed"], cached)
        except SetupError:
            return None
    return (wanted, reason) if wanted == manifest.get("branch") else None


def choose(branch_arg, tf, heads, url):
    if branch_arg:
        if branch_arg not in heads:
            raise SetupError(
                "the upstream %s has no branch %r; compatible branches there: %s (or master)"
                % (url, branch_arg, ", ".join(versions.compat_branches(heads)) or "none")
            )
        return branch_arg, "given with --branch", "--branch"
    branch, reason = versions.choose_branch(tf["parsed"], heads)
    return branch, reason, "rule"


def build_manifest(url, branch, reason, source, commit, tf, heads, fetched_at):
    needs_keras = versions.needs_legacy_keras(tf["parsed"]) if tf["parsed"] else None
    return {
        "url": url,
        "branch": branch,
        "commit": commit,
        "tf_version": tf["version"],
        "tf_version_source": tf["source"],
        "python": tf["python"],
        "fetched_at": fetched_at,
        "checkout": checkout.CHECKOUT_NAME,
        "branch_reason": reason,
        "branch_source": source,
        "upstream_branches": choice_inputs(heads),
        "tensorflow_distribution": tf["distribution"],
        "needs_legacy_keras": needs_keras,
        "tf_keras_present": tf["tf_keras"],
        "depth": 1,
        "tfcnnwrap_version": __version__,
    }


NOTHING_CHANGED = "Already set up: same upstream and branch; nothing fetched, nothing changed."


def fetch(args, url, branch_arg, vendor, tf, manifest, console, lock=None):
    """The networked part: list branches, choose, clone or update; returns (branch, reason, commit, headline)."""
    heads = list_remote_heads(url)
    branch, reason, source = choose(branch_arg, tf, heads, url)
    old = manifest if manifest and checkout_matches(vendor, manifest) else None
    same = old is not None and old.get("url") == url and old.get("branch") == branch
    if same and (not args.update or heads[branch] == old.get("commit")):
        commit = old.get("commit")
        if args.update or old.get("upstream_branches") != choice_inputs(heads):
            # nothing fetched; only what was learnt about upstream is recorded
            fresh = build_manifest(url, branch, reason, source, commit, tf, heads, old.get("fetched_at"))
            checkout.write_manifest(vendor, fresh)
        headline = "Already at the newest commit of %s." % branch if args.update else NOTHING_CHANGED
        return branch, reason, commit, headline

    commit = clone_into_place(url, branch, vendor, console=console if console.is_terminal else None, lock=lock)
    checkout.write_manifest(vendor, build_manifest(url, branch, reason, source, commit, tf, heads, utc_now()))
    if same:
        headline = "Updated %s: %s -> %s (depth 1)." % (branch, str(old.get("commit"))[:12], commit[:12])
    elif old is not None and old.get("url") != url:
        headline = "Replaced the checkout from %s with %s from %s (depth 1, single branch)." % (
            old.get("url"),
            branch,
            url,
        )
    elif old is not None:
        headline = "Switched from %s to %s (depth 1, single branch)." % (old.get("branch"), branch)
    else:
        headline = "Fetched %s (depth 1, single branch)." % branch
    return branch, reason, commit, headline


def cmd_setup(args):
    started = time.perf_counter()
    url = normalise_repo_url(args.repo_url)
    branch_arg = validate_branch_name(args.branch) if args.branch is not None else None
    vendor = Path(args.vendor_dir)
    out = render.console(markup=False)
    err = render.console(stderr=True, markup=False)

    tf = resolve_tensorflow(args)
    lock = setup_lock(vendor)
    if vendor.is_dir():  # a first setup creates it, and takes the lock then (clone_into_place)
        lock.acquire()
    try:
        recover_interrupted(vendor)
        manifest = checkout.read_manifest(vendor)
        reused = None if args.update else offline_choice(manifest, vendor, url, branch_arg, tf)
        if reused:
            (branch, reason), commit = reused, manifest.get("commit")
            headline = NOTHING_CHANGED
        else:
            branch, reason, commit, headline = fetch(args, url, branch_arg, vendor, tf, manifest, out, lock)
    finally:
        lock.release()
    keras_row, keras_warning = keras_notes(tf)
    rows = [
        ("TensorFlow", describe_tf(tf)),
        ("Branch", branch),
        ("Why", reason),
        ("Commit", str(commit)),
        ("Checkout", str(checkout.checkout_dir(vendor).resolve())),
        ("Upstream", url),
    ]
    if keras_row:
        rows.append(("Keras", keras_row))
    rows.append(("Took", "%.2f s" % (time.perf_counter() - started)))
    out.print(headline, soft_wrap=True)
    for label, value in rows:
        out.print(Text.assemble(("  %-11s" % label, "bold"), value), soft_wrap=True)
    sys.stdout.flush()
    for warning in tf["warnings"] + ([keras_warning] if keras_warning else []):
        err.print("warning: " + warning, soft_wrap=True)
    return 0
