"""A bundle as records (results/bundlerecords.py) and the library's rows as named records (share/indexrows.py).

A record keeps the JSON it was read from: its bytes and its id never change, whatever spelling the file used.
"""

import gzip

from bundledata import build, logged_sweep

from tfcnnwrap.results.bundlerecords import Bundle, BundlePlan, Signature, SummaryEntry
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import library
from tfcnnwrap.share.indexrows import BundleRow, CommunityRow, ResultRow, SignerRow


def test_a_bundle_read_into_records_writes_the_same_bytes_under_the_same_id(tmp_path):
    exported = build(logged_sweep(tmp_path / "s"))
    data = bundles.to_bytes(exported)
    read = bundles.read_bytes(data, "x")
    assert bundles.to_bytes(read) == data and read.id == exported["id"] and bundles.genuine_id(read)
    assert read.gpu == "GeForce RTX 2070" and len(read.runs) == len(exported["runs"]) == 15
    assert read.runs[0].config == ("resnet50", 64, 1) and read.runs[0].where == "resnet50 bs64 run 1"
    assert set(read.logs or {}) == set(exported["logs"]) and read.plan is not None and read.plan.runs == 3


def test_a_format_1_bundle_keeps_pythons_spelling_of_its_numbers_and_its_id(tmp_path):
    content = {k: v for k, v in build(logged_sweep(tmp_path / "s")).items() if k not in ("id", "plan")}
    content.update(format=1, conditions=dict(content["conditions"], forty=40.0))
    old = bundles.with_id(content)
    read = bundles.read_bytes(bundles.to_bytes(old), "old")
    assert b'"forty":40.0' in gzip.decompress(bundles.to_bytes(read)) and read.id == old["id"]
    assert bundles.genuine_id(read) and not read.has_plan


def test_a_signature_added_to_a_record_leaves_its_id_and_goes_last(tmp_path):
    read = bundles.read_bytes(bundles.to_bytes(build(logged_sweep(tmp_path / "s"))), "x")
    entry = Signature.of("-----BEGIN SSH SIGNATURE-----\n...", "ssh-ed25519 AAAA", "SHA256:abc")
    signed = read.signed(entry)
    assert signed is not None and signed.id == read.id and bundles.genuine_id(signed)
    assert list(signed.to_dict())[-1] == "signatures" and signed.signatures == (entry,)
    assert signed.signed(Signature.of("other text", "ssh-ed25519 AAAA", "SHA256:abc")) is None  # that key signed


def test_a_summary_row_of_any_values_keeps_a_hashable_key_and_no_mean():
    row = SummaryEntry.from_dict({"model": {"a": 1}, "batch_size": 64.0, "num_gpus": [1, 2], "mean": "176.9"})
    assert row.key == ("{'a': 1}", "64.0", "[1, 2]") and row.mean is None
    fleet = SummaryEntry.from_dict({"model": "vgg16", "batch_size": 32, "host": "host-1", "mean": 110})
    assert (
        fleet.key == ("vgg16", 32, 1, "host-1") and fleet.mean == 110 and fleet.name == "summary vgg16 bs32 host host-1"
    )


def test_a_plan_that_is_not_one_reads_as_none_and_the_bundle_says_it_had_one():
    config = {"model": "resnet50", "batch_size": 64, "num_gpus": 1}
    good = {"runs": 3, "until_ci": 2.0, "max_runs": 8, "configurations": [config], "not_started": [dict(config, run=3)]}
    plan = BundlePlan.read(good)
    assert plan is not None and plan.most_runs == 8 and plan.not_started == ((("resnet50", 64, 1), 3),)
    for broken in ({"runs": 0}, dict(good, configurations=[]), dict(good, not_started=[{"run": 1}]), [good]):
        assert BundlePlan.read(broken) is None, broken
        bundle = Bundle.from_dict({"format": 2, "conditions": {"gpu": "x"}, "runs": [], "plan": broken})
        assert bundle.has_plan and bundle.plan is None


def test_the_library_rows_name_the_index_columns_they_hold(tmp_path):
    opened = library.Library(tmp_path / "data")
    try:
        db = opened.db
        for table, record in (("bundles", BundleRow), ("results", ResultRow), ("signers", SignerRow)):
            assert tuple(row[1] for row in db.execute("PRAGMA table_info(%s)" % table)) == record._fields
        cursor = db.execute(library.community_sql(0, False))
        assert tuple(d[0] for d in cursor.description) == CommunityRow._fields
    finally:
        opened.close()
