"""Bundle format 2's id: the sha256 of RFC 8785 (JCS) JSON, which a reader in another language recomputes
(issue 35, item 5); format-1 bundles keep their rule."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bundledata import build, logged_sweep, verify

from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share.verify import VERIFIED

# Numbers and keys where JSON writers differ: Python writes 40.0, 9007199254740991.0 and 1.5e-07 and sorts keys by
# code point; JCS writes 40, 9007199254740991 and 1.5e-7 as ECMAScript does and sorts by UTF-16 code units (U+1F600
# before U+FB33). A bundle's numbers lie within +-2**53 (bundle.py), so no exponent above that is probed.
PROBE = {
    "forty": 40.0,
    "big float": 9007199254740991.0,
    "tenth": 0.1,
    "tiny": 1.5e-7,
    "largest safe": 9007199254740991,
    "smallest safe": -9007199254740991,
    "negative zero": -0.0,
    "third": 1 / 3,
    "\u20ac": "euro",
    "\U0001f600": "outside the BMP",
    "\ufb33": "hebrew",
    "\u00f6": "o umlaut",
    "\r": "control",
    'quote " and \\': "escapes \u2028 \x1f",
}


def probed(bundle):
    """``bundle`` with PROBE in its conditions and its id recomputed."""
    content = {k: v for k, v in bundle.items() if k != "id"}
    content["conditions"] = dict(content["conditions"], probe=PROBE)
    return bundles.with_id(content)


def test_jcs_writes_numbers_and_orders_keys_as_rfc_8785_says():
    text = bundles.jcs(PROBE).decode("utf-8")
    assert '"forty":40,' in text and '"big float":9007199254740991,' in text and '"tenth":0.1' in text
    assert '"tiny":1.5e-7' in text and '"largest safe":9007199254740991' in text and '"negative zero":0' in text
    assert '"third":0.3333333333333333' in text
    keys = list(json.loads(text))
    assert keys.index("\U0001f600") < keys.index("\ufb33")  # UTF-16 order, not code point order
    assert keys == sorted(PROBE, key=lambda k: k.encode("utf-16-be"))


def test_the_id_of_format_2_leaves_the_signatures_out_and_format_1_keeps_its_rule(tmp_path):
    bundle = build(logged_sweep(tmp_path / "sweep"))
    assert bundle["format"] == 2
    content = {k: v for k, v in bundle.items() if k != "id"}
    assert bundle["id"] == hashlib.sha256(bundles.jcs(content)).hexdigest()
    signed = dict(bundle, signatures=[{"signature": "-----BEGIN SSH SIGNATURE-----\n..."}])
    assert bundles.content_id(signed) == bundle["id"]
    # a format-1 bundle, as tfcnnwrap 0.1 wrote it: Python's canonical JSON of every key but the id
    old = dict(content, format=1)
    old["id"] = hashlib.sha256(
        json.dumps(old, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    assert old["id"] != hashlib.sha256(bundles.jcs(content)).hexdigest()
    read = bundles.read_bytes(bundles.to_bytes(old), "old")
    assert verify(read).state == VERIFIED
    with pytest.raises(bundles.BundleRefused, match="format 1 carries no signatures"):
        bundles.read_bytes(bundles.to_bytes(dict(old, signatures=[])), "old")


def test_a_whole_number_past_2_to_the_53_has_no_jcs_form_and_is_refused_in_one_line(tmp_path):
    bundle = build(logged_sweep(tmp_path / "sweep"))
    content = {k: v for k, v in bundle.items() if k != "id"}
    content["runs"][0]["exit_code"] = 2**53
    data = bundles.to_bytes(dict(content, id="0" * 64))
    with pytest.raises(bundles.BundleRefused, match=r"no RFC 8785 form .*2\*\*53") as caught:
        bundles.read_bytes(data, "big")
    assert caught.value.message.startswith("big: ") and "\n" not in caught.value.message


# -- another language: Node's own crypto and zlib with the npm package `canonicalize` --------------------------

NODE_JCS = os.environ.get("TFCNNWRAP_NODE_JCS", "")  # a folder whose node_modules holds canonicalize (.ci/run)
NODE_ID = r"""
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

for (const path of process.argv.slice(2)) {
  const bundle = JSON.parse(gunzipSync(readFileSync(path)).toString("utf8"));
  const { id, signatures, ...content } = bundle;
  console.log(createHash("sha256").update(canonicalize(content), "utf8").digest("hex"));
}
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not NODE_JCS,
    reason="set TFCNNWRAP_NODE_JCS to a folder where `npm install canonicalize` ran (.ci/run does), with node on PATH",
)
def test_node_with_an_independent_jcs_recomputes_the_id_of_exported_bundles(tmp_path):
    node = shutil.which("node")
    modules = Path(NODE_JCS) / "node_modules"
    assert node and (modules / "canonicalize").is_dir(), "TFCNNWRAP_NODE_JCS is set but node or canonicalize is missing"
    script_dir = tmp_path / "js"
    script_dir.mkdir()
    (script_dir / "node_modules").symlink_to(modules.resolve(), target_is_directory=True)
    (script_dir / "id.mjs").write_text(NODE_ID, encoding="utf-8")
    exported = build(logged_sweep(tmp_path / "sweep"))
    made = {"exported": exported, "probed": probed(exported)}
    paths = []
    for name, bundle in made.items():
        path = tmp_path / ("%s.tfcw.json.gz" % name)
        path.write_bytes(bundles.to_bytes(bundle))
        assert bundles.read_path(path).id == bundle["id"]  # Python reads it back: the id is its hash
        paths.append(path)
    assert b"40.0" in gzip.decompress(paths[1].read_bytes())  # the file spells 40.0 the Python way
    result = subprocess.run([node, script_dir / "id.mjs", *paths], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [made["exported"]["id"], made["probed"]["id"]]
