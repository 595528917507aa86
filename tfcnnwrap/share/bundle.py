"""Result bundles: one sweep as one self-describing, checkable file, ``<id>.tfcw.json.gz`` (docs/results-format.md).

A bundle is gzip'd JSON with ``format, id, tool_version, created_at, conditions, runs, summary, logs`` and,
from format 2, ``signatures``. ``id`` is the sha256 of the canonical JSON of everything but ``id`` and
``signatures``, so the same sweep exported twice has the same id and signing it changes no id: format 2 writes
that JSON by RFC 8785 (JCS: its key order and number spelling, which any language can reproduce), format 1 by
Python's json (sorted keys, no whitespace). ``created_at`` is the sweep's own creation time for that reason.

Bundles come from other people: every reader here treats them as hostile. A file over the size limit is
refused before it is read, the decompressed text is bounded too, JSON must be strict (no NaN/Infinity), the
shape is checked key by key, log names may not name a path (no ``/``, ``\\`` or ``..``), and the id must be
the hash of the content. Standard library only (gzip, hashlib, json), and rfc8785 for format 2's id. A bundle
that passes becomes a ``Bundle`` (results/bundlerecords.py) here, once: every later stage reads that record, and
only the functions here see its JSON (its bytes, its id, the checks).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Union

from tfcnnwrap import __version__
from tfcnnwrap.errors import DamagedFile
from tfcnnwrap.results.bundlerecords import MAX_NUMBER, Bundle, LogEntry
from tfcnnwrap.results.records import JsonObject, Status

FORMAT = 2  # the bundle format this tfcnnwrap writes, and the newest it reads
JCS_FORMAT = 2  # from this format on the id is the sha256 of RFC 8785 JSON and leaves the signatures out
SIGNATURES = "signatures"
MAX_SIGNATURES = 100
MAX_SIGNATURE_CHARS = 16 * 1024  # an armored RSA-16384 signature is under 6 KiB
PLAN_FORMAT = 2  # from this format on a bundle carries its ``plan`` (a format-1 bundle is checked when it has one)
SUFFIX = ".tfcw.json.gz"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
ENV_MAX_BYTES = "TFCNNWRAP_MAX_BUNDLE_BYTES"  # tests lower the limit; never raised past the default
INFLATE_FACTOR = 8  # JSON text may be at most this many times the compressed limit
# Python holds each JSON value in some 50-100 bytes: 512 MiB of '{},{},...' (a 500 KB file) would take 15 GB.
# A real bundle's text is mostly log text, a few values per hundred bytes; this bounds the values to parse.
BYTES_PER_VALUE = 8
# Bounds that keep any bundle under the size limit decided in seconds and well under 1 GB (docs/results-format.md):
# the largest of Lambda's 3,954 real tf_cnn_benchmarks logs is 3.8 MB and 29,091 lines (the median 9.6 KB), so
# a log may be twice that; the parser's cost is per line (about 5 us for the worst lines), hence the line bounds.
MAX_INFLATED = 96 * 1024 * 1024  # the JSON text of any bundle, whatever the file size limit
MAX_VALUES = 2000000  # JSON values of any bundle (each is some 50-100 bytes once parsed)
MAX_LOG_CHARS = 8 * 1024 * 1024
MAX_LOG_LINES = 100000
MAX_LOGS_CHARS = 64 * 1024 * 1024  # all logs of one bundle together
MAX_LOGS_LINES = 500000
# Every number of a bundle is a whole number or a float within +-2**53 (MAX_NUMBER, from the records): what every
# JSON reader holds exactly, and small enough that sums and means over any bundle's runs cannot overflow.
KEYS = ("format", "id", "tool_version", "created_at", "conditions", "runs", "summary", "logs")

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_LOG_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")
MAX_RUNS = 100000
_STATUSES = frozenset(status.value for status in Status)  # a run's status is one of the contract's


class BundleRefused(DamagedFile):
    """A bundle that cannot be read or trusted: one line saying why (exit 2 unless the caller counts it)."""


def max_bytes() -> int:
    """The size limit of a bundle file; ``TFCNNWRAP_MAX_BUNDLE_BYTES`` may lower it (tests do)."""
    text = os.environ.get(ENV_MAX_BYTES, "").strip()
    if text.isdigit() and 0 < int(text) < DEFAULT_MAX_BYTES:
        return int(text)
    return DEFAULT_MAX_BYTES


def canonical(value: JsonObject) -> bytes:
    """Format 1's canonical JSON bytes: sorted keys, no whitespace, UTF-8, strict (Python's own spelling of
    numbers, ``40.0``: only Python reproduces it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def jcs(value: JsonObject) -> bytes:
    """RFC 8785 (JSON Canonicalization Scheme) bytes of ``value``: keys sorted by their UTF-16 code units,
    numbers as ECMAScript writes them (``40``, ``1e+21``, ``0.1``), strings escaped minimally, UTF-8. A whole
    number beyond +-(2**53 - 1) has no JCS form: BundleRefused."""
    import rfc8785  # lazy: only making or checking an id needs it, not --help or a sweep

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError) as exc:
        raise BundleRefused(
            "not a bundle: its JSON has no RFC 8785 form (%s); whole numbers must lie within "
            "+-(2**53 - 1) and text must be Unicode" % str(exc)[:120]
        ) from None


def content_id(bundle: JsonObject) -> str:
    """The id ``bundle`` should carry: format 2 and later, the sha256 of the RFC 8785 JSON of every key but
    ``id`` and ``signatures``; format 1, of Python's canonical JSON of every key but ``id``."""
    fmt = bundle.get("format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt >= JCS_FORMAT:
        return hashlib.sha256(jcs({k: v for k, v in bundle.items() if k not in ("id", SIGNATURES)})).hexdigest()
    try:
        return hashlib.sha256(canonical({k: v for k, v in bundle.items() if k != "id"})).hexdigest()
    except UnicodeEncodeError:  # a lone surrogate ("\ud800") read from their JSON has no UTF-8
        raise BundleRefused("not a bundle: its text holds a lone UTF-16 surrogate, which is not Unicode") from None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def with_id(content: JsonObject) -> Dict[str, object]:
    """``content`` (no id) with its id, keys in the contract's order: the JSON object a bundle file holds."""
    bundle = dict(content)
    bundle["id"] = content_id(content)
    return {k: bundle[k] for k in KEYS if k in bundle} | {k: v for k, v in bundle.items() if k not in KEYS}


def new_bundle(
    conditions: JsonObject,
    runs: List[JsonObject],
    summary: List[JsonObject],
    logs: Optional[Mapping[str, LogEntry]],
    created_at: str,
    tool_version: str = __version__,
    plan: Optional[JsonObject] = None,
) -> Bundle:
    """A new bundle with its id, made of the JSON objects of its parts; ``logs`` None leaves the key out
    (exported with --no-logs)."""
    content: Dict[str, object] = {
        "format": FORMAT,
        "tool_version": tool_version,
        "created_at": created_at,
        "conditions": conditions,
        "runs": runs,
        "summary": summary,
    }
    if plan is not None:
        content["plan"] = plan
    if logs is not None:
        content["logs"] = {name: entry.to_dict() for name, entry in logs.items()}
    return Bundle.from_dict(with_id(content))


def file_name(bundle_or_id: Union[str, Bundle, JsonObject]) -> str:
    if isinstance(bundle_or_id, Bundle):
        return bundle_or_id.id + SUFFIX
    ident = bundle_or_id if isinstance(bundle_or_id, str) else bundle_or_id["id"]
    return ident + SUFFIX


def to_bytes(bundle: Union[Bundle, JsonObject]) -> bytes:
    """The bundle as file bytes (a Bundle, or the JSON object of one): gzip with no name and mtime 0, so the same
    bundle is the same bytes."""
    value = bundle.to_dict() if isinstance(bundle, Bundle) else bundle
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        gz.write(json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    return raw.getvalue()


# -- reading (hostile input) -----------------------------------------------------------------------------


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError("%s is not a JSON number" % name)


class _OutOfRange(ValueError):
    """A JSON number past MAX_NUMBER: the JSON is valid, the bundle is not."""


def _finite_float(text: str) -> float:
    """A JSON number as a float; one too large for a float (``1e999``, read as infinity) or past MAX_NUMBER
    (``1e308``, whose sum overflows) is refused here, where it can be named, not later in arithmetic."""
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise _OutOfRange("the number %s is out of the range of a bundle's numbers (+-2**53)" % text[:40])
    return value


def _bounded_int(text: str) -> int:
    """A JSON whole number within MAX_NUMBER; a 400-digit one is refused by its length before it is made."""
    if len(text.lstrip("-")) > 16 or abs(int(text)) > MAX_NUMBER:
        shown = text if len(text) <= 24 else "%s... (%d digits)" % (text[:12], len(text.lstrip("-")))
        raise _OutOfRange("the number %s is out of the range of a bundle's numbers (+-2**53)" % shown)
    return int(text)


def _unique_keys(pairs: List[Any]) -> Dict[str, Any]:  # the JSON boundary: an object as json.loads makes it
    """An object whose keys are all different: with a key twice, we would read the last value and another
    parser of the same file the first, so the bundle would say two things."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        twice = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise ValueError("the key %r is there twice" % twice[:40])
    return obj


def read_path(path: Union[Path, str], check_id: bool = True) -> Bundle:
    """The bundle in file ``path``; BundleRefused for anything that is not a sound bundle."""
    return read_bytes(read_path_bytes(path), str(path), check_id)


def read_path_bytes(path: Union[Path, str]) -> bytes:
    """The bytes of bundle file ``path``: its size is checked before a byte is read; a link or anything but
    a regular file is refused."""
    path = Path(path)
    try:
        info = os.lstat(str(path))
    except OSError as exc:
        raise BundleRefused("%s: cannot read it (%s)" % (path, exc.strerror or exc)) from None

    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise BundleRefused("%s: not a regular file (a link or a directory); give the bundle file itself" % path)
    limit = max_bytes()
    if info.st_size > limit:
        raise BundleRefused("%s: %d bytes, over the %d-byte limit of a bundle; not read" % (path, info.st_size, limit))
    try:
        with open(str(path), "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise BundleRefused("%s: cannot read it (%s)" % (path, exc.strerror or exc)) from None
    return data


def read_bytes(data: bytes, where: str, check_id: bool = True) -> Bundle:
    """The bundle in ``data`` (a file's bytes) named ``where`` in messages; BundleRefused if unsound.
    ``check_id`` False leaves a wrong id to `verify`, which calls such a bundle not genuine (exit 1)."""
    limit = max_bytes()
    if len(data) > limit:
        raise BundleRefused("%s: %d bytes, over the %d-byte limit of a bundle; not read" % (where, len(data), limit))
    return checked(parse_json(_inflate(data, where, min(limit * INFLATE_FACTOR, MAX_INFLATED)), where), where, check_id)


def checked(value: object, where: str, check_id: bool = True) -> Bundle:
    """The records of a bundle's parsed JSON ``value`` once check_shape found it sound: the one place a
    bundle's JSON becomes a Bundle (read_bytes, and the site, which parses it itself)."""
    check_shape(value, where, check_id)
    assert isinstance(value, Mapping)  # check_shape refused anything else
    return Bundle.from_dict(value)


def parse_json(text: bytes, where: str) -> Any:
    """The value of the JSON ``text`` (bytes) of a bundle, parsed strictly: no NaN/Infinity or number out of a
    float's range, no key twice, at most max_bytes/8 values; BundleRefused otherwise. Every reader of a
    bundle's text parses it here (verify, import, pull, site)."""
    _check_values(text, where, min(max_bytes() // BYTES_PER_VALUE, MAX_VALUES))
    try:
        return json.loads(
            text.decode("utf-8"),
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except _OutOfRange as exc:
        raise BundleRefused("%s: not a bundle: %s" % (where, exc)) from None
    except (ValueError, RecursionError) as exc:
        raise BundleRefused("%s: not a bundle: its JSON is invalid (%s)" % (where, str(exc)[:120])) from None


def _inflate(data: bytes, where: str, limit: int) -> bytes:
    if data[:2] != b"\x1f\x8b":
        raise BundleRefused("%s: not a bundle: not gzip data (a bundle is a .tfcw.json.gz file)" % where)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as gz:
            text = gz.read(limit + 1)
    except (OSError, EOFError, ValueError) as exc:
        raise BundleRefused(
            "%s: the gzip data is truncated or damaged (%s); fetch the file again"
            % (where, str(exc)[:120] or type(exc).__name__)
        ) from None
    if len(text) > limit:
        raise BundleRefused("%s: inflates past %d bytes, over the limit of a bundle; not read" % (where, limit))
    return text


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _check_values(text: bytes, where: str, most: int) -> None:
    """BundleRefused when the JSON ``text`` holds more than ``most`` values (counted by the commas, brackets and
    braces outside its strings), before the parser makes an object of each."""

    def count(skeleton: bytes) -> int:
        return skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{")

    if count(text) <= most or count(_STRING.sub(b"", text)) <= most:  # the quick count includes the strings'
        return
    raise BundleRefused("%s: holds more than %d JSON values, over the limit of a bundle; not parsed" % (where, most))


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_shape(bundle: Any, where: str, check_id: bool = True) -> None:
    """BundleRefused naming the first thing wrong with the bundle's shape, its format or (``check_id``) its id."""
    if not isinstance(bundle, dict):
        raise BundleRefused("%s: not a bundle: its JSON is %s, not an object" % (where, type(bundle).__name__))
    fmt = bundle.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 1:
        raise BundleRefused("%s: not a bundle: `format` is %r, not a whole number" % (where, fmt))
    if fmt > FORMAT:
        raise BundleRefused(
            "%s: bundle format %d is newer than this tfcnnwrap reads (%d); upgrade tfcnnwrap" % (where, fmt, FORMAT)
        )
    missing = [k for k in KEYS if k not in bundle and k != "logs"]
    if missing:
        raise BundleRefused("%s: not a bundle: it lacks %s" % (where, ", ".join(missing)))
    _check_header(bundle, where)
    _check_runs(bundle["runs"], where)
    _check_logs(bundle.get("logs"), where)
    _check_signatures(bundle, fmt, where)
    try:
        genuine = content_id(bundle) == bundle["id"] if check_id else True
    except BundleRefused as exc:  # a value with no RFC 8785 form
        raise BundleRefused("%s: %s" % (where, exc.message)) from None
    if not genuine:
        raise BundleRefused("%s: %s" % (where, ID_CHANGED % str(bundle["id"])[:16]))


ID_CHANGED = "its id %s is not the hash of its content: it was changed after export"


def genuine_id(bundle: Bundle) -> bool:
    """Is the bundle's id the hash of its content (the JSON it was read from)."""
    return content_id(bundle.to_dict()) == bundle.id


def _check_header(bundle: JsonObject, where: str) -> None:
    if not isinstance(bundle["id"], str) or not _HEX64.match(bundle["id"]):
        raise BundleRefused("%s: not a bundle: `id` is not a sha256 hex digest" % where)
    for key in ("tool_version", "created_at"):
        if not isinstance(bundle[key], str):
            raise BundleRefused("%s: not a bundle: `%s` is not text" % (where, key))
    cond = bundle["conditions"]
    if not isinstance(cond, dict):
        raise BundleRefused("%s: not a bundle: `conditions` is not an object" % where)
    gpu = cond.get("gpu")
    if not isinstance(gpu, str) or not gpu.strip() or len(gpu) > 200:
        raise BundleRefused(
            "%s: the bundle names no GPU (conditions.gpu is empty); a result without its GPU "
            "compares with nothing" % where
        )
    if not gpu.isprintable():  # it is shown on terminals and pages: ESC in it would drive the terminal
        raise BundleRefused("%s: not a bundle: its GPU name %s holds control characters" % (where, ascii(gpu)[:80]))
    if not isinstance(bundle["summary"], list) or not all(isinstance(r, dict) for r in bundle["summary"]):
        raise BundleRefused("%s: not a bundle: `summary` is not a list of objects" % where)


def _check_runs(runs: object, where: str) -> None:
    if not isinstance(runs, list) or not runs or len(runs) > MAX_RUNS:
        raise BundleRefused("%s: not a bundle: `runs` is not a list of 1 to %d runs" % (where, MAX_RUNS))
    for i, run in enumerate(runs, 1):
        ok = (
            isinstance(run, dict)
            and isinstance(run.get("model"), str)
            and _whole(run.get("batch_size"))
            and _whole(run.get("run"))
            and isinstance(run.get("status"), str)
            and (run.get("images_per_sec") is None or _number(run.get("images_per_sec")))
            and (run.get("num_gpus") is None or _whole(run.get("num_gpus")))
            and (run.get("log") is None or isinstance(run.get("log"), str))
        )
        if not ok:
            raise BundleRefused(
                "%s: not a bundle: run %d lacks a text model and status, whole-number batch_size, "
                "run and num_gpus, or a numeric images_per_sec" % (where, i)
            )
        if run["status"] not in _STATUSES:
            raise BundleRefused(
                "%s: not a bundle: run %d has status %s, not one of %s"
                % (where, i, ascii(run["status"][:40]), ", ".join(sorted(_STATUSES)))
            )


def _check_logs(logs: object, where: str) -> None:
    if logs is None:
        return
    if not isinstance(logs, dict):
        raise BundleRefused("%s: not a bundle: `logs` is not an object" % where)
    chars = lines = 0
    for name, entry in logs.items():
        if not safe_log_name(name):
            raise BundleRefused(
                "%s: log name %r is a path (/, \\ or ..); a bundle's logs are plain names" % (where, name[:80])
            )
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("text"), str)
            and isinstance(entry.get("sha256"), str)
            and _HEX64.match(entry["sha256"])
        ):
            raise BundleRefused("%s: not a bundle: log %s lacks its text or sha256" % (where, name))
        count = log_lines(entry["text"])
        _check_log_size(name, len(entry["text"]), count, where)
        chars, lines = chars + len(entry["text"]), lines + count
    if chars > MAX_LOGS_CHARS or lines > MAX_LOGS_LINES:
        raise BundleRefused(
            "%s: its logs hold %d characters in %d lines, over the limit of a bundle's logs "
            "(%d characters, %d lines); not checked" % (where, chars, lines, MAX_LOGS_CHARS, MAX_LOGS_LINES)
        )


def _check_signatures(bundle: JsonObject, fmt: int, where: str) -> None:
    """``signatures``: from format 2 an optional list of ``{signature: armored text, ...}`` objects whose other
    values are text (shown, never trusted: verify reads the key from the signature itself). Format 1 hashes
    every key into its id, so a signature there could never be over its id: refused."""
    if SIGNATURES not in bundle:
        return
    if fmt < JCS_FORMAT:
        raise BundleRefused(
            "%s: not a bundle: format %d carries no signatures (its id covers every key); "
            "export the sweep again to sign it" % (where, fmt)
        )
    sigs = bundle[SIGNATURES]
    if not isinstance(sigs, list) or len(sigs) > MAX_SIGNATURES:
        raise BundleRefused("%s: not a bundle: `signatures` is not a list of at most %d" % (where, MAX_SIGNATURES))
    for i, entry in enumerate(sigs, 1):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("signature"), str)
            and all(isinstance(v, str) and len(v) <= MAX_SIGNATURE_CHARS for v in entry.values())
        ):
            raise BundleRefused(
                "%s: not a bundle: signature %d is not an object of text with a `signature` of at "
                "most %d characters" % (where, i, MAX_SIGNATURE_CHARS)
            )


def log_lines(text: str) -> int:
    """The lines of a log as the parser splits them (\n, \r\n or a lone \r ends one)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + 1


def _check_log_size(name: str, chars: int, lines: int, where: str) -> None:
    if chars > MAX_LOG_CHARS or lines > MAX_LOG_LINES:
        raise BundleRefused(
            "%s: log %s holds %d characters in %d lines, over the limit of a log (%d characters, "
            "%d lines; a real tf_cnn_benchmarks log is far smaller); not checked"
            % (where, name, chars, lines, MAX_LOG_CHARS, MAX_LOG_LINES)
        )


def safe_log_name(name: str) -> bool:
    return isinstance(name, str) and bool(_LOG_NAME.match(name)) and ".." not in name


# -- naming -----------------------------------------------------------------------------------------------

_VENDORS = (
    ("nvidia", ("nvidia", "geforce", "quadro", "tesla", "titan", "rtx", "gtx")),
    ("amd", ("amd", "radeon", "vega", "instinct")),
    ("intel", ("intel", "arc")),
    ("apple", ("apple",)),
)


def vendor_of(gpu: str) -> str:
    """``nvidia``, ``amd``, ``intel``, ``apple`` or ``other``, from the GPU's name."""
    words = set(re.findall(r"[a-z]+", str(gpu).lower()))
    for vendor, marks in _VENDORS:
        if words & set(marks):
            return vendor
    return "other"


def slug(text: str) -> str:
    """``GeForce RTX 2070`` -> ``geforce-rtx-2070``: lower-case letters, digits and single hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:80] or "unknown"
