"""What a release promises: `--version` says what runs where, and the commit of a checkout is read from its
files (a worktree, packed refs, a detached HEAD) without running git."""

import platform
import re

import pytest

from tfcnnwrap import __version__, about


def _checkout(top, head, refs=None, packed=None):
    git = top / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    for ref, sha in (refs or {}).items():
        (git / ref).parent.mkdir(parents=True, exist_ok=True)
        (git / ref).write_text(sha + "\n")
    if packed:
        lines = "".join("%s %s\n" % (sha, ref) for ref, sha in packed.items())
        (git / "packed-refs").write_text("# pack-refs with: peeled\n" + lines)
    (top / "tfcnnwrap").mkdir()
    return top / "tfcnnwrap"


SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.slow
def test_a_branch_checkout_names_its_commit(tmp_path):
    package = _checkout(tmp_path, "ref: refs/heads/main", refs={"refs/heads/main": SHA})
    assert about.checkout_commit(package) == SHA[:12]


@pytest.mark.slow
def test_a_packed_ref_and_a_detached_head_are_read(tmp_path):
    packed = _checkout(tmp_path / "a", "ref: refs/heads/main", packed={"refs/heads/main": SHA})
    assert about.checkout_commit(packed) == SHA[:12]
    assert about.checkout_commit(_checkout(tmp_path / "b", SHA)) == SHA[:12]


@pytest.mark.slow
def test_a_worktree_reads_head_there_and_refs_in_the_common_dir(tmp_path):
    main = _checkout(tmp_path / "main", "ref: refs/heads/main", refs={"refs/heads/other": SHA}).parent
    wt_git = main / ".git" / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/other\n")
    (wt_git / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    (wt / "tfcnnwrap").mkdir(parents=True)
    (wt / ".git").write_text("gitdir: %s\n" % wt_git)
    assert about.checkout_commit(wt / "tfcnnwrap") == SHA[:12]


@pytest.mark.slow
@pytest.mark.parametrize("head", ["", "ref: refs/heads/gone", "not a sha at all", "ref: refs/heads/main"])
def test_no_commit_when_there_is_none_to_read(tmp_path, head):
    refs = {"refs/heads/main": "zz" * 20} if head.endswith("main") else None
    assert about.checkout_commit(_checkout(tmp_path, head, refs=refs)) is None
    assert about.checkout_commit(tmp_path / "elsewhere" / "tfcnnwrap") is None


def test_version_text_names_version_python_and_platform():
    lines = about.version_text().splitlines()
    assert lines[0] == "tfcnnwrap %s" % __version__
    assert re.search(
        r"^Python %s \(.+\) on %s$" % (re.escape(platform.python_version()), re.escape(about.platform_text())),
        lines[-1],
    )


@pytest.mark.slow
def test_the_cli_prints_it(cli):
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.splitlines()[0] == "tfcnnwrap %s" % __version__
    assert "Python %s" % platform.python_version() in result.stdout
    if about.checkout_commit():  # run from a git clone, as CI does
        assert "commit %s" % about.checkout_commit() in result.stdout
