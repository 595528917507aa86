"""An SSH signature from someone else's bundle is read as hostile: whatever it holds, its check says "not valid"
with why, before any ssh-keygen runs (issue 35, item 4)."""

import base64
import struct

import pytest

from tfcnnwrap.results.bundlerecords import Signature
from tfcnnwrap.share import signing


def armor(blob):
    body = base64.b64encode(blob).decode()
    return "-----BEGIN SSH SIGNATURE-----\n%s\n-----END SSH SIGNATURE-----\n" % body


def strings(*parts):
    return b"".join(struct.pack(">I", len(p)) + p for p in parts)


KEY = strings(b"ssh-ed25519", b"\x01" * 32)
JUNK = {
    "empty": "",
    "words": "not a signature",
    "armor around nothing": armor(b""),
    "armor around junk base64": "-----BEGIN SSH SIGNATURE-----\n!!!\n-----END SSH SIGNATURE-----\n",
    "not SSHSIG": armor(b"SSHSIX" + struct.pack(">I", 1) + strings(KEY, b"tfcnnwrap")),
    "version 2": armor(b"SSHSIG" + struct.pack(">I", 2) + strings(KEY, b"tfcnnwrap")),
    "truncated strings": armor(b"SSHSIG" + struct.pack(">I", 1) + struct.pack(">I", 9999) + b"abc"),
    "key type with a space": armor(
        b"SSHSIG" + struct.pack(">I", 1) + strings(strings(b"ssh-ed25519 AAAA", b"x"), b"tfcnnwrap")
    ),
    "key type not text": armor(b"SSHSIG" + struct.pack(">I", 1) + strings(strings(b"\xff\xfe", b"x"), b"tfcnnwrap")),
    "namespace not text": armor(b"SSHSIG" + struct.pack(">I", 1) + strings(KEY, b"\xff")),
}


@pytest.mark.parametrize("case", sorted(JUNK))
def test_a_signature_that_is_not_one_is_not_valid_and_says_why(case):
    signer = signing.check("0" * 64, Signature.from_dict({"signature": JUNK[case]}), None)
    assert not signer.valid and "not an armored SSH signature" in signer.describe(), case


@pytest.mark.slow
def test_a_signature_for_another_namespace_or_key_than_its_entry_says_is_not_valid_without_ssh_keygen():
    blob = b"SSHSIG" + struct.pack(">I", 1) + strings(KEY, b"git", b"", b"sha512", b"sig")
    key_line, namespace = signing.signature_key(armor(blob))
    assert namespace == "git" and key_line.startswith("ssh-ed25519 AAAA")
    other = signing.check("0" * 64, Signature.from_dict({"signature": armor(blob)}), None)
    assert not other.valid and "namespace git" in other.why
    claimed = signing.check(
        "0" * 64, Signature.from_dict({"signature": armor(blob), "fingerprint": "SHA256:someone-else"}), None
    )
    assert not claimed.valid and "names another key" in claimed.why
    assert claimed.fingerprint == signing.fingerprint(key_line) != "SHA256:someone-else"
