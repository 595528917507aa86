"""Bundle signatures with OpenSSH's ``ssh-keygen -Y`` (the SSHSIG format git signs commits with).

A signature is ``ssh-keygen -Y sign -n tfcnnwrap -f KEY`` over the bundle id's 64 hex characters (no newline),
kept in the bundle's ``signatures`` list as ``{signature, key, fingerprint}``; the id leaves that list out, so
any number of people may sign one bundle. Checking one: ``ssh-keygen -Y check-novalidate`` (is it a good
signature of this id by the key inside it?), then, with an allowed_signers file, ``-Y find-principals`` and
``-Y verify`` (whom the user trusts it to be). The key a signer is named by comes from the signature itself,
never from the entry's own ``key`` or ``fingerprint`` text, which must agree with it.

ssh-keygen runs through tfcnnwrap.run.procs.run_captured: no shell, a time limit, its tree ended with it. It
gets tfcnnwrap's own environment, so SSH_AUTH_SOCK lets a key held in ssh-agent sign.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from tfcnnwrap import safefs, settings
from tfcnnwrap.errors import SetupError, UsageError
from tfcnnwrap.render import safe_text
from tfcnnwrap.results.bundlerecords import Bundle, Signature
from tfcnnwrap.run.procs import run_captured

NAMESPACE = "tfcnnwrap"
TIMEOUT_S = 30.0  # ssh-keygen signs or checks in milliseconds; a passphrase prompt with no terminal waits
ALLOWED_SIGNERS = "allowed_signers"  # the default file's name, in the data folder
_ARMOR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")


@dataclass(frozen=True)
class Signer:
    """One signature's check: ``fingerprint`` (``SHA256:...``) of the key inside it, ``principal`` from the
    allowed signers (None: not in them), ``valid`` and, when not, ``why``."""

    fingerprint: str
    principal: Optional[str] = None
    valid: bool = True
    why: str = ""

    @property
    def name(self) -> str:
        """How a valid signer is shown and stored: the principal, else the key's fingerprint."""
        return self.principal or self.fingerprint

    def describe(self) -> str:
        if not self.valid:
            return "not valid: %s%s" % (self.why, " (key %s)" % self.fingerprint if self.fingerprint else "")
        if self.principal:
            return "signed by %s (%s)" % (self.principal, self.fingerprint)
        return "signed by %s (not in your allowed signers)" % self.fingerprint


def keygen() -> str:
    """The ssh-keygen to run; SetupError (exit 2) when there is none."""
    found = shutil.which("ssh-keygen")
    if not found:
        raise SetupError(
            "ssh-keygen was not found on PATH; install OpenSSH (8.2 or newer) to sign or check signatures of bundles"
        )
    return found


def _run(args: Sequence[str], data: bytes) -> Tuple[int, str]:
    """(exit code, stdout + stderr text) of ``ssh-keygen ARGS`` reading ``data``; -1 when it ran out of time."""
    code, out, err = run_captured([keygen(), *args], TIMEOUT_S, stdin=data)
    return (-1 if code is None else code), (out + b"\n" + err).decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return safe_text(lines[-1][:200]) if lines else "no message"


# -- the SSHSIG blob (PROTOCOL.sshsig): read to name the key, never to decide validity -------------------------


def _strings(blob: bytes, count: int, offset: int) -> Tuple[List[bytes], int]:
    out = []
    for _ in range(count):
        if offset + 4 > len(blob):
            raise ValueError("truncated")
        (size,) = struct.unpack(">I", blob[offset : offset + 4])
        if offset + 4 + size > len(blob):
            raise ValueError("truncated")
        out.append(blob[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return out, offset


def signature_key(armored: str) -> Tuple[str, str]:
    """(``ssh-ed25519 AAAA...`` public key line, its namespace) of an armored SSH signature; ValueError when it
    is not one."""
    lines = [line.strip() for line in armored.strip().splitlines()]
    if len(lines) < 3 or (lines[0], lines[-1]) != _ARMOR:
        raise ValueError("not an armored SSH signature")
    blob = base64.b64decode("".join(lines[1:-1]), validate=True)
    if blob[:6] != b"SSHSIG" or len(blob) < 10 or struct.unpack(">I", blob[6:10])[0] != 1:
        raise ValueError("not an SSHSIG version 1 signature")
    (public, namespace), _ = _strings(blob, 2, 10)
    (key_type,), _ = _strings(public, 1, 0)
    if not re.fullmatch(rb"[A-Za-z0-9@._+-]{1,64}", key_type):  # their bytes: a key type is a short plain name
        raise ValueError("not an SSH public key")
    return "%s %s" % (key_type.decode("ascii"), base64.b64encode(public).decode("ascii")), namespace.decode("utf-8")


def fingerprint(key_line: str) -> str:
    """``SHA256:...`` of a public key line, as ``ssh-keygen -l`` prints it."""
    blob = base64.b64decode(key_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


# -- signing ---------------------------------------------------------------------------------------------------


def sign_id(ident: str, key: str) -> Signature:
    """The ``signatures`` entry of ``key``'s signature over ``ident``; UsageError/SetupError naming the fix."""
    path = Path(key).expanduser()
    if not path.is_file():
        raise UsageError("%s: no such key file; give a private key (or the .pub of a key in ssh-agent)" % key)
    code, text = _run(["-Y", "sign", "-n", NAMESPACE, "-f", str(path)], ident.encode("ascii"))
    begin = text.find(_ARMOR[0])
    end = text.find(_ARMOR[1])
    if code != 0 or begin < 0 or end < 0:
        why = "it ran out of time" if code == -1 else _last_line(text)
        raise SetupError(
            "ssh-keygen could not sign with %s (%s); a key with a passphrase must be in ssh-agent "
            "(ssh-add KEY), then give KEY or KEY.pub" % (key, why)
        )
    armored = text[begin : end + len(_ARMOR[1])] + "\n"
    key_line, _ = signature_key(armored)
    return Signature.of(armored, key_line, fingerprint(key_line))


# -- checking ----------------------------------------------------------------------------------------------------


def allowed_signers_path(flag: Optional[str] = None) -> Optional[Path]:
    """``--allowed-signers FILE`` > the config file's ``allowed_signers`` > ``allowed_signers`` in the data
    folder when it exists > None. A file named by the flag or the config must exist (UsageError)."""
    value, where = (flag, "--allowed-signers") if flag else settings.from_config("allowed_signers")
    if not value:
        path = settings.data_dir() / ALLOWED_SIGNERS
        return path if path.is_file() else None
    path = Path(value).expanduser()
    if not path.is_file():
        raise UsageError(
            "%s: no such allowed signers file (from %s); its lines are `PRINCIPAL KEYTYPE KEY`, "
            "as git's gpg.ssh.allowedSignersFile" % (path, where)
        )
    return path


def check(ident: str, entry: Signature, allowed: Optional[Path]) -> Signer:
    """The check of one ``signatures`` entry of the bundle with id ``ident``."""
    armored = entry.signature
    try:
        key_line, namespace = signature_key(armored)
        found = fingerprint(key_line)
    except (ValueError, struct.error):  # binascii.Error and UnicodeDecodeError are ValueErrors
        return Signer("", valid=False, why="not an armored SSH signature (SSHSIG)")
    for claimed, value in ((entry.fingerprint, found), (entry.key, key_line)):
        if claimed is not None and claimed.split()[:2] != value.split()[:2]:
            return Signer(found, valid=False, why="its entry names another key (%s)" % safe_text(claimed[:60]))
    if namespace != NAMESPACE:
        return Signer(found, valid=False, why="made for namespace %s, not %s" % (safe_text(namespace[:40]), NAMESPACE))
    with tempfile.TemporaryDirectory(prefix="tfcnnwrap-sig-") as tmp:
        sig = Path(tmp) / "bundle.sig"
        safefs.atomic_write(sig, armored.encode("utf-8"), fsync=False)
        code, text = _run(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], ident.encode("ascii"))
        if code != 0:
            why = "ssh-keygen ran out of time" if code == -1 else "not a signature of this id (%s)" % _last_line(text)
            return Signer(found, valid=False, why=why)
        return Signer(found, principal=_principal(ident, sig, allowed) if allowed else None)


def _principal(ident: str, sig: Path, allowed: Path) -> Optional[str]:
    """The first principal the allowed signers file names for the signature's key and that ``-Y verify``
    accepts (its namespaces and validity dates count); None: not one of them."""
    code, text = _run(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed)], b"")
    if code != 0:
        return None
    for principal in [line.strip() for line in text.splitlines() if line.strip()][:10]:
        code, _ = _run(
            ["-Y", "verify", "-f", str(allowed), "-I", principal, "-n", NAMESPACE, "-s", str(sig)],
            ident.encode("ascii"),
        )
        if code == 0:
            return safe_text(principal[:200])
    return None


def check_all(bundle: Bundle, allowed: Optional[Path]) -> List[Signer]:
    """Every signature of ``bundle`` checked (format 1 has none)."""
    return [check(bundle.id, entry, allowed) for entry in bundle.signatures]


def signature_findings(signers: Sequence[Signer]) -> List[str]:
    """One verify finding per signature that is not valid."""
    return ["signature %d: %s" % (i, s.describe()) for i, s in enumerate(signers, 1) if not s.valid]
