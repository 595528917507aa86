"""`publish` and `pull` over git with local bare repositories (paths and file:// URLs), and the issue's
done-when: a seed-like sweep exported, verified, published from two clones at once, pulled into a fresh
library and shown as a community entry by `compare --rank`."""

import json
import subprocess
import sys
from pathlib import Path

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


def env_for(tmp_path, name="data", **extra):
    env = dict(GIT_ENV, TFCNNWRAP_DATA=str(tmp_path / name))
    env.update(extra)
    return env


def tree(bare, ref="HEAD"):
    out = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", ref], stdout=subprocess.PIPE, check=True
    ).stdout.decode()
    return sorted(out.split())


def publish_at_once(tmp_path, sources, url):
    """``publish`` of each source in its own process (its own clone), all started before any ends."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tfcnnwrap", "publish", str(s), "--to", str(url)],
            env=cli_env(env_for(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for s in sources
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), outs
    return outs


def test_publish_adds_one_file_per_bundle_with_a_message_naming_gpu_and_conditions(cli, tmp_path, bare):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    result = cli("publish", sweep, "--to", bare, env=env_for(tmp_path))
    assert result.returncode == 0, result
    bundle = build(sweep)
    path = "bundles/nvidia/geforce-rtx-2070/%s" % bundles.file_name(bundle)
    assert tree(bare) == [path]
    message = git(tmp_path, "--git-dir", str(bare), "log", "-1", "--format=%B")
    assert message.startswith("Add GeForce RTX 2070: fp32, 1 GPU, parameter_server, synthetic, TF 1.12.0")
    # the branch git itself creates in an empty repository
    default = git(tmp_path, "--git-dir", str(bare), "symbolic-ref", "--short", "HEAD").strip()
    assert git(tmp_path, "--git-dir", str(bare), "rev-parse", "--verify", default)
    again = cli("publish", sweep, "--to", "file://" + str(bare), env=env_for(tmp_path))
    assert again.returncode == 0 and "already in" in again.stdout, again
    other = cli("publish", sweep, "--to", bare, "--branch", "gpus-2026", env=env_for(tmp_path))
    assert other.returncode == 0 and "already in" not in other.stdout, other
    assert tree(bare, "gpus-2026") == [path]


def test_a_rejected_push_is_rebased_and_retried(tmp_path, bare, monkeypatch):
    from tfcnnwrap.share import gitrepo

    first = write_bundles(tmp_path / "a", [build(logged_sweep(tmp_path / "s1", values={"resnet50": 176.93}))])
    second = write_bundles(tmp_path / "b", [build(logged_sweep(tmp_path / "s2", values={"vgg16": 110.23}))])
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    gitrepo.publish(next(first.iterdir()), str(bare))  # the branch exists
    original, raced = gitrepo.ensure_identity, []

    def someone_pushes_first(repo):
        if not raced:
            raced.append(True)
            gitrepo.publish(next(second.iterdir()), str(bare))  # after our clone, before our push
        original(repo)

    monkeypatch.setattr(gitrepo, "ensure_identity", someone_pushes_first)
    third = variants(bundles.read_path(next(first.iterdir())).to_dict(), 1)[0]
    _, rel, _, pushed = gitrepo.publish(next(write_bundles(tmp_path / "c", [third]).iterdir()), str(bare))
    assert raced and pushed
    assert rel in tree(bare) and len(tree(bare)) == 3
    log = git(tmp_path, "--git-dir", str(bare), "log", "--format=%P", "HEAD").splitlines()
    assert len(log) == 3 and all(len(parents.split()) <= 1 for parents in log)  # linear: rebased, not merged


def test_unsafe_urls_are_refused_before_git_runs(cli, tmp_path):
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    pwned = tmp_path / "pwned"
    for url in ("ext::sh -c touch% " + str(pwned), "fd::17", "-uhello", "--upload-pack=touch " + str(pwned)):
        assert_clean_error(cli("publish", sweep, "--to=" + url, env=env_for(tmp_path)), 2, "refusing --to")
        assert_clean_error(cli("pull", "--", url, env=env_for(tmp_path)), 2, "refusing GIT_URL")
    assert not pwned.exists()
    missing = cli("pull", tmp_path / "nowhere.git", env=env_for(tmp_path))
    assert_clean_error(missing, 2, "no repository at")


def hostile_repo(tmp_path, bare, good):
    """A clone pushing a good bundle, a symlink, an oversized file and a tampered bundle into ``bare``."""
    work = tmp_path / "hostile"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True, env=cli_env(GIT_ENV))
    folder = work / "bundles" / "nvidia" / "x"
    folder.mkdir(parents=True)
    write_bundles(folder, [good])
    (folder / ("a" * 64 + bundles.SUFFIX)).symlink_to("/etc/passwd")
    big = variants(good, 1)[0]
    big["conditions"]["cpu_model"] = "x" * 5000
    big = bundles.with_id({k: v for k, v in big.items() if k != "id"})
    (folder / bundles.file_name(big)).write_bytes(bundles.to_bytes(big) + bytes(range(256)) * 40)
    bad = json.loads(json.dumps(good))
    bad["runs"][0]["images_per_sec"] = 276.93
    bad = bundles.with_id({k: v for k, v in bad.items() if k != "id"})
    write_bundles(folder, [bad])
    git(work, "add", "-A")
    git(work, "commit", "-qm", "hostile")
    git(work, "push", "-q", "origin", "HEAD")
    return bad, big


def test_pull_imports_the_good_and_names_each_bad_one(cli, tmp_path, bare):
    good = build(logged_sweep(tmp_path / "s", values={"resnet50": 176.93}))
    bad, big = hostile_repo(tmp_path, bare, good)
    env = env_for(tmp_path, TFCNNWRAP_MAX_BUNDLE_BYTES="8000")
    result = cli("pull", bare, env=env)
    assert result.returncode == 1, result
    refused = [line for line in result.stderr.splitlines() if line.startswith("refused: ")]
    assert len(refused) == 3, result
    assert any("a" * 64 in line and "symbolic link" in line for line in refused)
    assert any(big["id"] in line and "over the 8000-byte limit" in line for line in refused)
    assert any(bad["id"] in line and "recorded 276.93" in line for line in refused)
    assert "1 imported, 0 already there, 3 refused" in result.stderr
    listed = cli("library", "--format", "json", env=env).json()["rows"]
    assert {r["id"] for r in listed} == {good["id"]}
    assert not list((tmp_path / "data").rglob("passwd"))


def test_pull_of_an_empty_repository_or_a_missing_branch(cli, tmp_path, bare):
    result = cli("pull", bare, env=env_for(tmp_path))
    assert result.returncode == 0 and "no commits yet" in result.stderr, result
    sweep = logged_sweep(tmp_path / "s", values={"resnet50": 176.93})
    assert cli("publish", sweep, "--to", bare, env=env_for(tmp_path)).returncode == 0
    assert_clean_error(cli("pull", bare, "--branch", "nope", env=env_for(tmp_path)), 2, "no branch nope")


# -- done when -------------------------------------------------------------------------------------------


@pytest.fixture
def tf24(fake_tf):
    return fake_tf("2.4.0")


def real_sweep(cli, tmp_path, vendor, python, name, ips):
    out = tmp_path / name
    env = {
        "FAKE_TF_GPUS": "GeForce RTX 2070",
        "FAKE_TFCNN_IPS": ips,
        "FAKE_TFCNN_STATE": str(tmp_path / (name + "-st")),
    }
    result = cli(
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        python,
        "--device",
        "gpu",
        "--out",
        out,
        "--models",
        "resnet50,vgg16",
        "--runs",
        "2",
        "--num-batches",
        "20",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result
    return out


def test_done_when_seed_like_sweeps_go_round_the_world_and_rank_as_community(cli, tmp_path, vendor, tf24, bare):
    one = real_sweep(cli, tmp_path, vendor, tf24, "egpu", "resnet50=176.93/177.5,vgg16=110.23/110.9")
    two = real_sweep(cli, tmp_path, vendor, tf24, "desk", "resnet50=181.0/182.0,vgg16=112.0/112.4")
    for sweep in (one, two):
        exported = cli("export", sweep, "--out", tmp_path, cwd=tmp_path)
        assert exported.returncode == 0, exported
        checked = cli("verify", exported.stdout.strip())
        assert checked.returncode == 0 and "verified (GeForce RTX 2070, 4 runs" in checked.stdout, checked
    publish_at_once(tmp_path, [one, two], "file://%s" % bare)
    assert len(tree(bare)) == 2 and all(p.startswith("bundles/nvidia/geforce-rtx-2070/") for p in tree(bare))
    fresh = env_for(tmp_path, "fresh")
    pulled = cli("pull", bare, env=fresh)
    assert pulled.returncode == 0 and "2 imported, 0 already there, 0 refused" in pulled.stderr, pulled
    ranked = cli("compare", one, "--rank", env=fresh)
    assert ranked.returncode == 0, ranked
    # the sweep ranked never counts toward its own community: the desk's sweep is its community
    assert "GeForce RTX 2070 community (1 sweep)" in ranked.stdout
    rows = cli("compare", one, "--rank", "--format", "json", env=fresh).json()
    rows = rows["rows"] if isinstance(rows, dict) else rows
    entry = next(r for r in rows if r["gpu"] == "GeForce RTX 2070 community (1 sweep)")
    assert entry["configurations"] == 2 and entry["geomean_pct"] < 100.0  # the desk's faster runs count
    assert Path(tmp_path / "fresh" / "library.sqlite").is_file()
