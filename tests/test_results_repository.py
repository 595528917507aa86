"""A community results repository anyone can run (issue 37.5): `init-repo` writes it, a bare clone of it on a
"git host" takes `publish --to`, its workflow is what GitHub's workflow schema accepts, and the workflow's own
tfcnnwrap steps, run here, pass a repository of published bundles and fail one holding a forged or misplaced
bundle (`verify --repo`, exit 1)."""

import os
import shutil
import subprocess

import pytest
from bundledata import logged_sweep, write_bundles
from conftest import assert_clean_error

from tfcnnwrap.share import bundle as bundles

pytestmark = pytest.mark.slow
WORKFLOW = ".github/workflows/tfcnnwrap-results.yml"


def git(*args, cwd=None):
    env = dict(
        os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def workflow_steps(repo):
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader, in the test extra

    doc = YAML(typ="safe").load((repo / WORKFLOW).read_text(encoding="utf-8"))
    return doc, [(job, step) for job, spec in doc["jobs"].items() for step in spec["steps"]]


def run_tfcnnwrap_steps(cli, repo, job):
    """Each `run:` step of ``job`` that calls tfcnnwrap, run here in the repository as the runner would."""
    _, steps = workflow_steps(repo)
    results = []
    for name, step in steps:
        command = step.get("run", "")
        if name == job and command.startswith("tfcnnwrap "):
            results.append(cli(*command.split()[1:], cwd=repo))
    assert results, "the %s job runs no tfcnnwrap step" % job
    return results


@pytest.fixture
def hosted(cli, tmp_path):
    """(host, work): a results repository made by init-repo, served bare as a git host would, and a clone."""
    made = tmp_path / "made"
    done = cli("init-repo", made)
    assert done.returncode == 0, done
    host = tmp_path / "host.git"
    git("clone", "-q", "--bare", str(made), str(host))
    return host, tmp_path / "work"


def test_init_repo_writes_readme_signers_and_workflow_and_commits_them(cli, tmp_path):
    repo = tmp_path / "results"
    done = cli("init-repo", repo)
    assert done.returncode == 0, done
    for rel in ("README.md", "allowed_signers", WORKFLOW, "bundles/.gitkeep"):
        assert (repo / rel).is_file(), rel
        assert "wrote %s" % (repo / rel) in done.stdout
    assert "publish" in (repo / "README.md").read_text(encoding="utf-8")
    assert git("status", "--porcelain", cwd=repo) == ""
    assert "Results repository" in git("log", "--format=%s", cwd=repo)
    # a second run adds nothing and keeps what is there, the user's edits included
    (repo / "README.md").write_text("ours\n", encoding="utf-8")
    again = cli("init-repo", repo)
    assert again.returncode == 0, again
    assert "kept %s (it exists)" % (repo / "README.md") in again.stdout
    assert (repo / "README.md").read_text(encoding="utf-8") == "ours\n"


def test_init_repo_adds_to_an_existing_repository(cli, tmp_path):
    repo = tmp_path / "existing"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "README.md").write_text("our results\n", encoding="utf-8")
    git("add", "README.md", cwd=repo)
    git("commit", "-q", "-m", "start", cwd=repo)
    done = cli("init-repo", repo)
    assert done.returncode == 0, done
    assert (repo / "README.md").read_text(encoding="utf-8") == "our results\n"
    assert (repo / WORKFLOW).is_file()
    assert git("log", "--format=%s", cwd=repo).splitlines() == ["Results repository for tfcnnwrap bundles", "start"]


def test_the_workflow_is_valid_for_github_actions(cli, tmp_path):
    checker = shutil.which("check-jsonschema")
    if checker is None:
        pytest.fail("check-jsonschema is in the test extra; install it: python -m pip install -e '.[test]'")
    repo = tmp_path / "results"
    assert cli("init-repo", repo, "--install", "tfcnnwrap==0.0.1").returncode == 0
    done = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(repo / WORKFLOW)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc, steps = workflow_steps(repo)
    runs = [step.get("run", "") for _, step in steps]
    assert 'python -m pip install "tfcnnwrap==0.0.1"' in runs
    assert "tfcnnwrap verify --repo ." in runs and "tfcnnwrap site bundles --out _site" in runs
    on = doc.get("on", doc.get(True))  # YAML 1.1 readers take `on` for true
    assert {"push", "pull_request"} <= set(on)


def test_published_bundles_pass_the_workflows_steps(cli, tmp_path, hosted):
    host, work = hosted
    for i, gpu in enumerate(("GeForce RTX 2070", "GeForce GTX 1080 Ti")):
        sweep = logged_sweep(tmp_path / ("s%d" % i), gpus=(gpu,))
        done = cli("publish", sweep, "--to", host)
        assert done.returncode == 0, done
    git("clone", "-q", str(host), str(work))
    verified, site = run_tfcnnwrap_steps(cli, work, "verify") + run_tfcnnwrap_steps(cli, work, "site")
    assert verified.returncode == 0, verified
    assert "2 bundles: 2 verified, 0 not verified, 0 unreadable" in verified.stdout
    assert site.returncode == 0, site
    assert (work / "_site" / "index.html").is_file()


def test_an_empty_repository_passes_and_says_so(cli, tmp_path, hosted):
    host, work = hosted
    git("clone", "-q", str(host), str(work))
    done = cli("verify", "--repo", work)
    assert done.returncode == 0, done
    assert "holds no bundles yet" in done.stdout


def test_a_misplaced_bundle_fails_the_repository(cli, tmp_path, hosted):
    host, work = hosted
    assert cli("publish", logged_sweep(tmp_path / "s"), "--to", host).returncode == 0
    git("clone", "-q", str(host), str(work))
    [placed] = list((work / "bundles").rglob("*" + bundles.SUFFIX))
    moved = work / "bundles" / "amd" / placed.name
    moved.parent.mkdir(parents=True)
    placed.rename(moved)
    done = cli("verify", "--repo", work)
    assert done.returncode == 1, done
    expected = placed.relative_to(work).as_posix()
    assert "it lies at bundles/amd/%s; publish puts it at %s" % (placed.name, expected) in done.stdout


def test_a_forged_bundle_fails_the_repository(cli, tmp_path, hosted):
    host, work = hosted
    assert cli("publish", logged_sweep(tmp_path / "s"), "--to", host).returncode == 0
    git("clone", "-q", str(host), str(work))
    [placed] = list((work / "bundles").rglob("*" + bundles.SUFFIX))
    bundle = bundles.read_path(placed).to_dict()
    # the forger's edit: a faster figure, the id recomputed as the docs describe, the file put where publish would
    content = {k: v for k, v in bundle.items() if k != "id"}
    content["runs"] = [dict(r, images_per_sec=r["images_per_sec"] * 3) for r in content["runs"]]
    forged = bundles.with_id(content)
    placed.unlink()
    write_bundles(placed.parent, [forged])
    done = cli("verify", "--repo", work)
    assert done.returncode == 1, done
    assert "not verified" in done.stdout


def test_a_link_in_the_tree_is_not_followed(cli, tmp_path, hosted):
    host, work = hosted
    assert cli("publish", logged_sweep(tmp_path / "s"), "--to", host).returncode == 0
    git("clone", "-q", str(host), str(work))
    [placed] = list((work / "bundles").rglob("*" + bundles.SUFFIX))
    outside = tmp_path / "outside.tfcw.json.gz"
    outside.write_bytes(b"not read")
    (placed.parent / ("0" * 64 + bundles.SUFFIX)).symlink_to(outside)
    done = cli("verify", "--repo", work)
    assert done.returncode == 1, done
    assert "not a regular file" in done.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        ((), "--repo DIR"),
        (("--repo", "nowhere"), "not a folder"),
    ],
)
def test_verify_without_bundles_or_a_repository_is_one_line(cli, tmp_path, args, needle):
    assert_clean_error(cli("verify", *args, cwd=tmp_path), 2, needle)


def test_verify_refuses_bundles_and_a_repository_at_once(cli, tmp_path):
    assert_clean_error(cli("verify", "x.tfcw.json.gz", "--repo", tmp_path, cwd=tmp_path), 2, "not both")


def test_init_repo_on_a_file_is_one_line(cli, tmp_path):
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert_clean_error(cli("init-repo", tmp_path / "f"), 2, "is a file")
