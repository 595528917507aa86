"""`setup`: fetch the tensorflow/benchmarks branch that matches the target's TensorFlow into the vendor dir.

Steps: settings (flag > environment variable > what the last setup recorded > built-in default) -> refuse
unsafe URLs and vendor directories (before git or the disk is touched) -> TensorFlow version (--tf-version,
or the probe) -> take the vendor lock exclusively (a running sweep holds it shared) -> when the manifest and
checkout already match, say so and stop (no network) -> list the remote's branches -> choose the branch
(``versions.choose_branch``) -> clone it (depth 1, single branch) into a staging directory inside the vendor
dir -> swap it into place, only over a checkout setup made itself -> write the manifest.

Git lives in ``gitremote``, the checkout on disk in ``checkout``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Tuple

from tfcnnwrap import __version__, prose, render, settings
from tfcnnwrap.clock import utc_now
from tfcnnwrap.environment import checkout, gitremote, probe, versions
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.run.procs import format_command, pip_install_command

if TYPE_CHECKING:
    from rich.console import Console

    from tfcnnwrap.filelock import FileLock

DEFAULT_REPO_URL = "https://github.com/tensorflow/benchmarks.git"
ENV_PYTHON = settings.ENV_PYTHON
NOTHING_CHANGED = "Already set up: same upstream and branch; nothing fetched, nothing changed."


@dataclass(frozen=True)
class SetupArgs:
    """What `setup` was asked (cli/setup.py builds it); None: the flag was not typed."""

    python: Optional[str]
    tf_version: Optional[str]
    branch: Optional[str]
    repo_url: Optional[str]
    vendor_dir: Optional[str]
    update: bool


# --- settings ---------------------------------------------------------------------------------------------


def resolve_settings(args: SetupArgs, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """{vendor, python, repo_url, notes}: flag > environment variable > config file > manifest > default.

    ``python`` None means the interpreter running tfcnnwrap; ``notes`` says what did not come from a flag.
    cli/setup.py gives --vendor-dir and --repo-url no default, so None means "not typed".
    """
    notes = []
    vendor, vendor_from = settings.vendor_dir(args.vendor_dir, environ)
    if vendor_from:
        notes.append("vendor dir from %s" % vendor_from)
    checkout.refuse_unsafe_vendor(vendor)  # before the manifest is read through a planted link
    python, python_from = checkout.target_python(args.python, vendor, environ)
    if python_from == ENV_PYTHON or (python_from or "").startswith("the config file"):
        notes.append("python from %s" % python_from)
    elif python_from and python_from != "--python":
        notes.append("python from the last setup")
    url = args.repo_url
    if url is None:
        url = checkout.remembered(vendor)[1]
        if url:
            notes.append("repo URL from the last setup")
    return {
        "vendor": vendor,
        "python": python,
        "python_from": python_from,
        "repo_url": url or DEFAULT_REPO_URL,
        "notes": notes,
    }


# --- TensorFlow -------------------------------------------------------------------------------------------


def resolve_tensorflow(args: SetupArgs, python_arg: Optional[str]) -> Dict[str, Any]:
    """What setup knows about the target's TensorFlow: a dict with version, parsed, source, python, ..."""
    python = probe.target_python(python_arg)
    info: dict = {
        "python": python,
        "version": None,
        "parsed": None,
        "source": None,
        "distribution": None,
        "tf_keras": None,
        "warnings": [],
    }
    if args.tf_version:
        info.update(version=args.tf_version, parsed=versions.parse_tf_version(args.tf_version), source="--tf-version")
        return info
    try:
        answer = probe.run_probe(python_arg)
    except SetupError:
        if args.branch:  # the branch is given: TensorFlow is only needed for the tf_keras check
            info["warnings"].append("could not question %s about TensorFlow; --branch used as given" % python)
            return info
        raise
    info["warnings"].extend(answer.warnings)
    info["tf_keras"] = answer.tf_keras
    info["distribution"] = answer.distribution
    version = answer.tf_version
    if not version:
        if args.branch:
            info["warnings"].append("no TensorFlow found in %s; --branch used as given" % python)
            return info
        raise SetupError(
            "no TensorFlow in %s: pass --python with the interpreter that has TensorFlow (e.g. "
            "C:\\Anaconda3\\envs\\tf\\python.exe), or skip probing with --tf-version X.Y" % python
        )
    info.update(version=str(version), source=answer.version_source or "probe")
    try:
        info["parsed"] = versions.parse_tf_version(version)
    except UsageError:
        if not args.branch:
            raise SetupError(
                "%s reports TensorFlow version %r, which has no X.Y: pass --tf-version X.Y or --branch NAME"
                % (python, version)
            ) from None
    return info


def describe_tf(tf: Dict[str, Any]) -> str:
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


def keras_notes(tf: Dict[str, Any]) -> Tuple[Optional[str], ...]:
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


# --- choosing and fetching --------------------------------------------------------------------------------


def offline_choice(
    manifest: Optional[Dict[str, Any]], vendor: Path, url: str, branch_arg: Optional[str], tf: Dict[str, Any]
) -> Optional[Tuple[str, ...]]:
    """(branch, reason) when the checkout in place already is what this run would fetch; else None.

    Without --branch the choice is made again from the branch list cached in the manifest, so a changed
    TensorFlow version that needs another branch is noticed without the network.
    """
    if not manifest or manifest.get("url") != url or not checkout.checkout_matches(vendor, manifest):
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


def choose(branch_arg: Optional[str], tf: Dict[str, Any], heads: Dict[str, str], url: str) -> Tuple[str, ...]:
    if branch_arg:
        if branch_arg not in heads:
            raise SetupError(
                "the upstream %s has no branch %r; compatible branches there: %s (or master)"
                % (url, branch_arg, ", ".join(versions.compat_branches(heads)) or "none")
            )
        return branch_arg, "given with --branch", "--branch"
    branch, reason = versions.choose_branch(tf["parsed"], heads)
    return branch, reason, "rule"


def build_manifest(
    url: str,
    branch: str,
    reason: str,
    source: str,
    commit: str,
    tf: Dict[str, Any],
    heads: Dict[str, str],
    fetched_at: str,
    settings: Dict[str, Any],
) -> Dict[str, Any]:
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
        "upstream_branches": gitremote.choice_inputs(heads),
        "tensorflow_distribution": tf["distribution"],
        "needs_legacy_keras": needs_keras,
        "tf_keras_present": tf["tf_keras"],
        "depth": 1,
        "tfcnnwrap_version": __version__,
        # what the next setup uses when not told otherwise (checkout.remembered)
        "settings": {"python": tf["python"] if settings["python"] else None, "repo_url": url},
    }


def lock_vendor(vendor: Path, lock: FileLock) -> bool:
    """Take the vendor lock exclusively, creating the folder if needed; True when this call created it."""
    created = not vendor.is_dir()
    try:
        if created:
            vendor.mkdir(parents=True)
        if not lock.held:
            lock.acquire()
    except OSError as exc:
        raise SetupError(
            "cannot write in %s (%s): make it writable or choose another place with --vendor-dir"
            % (vendor, exc.strerror or exc)
        ) from None
    return created


def clone_and_install(
    url: str,
    branch: str,
    vendor: Path,
    lock: FileLock,
    console: Optional[Console],
    manifest_for: Callable[[str], Dict[str, Any]],
) -> str:
    """Clone into a staging directory and swap it in when complete; then write the manifest.

    A failure leaves the previous checkout as it was, and no staging directory behind; a vendor folder
    this call created is removed again.
    """
    created = lock_vendor(vendor, lock)
    staging = None
    try:
        staging = checkout.new_staging(vendor)
        commit = gitremote.clone_branch(url, branch, staging, console)
        if not (staging / checkout.SCRIPT_RELPATH).is_file():
            raise SetupError(
                "branch %s of %s has no %s, so sweep could not run it; pick another with --branch "
                "(the previous checkout is untouched)" % (branch, url, checkout.SCRIPT_RELPATH.as_posix())
            )
        checkout.mark_as_made_by_setup(staging)
        checkout.swap_into_place(staging, checkout.checkout_dir(vendor))
    except BaseException:
        if staging is not None:
            checkout.remove_tree(staging)
        if created:
            lock.release()
            _remove_empty_vendor(vendor)
        raise
    checkout.write_manifest(vendor, manifest_for(commit))
    return commit


def _remove_empty_vendor(vendor: Path) -> None:
    try:
        (vendor / checkout.VENDOR_LOCK_NAME).unlink()
        vendor.rmdir()
    except OSError:
        pass


def fetch(
    update: bool,
    url: str,
    branch_arg: Optional[str],
    vendor: Path,
    tf: Dict[str, Any],
    manifest: Optional[Dict[str, Any]],
    console: Console,
    lock: FileLock,
    settings: Dict[str, Any],
) -> Tuple[str, str, str, str]:
    """The networked part: list branches, choose, clone or update; returns (branch, reason, commit, headline)."""
    checkout.refuse_foreign_checkout(vendor, manifest)
    heads = gitremote.list_remote_heads(url)
    branch, reason, source = choose(branch_arg, tf, heads, url)

    def manifest_for(commit: str, fetched_at: Optional[str] = None) -> Dict[str, Any]:
        return build_manifest(url, branch, reason, source, commit, tf, heads, fetched_at or utc_now(), settings)

    old: Any = manifest if manifest and checkout.checkout_matches(vendor, manifest) else None
    same = old is not None and old.get("url") == url and old.get("branch") == branch
    if same and (not update or heads[branch] == old.get("commit")):
        commit = old.get("commit")
        fresh = manifest_for(commit, old.get("fetched_at"))
        if fresh != old:  # nothing fetched; only what was learnt about upstream (or settings) is recorded
            checkout.write_manifest(vendor, fresh)
        headline = "Already at the newest commit of %s." % branch if update else NOTHING_CHANGED
        return branch, reason, commit, headline

    commit = clone_and_install(url, branch, vendor, lock, console if console.is_terminal else None, manifest_for)
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


# --- the verb ---------------------------------------------------------------------------------------------


def cmd_setup(args: SetupArgs) -> int:
    started = time.perf_counter()
    settings = resolve_settings(args)
    vendor = settings["vendor"]
    url = gitremote.normalise_repo_url(settings["repo_url"])
    branch_arg = gitremote.validate_branch_name(args.branch) if args.branch is not None else None
    out = render.console(markup=False)

    try:
        tf = resolve_tensorflow(args, settings["python"])
    except SetupError as exc:
        if settings["python_from"] in (None, "--python"):
            raise
        raise SetupError("%s (that interpreter came from %s)" % (exc.message, settings["python_from"])) from None
    lock = checkout.vendor_lock(vendor, shared=False)
    if vendor.is_dir():  # a first setup creates it, and takes the lock then (clone_and_install)
        lock_vendor(vendor, lock)
    try:
        checkout.recover_interrupted(vendor)
        manifest = checkout.read_manifest(vendor)
        reused = None if args.update else offline_choice(manifest, vendor, url, branch_arg, tf)
        if reused:
            (branch, reason), commit = reused, manifest.get("commit")
            headline = NOTHING_CHANGED
            remembered = _settings_to_record(manifest, url, tf, settings)
            if remembered is not None:  # offline still: only the settings to remember are new
                checkout.write_manifest(vendor, dict(manifest, settings=remembered))
                headline = "Already set up: same upstream and branch; nothing fetched; settings remembered."
        else:
            branch, reason, commit, headline = fetch(
                args.update, url, branch_arg, vendor, tf, manifest, out, lock, settings
            )
    finally:
        lock.release()
    print_summary(out, headline, tf, branch, reason, commit, vendor, url, settings, started)
    return 0


def _settings_to_record(
    manifest: Dict[str, Any], url: str, tf: Dict[str, Any], settings: Dict[str, Any]
) -> Optional[Dict[str, Optional[str]]]:
    """The settings this run should remember when the manifest does not hold them yet, else None."""
    wanted = {"python": tf["python"] if settings["python"] else None, "repo_url": url}
    recorded = manifest.get("settings")
    if not isinstance(recorded, dict) and not settings["python"]:
        return None  # a manifest from before settings were kept: its url is remembered already
    return None if recorded == wanted else wanted


def print_summary(
    out: Console,
    headline: str,
    tf: Dict[str, Any],
    branch: str,
    reason: str,
    commit: str,
    vendor: Path,
    url: str,
    settings: Dict[str, Any],
    started: float,
) -> None:
    from rich.text import Text  # rich: only when something is drawn

    keras_row, keras_warning = keras_notes(tf)
    rows = [
        ("TensorFlow", describe_tf(tf)),
        ("Branch", branch),
        ("Why", reason),
        ("Commit", str(commit)),
        ("Checkout", str(checkout.checkout_dir(vendor).resolve())),
        ("Upstream", url),
    ]
    if settings["notes"]:
        rows.append(("Settings", "; ".join(settings["notes"])))
    if keras_row:
        rows.append(("Keras", keras_row))
    rows.append(("Took", "%.2f s" % (time.perf_counter() - started)))
    # on a terminal every line is wrapped between words to its width; a path, a URL or a command is kept
    # whole (a copy of it still works); in a pipe or a log each stays the one line it is
    width = out.width if out.is_terminal else None
    _print_prose(out, headline, width)
    for label, value in rows:
        whole = label in ("Commit", "Checkout", "Upstream")
        lines = prose.fill_row(label, prose.whole(value) if whole else value, width or 1 << 30)
        out.print(Text.assemble((lines[0][:13], "bold"), lines[0][13:]), soft_wrap=True)
        for line in lines[1:]:
            out.print(line, soft_wrap=True)
    sys.stdout.flush()
    err = render.console(stderr=True, markup=False)
    for warning in tf["warnings"] + ([keras_warning] if keras_warning else []):
        _print_prose(err, "warning: " + warning, err.width if err.is_terminal else None)
    sys.stderr.flush()
    # the last line: what to run now (a quick sweep checks every model runs before the long one)
    first = "after the warning's fix, " if keras_warning else ""
    command = _sweep_command(vendor)
    _print_prose(out, "next: %s%s, then %s" % (first, prose.whole(command + " --quick"), prose.whole(command)), width)


def _print_prose(out: Console, text: str, width: Optional[int]) -> None:
    """``text`` wrapped between words at ``width`` (None: one line, as it is)."""
    out.print(
        prose.fill(text, width) if width else text.replace(prose.NBSP, " "),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _sweep_command(vendor: Path) -> str:
    """`python -m tfcnnwrap sweep`, with --vendor-dir when a plain sweep would look elsewhere."""
    argv = ["python", "-m", "tfcnnwrap", "sweep"]
    if Path(vendor).resolve() != settings.vendor_dir()[0].resolve():
        argv += ["--vendor-dir", str(vendor)]
    return format_command(argv)
