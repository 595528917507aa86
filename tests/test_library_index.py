"""The library's SQLite index: its format, the migration of an older index, and its queries' plans (issue 39)."""

import sqlite3

import pytest
from bundledata import build, logged_sweep
from conftest import run_cli

from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import library


def _plan(db, sql, params=()):
    return [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql, params)]


def library_of_format_2(tmp_path):
    """A library holding one bundle whose index is format 2, as the tfcnnwrap before results_newest made it."""
    data = tmp_path / "data"
    opened = library.Library(data)
    try:
        bundle = build(logged_sweep(tmp_path / "sweep", values={"resnet50": 176.9}))
        outcome, _ = library.import_one(opened, bundles.to_bytes(bundle), "sweep.tfcw.json.gz")
        assert outcome == "imported"
        opened.db.execute("DROP INDEX results_newest")
        opened.db.execute("PRAGMA user_version=2")
    finally:
        opened.close()
    return data


def _indexes(data):
    db = sqlite3.connect(str(data / library.INDEX))
    try:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        return names, db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


@pytest.mark.slow
def test_an_index_of_format_2_gains_the_newest_first_index_when_opened(tmp_path):
    data = library_of_format_2(tmp_path)
    assert "results_newest" not in _indexes(data)[0]
    result = run_cli("library", "--format", "json", env={"TFCNNWRAP_DATA": str(data)})
    assert result.returncode == 0, result
    assert [(r["model"], r["images_per_sec"]) for r in result.json()["rows"]] == [("resnet50", 176.9)]
    names, version = _indexes(data)
    assert "results_newest" in names and version == library.SCHEMA_VERSION == 3


def test_an_index_of_format_2_that_cannot_be_written_keeps_its_signers(tmp_path, monkeypatch):
    data = library_of_format_2(tmp_path)
    db = sqlite3.connect(str(data / library.INDEX))
    ident = db.execute("SELECT id FROM bundles").fetchone()[0]
    db.execute("INSERT INTO signers VALUES (?, ?, ?)", (ident, "SHA256:key", "alice@example.org"))
    db.commit()
    db.close()

    def read_only(db):
        db.execute("BEGIN IMMEDIATE")
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(library, "_create_schema", read_only)
    opened = library.Library(data, create=False)
    try:  # format 2 has the signers table: only the newer index is missing, and the rows read as they are
        assert not opened.unsigned_index
        assert opened.signer_keys() == {ident: {"SHA256:key"}}
        assert [r.to_dict()["signers"] for r in opened.rows()] == [["alice@example.org"]]
    finally:
        opened.close()


def test_every_query_of_the_index_uses_an_index_or_reads_a_whole_table_in_its_order(tmp_path):
    opened = library.Library(tmp_path / "data")
    db = opened.db
    try:
        assert _plan(db, library.rows_sql(False)) == ["SCAN r USING INDEX results_newest"]
        assert _plan(db, library.rows_sql(True), ("resnet50",))[0] == "SEARCH r USING INDEX results_model (model=?)"
        assert _plan(db, "SELECT 1 FROM bundles WHERE id=?", ("a",))[0].startswith("SEARCH bundles USING COVERING")
        assert _plan(db, "SELECT id FROM bundles")[0].startswith("SCAN bundles USING COVERING INDEX")
        assert _plan(db, "SELECT bundle_id, fingerprint FROM signers")[0].startswith("SCAN signers USING COVERING")
        # compare's community results: of some models through results_model, else every verified one (a scan);
        # the intervals of the signed bundles only, each bundle's results by the results' primary key
        assert _plan(db, library.community_results_sql(2), ("resnet50", "vgg16")) == [
            "SEARCH results USING INDEX results_model (model=? AND verified=?)"
        ]
        assert _plan(db, library.community_results_sql(0)) == ["SCAN results"]
        # models holding most results: a scan reads them faster than the index finds them
        assert _plan(db, library.community_results_sql(2, scan=True), ("resnet50", "vgg16")) == ["SCAN results"]
        assert _plan(db, library.INTERVALS_SQL)[-1] == "SEARCH r USING INDEX sqlite_autoindex_results_1 (bundle_id=?)"
        # community_rows' join: each result's bundle by the bundles' primary key
        joined = _plan(db, library.community_sql(0, True), ("cpu", 0))
        assert joined == ["SCAN r", "SEARCH b USING INDEX sqlite_autoindex_bundles_1 (id=?)"]
    finally:
        opened.close()


def test_rank_reads_its_models_by_index_when_they_are_few_and_by_a_scan_when_they_are_most(tmp_path):
    opened = library.Library(tmp_path / "data")
    try:
        rows = [
            ("b%d" % i, "GeForce RTX 2070", "resnet50" if i < 8 else "vgg16", 64, 1, 100.0 + i, 1) for i in range(10)
        ]
        opened.db.executemany(
            "INSERT INTO results (bundle_id, gpu, model, batch_size, num_gpus, images_per_sec, verified) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        assert opened._most_rows(["resnet50"]) and not opened._most_rows(["vgg16"])
        assert not opened._most_rows([])
    finally:
        opened.close()
