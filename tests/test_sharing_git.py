"""`publish` and `pull` against repositories made by strangers (issue 33: 1, 9, 14): a publish that never writes
where their tree points, a pull of a repository whose HEAD names no branch, and a pull of a tree of many
entries naming one blob. Local bare repositories; each test failed on the code before its fix."""

import json
import subprocess

import pytest
from bundledata import build, logged_sweep, variants, write_bundles
from conftest import GIT_ENV, assert_clean_error, cli_env, git

from tfcnnwrap.share import bundle as bundles

pytestmark = pytest.mark.slow


@pytest.fixture
def bare(tmp_path):
    path = tmp_path / "results.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def env_for(tmp_path, **extra):
    return dict(GIT_ENV, TFCNNWRAP_DATA=str(tmp_path / "data"), **extra)


def push_tree(tmp_path, bare, make, branch="HEAD", name="work"):
    """A clone of ``bare``, ``make(work)`` run in it, everything committed and pushed to ``branch``."""
    work = tmp_path / name
    if not work.exists():
        subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, env=cli_env(GIT_ENV))
    make(work)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "their commit")
    git(work, "push", "-q", "origin", "HEAD:%s" % branch if branch != "HEAD" else "HEAD")
    return work


def ls(bare, ref="HEAD"):
    return subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", ref], stdout=subprocess.PIPE, check=True
    ).stdout.decode()


# -- 33.1: publish never writes where their tree points -----------------------------------------------------


def test_publish_never_writes_through_a_link_in_the_remote_tree(cli, tmp_path, bare):
    outside = tmp_path / "outside"
    outside.mkdir()

    def linked(work):
        (work / "bundles").mkdir()
        (work / "bundles" / "nvidia").symlink_to(outside)  # their tree: bundles/nvidia -> a folder of ours
        (work / "README").write_text("results\n", encoding="utf-8")

    push_tree(tmp_path, bare, linked)
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    result = cli("publish", sweep, "--to", bare, env=env_for(tmp_path))
    assert list(outside.rglob("*")) == [], result  # nothing created outside the clone, whatever the exit
    line = assert_clean_error(result, 2, "bundles/nvidia", "symbolic link")
    assert "nothing published" in line
    assert "tfcw" not in ls(bare)


def test_a_remote_tree_with_a_link_where_publish_writes_is_a_damaged_repository_not_a_usage_error(
    tmp_path, bare, monkeypatch
):
    from tfcnnwrap.errors import DamagedFile, UsageError
    from tfcnnwrap.share import gitrepo

    def linked(work):
        (work / "bundles").mkdir()
        (work / "bundles" / "nvidia").symlink_to("elsewhere")

    push_tree(tmp_path, bare, linked)
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    for key, value in env_for(tmp_path).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(DamagedFile, match="bundles/nvidia is a symbolic link") as refused:
        gitrepo.publish(str(sweep), str(bare))
    assert not isinstance(refused.value, UsageError) and refused.value.exit_code == 2


def test_publish_into_their_folders_adds_one_file_and_keeps_theirs(cli, tmp_path, bare):
    def theirs(work):
        (work / "bundles" / "nvidia" / "geforce-rtx-2070").mkdir(parents=True)
        (work / "bundles" / "nvidia" / "geforce-rtx-2070" / "NOTES").write_text("n\n", encoding="utf-8")
        (work / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
        (work / "run.sh").chmod(0o755)

    push_tree(tmp_path, bare, theirs)
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    assert cli("publish", sweep, "--to", bare, env=env_for(tmp_path)).returncode == 0
    listing = ls(bare)
    assert "100755 blob" in listing and "NOTES" in listing, listing  # their files and modes kept
    assert "bundles/nvidia/geforce-rtx-2070/%s" % bundles.file_name(build(sweep)) in listing
    assert len(listing.splitlines()) == 3
    again = cli("publish", sweep, "--to", bare, env=env_for(tmp_path))
    assert again.returncode == 0 and "already in" in again.stdout, again


# -- 33.9: a HEAD that names no branch ---------------------------------------------------------------------


def dangling_head(tmp_path, bare, branches):
    """``bare`` with a bundle on each of ``branches`` (None: a branch without bundles) and HEAD naming none."""
    seed = build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))
    made = variants(seed, len(branches))
    for i, (branch, has) in enumerate(branches):

        def content(work, i=i, has=has):
            git(work, "checkout", "-q", "--orphan", "b%d" % i)
            git(work, "rm", "-rqf", "--ignore-unmatch", ".")
            if has:
                write_bundles(work / "bundles" / "nvidia" / "geforce-rtx-2070", [made[i]])
            else:
                (work / "README").write_text("no bundles here\n", encoding="utf-8")

        push_tree(tmp_path, bare, content, branch="refs/heads/%s" % branch)
    git(tmp_path, "--git-dir", str(bare), "symbolic-ref", "HEAD", "refs/heads/gone")
    return made


def test_pull_of_a_head_naming_a_missing_branch_pulls_the_one_branch_with_bundles(cli, tmp_path, bare):
    made = dangling_head(tmp_path, bare, [("results", True), ("docs", False)])
    result = cli("pull", bare, env=env_for(tmp_path))
    assert result.returncode == 0, result
    assert "1 imported" in result.stderr, result
    said = [line for line in result.stderr.splitlines() if "HEAD" in line]
    assert len(said) == 1 and "docs" in said[0] and "results" in said[0], result
    listed = cli("library", "--format", "json", env=env_for(tmp_path)).json()["rows"]
    assert {r["id"] for r in listed} == {made[0]["id"]}


def test_pull_of_a_head_naming_a_missing_branch_with_bundles_on_two_names_them(cli, tmp_path, bare):
    dangling_head(tmp_path, bare, [("a-results", True), ("b-results", True)])
    assert_clean_error(cli("pull", bare, env=env_for(tmp_path)), 2, "HEAD", "a-results", "b-results", "--branch")


# -- 33.14: many entries naming one blob, a bound per pull, no big blob kept ------------------------------------


def one_blob_many_names(tmp_path, bare, bundle, count):
    """``bare``'s HEAD: ``count`` folders, each holding ``bundle`` under its own name (one blob, one tree)."""
    gitdir = ["git", "--git-dir", str(bare)]

    def run(args, data=None):
        return (
            subprocess.run(gitdir + args, input=data, stdout=subprocess.PIPE, check=True, env=cli_env(GIT_ENV))
            .stdout.decode()
            .strip()
        )

    blob = run(["hash-object", "-w", "--stdin"], bundles.to_bytes(bundle))
    leaf = run(["mktree"], ("100644 blob %s\t%s\n" % (blob, bundles.file_name(bundle))).encode())
    many = run(["mktree"], "".join("040000 tree %s\tx%05d\n" % (leaf, i) for i in range(count)).encode())
    nvidia = run(["mktree"], ("040000 tree %s\tnvidia\n" % many).encode())
    top = run(["mktree"], ("040000 tree %s\tbundles\n" % nvidia).encode())
    commit = run(["commit-tree", top, "-m", "many names"])
    run(["update-ref", "refs/heads/master", commit])
    run(["symbolic-ref", "HEAD", "refs/heads/master"])


def test_a_pull_checks_each_blob_once(tmp_path, bare, monkeypatch):
    from tfcnnwrap.share import gitrepo, library

    seed = build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))
    one_blob_many_names(tmp_path, bare, seed, 3000)
    for key, value in env_for(tmp_path).items():
        monkeypatch.setenv(key, value)
    reads = []
    real = library.read_bytes
    monkeypatch.setattr(library, "read_bytes", lambda data, where, **kw: reads.append(where) or real(data, where, **kw))
    counts, tip = gitrepo.pull(str(bare))
    assert len(reads) == 1, len(reads)
    assert counts == {"imported": 1, "present": 2999, "refused": 0, "unread": 0}, counts


def test_a_pull_reads_a_bounded_number_of_files_and_the_next_pull_goes_on(cli, tmp_path, bare, monkeypatch):
    from tfcnnwrap.share import gitrepo

    seed = build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))
    made = variants(seed, 5)
    push_tree(tmp_path, bare, lambda work: write_bundles(work / "bundles" / "nvidia" / "x", made))
    for key, value in env_for(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(gitrepo, "MAX_READS", 3)
    counts, _ = gitrepo.pull(str(bare))
    assert counts["imported"] == 3 and counts.get("unread") == 2, counts
    counts, _ = gitrepo.pull(str(bare))
    assert counts["imported"] == 2 and counts["present"] == 3 and not counts.get("unread"), counts


def test_a_refused_large_blob_stays_in_no_cache(cli, tmp_path, bare):
    seed = build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))
    big = json.loads(json.dumps(variants(seed, 1)[0]))  # a copy: variants shares the seed's conditions
    big["conditions"]["cpu_model"] = "x" * 5000
    big = bundles.with_id({k: v for k, v in big.items() if k != "id"})
    data = bundles.to_bytes(big) + bytes(range(256)) * 400

    def content(work):
        write_bundles(work / "bundles" / "nvidia" / "x", [seed])
        (work / "bundles" / "nvidia" / "x" / bundles.file_name(big)).write_bytes(data)

    push_tree(tmp_path, bare, content)
    sha = (
        subprocess.run(["git", "hash-object", "--stdin"], input=data, stdout=subprocess.PIPE, check=True)
        .stdout.decode()
        .strip()
    )
    result = cli("pull", bare, env=env_for(tmp_path, TFCNNWRAP_MAX_BUNDLE_BYTES="50000"))
    assert result.returncode == 1 and "over the 50000-byte limit" in result.stderr, result.stderr
    for gitdir in (tmp_path / "data" / "remotes").iterdir():
        if gitdir.is_dir():
            found = subprocess.run(["git", "--git-dir", str(gitdir), "cat-file", "-e", sha])
            assert found.returncode != 0, gitdir
    again = cli("pull", bare, env=env_for(tmp_path, TFCNNWRAP_MAX_BUNDLE_BYTES="50000"))
    assert again.returncode == 1 and "1 already there, 1 refused" in again.stderr, again.stderr


def test_pull_of_a_head_naming_a_missing_branch_names_branches_without_bundles_or_too_many(tmp_path, bare, monkeypatch):
    from tfcnnwrap.errors import UsageError
    from tfcnnwrap.share import gitrepo

    dangling_head(tmp_path, bare, [("docs", False), ("site", False)])
    for key, value in env_for(tmp_path).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(UsageError, match="docs, site; none of them holds bundles: give the one to pull with --branch"):
        gitrepo.pull(str(bare))
    monkeypatch.setattr(gitrepo, "MAX_BRANCHES", 1)
    with pytest.raises(UsageError, match="docs, and 1 more; too many to look through"):
        gitrepo.pull(str(bare))


def test_a_second_pull_of_one_url_into_one_library_says_a_pull_is_running(cli, tmp_path):
    # three pulls at once: two failed on git's shallow.lock, reported as "check the URL, your access and your
    # network"; the pull cache is now locked for the whole pull (here the test holds the lock)
    import subprocess

    from tfcnnwrap.environment import gitremote
    from tfcnnwrap.filelock import FileLock
    from tfcnnwrap.share.gitrepo import cache_path
    from tfcnnwrap.share.library import Library

    bare = tmp_path / "results.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    library = Library(tmp_path / "data")
    path = cache_path(library, gitremote.normalise_repo_url(str(bare), flag="GIT_URL"))
    library.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.parent / (path.name + ".lock")):
        result = cli("pull", bare, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert_clean_error(result, 2, "another tfcnnwrap pull", "wait for it")
    again = cli("pull", bare, cwd=tmp_path, env={"TFCNNWRAP_DATA": str(tmp_path / "data")})
    assert again.returncode == 0, again
