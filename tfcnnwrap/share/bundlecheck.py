"""`verify`: a bundle checked against its own logs, with the parser `sweep` uses (tfcnnwrap.run.logparse).

For each run: its log is there and its sha256 matches the text; the log, parsed again, gives the recorded
status and images/sec; the log's header agrees with the recorded model, batch size (per device) and GPU
count; every number is within tfcnnwrap.bounds. The summary's means must be the runs' means. A bundle
exported with ``--no-logs`` cannot be checked: it is *unverified*, which is not the same as verified.
Every signature must be a good OpenSSH signature of the id (tfcnnwrap.share.signing); one that is not makes
the bundle not verified, whoever the signer.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from tfcnnwrap import bounds
from tfcnnwrap.errors import UsageError
from tfcnnwrap.render import safe_text
from tfcnnwrap.results import ceilings
from tfcnnwrap.run import logparse
from tfcnnwrap.share import signing
from tfcnnwrap.share.bundle import BundleRefused, read_path, sha256_text

if TYPE_CHECKING:
    from argparse import Namespace

    from tfcnnwrap.run.logparse import ParsedLog

VERIFIED, UNVERIFIED, FAILED = "verified", "unverified", "not verified"
# Statuses a log alone cannot confirm: the sweep decided them (timeout, the user's stop, the OOM rule).
_DECIDED_OUTSIDE = ("timeout", "interrupted", "skipped")
_MAX_FINDINGS = 50
# (model, batch size, GPUs): the configuration a summary row's mean belongs to.
_Config = Tuple[Union[str, int], ...]


@dataclass(frozen=True)
class Verdict:
    state: str  # VERIFIED, UNVERIFIED or FAILED
    findings: Tuple[str, ...]
    signers: Tuple[signing.Signer, ...] = ()  # every signature's check, valid or not

    @property
    def verified(self) -> bool:
        return self.state == VERIFIED


def parse_text(text: str) -> ParsedLog:
    """The log parsed exactly as the runner parses a live run: its bytes fed to the streaming engine."""
    parser = logparse.LogParser()
    parser.feed_bytes(text.encode("utf-8"), final=True)
    return parser.result()


def _same(a: Optional[float], b: Optional[float]) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _bounds_findings(run: Dict[str, Any], where: str) -> List[Any]:
    out = []
    checks: List[Tuple[bounds.Bound, object]] = [
        (bounds.BATCH_SIZE, run.get("batch_size")), (bounds.NUM_GPUS, run.get("num_gpus") or 1)]
    if run.get("images_per_sec") is not None:
        checks.append((bounds.IMAGES_PER_SEC, run["images_per_sec"]))
    for bound, value in checks:
        try:
            bound.parse(value)
        except bounds.OutOfBounds as exc:
            out.append("%s: %s %s" % (where, bound.flag.lstrip("-"), exc))
    return out


def _header_findings(run: Dict[str, Any], parsed: ParsedLog, where: str) -> List[Any]:
    out = []
    if parsed.model is not None and parsed.model != run["model"]:
        out.append("%s: the log ran model %s, the record says %s" % (where, parsed.model, run["model"]))
    if parsed.batch_size is not None and parsed.batch_size != run["batch_size"]:
        out.append("%s: the log's batch size is %s per device, the record says %s"
                   % (where, parsed.batch_size, run["batch_size"]))
    if parsed.devices and not run.get("cluster") and len(parsed.devices) != (run.get("num_gpus") or 1):
        out.append("%s: the log ran on %d devices, the record says %s GPUs"
                   % (where, len(parsed.devices), run.get("num_gpus") or 1))
    return out


def _result_findings(run: Dict[str, Any], parsed: ParsedLog, where: str) -> List[Any]:
    status, value = run["status"], run.get("images_per_sec")
    if status in _DECIDED_OUTSIDE:
        return []
    expected = logparse.classify(parsed, run.get("exit_code") if isinstance(run.get("exit_code"), int) else None)
    if status == "ok":
        if expected != "ok":
            return ["%s: recorded ok at %s images/sec, but its log holds no total (%s)" % (where, value, expected)]
        if not _same(parsed.total_images_per_sec, value):
            return ["%s: recorded %s images/sec, its log says %s" % (where, value, parsed.total_images_per_sec)]
        return []
    if expected == "ok" and not run.get("cluster"):
        return ["%s: recorded %s, but its log holds a total of %s images/sec"
                % (where, status, parsed.total_images_per_sec)]
    return []


def _run_findings(run: Dict[str, Any], logs: Optional[Dict[str, Any]]) -> List[Any]:
    where = "%s bs%s run %s" % (run["model"], run["batch_size"], run["run"])
    out = _bounds_findings(run, where)
    if run["status"] == "ok" and run.get("images_per_sec") is None:
        out.append("%s: recorded ok without images/sec" % where)
    name = run.get("log")
    if logs is None or run["status"] == "skipped":
        return out
    entry = logs.get(name) if name else None
    if entry is None:
        if run["status"] == "ok":
            out.append("%s: its log %s is not in the bundle" % (where, name))
        return out

    if sha256_text(entry["text"]) != entry["sha256"]:
        return out + ["%s: log %s does not match its sha256 (the text was changed)" % (where, name)]
    parsed = parse_text(entry["text"])
    return out + _header_findings(run, parsed, where) + _result_findings(run, parsed, where)


def _summary_findings(bundle: Dict[str, Any]) -> List[Any]:
    values: Dict[_Config, List[float]] = {}
    for run in bundle["runs"]:
        if run["status"] == "ok" and isinstance(run.get("images_per_sec"), (int, float)):
            config: _Config = (run["model"], run["batch_size"], run.get("num_gpus") or 1)
            values.setdefault(config, []).append(run["images_per_sec"])
    out = []
    for row in bundle["summary"]:
        key = tuple(v if isinstance(v, (str, int)) else repr(v)[:40]  # others' rows: any value, kept hashable
                    for v in (row.get("model"), row.get("batch_size"), row.get("num_gpus") or 1))
        mean = row.get("mean")
        if not isinstance(mean, (int, float)) or isinstance(mean, bool):
            mean = None
        if key in values and not row.get("host") and not _same(mean, statistics.fmean(values[key])):
            out.append("summary %s bs%s: mean %s is not the mean of its runs (%.2f)"
                       % (key[0], key[1], mean, statistics.fmean(values[key])))
    return out


def verify(bundle: Dict[str, Any], allowed_signers: Optional[Path] = None) -> Verdict:
    """The Verdict of a bundle already read by tfcnnwrap.share.bundle (shape and id checked); signers are
    named by principal from ``allowed_signers`` (an OpenSSH allowed_signers file) where it names them."""
    logs = bundle.get("logs")
    signers = tuple(signing.check_all(bundle, allowed_signers))
    findings = signing.signature_findings(signers)
    for run in bundle["runs"]:
        findings.extend(_run_findings(run, logs))
        if len(findings) >= _MAX_FINDINGS:
            break
    findings.extend(_summary_findings(bundle))
    findings.extend(ceilings.implausible(bundle))  # a figure no such GPU can reach (results/ceilings.py)
    if findings:
        # they quote the bundle's own text (model, status, log name, its logs' header): shown, never obeyed
        return Verdict(FAILED, tuple(safe_text(f) for f in findings[:_MAX_FINDINGS]), signers)
    if logs is None:
        return Verdict(UNVERIFIED, ("exported with --no-logs: there is nothing to check its figures against",),
                       signers)
    return Verdict(VERIFIED, (), signers)


def cmd_verify(args: Namespace) -> int:
    """One line per finding and one per bundle; exit 0 all verified, 1 some not, 2 some unreadable."""
    if not args.bundles:
        raise UsageError("give bundle files to verify, or --repo DIR for a results repository")
    code = 0
    allowed = signing.allowed_signers_path(getattr(args, "allowed_signers", None))
    for path in args.bundles:
        try:
            bundle = read_path(path)
        except BundleRefused as exc:
            sys.stdout.write("%s: unreadable: %s\n" % (path, exc.message))
            code = 2
            continue
        verdict = verify(bundle, allowed)
        for finding in verdict.findings + tuple("note: " + n for n in ceilings.notes(bundle)):
            sys.stdout.write("%s: %s\n" % (path, safe_text(finding)))
        for signer in verdict.signers:
            if signer.valid:
                sys.stdout.write("%s: %s\n" % (path, signer.describe()))
        sys.stdout.write("%s: %s (%s, %d runs, bundle %s)\n" % (path, verdict.state, bundle["conditions"]["gpu"],
                                                               len(bundle["runs"]), bundle["id"][:12]))
        if not verdict.verified:
            code = max(code, 1)
    return code
