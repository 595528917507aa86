"""Bundle signatures with OpenSSH (`export --sign`, `sign`, `verify --allowed-signers`), signers in the library,
and community entries that count their signers (issue 35, item 4)."""

import gzip
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from bundledata import build, logged_sweep
from conftest import assert_clean_error, spawn_cli

from tfcnnwrap.results.bundlerecords import Bundle
from tfcnnwrap.share import bundle as bundles

pytestmark = [
    pytest.mark.slow,  # every test starts ssh-keygen and tfcnnwrap
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen"),
]


def load(path):
    with gzip.open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def save(path, bundle):
    Path(path).write_bytes(bundles.to_bytes(bundle))
    return path


def keygen(*args, input=None):
    return subprocess.run(["ssh-keygen", *args], input=input, capture_output=True, timeout=60)


@pytest.fixture
def keys(tmp_path):
    """{name: private key path} of three ed25519 keys without passphrase, and their fingerprints."""
    folder = tmp_path / "keys"
    folder.mkdir()
    out = {}
    for name in ("alice", "bob", "carol"):
        assert keygen("-q", "-t", "ed25519", "-N", "", "-C", name, "-f", folder / name).returncode == 0
        shown = keygen("-l", "-E", "sha256", "-f", folder / (name + ".pub")).stdout.decode()
        out[name] = (folder / name, shown.split()[1])
    return out


def allowed_signers(path, keys, *names):
    """An OpenSSH allowed_signers file naming ``names`` as NAME@example.com."""
    lines = []
    for name in names:
        key = " ".join((keys[name][0].with_suffix(".pub")).read_text().split()[:2])
        lines.append("%s@example.com %s\n" % (name, key))
    Path(path).write_text("".join(lines))
    return path


def signed_export(tmp_path, keys, signer="alice", name="sweep", values=None):
    sweep = logged_sweep(tmp_path / name, values=values)
    out = tmp_path / ("out-" + name)
    out.mkdir()
    result = spawn_cli("export", sweep, "--out", out, "--sign", keys[signer][0])
    assert result.returncode == 0, result
    return Path(result.stdout.strip())


def test_a_signed_export_passes_ssh_keygen_verify_over_its_id_and_verify_names_the_principal(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    bundle = load(path)
    assert bundle["format"] == 2 and path.name == bundle["id"] + ".tfcw.json.gz"
    (entry,) = bundle["signatures"]
    assert entry["fingerprint"] == keys["alice"][1] and entry["key"].startswith("ssh-ed25519 ")
    allowed = allowed_signers(tmp_path / "allowed", keys, "alice")
    sig = tmp_path / "bundle.sig"
    sig.write_text(entry["signature"])
    # what anyone can run without tfcnnwrap: the signature is over the id's 64 hex characters
    checked = keygen(
        "-Y",
        "verify",
        "-f",
        allowed,
        "-I",
        "alice@example.com",
        "-n",
        "tfcnnwrap",
        "-s",
        sig,
        input=bundle["id"].encode(),
    )
    assert checked.returncode == 0 and b"Good" in checked.stdout + checked.stderr, checked

    named = spawn_cli("verify", path, "--allowed-signers", allowed)
    assert named.returncode == 0, named
    assert "signed by alice@example.com (%s)" % keys["alice"][1] in named.stdout
    assert named.stdout.splitlines()[-1].split(": ")[1].startswith("verified")
    anonymous = spawn_cli("verify", path)
    assert anonymous.returncode == 0, anonymous
    assert "signed by %s (not in your allowed signers)" % keys["alice"][1] in anonymous.stdout
    # the default allowed signers file: allowed_signers in the data folder
    data = tmp_path / "data"
    data.mkdir()
    allowed_signers(data / "allowed_signers", keys, "alice")
    default = spawn_cli("verify", path, env={"TFCNNWRAP_DATA": str(data)})
    assert "signed by alice@example.com" in default.stdout, default
    # or the config file's allowed_signers
    config = tmp_path / "tfcnnwrap.toml"
    config.write_text('allowed_signers = "%s"\n' % allowed.as_posix())
    configured = spawn_cli("verify", path, env={"TFCNNWRAP_CONFIG": str(config)})
    assert "signed by alice@example.com" in configured.stdout, configured


def test_an_altered_or_borrowed_signature_is_not_verified(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    bundle = load(path)
    lines = bundle["signatures"][0]["signature"].splitlines()
    last = lines[-2]  # the end of the blob: the signature bytes themselves
    lines[-2] = last[:-6] + ("AAAA" if last[-6:-2] != "AAAA" else "BBBB") + last[-2:]
    altered = json.loads(json.dumps(bundle))
    altered["signatures"][0]["signature"] = "\n".join(lines) + "\n"
    result = spawn_cli("verify", save(tmp_path / "altered.tfcw.json.gz", altered))
    assert result.returncode == 1, result
    assert "signature 1: not valid: not a signature of this id" in result.stdout
    assert "(key %s)" % keys["alice"][1] in result.stdout
    assert result.stdout.splitlines()[-1].split(": ")[1].startswith("not verified")

    # a good signature of another bundle, copied over: not a signature of this id
    other = load(signed_export(tmp_path, keys, signer="bob", name="other", values={"resnet50": 150.0}))
    borrowed = dict(bundle, signatures=other["signatures"])
    result = spawn_cli("verify", save(tmp_path / "borrowed.tfcw.json.gz", borrowed))
    assert result.returncode == 1 and "not a signature of this id" in result.stdout, result

    # an entry that claims another key than the one inside its signature
    claimed = json.loads(json.dumps(bundle))
    claimed["signatures"][0]["fingerprint"] = keys["bob"][1]
    result = spawn_cli("verify", save(tmp_path / "claimed.tfcw.json.gz", claimed))
    assert result.returncode == 1 and "names another key" in result.stdout, result

    # the content changed and its id recomputed, as a forger would: the signature no longer covers it
    forged = bundles.with_id({k: v for k, v in dict(bundle, created_at="2027-01-01T00:00:00Z").items() if k != "id"})
    result = spawn_cli("verify", save(tmp_path / "forged.tfcw.json.gz", forged))
    assert result.returncode == 1 and "not a signature of this id" in result.stdout, result


def test_several_people_sign_one_bundle_and_its_id_stays(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    before = load(path)["id"]
    result = spawn_cli("sign", path, "--key", keys["bob"][0])
    assert result.returncode == 0 and "signed by %s (2 signatures)" % keys["bob"][1] in result.stdout, result
    again = spawn_cli("sign", path, "--key", keys["bob"][0])
    assert again.returncode == 0 and "already signed" in again.stdout, again
    bundle = load(path)
    assert bundle["id"] == before == bundles.content_id(bundle)
    assert [s["fingerprint"] for s in bundle["signatures"]] == [keys["alice"][1], keys["bob"][1]]
    allowed = allowed_signers(tmp_path / "allowed", keys, "bob")
    checked = spawn_cli("verify", path, "--allowed-signers", allowed)
    assert checked.returncode == 0, checked
    assert "signed by %s (not in your allowed signers)" % keys["alice"][1] in checked.stdout
    assert "signed by bob@example.com (%s)" % keys["bob"][1] in checked.stdout


def test_what_cannot_be_signed_or_checked_is_one_line_with_exit_2(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    # a format-1 bundle: its id covers every key, so no signature can be over it
    old = {k: v for k, v in load(path).items() if k not in ("id", "signatures")}
    old["format"] = 1
    old_path = save(tmp_path / "old.tfcw.json.gz", bundles.with_id(old))
    assert_clean_error(spawn_cli("sign", old_path, "--key", keys["bob"][0]), 2, "format 1")
    assert_clean_error(spawn_cli("sign", path, "--key", tmp_path / "nokey"), 2, "no such key file")
    assert_clean_error(spawn_cli("verify", path, "--allowed-signers", tmp_path / "none"), 2, "allowed signers")
    no_tools = tmp_path / "empty-path"
    no_tools.mkdir()
    for args in (("verify", path), ("sign", path, "--key", keys["bob"][0])):
        assert_clean_error(spawn_cli(*args, env={"PATH": str(no_tools)}), 2, "ssh-keygen was not found")


def test_import_keeps_signatures_and_library_rows_carry_their_signers(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    assert spawn_cli("sign", path, "--key", keys["bob"][0]).returncode == 0
    data = tmp_path / "data"
    data.mkdir()
    allowed_signers(data / "allowed_signers", keys, "alice")
    env = {"TFCNNWRAP_DATA": str(data)}
    imported = spawn_cli("import", path, env=env)
    assert imported.returncode == 0, imported
    stored = load(data / "bundles" / path.name)
    assert len(stored["signatures"]) == 2
    rows = spawn_cli("library", "--format", "json", env=env).json()["rows"]
    assert rows and all(r["signers"] == sorted([keys["bob"][1], "alice@example.com"]) for r in rows)
    table = spawn_cli("library", "--format", "csv", env=env)
    assert "alice@example.com" in table.stdout


def old_index(tmp_path):
    """A library whose index is format 1, as tfcnnwrap 0.1 made it, with one bundle's row."""
    data = tmp_path / "data"
    (data / "bundles").mkdir(parents=True)
    db = sqlite3.connect(str(data / "library.sqlite"))
    db.executescript(
        "CREATE TABLE bundles (id TEXT PRIMARY KEY, gpu TEXT NOT NULL, vendor TEXT, created_at TEXT, imported_at TEXT,"
        " verified INTEGER, tool_version TEXT, tf_version TEXT, precision TEXT, xla TEXT, variable_update TEXT,"
        " data TEXT, origin TEXT);"
        "CREATE TABLE results (bundle_id TEXT NOT NULL, gpu TEXT NOT NULL, model TEXT NOT NULL, batch_size INTEGER"
        " NOT NULL, num_gpus INTEGER NOT NULL, precision TEXT, xla TEXT, variable_update TEXT, data TEXT,"
        " tf_version TEXT, images_per_sec REAL, runs_ok INTEGER, verified INTEGER, created_at TEXT,"
        " PRIMARY KEY (bundle_id, model, batch_size, num_gpus));"
        "INSERT INTO bundles VALUES ('%s', 'GeForce RTX 2070', 'nvidia', '2026-11-30', '2026-12-01', 1, '0.1', '1.12',"
        " 'fp32', 'no', 'parameter_server', 'synthetic', '');"
        "INSERT INTO results VALUES ('%s', 'GeForce RTX 2070', 'resnet50', 64, 1, 'fp32', 'no', 'parameter_server',"
        " 'synthetic', '1.12', 176.9, 3, 1, '2026-11-30');"
        "PRAGMA user_version=1;" % ("a" * 64, "a" * 64)
    )
    db.close()
    return data


def test_an_index_of_format_1_gains_the_signers_table_when_opened(tmp_path):
    from tfcnnwrap.share import library

    data = old_index(tmp_path)
    rows = spawn_cli("library", "--format", "json", env={"TFCNNWRAP_DATA": str(data)}).json()["rows"]
    assert [(r["images_per_sec"], r["signers"]) for r in rows] == [(176.9, [])]
    db = sqlite3.connect(str(data / "library.sqlite"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == library.SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM signers").fetchone()[0] == 0
    db.close()


def signed_bundle(tmp_path, keys, name, values, *signers):
    bundle = build(logged_sweep(tmp_path / name, values=values))
    from tfcnnwrap.share import signing

    for signer in signers:
        signed = Bundle.from_dict(bundle).signed(signing.sign_id(bundle["id"], str(keys[signer][0])))
        bundle = bundle if signed is None else signed.to_dict()
    return bundle


def community_rank(tmp_path, keys, made):
    folder = tmp_path / "in"
    folder.mkdir()
    for bundle in made:
        save(folder / bundles.file_name(bundle), bundle)
    env = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    assert spawn_cli("import", folder, env=env).returncode == 0
    mine = logged_sweep(tmp_path / "mine", values={"resnet50": 175.0})
    result = spawn_cli("compare", mine, "--rank", "--format", "json", env=env)
    assert result.returncode == 0, result
    return [r for r in result.json()["rows"] if "community" in r["gpu"]], spawn_cli("compare", mine, "--rank", env=env)


def test_community_entries_count_sweeps_and_signers_and_independent_agreement_is_replicated(tmp_path, keys):
    made = [
        signed_bundle(tmp_path, keys, "a", {"resnet50": [170.0, 172.0, 174.0]}, "alice"),
        signed_bundle(tmp_path, keys, "b", {"resnet50": [173.0, 175.0, 177.0]}, "bob"),
        signed_bundle(tmp_path, keys, "c", {"resnet50": [171.0, 176.0, 178.0]}, "alice", "carol"),
        build(logged_sweep(tmp_path / "d", values={"resnet50": [174.0, 175.0, 176.0]})),
    ]
    (entry,), table = community_rank(tmp_path, keys, made)
    assert entry["gpu"] == "GeForce RTX 2070 community (4 sweeps, 3 signers)"
    assert (entry["sweeps"], entry["signers"], entry["replicated"]) == (4, 3, True)
    assert "GeForce RTX 2070 community (4 sweeps, 3 signers)" in table.stdout
    assert "replicated" in table.stdout


def test_one_signer_twice_or_disagreeing_figures_are_not_replicated(tmp_path, keys):
    made = [
        signed_bundle(tmp_path, keys, "a", {"resnet50": [170.0, 171.0, 172.0]}, "alice"),
        signed_bundle(tmp_path, keys, "b", {"resnet50": [170.5, 171.5, 172.5]}, "alice"),
        signed_bundle(tmp_path, keys, "c", {"resnet50": [190.0, 191.0, 192.0]}, "bob"),
    ]
    (entry,), _ = community_rank(tmp_path, keys, made)
    assert entry["gpu"] == "GeForce RTX 2070 community (3 sweeps, 2 signers)"
    assert (entry["sweeps"], entry["signers"], entry["replicated"]) == (3, 2, False)


def test_a_second_signature_of_a_bundle_the_library_holds_is_added_on_import(tmp_path, keys):
    path = signed_export(tmp_path, keys)
    env = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    assert spawn_cli("import", path, env=env).returncode == 0
    # bob re-ran it, agrees, and signs his copy of the same bundle
    copy = tmp_path / "bob" / path.name
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    assert spawn_cli("sign", copy, "--key", keys["bob"][0]).returncode == 0
    again = spawn_cli("import", copy, env=env)
    assert again.returncode == 0 and "1 new signature added" in again.stdout, again
    assert "0 imported, 1 already there, 0 refused" in again.stderr
    stored = load(tmp_path / "data" / "bundles" / path.name)
    assert [s["fingerprint"] for s in stored["signatures"]] == [keys["alice"][1], keys["bob"][1]]
    rows = spawn_cli("library", "--format", "json", env=env).json()["rows"]
    assert rows and all(r["signers"] == sorted([keys["alice"][1], keys["bob"][1]]) for r in rows)
    # a copy with an altered new signature is refused, and the library keeps what it had
    bad = load(copy)
    bad["signatures"].append(dict(bad["signatures"][1], signature=bad["signatures"][0]["signature"]))
    bad["signatures"][2]["fingerprint"] = keys["carol"][1]
    refused = spawn_cli("import", save(tmp_path / "bad.tfcw.json.gz", bad), env=env)
    assert refused.returncode == 1 and "not verified: signature 3" in refused.stderr, refused
    assert len(load(tmp_path / "data" / "bundles" / path.name)["signatures"]) == 2


def test_a_second_signature_travels_through_git_publish_and_pull(tmp_path, keys):
    from conftest import GIT_ENV

    path = signed_export(tmp_path, keys)
    bare = tmp_path / "results.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    publisher = dict(GIT_ENV, TFCNNWRAP_DATA=str(tmp_path / "publisher"))
    reader = dict(GIT_ENV, TFCNNWRAP_DATA=str(tmp_path / "reader"))
    assert spawn_cli("publish", path, "--to", bare, env=publisher).returncode == 0
    first = spawn_cli("pull", bare, env=reader)
    assert first.returncode == 0 and "1 imported" in first.stderr, first
    copy = tmp_path / "bob" / path.name
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    assert spawn_cli("sign", copy, "--key", keys["bob"][0]).returncode == 0
    published = spawn_cli("publish", copy, "--to", bare, env=publisher)
    assert published.returncode == 0 and "published" in published.stdout, published
    log = subprocess.run(["git", "--git-dir", str(bare), "log", "-1", "--format=%B"], capture_output=True, text=True)
    assert log.stdout.startswith("Sign GeForce RTX 2070: bundle %s" % path.name.split(".")[0]), log.stdout
    again = spawn_cli("pull", bare, env=reader)
    assert again.returncode == 0 and "1 new signature added" in again.stdout, again
    rows = spawn_cli("library", "--format", "json", env=reader).json()["rows"]
    assert rows and all(r["signers"] == sorted([keys["alice"][1], keys["bob"][1]]) for r in rows)
    unchanged = spawn_cli("publish", copy, "--to", bare, env=publisher)
    assert unchanged.returncode == 0 and "already in" in unchanged.stdout, unchanged


def test_an_index_of_format_1_that_cannot_be_written_reads_as_unsigned(tmp_path, monkeypatch):
    from tfcnnwrap.share import library

    data = old_index(tmp_path)

    def read_only(db):
        db.execute("BEGIN IMMEDIATE")
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(library, "_create_schema", read_only)
    opened = library.Library(data, create=False)
    try:
        assert [(r.images_per_sec, r.to_dict()["signers"]) for r in opened.rows()] == [(176.9, [])]
        assert opened.signer_keys() == {} and opened.intervals() == {}
    finally:
        opened.close()


def test_verify_repo_names_signers_from_the_repository_allowed_signers_or_the_flag(tmp_path, keys):
    from tfcnnwrap.share.resultsrepo import repo_path

    path = signed_export(tmp_path, keys)
    repo = tmp_path / "repo"
    placed = repo / repo_path(bundles.read_path(path))
    placed.parent.mkdir(parents=True)
    placed.write_bytes(path.read_bytes())
    allowed_signers(repo / "allowed_signers", keys, "alice")
    # the repository's own allowed_signers (what init-repo writes and its help promises) names the signer
    done = spawn_cli("verify", "--repo", repo)
    assert done.returncode == 0, done
    assert "signed by alice@example.com (%s)" % keys["alice"][1] in done.stdout, done.stdout
    # --allowed-signers FILE is read instead, as it is for `verify BUNDLE`
    other = allowed_signers(tmp_path / "other", keys, "bob")
    flagged = spawn_cli("verify", "--repo", repo, "--allowed-signers", other)
    assert flagged.returncode == 0, flagged
    assert "signed by %s (not in your allowed signers)" % keys["alice"][1] in flagged.stdout, flagged.stdout
