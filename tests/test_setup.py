"""`setup` end to end against a local upstream shaped like tensorflow/benchmarks (no network)."""

import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import COMPAT_BRANCHES, assert_clean_error, git

from tfcnnwrap.environment import checkout, gitremote
from tfcnnwrap.errors import SetupError, UsageError


def setup_cli(cli, tmp_path, *args, **kw):
    return cli("setup", "--vendor-dir", tmp_path / "vendor", *args, cwd=tmp_path, **kw)


def manifest_of(tmp_path):
    return json.loads((tmp_path / "vendor" / "tfcnnwrap-setup.json").read_text(encoding="utf-8"))


def checkout_state(tmp_path):
    """Every file of the checkout (outside .git) with its bytes, plus HEAD: 'whole' means equal to before."""
    root = tmp_path / "vendor" / "benchmarks"
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    return files, git(root, "rev-parse", "HEAD").strip()


def assert_shallow_single_branch(checkout, branch):
    assert git(checkout, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert git(checkout, "rev-list", "--count", "HEAD").strip() == "1"
    # origin/HEAD, a symbolic ref to the default branch, names no branch of its own
    listed = git(checkout, "for-each-ref", "--format=%(refname) %(symref)", "refs/remotes").splitlines()
    remote_refs = [line.split()[0] for line in listed if len(line.split()) == 1]
    assert remote_refs == ["refs/remotes/origin/%s" % branch]
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
    assert (checkout / "BRANCH").read_text(encoding="utf-8").strip() == branch


def leftovers(tmp_path):
    vendor = tmp_path / "vendor"
    return sorted(p.name for p in vendor.iterdir() if p.name.startswith(".benchmarks-")) if vendor.exists() else []


# --- the branch rule on a real clone ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "tf_version, dist, branch",
    [
        ("1.12.0", "tensorflow-gpu", "cnn_tf_v1.12_compatible"),
        ("1.6.0", "tensorflow", "cnn_tf_v1.5_compatible"),
        ("1.15.5", "tensorflow-gpu", "cnn_tf_v1.15_compatible"),
        ("2.0.0", "tensorflow", "cnn_tf_v2.0_compatible"),
        ("2.1.3", "tensorflow-gpu", "cnn_tf_v2.1_compatible"),
        ("2.21.0", "tensorflow", "master"),
        ("2.23.0.dev20261026", "tf-nightly", "master"),
    ],
)
def test_setup_clones_the_branch_that_fits_the_probed_tensorflow(
    cli, tmp_path, fake_upstream, fake_tf, tf_version, dist, branch
):
    python = fake_tf(tf_version, dist=dist)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.path, "--python", python)
    assert result.returncode == 0, result
    assert "Fetched %s" % branch in result.stdout
    assert re.search(r"TensorFlow\s+%s \(package metadata of %s" % (re.escape(tf_version), dist), result.stdout), result
    assert re.search(r"Took\s+\d+\.\d\d s", result.stdout)

    checkout = tmp_path / "vendor" / "benchmarks"
    assert_shallow_single_branch(checkout, branch)
    assert (checkout / "scripts" / "tf_cnn_benchmarks" / "tf_cnn_benchmarks.py").is_file()
    manifest = manifest_of(tmp_path)
    assert manifest["branch"] == branch
    assert manifest["commit"] == fake_upstream.head(branch)
    assert manifest["commit"] in result.stdout
    assert manifest["url"] == fake_upstream.url  # the local path became a file:// URL
    assert manifest["tf_version"] == tf_version
    assert manifest["tf_version_source"] == "metadata"
    assert manifest["tensorflow_distribution"] == dist
    assert manifest["python"] == str(python)
    assert manifest["checkout"] == "benchmarks"
    assert manifest["branch_source"] == "rule"
    assert manifest["upstream_branches"] == COMPAT_BRANCHES + ["master"]
    assert manifest["needs_legacy_keras"] is (branch == "master")
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", manifest["fetched_at"])
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_tf_version_flag_skips_the_probe(cli, tmp_path, fake_upstream):
    # --python names nothing runnable: with --tf-version it must not even be started.
    result = setup_cli(
        cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.7", "--python", tmp_path / "no-python"
    )
    assert result.returncode == 0, result
    assert "given with --tf-version" in result.stdout
    assert "newest older one" in result.stdout
    assert manifest_of(tmp_path)["branch"] == "cnn_tf_v1.5_compatible"
    assert manifest_of(tmp_path)["tf_version_source"] == "--tf-version"


@pytest.mark.slow
def test_version_read_by_import_when_metadata_is_missing(cli, tmp_path, fake_upstream, fake_tf):
    python = fake_tf("1.13.1", with_metadata=False)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", python)
    assert result.returncode == 0, result
    assert "1.13.1 (import tensorflow in" in result.stdout
    assert manifest_of(tmp_path)["branch"] == "cnn_tf_v1.13_compatible"
    assert manifest_of(tmp_path)["tf_version_source"] == "import"


# --- Keras 3 -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_missing_tf_keras_is_a_warning_with_the_install_command(cli, tmp_path, fake_upstream, fake_tf):
    python = fake_tf("2.21.0")
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", python)
    assert result.returncode == 0, result
    assert "%s -m pip install tf-keras" % python in result.stderr
    assert "warning:" in result.stderr
    assert manifest_of(tmp_path)["tf_keras_present"] is False


@pytest.mark.slow
def test_tf_keras_present_gives_no_warning(cli, tmp_path, fake_upstream, fake_tf):
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", fake_tf("2.21.0", tf_keras=True))
    assert result.returncode == 0, result
    assert "pip install" not in result.stderr
    assert "TF_USE_LEGACY_KERAS=1" in result.stdout
    assert manifest_of(tmp_path)["tf_keras_present"] is True


@pytest.mark.slow
def test_old_tensorflow_needs_no_tf_keras(cli, tmp_path, fake_upstream, fake_tf):
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", fake_tf("2.1.3"))
    assert result.returncode == 0, result
    assert "tf-keras" not in result.stdout + result.stderr


# --- re-runs, switches, updates ---------------------------------------------------------------------------


@pytest.mark.slow
def test_rerun_with_the_upstream_gone_and_no_git_is_a_quiet_success(cli, tmp_path, fresh_upstream, fake_tf):
    python = fake_tf("1.12.0", dist="tensorflow-gpu")
    first = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.path, "--python", python)
    assert first.returncode == 0, first
    manifest_bytes = (tmp_path / "vendor" / "tfcnnwrap-setup.json").read_bytes()
    before = checkout_state(tmp_path)
    shutil.rmtree(fresh_upstream.path)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()

    started = time.perf_counter()
    again = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.path, "--python", python, env={"PATH": empty_bin})
    wall = time.perf_counter() - started
    assert again.returncode == 0, again
    assert again.stderr == ""
    assert "Already set up" in again.stdout and "nothing fetched" in again.stdout
    took = float(re.search(r"Took\s+(\d+\.\d+) s", again.stdout).group(1))
    assert took < 1.0, again
    assert wall < 5.0  # a whole interpreter start included; generous for slow CI machines
    assert (tmp_path / "vendor" / "tfcnnwrap-setup.json").read_bytes() == manifest_bytes
    assert checkout_state(tmp_path) == before


@pytest.mark.slow
def test_rerun_after_tensorflow_moved_within_the_same_branch_needs_no_network(cli, tmp_path, fresh_upstream, fake_tf):
    assert setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--tf-version", "2.16.1").returncode == 0
    shutil.rmtree(fresh_upstream.path)
    result = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--tf-version", "2.22.0")
    assert result.returncode == 0, result
    assert "Already set up" in result.stdout


@pytest.mark.slow
def test_switching_branch_replaces_the_checkout(cli, tmp_path, fake_upstream, fake_tf):
    assert setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", fake_tf("1.12.0")).returncode == 0
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", fake_tf("2.0.0"))
    assert result.returncode == 0, result
    assert "Switched from cnn_tf_v1.12_compatible to cnn_tf_v2.0_compatible" in result.stdout
    assert_shallow_single_branch(tmp_path / "vendor" / "benchmarks", "cnn_tf_v2.0_compatible")
    assert manifest_of(tmp_path)["branch"] == "cnn_tf_v2.0_compatible"
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_failed_clone_leaves_the_old_checkout_whole(cli, tmp_path, fresh_upstream, fake_tf):
    assert setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--python", fake_tf("1.12.0")).returncode == 0
    before = checkout_state(tmp_path)
    manifest_bytes = (tmp_path / "vendor" / "tfcnnwrap-setup.json").read_bytes()
    # The upstream still lists master but can no longer serve its tip commit: the clone itself fails.
    tip = fresh_upstream.head("master")
    (fresh_upstream.path / "objects" / tip[:2] / tip[2:]).unlink()

    result = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--python", fake_tf("2.21.0"))
    line = assert_clean_error(result, 2, "cloning master", fresh_upstream.url, "previous checkout is untouched")
    assert "--repo-url" in line
    assert checkout_state(tmp_path) == before
    assert (tmp_path / "vendor" / "tfcnnwrap-setup.json").read_bytes() == manifest_bytes
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_switch_with_the_upstream_gone_leaves_the_old_checkout_whole(cli, tmp_path, fresh_upstream, fake_tf):
    assert setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.path, "--python", fake_tf("1.12.0")).returncode == 0
    before = checkout_state(tmp_path)
    shutil.rmtree(fresh_upstream.path)
    result = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.path, "--python", fake_tf("2.0.0"))
    assert_clean_error(result, 2, "no repository at", str(fresh_upstream.path), "--repo-url")
    assert checkout_state(tmp_path) == before
    assert manifest_of(tmp_path)["branch"] == "cnn_tf_v1.12_compatible"


@pytest.mark.slow
def test_branch_without_the_benchmark_script_is_refused_and_the_old_checkout_kept(cli, tmp_path, fresh_upstream):
    work = tmp_path / "docs-work"
    git(tmp_path, "clone", "-q", fresh_upstream.url, str(work))
    git(work, "checkout", "-q", "--orphan", "docs-only")
    git(work, "rm", "-r", "-q", "-f", ".")
    (work / "README.md").write_text("docs\n", encoding="utf-8")
    git(work, "add", "README.md")
    git(work, "commit", "-q", "-m", "docs")
    git(work, "push", "-q", "origin", "docs-only")

    assert setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--tf-version", "1.12").returncode == 0
    before = checkout_state(tmp_path)
    result = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.url, "--tf-version", "1.12", "--branch", "docs-only")
    assert_clean_error(result, 2, "docs-only", "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py", "--branch")
    assert checkout_state(tmp_path) == before
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_update_fetches_the_newest_commit(cli, tmp_path, fresh_upstream):
    branch = "cnn_tf_v1.12_compatible"
    args = ("--repo-url", fresh_upstream.url, "--tf-version", "1.12")
    assert setup_cli(cli, tmp_path, *args).returncode == 0
    old = manifest_of(tmp_path)["commit"]
    new = fresh_upstream.commit_to(branch, "upstream moved on")
    assert new != old

    plain = setup_cli(cli, tmp_path, *args)
    assert "Already set up" in plain.stdout
    assert manifest_of(tmp_path)["commit"] == old

    updated = setup_cli(cli, tmp_path, *args, "--update")
    assert updated.returncode == 0, updated
    assert "Updated %s: %s -> %s" % (branch, old[:12], new[:12]) in updated.stdout
    checkout = tmp_path / "vendor" / "benchmarks"
    assert manifest_of(tmp_path)["commit"] == new
    assert git(checkout, "rev-parse", "HEAD").strip() == new
    assert (checkout / "CHANGES").read_text(encoding="utf-8") == "upstream moved on\n"
    assert_shallow_single_branch(checkout, branch)

    again = setup_cli(cli, tmp_path, *args, "--update")
    assert again.returncode == 0, again
    assert "Already at the newest commit of %s" % branch in again.stdout


@pytest.mark.slow
def test_explicit_branch_is_used_as_given(cli, tmp_path, fake_upstream, fake_tf):
    result = setup_cli(
        cli,
        tmp_path,
        "--repo-url",
        fake_upstream.url,
        "--python",
        fake_tf("1.12.0"),
        "--branch",
        "cnn_tf_v1.9_compatible",
    )
    assert result.returncode == 0, result
    assert "given with --branch" in result.stdout
    assert_shallow_single_branch(tmp_path / "vendor" / "benchmarks", "cnn_tf_v1.9_compatible")
    assert manifest_of(tmp_path)["branch_source"] == "--branch"


@pytest.mark.slow
def test_interrupted_swap_is_recovered(cli, tmp_path, fresh_upstream):
    args = ("--repo-url", fresh_upstream.url, "--tf-version", "1.12")
    assert setup_cli(cli, tmp_path, *args).returncode == 0
    before = checkout_state(tmp_path)
    vendor = tmp_path / "vendor"
    # As if killed between "move the old checkout aside" and "move the new one in".
    (vendor / "benchmarks").rename(vendor / ".benchmarks-old-deadbeef")
    (vendor / ".benchmarks-new-cafecafe").mkdir()
    (vendor / ".benchmarks-new-cafecafe" / "partial").write_text("x", encoding="utf-8")
    shutil.rmtree(fresh_upstream.path)

    result = setup_cli(cli, tmp_path, *args)
    assert result.returncode == 0, result
    assert "Already set up" in result.stdout
    assert checkout_state(tmp_path) == before
    assert leftovers(tmp_path) == []


# --- errors that name the fix ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "url",
    [
        "--upload-pack=touch pwned",
        "-u touch pwned",
        "--config=core.sshCommand=touch pwned",
        "ext::sh -c touch% pwned",
        "fd::17",
        "ftp://example.invalid/benchmarks.git",
        "ssh://-oProxyCommand=touch%20pwned/benchmarks.git",
        "git@-oProxyCommand=touch:benchmarks.git",
    ],
)
def test_unsafe_urls_are_refused_and_create_nothing(cli, tmp_path, url):
    result = setup_cli(cli, tmp_path, "--repo-url=" + url, "--tf-version", "1.12")
    assert_clean_error(result, 2, "refusing --repo-url")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.slow
def test_unknown_branch_lists_the_compat_branches(cli, tmp_path, fake_upstream):
    result = setup_cli(
        cli,
        tmp_path,
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        "--branch",
        "cnn_tf_v1.6_compatible",
    )
    line = assert_clean_error(result, 2, "no branch 'cnn_tf_v1.6_compatible'")
    for branch in COMPAT_BRANCHES:
        assert branch in line
    assert not (tmp_path / "vendor").exists()


@pytest.mark.slow
def test_tensorflow_too_old_for_every_branch_suggests_branch(cli, tmp_path, fake_upstream):
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.4.1")
    assert_clean_error(result, 2, "TensorFlow 1.4", "--branch", "cnn_tf_v1.5_compatible")


@pytest.mark.slow
def test_bad_tf_version_is_a_usage_error(cli, tmp_path, fake_upstream):
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "latest")
    assert_clean_error(result, 2, "X.Y")


@pytest.mark.slow
def test_no_tensorflow_in_the_target(cli, tmp_path, fake_upstream, fake_tf):
    python = fake_tf("none", with_module=False, with_metadata=False)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", python)
    assert_clean_error(result, 2, "no TensorFlow in", "--python", "--tf-version")
    assert not (tmp_path / "vendor").exists()


@pytest.mark.slow
def test_python_that_does_not_exist(cli, tmp_path, fake_upstream):
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", tmp_path / "nope" / "python")
    assert_clean_error(result, 2, "--python")


@pytest.mark.slow
def test_git_not_installed(cli, tmp_path, fake_upstream):
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12", env={"PATH": empty_bin})
    assert_clean_error(result, 2, "git is not installed", "conda install git", "Git for Windows", "apt install git")
    assert not (tmp_path / "vendor").exists()


@pytest.mark.slow
def test_unreachable_upstream_fails_fast_naming_the_url(cli, tmp_path):
    url = "https://127.0.0.1:9/tensorflow/benchmarks.git"  # the discard port: nothing listens
    started = time.perf_counter()
    result = setup_cli(cli, tmp_path, "--repo-url", url, "--tf-version", "1.12", timeout=60)
    assert time.perf_counter() - started < 30
    assert_clean_error(result, 2, "cannot reach the upstream " + url, "--repo-url")
    assert not (tmp_path / "vendor").exists()


class _AskForPassword(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="private"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_upstream_asking_for_credentials_never_prompts(cli, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AskForPassword)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = "http://127.0.0.1:%d/private/benchmarks.git" % server.server_address[1]
        started = time.perf_counter()
        result = setup_cli(cli, tmp_path, "--repo-url", url, "--tf-version", "1.12", timeout=60)
        assert time.perf_counter() - started < 30
    finally:
        server.shutdown()
        server.server_close()
    assert_clean_error(result, 2, "cannot reach the upstream " + url, "terminal prompts disabled")


# --- pure helpers ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_normalise_repo_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert gitremote.normalise_repo_url("https://github.com/tensorflow/benchmarks.git").startswith("https://")
    assert (
        gitremote.normalise_repo_url("git@github.com:tensorflow/benchmarks.git")
        == "git@github.com:tensorflow/benchmarks.git"
    )
    assert gitremote.normalise_repo_url("mirror/benchmarks") == (tmp_path / "mirror" / "benchmarks").resolve().as_uri()
    assert gitremote.normalise_repo_url("./-odd").startswith("file://")
    with_space = gitremote.normalise_repo_url("my mirrors/benchmarks.git")
    assert with_space.startswith("file://") and " " not in with_space
    for bad in ["", "  ", "-x", "--upload-pack=x", "ext::sh", "transport::x", "ftp://h/r", "a\nb", " https://x"]:
        with pytest.raises(UsageError):
            gitremote.normalise_repo_url(bad)


@pytest.mark.slow
def test_local_path_with_a_space_clones(cli, tmp_path, fake_upstream):
    mirror = tmp_path / "my mirrors" / "benchmarks.git"
    shutil.copytree(fake_upstream.path, mirror)
    result = cli("setup", "--repo-url", "my mirrors/benchmarks.git", "--tf-version", "2.0", cwd=tmp_path)
    assert result.returncode == 0, result
    assert_shallow_single_branch(tmp_path / "vendor" / "benchmarks", "cnn_tf_v2.0_compatible")


def test_parse_ls_remote():
    text = "abc\trefs/heads/master\ndef\trefs/heads/cnn_tf_v1.5_compatible\n123\trefs/pull/1/head\n"
    assert gitremote.parse_ls_remote(text) == {"master": "abc", "cnn_tf_v1.5_compatible": "def"}


@pytest.mark.slow
def test_git_message_picks_the_fatal_line():
    stderr = (
        "stderr: 'fatal: '/x' does not appear to be a git repository\n"
        "fatal: Could not read\n\nand the repository exists.'"
    )
    assert gitremote.git_message(stderr) == "fatal: '/x' does not appear to be a git repository"
    assert gitremote.git_message("") == "no message from git"


def test_swap_into_place_restores_the_old_checkout_when_the_move_fails(tmp_path, monkeypatch):
    target = tmp_path / "benchmarks"
    target.mkdir()
    (target / "old.txt").write_text("old", encoding="utf-8")
    staging = tmp_path / ".benchmarks-new-x"
    staging.mkdir()
    (staging / "new.txt").write_text("new", encoding="utf-8")
    real_rename = Path.rename

    def failing_rename(self, dest):
        if self == staging:
            raise PermissionError(13, "in use")
        return real_rename(self, dest)

    monkeypatch.setattr(Path, "rename", failing_rename)
    with pytest.raises(SetupError, match="previous checkout is untouched"):
        checkout.swap_into_place(staging, target)
    assert (target / "old.txt").read_text(encoding="utf-8") == "old"
    assert not list(tmp_path.glob(".benchmarks-old-*"))


@pytest.mark.slow
def test_swap_into_place_deletes_read_only_files_of_the_old_checkout(tmp_path):
    target = tmp_path / "benchmarks"
    (target / ".git" / "objects").mkdir(parents=True)
    pack = target / ".git" / "objects" / "pack.pack"
    pack.write_bytes(b"x")
    os.chmod(pack, 0o444)
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "new.txt").write_text("new", encoding="utf-8")
    checkout.swap_into_place(staging, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchmarks"]
    assert (target / "new.txt").exists()


@pytest.mark.slow
def test_read_head_without_git(tmp_path, fake_upstream):
    clone = tmp_path / "c"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "cnn_tf_v1.8_compatible",
            fake_upstream.url,
            str(clone),
        ],
        check=True,
    )
    assert checkout.read_head(clone) == ("cnn_tf_v1.8_compatible", fake_upstream.head("cnn_tf_v1.8_compatible"))
    assert checkout.read_head(tmp_path / "missing") == (None, None)


@pytest.mark.slow
def test_explicit_branch_needs_no_tensorflow(cli, tmp_path, fake_upstream, fake_tf):
    python = fake_tf("none", with_module=False, with_metadata=False)
    result = setup_cli(
        cli, tmp_path, "--repo-url", fake_upstream.url, "--python", python, "--branch", "cnn_tf_v1.10_compatible"
    )
    assert result.returncode == 0, result
    assert "no TensorFlow found in" in result.stderr and "--branch used as given" in result.stderr
    manifest = manifest_of(tmp_path)
    assert manifest["branch"] == "cnn_tf_v1.10_compatible" and manifest["tf_version"] is None


@pytest.mark.slow
def test_a_second_setup_is_refused_while_the_first_holds_the_vendor_dir(cli, tmp_path, fake_upstream):
    first = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert first.returncode == 0, first
    lock = checkout.vendor_lock(tmp_path / "vendor", shared=False)
    lock.acquire()  # as a setup in progress in another process would hold it
    try:
        second = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    finally:
        lock.release()
    assert_clean_error(second, 2, "in use by another `tfcnnwrap setup`")
    third = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert third.returncode == 0, third


@pytest.mark.slow
def test_setup_ends_with_the_next_command(cli, tmp_path, fake_upstream):
    result = cli(
        "setup",
        "--vendor-dir",
        tmp_path / "vendor",
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    assert result.stdout.strip().splitlines()[-1] == (
        "next: python -m tfcnnwrap sweep --quick, then python -m tfcnnwrap sweep"
    )


@pytest.mark.slow
def test_setup_names_the_vendor_dir_a_plain_sweep_would_miss(cli, tmp_path, fake_upstream):
    elsewhere = tmp_path / "elsewhere"
    result = cli(
        "setup", "--vendor-dir", elsewhere, "--repo-url", fake_upstream.url, "--tf-version", "1.12", cwd=tmp_path
    )
    assert result.returncode == 0, result
    assert result.stdout.strip().splitlines()[-1] == (
        "next: python -m tfcnnwrap sweep --vendor-dir %s --quick, then python -m tfcnnwrap sweep --vendor-dir %s"
        % (elsewhere, elsewhere)
    )
