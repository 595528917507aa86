"""`setup` never writes, chmods or deletes through links, never deletes what it did not make, refuses to
work under a running sweep, fails cleanly on environment errors, and remembers --python and --repo-url."""

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import assert_clean_error, build_fake_upstream, cli_env, git, make_vendor

from tfcnnwrap.cli import build_parser
from tfcnnwrap.environment import checkout
from tfcnnwrap.environment import setup as setup_verb
from tfcnnwrap.errors import SetupError

try:
    import resource
except ImportError:  # Windows
    resource = None

needs_symlinks = pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")


def setup_cli(cli, tmp_path, *args, **kw):
    return cli("setup", "--vendor-dir", tmp_path / "vendor", *args, cwd=tmp_path, **kw)


def first_setup(cli, tmp_path, upstream, tf_version="1.12"):
    result = setup_cli(cli, tmp_path, "--repo-url", upstream.url, "--tf-version", tf_version)
    assert result.returncode == 0, result
    return tmp_path / "vendor"


def victim_file(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    os.chmod(victim, 0o644)
    return victim


def victim_dir(parent):
    victim = parent / "victim-dir"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n", encoding="utf-8")
    os.chmod(victim, 0o755)
    return victim


def state(path):
    """Mode and contents of a file or a folder's files: equal before and after means untouched."""
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    if path.is_dir():
        return mode, {p.name: (stat.S_IMODE(p.stat().st_mode), p.read_bytes()) for p in sorted(path.iterdir())}
    return mode, path.read_bytes()


def tree(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# --- links (issue 11 item 3) ----------------------------------------------------------------------------------


@pytest.mark.slow
@needs_symlinks
def test_planted_manifest_tmp_link_is_not_written_through(cli, tmp_path, fake_upstream):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    victim = victim_file(tmp_path)
    before = state(victim)
    (vendor / "tfcnnwrap-setup.json.tmp").symlink_to(victim)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert result.returncode == 0, result
    assert state(victim) == before
    assert json.loads((vendor / "tfcnnwrap-setup.json").read_text(encoding="utf-8"))["branch"] == (
        "cnn_tf_v2.0_compatible"
    )
    assert not (vendor / "tfcnnwrap-setup.json").is_symlink()


@pytest.mark.slow
@needs_symlinks
@pytest.mark.parametrize("part", ["tfcnnwrap-setup.json", "benchmarks", ".tfcnnwrap-setup.lock"])
def test_vendor_part_linking_outside_is_refused(cli, tmp_path, fake_upstream, part):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = victim_dir(outside) if part == "benchmarks" else victim_file(outside)
    before = state(victim)
    checkout.remove_tree(vendor / part)
    (vendor / part).symlink_to(victim)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert_clean_error(result, 2, str(vendor / part), "symbolic link", "remove it")
    assert state(victim) == before
    assert (vendor / part).is_symlink()


@pytest.mark.slow
@needs_symlinks
@pytest.mark.parametrize("name", [".benchmarks-old-deadbeef", ".benchmarks-new-0123abcd"])
def test_leftover_link_leading_outside_is_refused(cli, tmp_path, fake_upstream, name):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    victim = victim_dir(tmp_path)
    before = state(victim)
    (vendor / name).symlink_to(victim)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert_clean_error(result, 2, name, "symbolic link")
    assert state(victim) == before


@pytest.mark.slow
@needs_symlinks
@pytest.mark.parametrize("name", [".benchmarks-old-deadbeef", ".benchmarks-new-0123abcd"])
def test_leftover_link_inside_the_vendor_dir_is_unlinked_never_chmodded_through(cli, tmp_path, fake_upstream, name):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    victim = victim_dir(vendor)  # the user's own folder in the vendor dir
    before = state(victim)
    (vendor / name).symlink_to(victim)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert result.returncode == 0, result
    assert "Already set up" in result.stdout
    assert state(victim) == before
    assert not (vendor / name).is_symlink()


@needs_symlinks
def test_remove_tree_unlinks_a_link_and_never_enters_or_chmods_its_target(tmp_path):
    victim = victim_dir(tmp_path)
    before = state(victim)
    link = tmp_path / "link"
    link.symlink_to(victim)
    checkout.remove_tree(link)
    assert not link.is_symlink() and state(victim) == before

    old = tmp_path / "old"
    (old / "sub").mkdir(parents=True)
    (old / "sub" / "to-victim").symlink_to(victim)
    pack = old / "sub" / "pack.pack"
    pack.write_bytes(b"x")
    os.chmod(pack, 0o444)
    checkout.remove_tree(old)
    assert not old.exists() and state(victim) == before


# --- a running sweep (issue 11 item 5) ----------------------------------------------------------------------


@pytest.mark.slow
def test_setup_is_refused_while_a_sweep_holds_the_vendor_lock(cli, tmp_path, fake_upstream):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    before = tree(vendor / "benchmarks")
    manifest = (vendor / "tfcnnwrap-setup.json").read_bytes()
    lock = checkout.vendor_lock(vendor, shared=True)
    lock.acquire()  # as a running sweep holds it
    try:
        result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    finally:
        lock.release()
    assert_clean_error(result, 2, str(vendor), "running sweep", "wait for it to finish")
    assert tree(vendor / "benchmarks") == before
    assert (vendor / "tfcnnwrap-setup.json").read_bytes() == manifest
    after = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert after.returncode == 0, after


# --- the user's files (issue 11 item 13) -------------------------------------------------------------------


def users_benchmarks(vendor):
    own = vendor / "benchmarks"
    (own / "notes").mkdir(parents=True)
    (own / "notes" / "thesis.txt").write_text("months of work\n", encoding="utf-8")
    return own


@pytest.mark.slow
def test_a_users_benchmarks_folder_without_manifest_is_never_deleted(cli, tmp_path, fake_upstream):
    own = users_benchmarks(tmp_path / "vendor")
    before = tree(own)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert_clean_error(result, 2, str(own), "not made by tfcnnwrap setup", "--vendor-dir")
    assert tree(own) == before
    assert sorted(p.name for p in (tmp_path / "vendor").iterdir() if p.name.startswith(".benchmarks")) == []


@pytest.mark.slow
def test_a_checkout_that_is_no_git_clone_of_the_manifests_url_is_never_deleted(cli, tmp_path, fake_upstream):
    vendor = make_vendor(tmp_path / "vendor")  # a manifest, and a checkout setup did not clone
    before = tree(vendor / "benchmarks")
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert_clean_error(result, 2, "not made by tfcnnwrap setup")
    assert tree(vendor / "benchmarks") == before

    other = tmp_path / "vendor2"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "master", fake_upstream.url, str(other / "benchmarks"))
    manifest = dict(json.loads((vendor / "tfcnnwrap-setup.json").read_text()), url="https://example.invalid/x.git")
    (other / "tfcnnwrap-setup.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = cli("setup", "--vendor-dir", other, "--repo-url", fake_upstream.url, "--tf-version", "2.0", cwd=tmp_path)
    assert_clean_error(result, 2, "not made by tfcnnwrap setup")


@pytest.mark.slow
def test_only_setups_own_leftover_names_are_cleaned_up(cli, tmp_path, fake_upstream):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    mine = vendor / ".benchmarks-old-my-backup"
    mine.mkdir()
    (mine / "x.txt").write_text("keep\n", encoding="utf-8")
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert result.returncode == 0, result
    assert (mine / "x.txt").read_text(encoding="utf-8") == "keep\n"


@pytest.mark.slow
def test_switching_replaces_a_checkout_setup_made_before_markers_existed(cli, tmp_path, fake_upstream):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    (vendor / "benchmarks" / ".git" / checkout.MARKER_NAME).unlink()
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "2.0")
    assert result.returncode == 0, result
    assert "Switched" in result.stdout


# --- environment errors (issue 11 item 12) -----------------------------------------------------------------


@pytest.mark.slow
def test_vendor_dir_that_is_a_file(cli, tmp_path, fake_upstream):
    (tmp_path / "vendor").write_text("not a folder\n", encoding="utf-8")
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert_clean_error(result, 2, str(tmp_path / "vendor"), "is a file", "--vendor-dir")
    assert (tmp_path / "vendor").read_text(encoding="utf-8") == "not a folder\n"


def run_with_file_size_limit(tmp_path, limit, *args):
    """setup with RLIMIT_FSIZE: git's index-pack dies writing the pack, as on a full disk."""

    def limit_writes():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", "setup", "--vendor-dir", str(tmp_path / "vendor"), *map(str, args)],
        cwd=str(tmp_path),
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limit_writes,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.skipif(resource is None, reason="needs RLIMIT_FSIZE (POSIX)")
def test_disk_full_during_clone_leaves_nothing_half_made(cli, tmp_path):
    upstream = build_fake_upstream(tmp_path / "up" / "benchmarks.git", history=2, filler_kb=512)
    proc = run_with_file_size_limit(tmp_path, 128 * 1024, "--repo-url", upstream.url, "--tf-version", "1.12")
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "cloning cnn_tf_v1.12_compatible" in err
    assert not (tmp_path / "vendor").exists()  # a first setup that failed leaves no vendor folder

    vendor = first_setup(cli, tmp_path, upstream)
    before = tree(vendor / "benchmarks")
    proc = run_with_file_size_limit(tmp_path, 128 * 1024, "--repo-url", upstream.url, "--tf-version", "2.0")
    assert proc.returncode == 2, proc.stderr.decode()
    assert "previous checkout is untouched" in proc.stderr.decode()
    assert tree(vendor / "benchmarks") == before
    assert [p.name for p in vendor.iterdir() if p.name.startswith(".benchmarks")] == []


def test_git_saying_the_disk_is_full_names_the_disk_not_the_network(tmp_path):
    from tfcnnwrap.environment import gitremote

    err = gitremote.clone_failure(
        "file:///m",
        "master",
        tmp_path / "v" / ".benchmarks-new-1",
        gitremote.git_message(
            "stderr: 'Cloning into x...\nfatal: write error: No space left on device\nfatal: index-pack failed'"
        ),
    )
    assert "No space left on device" in err.message and "free some disk space" in err.message
    assert str(tmp_path / "v") in err.message and "network" not in err.message


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt" or os.geteuid() == 0, reason="POSIX modes; root writes in read-only folders")
def test_read_only_vendor_dir(cli, tmp_path, fake_upstream):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    os.chmod(vendor, 0o555)
    try:
        result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    finally:
        os.chmod(vendor, 0o755)
    assert_clean_error(result, 2, str(vendor), "--vendor-dir")
    assert list(vendor.iterdir()) == []


# --- remembered settings (issue 13) -------------------------------------------------------------------------


@pytest.mark.slow
def test_rerun_offline_needs_no_repo_url_or_python_again(cli, tmp_path, fresh_upstream, fake_tf):
    python = fake_tf("1.12.0", dist="tensorflow-gpu")
    first = setup_cli(cli, tmp_path, "--repo-url", fresh_upstream.path, "--python", python)
    assert first.returncode == 0, first
    vendor = tmp_path / "vendor"
    assert checkout.remembered(vendor) == (str(python), fresh_upstream.path.resolve().as_uri())
    manifest = (vendor / "tfcnnwrap-setup.json").read_bytes()
    shutil.rmtree(fresh_upstream.path)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    again = setup_cli(cli, tmp_path, env={"PATH": empty_bin})
    assert again.returncode == 0, again
    assert "Already set up" in again.stdout
    assert "python from the last setup; repo URL from the last setup" in again.stdout
    assert "package metadata of tensorflow-gpu in %s" % python in again.stdout
    assert (vendor / "tfcnnwrap-setup.json").read_bytes() == manifest


@pytest.mark.slow
def test_python_precedence_flag_then_environment_then_manifest(cli, tmp_path, fake_upstream, fake_tf):
    old, new, newest = fake_tf("1.12.0"), fake_tf("2.0.0"), fake_tf("2.1.0")
    assert setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--python", old).returncode == 0
    by_env = setup_cli(cli, tmp_path, env={"TFCNNWRAP_PYTHON": new})
    assert by_env.returncode == 0, by_env
    assert "to cnn_tf_v2.0_compatible" in by_env.stdout and "python from TFCNNWRAP_PYTHON" in by_env.stdout
    by_flag = setup_cli(cli, tmp_path, "--python", newest, env={"TFCNNWRAP_PYTHON": old})
    assert by_flag.returncode == 0, by_flag
    assert "to cnn_tf_v2.1_compatible" in by_flag.stdout
    assert checkout.remembered(tmp_path / "vendor")[0] == str(newest)


@pytest.mark.slow
def test_vendor_dir_from_the_environment(cli, tmp_path, fake_upstream):
    where = tmp_path / "elsewhere"
    result = cli(
        "setup",
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        cwd=tmp_path,
        env={"TFCNNWRAP_VENDOR_DIR": where},
    )
    assert result.returncode == 0, result
    assert (where / "benchmarks" / checkout.SCRIPT_RELPATH).is_file()
    assert not (tmp_path / "vendor").exists()
    flag = cli(
        "setup",
        "--vendor-dir",
        "vendor",
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        cwd=tmp_path,
        env={"TFCNNWRAP_VENDOR_DIR": where},
    )
    assert flag.returncode == 0, flag
    assert (tmp_path / "vendor" / "benchmarks").is_dir()


def test_a_typed_default_repo_url_outranks_the_remembered_one(tmp_path):
    # cli/setup.py gives --repo-url no default: None is "not typed", any value (the default's too) was typed
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    checkout.write_manifest(vendor, {"url": "file:///mirror", "settings": {"python": None, "repo_url": "file:///m"}})
    args = setup_verb.SetupArgs(
        python=None, tf_version=None, branch=None, repo_url=None, vendor_dir=str(vendor), update=False
    )
    assert setup_verb.resolve_settings(args, environ={})["repo_url"] == "file:///m"
    args = replace(args, repo_url=setup_verb.DEFAULT_REPO_URL)
    assert setup_verb.resolve_settings(args, environ={})["repo_url"] == setup_verb.DEFAULT_REPO_URL
    parsed = build_parser().parse_args(["setup", "--vendor-dir", str(vendor)])
    assert parsed.repo_url is None and parsed.python is None


def test_remembered_without_a_manifest(tmp_path):
    assert checkout.remembered(tmp_path / "nothing") == (None, None)


def test_made_by_setup(tmp_path):
    assert checkout.made_by_setup(tmp_path / "missing", None) is False
    empty = tmp_path / "empty"
    empty.mkdir()
    assert checkout.made_by_setup(empty, None) is True  # nothing in it to lose
    users_benchmarks(tmp_path / "v")
    assert checkout.made_by_setup(tmp_path / "v" / "benchmarks", {"url": "file:///x"}) is False
    with pytest.raises(SetupError, match="not made by tfcnnwrap setup"):
        checkout.refuse_foreign_checkout(tmp_path / "v", None)
    checkout.refuse_foreign_checkout(tmp_path / "nothing-there", None)


@pytest.mark.slow
def test_a_remembered_python_that_is_gone_says_where_it_came_from(cli, tmp_path, fake_upstream, fake_tf):
    vendor = first_setup(cli, tmp_path, fake_upstream)
    manifest = json.loads((vendor / "tfcnnwrap-setup.json").read_text(encoding="utf-8"))
    manifest["settings"]["python"] = str(tmp_path / "deleted-env" / "bin" / "python")
    checkout.write_manifest(vendor, manifest)
    result = setup_cli(cli, tmp_path)
    assert_clean_error(result, 2, "deleted-env", "--python", "came from the last setup")


@pytest.mark.slow
def test_a_vendor_dir_that_cannot_be_created_or_written(cli, tmp_path, fake_upstream):
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    result = cli(
        "setup",
        "--vendor-dir",
        tmp_path / "file.txt" / "vendor",
        "--repo-url",
        fake_upstream.url,
        "--tf-version",
        "1.12",
        cwd=tmp_path,
    )
    assert_clean_error(result, 2, "cannot write in", "--vendor-dir")
    # root ignores a read-only folder; a lock name taken by a folder fails the same way for everyone
    vendor = tmp_path / "vendor"
    (vendor / ".tfcnnwrap-setup.lock").mkdir(parents=True)
    result = setup_cli(cli, tmp_path, "--repo-url", fake_upstream.url, "--tf-version", "1.12")
    assert_clean_error(result, 2, str(vendor), "--vendor-dir")
    assert [p.name for p in vendor.iterdir()] == [".tfcnnwrap-setup.lock"]
