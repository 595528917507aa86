"""A bundle's id is the hash of its canonical (RFC 8785) JSON, a fifth of the CPU a bundle's check costs: `import`
and `site` computed it twice per bundle (the shape check, then verify) and now once (issue 39), naming a bundle
changed after export as they did."""

import gzip
import json

import pytest
from bundledata import logged_sweep

from tfcnnwrap.pages import site
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import library
from tfcnnwrap.share.export import build


@pytest.fixture
def made(tmp_path):
    item = build(logged_sweep(tmp_path / "sweep", values={"resnet50": 176.9}))
    good = tmp_path / bundles.file_name(item)
    good.write_bytes(bundles.to_bytes(item))
    data = item.to_dict()
    changed = dict(data, runs=[dict(data["runs"][0], images_per_sec=99.0)] + data["runs"][1:])
    bad = tmp_path / "changed.tfcw.json.gz"
    bad.write_bytes(gzip.compress(json.dumps(changed).encode()))
    return good, bad


@pytest.fixture
def hashes(monkeypatch):
    calls = []
    real = bundles.content_id
    monkeypatch.setattr(bundles, "content_id", lambda b: calls.append(1) or real(b))
    return calls


def test_import_hashes_a_new_bundle_once(made, hashes):
    checked = library.check(made[0].read_bytes(), str(made[0]))
    assert checked.outcome == "new" and len(hashes) == 1, checked.message


def test_import_names_a_changed_bundle_as_before(made):
    checked = library.check(made[1].read_bytes(), "x.tfcw.json.gz")
    outcome, message = checked.outcome, checked.message
    with pytest.raises(bundles.BundleRefused) as shape:
        bundles.read_bytes(made[1].read_bytes(), "x.tfcw.json.gz")
    assert outcome == "refused" and message == shape.value.message and "changed after export" in message


def test_a_known_bundle_still_has_its_id_checked(made, hashes):
    ident = json.loads(gzip.decompress(made[1].read_bytes()))["id"]
    checked = library.check(made[1].read_bytes(), "x", known={ident: frozenset()})
    outcome, message = checked.outcome, checked.message
    assert outcome == "refused" and "changed after export" in message and len(hashes) == 1


def test_site_hashes_a_bundle_once_and_names_a_changed_one_as_before(made, hashes):
    data = site.read_bundle(made[0])
    assert site.checked_bundle(made[0], data).state == "verified" and len(hashes) == 1
    changed = site.read_bundle(made[1])
    with pytest.raises(site.BundleError) as error:
        site.checked_bundle(made[1], changed)
    with pytest.raises(bundles.BundleRefused) as shape:
        bundles.check_shape(changed, str(made[1]))
    assert str(error.value) == shape.value.message
