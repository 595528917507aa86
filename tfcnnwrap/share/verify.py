"""`verify`: a bundle checked against its own logs, with the parser `sweep` uses (tfcnnwrap.run.logparse).

The rules (docs/results-format.md, "What verify checks"): the id is the hash of the content (else the bundle is
not genuine: exit 1, not unreadable); each run's log is there and its sha256 matches the text; a run with a
figure (``ok``) has a whole tf_cnn_benchmarks log (its header) that agrees with the run and the bundle's
conditions: model, batch size per device, devices (a distributed job's devices x workers too), data, variable
update and the GPU TensorFlow's device lines name; its total is its log's total and no more than the log's own
step lines allow (TOTAL_OVER_STEP); a run that is not ok carries no figure; every summary row's mean is the mean
of its runs; a bundle that carries its plan has every planned run, numbered without gaps (runs never started
listed in the plan's ``not_started``: the bundle verifies and says it is incomplete). A bundle exported with
``--no-logs`` cannot be checked: it is *unverified*, which is not the same as verified.
Every signature must be a good OpenSSH signature of the id (tfcnnwrap.share.signing); one that is not makes
the bundle not verified, whoever the signer. A figure above the GPU's physical ceiling (results/ceilings.py) is
not verified either.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

from tfcnnwrap import bounds
from tfcnnwrap.errors import UsageError
from tfcnnwrap.render import safe_text
from tfcnnwrap.results import ceilings
from tfcnnwrap.results.bundlerecords import Bundle, BundleRun, Config, LogEntry
from tfcnnwrap.results.gpuid import is_plain, same_gpu
from tfcnnwrap.results.plan import KNOWN_MODELS
from tfcnnwrap.run import logparse
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import signing
from tfcnnwrap.share.bundle import BundleRefused, read_path, sha256_text
from tfcnnwrap.share.planchecks import plan_findings

if TYPE_CHECKING:
    from tfcnnwrap.run.logparse import ParsedLog

VERIFIED, UNVERIFIED, FAILED = "verified", "unverified", "not verified"
# Statuses a log alone cannot confirm: the sweep decided them (timeout, the user's stop, the OOM rule).
_DECIDED_OUTSIDE = ("timeout", "interrupted", "skipped")
_MAX_FINDINGS = 50
# A total is at most its log's last step figure (x the job's workers: a step line is one worker's) x the batches
# over the steps that line covers, x TOTAL_OVER_STEP, allowing the prints' rounding (%.1f and %.2f).
# tf_cnn_benchmarks prints the step figure as batch / the mean time of the k steps so far and the total as
# n steps x batch / the loop's wall time, which holds those k steps and more: total <= step x n / k, whatever the
# time between steps. The time between steps makes a total lower, without bound (real TF 2.21 on a CPU, the
# trivial model, 10 batches: 0.90 of its step figure), so there is no lower bound; a forger gains nothing there.
# Measured on Lambda's 3,930 real logs with both (lambdal/lambda-tensorflow-benchmark, TF 1.15-2.3, 1-8 GPUs;
# every last step line covers all batches): total / step 0.9932 to 1.0010.
TOTAL_OVER_STEP = 1.01
_STEP_ROUNDING, _TOTAL_ROUNDING = 0.05, 0.005  # half the last digit each print shows
_FEED_CHARS = 1 << 20  # a log is fed to the parser in pieces this size, never encoded whole
# A TensorFlow device line: "name: GeForce RTX 2070 major: 7 ..." (1.x) or "device: 0, name: ..., pci bus id" (2.x).
_DEVICE_NAME = re.compile(r"\bname: ([^\n,]{1,120}?)(?: major: \d|, pci bus id)")
_MAX_LOG_GPUS = 8  # different GPU names read from one log
# Words that name a GPU's maker or brand, not the GPU: "NVIDIA GeForce RTX 2070" is the "RTX 2070" nvidia-smi
# of another driver calls "GeForce RTX 2070".


@dataclass(frozen=True)
class Verdict:
    state: str  # VERIFIED, UNVERIFIED or FAILED
    findings: Tuple[str, ...]
    signers: Tuple[signing.Signer, ...] = ()  # every signature's check, valid or not
    notes: Tuple[str, ...] = ()  # true and not a failure: "incomplete: 2 of 8 planned runs never started"

    @property
    def verified(self) -> bool:
        return self.state == VERIFIED


@dataclass(frozen=True)
class Expected:
    """What every log of the bundle must agree with: the bundle's conditions, read once."""

    gpus: Tuple[str, ...]  # empty: a CPU bundle (its logs' GPU lines are not its device)
    data: Optional[str]  # synthetic / real
    variable_update: Optional[str]
    workers: int  # a distributed job's workers (each runs the run's num_gpus devices); 1 otherwise
    device: Optional[str] = None  # "cpu" or "gpu": the kind of device a log's `Devices:` must name


def parse_text(text: str) -> ParsedLog:
    """The log parsed exactly as the runner parses a live run: its bytes fed to the streaming engine, a piece at
    a time (a log is bounded by tfcnnwrap.share.bundle, and no copy of it whole is made)."""
    parser = logparse.LogParser()
    for start in range(0, len(text), _FEED_CHARS):
        parser.feed_bytes(text[start : start + _FEED_CHARS].encode("utf-8"))
    parser.feed_bytes(b"", final=True)
    return parser.result()


def log_gpus(text: str) -> List[str]:
    """The different GPU names TensorFlow's device lines in ``text`` give, in order (at most _MAX_LOG_GPUS)."""
    names: List[str] = []
    for found in _DEVICE_NAME.finditer(text):
        name = found.group(1).strip()
        if name and name not in names:
            names.append(name)
            if len(names) >= _MAX_LOG_GPUS:
                break
    return names


def _expected(bundle: Bundle) -> Expected:
    cond = bundle.conditions
    gpus = () if cond.on_cpu else cond.listed_gpus()
    device = cond.device if cond.device in ("cpu", "gpu") else None
    return Expected(gpus, cond.data, cond.variable_update, cond.workers or 1, device)


@dataclass
class _Seen:
    """What verify has met in the bundle's logs so far: whose each log is, and the GPUs their device lines name."""

    owners: Dict[str, Tuple[int, str]] = field(default_factory=dict)  # log name -> (the run's index, its name)
    named: List[str] = field(default_factory=list)


def _gpu_findings(bundle: Bundle, expect: Expected, seen: _Seen) -> List[str]:
    """The bundle's GPU names: `gpu` (what the library, site and ceilings show) is its `gpus` list joined, each a
    name nvidia-smi or TensorFlow could print (gpuid.is_plain: a look-alike letter would escape every identity and
    ceiling), and each one some log's device lines name, where the logs name any (a name no run ran on would
    only make the ceiling unknown)."""
    cond = bundle.conditions
    if not expect.gpus or bundle.logs is None:  # without logs: unverified, whatever its names
        return []
    out = []
    if cond.gpus is not None and [n.strip() for n in cond.gpu.split(",")] != list(expect.gpus):
        out.append("the bundle's gpu %s is not its gpus list (%s)" % (cond.gpu, ", ".join(expect.gpus)))
    out += [
        "the bundle's GPU %s is not a plain GPU name (letters, digits, spaces, - _ . / and parentheses, as "
        "nvidia-smi and TensorFlow print)" % n
        for n in expect.gpus
        if not is_plain(n)
    ]
    if seen.named:
        out += [
            "the bundle lists GPU %s, which no log's device lines name (they name %s)" % (n, ", ".join(seen.named))
            for n in expect.gpus
            if not any(same_gpu(n, g) for g in seen.named)
        ]
    return out


def shown(text: str) -> str:
    """A finding quoting the bundle's own text, as one line: every character a terminal would obey or that would
    end or reorder the line (control characters, newlines, bidi overrides) escaped (``\\n``, ``\\u202e``)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in safe_text(text))


def _same(a: Optional[float], b: Optional[float]) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _bounds_findings(run: BundleRun, where: str) -> List[str]:
    out = []
    checks: List[Tuple[bounds.Bound, object]] = [
        (bounds.BATCH_SIZE, run.batch_size),
        (bounds.NUM_GPUS, 1 if run.num_gpus is None else run.num_gpus),
    ]  # 0 is out of bounds, not 1
    if run.images_per_sec is not None:
        checks.append((bounds.IMAGES_PER_SEC, run.images_per_sec))
    for bound, value in checks:
        try:
            bound.parse(value)
        except bounds.OutOfBounds as exc:
            out.append("%s: %s %s" % (where, bound.flag.lstrip("-"), exc))
    return out


def header_findings(run: BundleRun, parsed: ParsedLog, where: str, strict: bool) -> List[str]:
    """The log's header against the record; ``strict`` (a run with a figure): the header must be there."""
    if strict and (
        parsed.tf_version is None or parsed.model is None or parsed.batch_size is None or not parsed.devices
    ):
        return [
            "%s: its log is not a whole tf_cnn_benchmarks log (no header: TensorFlow, Model, Batch size and "
            "Devices lines)" % where
        ]
    out = []
    if parsed.model is not None and parsed.model != run.model:
        out.append("%s: the log ran model %s, the record says %s" % (where, parsed.model, run.model))
    if parsed.batch_size is not None and parsed.batch_size != run.batch_size:
        out.append(
            "%s: the log's batch size is %s per device, the record says %s" % (where, parsed.batch_size, run.batch_size)
        )
    if parsed.devices and len(parsed.devices) != run.devices:
        out.append("%s: the log ran on %d devices, the record says %s GPUs" % (where, len(parsed.devices), run.devices))
    return out


def _job_findings(run: BundleRun, parsed: ParsedLog, where: str, expect: Expected) -> List[str]:
    """A distributed run: the job's devices (global batch / per-device batch) are the run's GPUs x workers."""
    if not run.distributed or not parsed.batch_size:
        return []
    if not parsed.batch_size_global:  # tf_cnn_benchmarks always prints it; without it the job's size is unknown
        return [
            "%s: a distributed run whose log gives no global batch size (`Batch size: N global`): the job's "
            "devices cannot be read" % where
        ]
    job, claimed = parsed.batch_size_global / parsed.batch_size, run.devices * expect.workers
    if job != claimed:
        return [
            "%s: the log's job ran on %g devices (%d global / %d per device), the record says %d GPUs x %d "
            "workers" % (where, job, parsed.batch_size_global, parsed.batch_size, run.devices, expect.workers)
        ]
    return []


def condition_findings(
    parsed: ParsedLog, text: str, where: str, expect: Expected, named: Optional[List[str]] = None
) -> List[str]:
    """The log against the bundle's conditions: data, variable update, the kind of device its `Devices:` list
    names (a GPU run relabelled cpu would escape the GPU's checks and ceiling) and the GPU its device lines name
    (added to ``named``)."""
    out = []
    kinds = sorted({str(d).rsplit("/", 1)[-1].split(":")[0].lower() for d in parsed.devices or []})
    if expect.device is not None and kinds and kinds != [expect.device]:
        out.append(
            "%s: the log ran on %s, the bundle says device %s"
            % (where, ", ".join(map(str, (parsed.devices or [])[:4])), expect.device)
        )
    if expect.data is not None and parsed.dataset is not None:
        data = "synthetic" if "synthetic" in parsed.dataset else "real"
        if data != expect.data:
            out.append(
                "%s: the log ran on %s data (%s), the bundle says %s" % (where, data, parsed.dataset[:60], expect.data)
            )
    if expect.variable_update is not None and parsed.variable_update not in (None, expect.variable_update):
        out.append(
            "%s: the log's variable update is %s, the bundle says %s"
            % (where, str(parsed.variable_update)[:60], expect.variable_update)
        )
    if expect.gpus:
        names = log_gpus(text)
        if named is not None:
            named.extend(n for n in names if n not in named and len(named) < _MAX_LOG_GPUS)
        other = [n for n in names if not any(same_gpu(n, g) for g in expect.gpus)]
        if other:
            out.append(
                "%s: TensorFlow's device lines name %s, the bundle says %s"
                % (where, ", ".join(other), ", ".join(sorted(set(expect.gpus))))
            )
    return out


def steps_findings(run: BundleRun, parsed: ParsedLog, where: str, expect: Expected) -> List[str]:
    """The total against the log's own last step line (tf_cnn_benchmarks' arithmetic: see TOTAL_OVER_STEP)."""
    total, step = parsed.total_images_per_sec, parsed.last_step
    if total is None:
        return []
    if step is None or step.step < 1:
        return ["%s: its log's total %s images/sec has no step line to stand on" % (where, total)]
    workers = expect.workers if run.distributed else 1
    batches = max(parsed.num_batches or step.step, step.step)
    most = (step.images_per_sec + _STEP_ROUNDING) * workers * batches / step.step * TOTAL_OVER_STEP + _TOTAL_ROUNDING
    if total > most:
        return [
            "%s: its log's total %s images/sec is more than its own step lines allow (%.2f: step %d of %d at %s "
            "images/sec%s)"
            % (
                where,
                total,
                most,
                step.step,
                batches,
                step.images_per_sec,
                " x %d workers" % workers if workers > 1 else "",
            )
        ]
    return []


def result_findings(run: BundleRun, parsed: ParsedLog, where: str) -> List[str]:
    status, value = run.status, run.images_per_sec
    if status in _DECIDED_OUTSIDE:
        # a run killed at the timeout after its total is ok (hung_after_total), and a skipped run never ran: a
        # total in the log of either is a finished run relabelled (the slowest, say, to leave the mean)
        if status != "interrupted" and logparse.good_total(parsed.total_images_per_sec):
            return [
                "%s: recorded %s, but its log holds a total of %s images/sec (a run with its total is ok)"
                % (where, status, parsed.total_images_per_sec)
            ]
        return []
    expected = logparse.classify(parsed, run.exit_code)
    if status == "ok":
        if parsed.total_images_per_sec is None or (expected != "ok" and not run.hung_after_total):
            return ["%s: recorded ok at %s images/sec, but its log holds no total (%s)" % (where, value, expected)]
        if not _same(parsed.total_images_per_sec, value):
            return ["%s: recorded %s images/sec, its log says %s" % (where, value, parsed.total_images_per_sec)]
        return []
    if expected == "ok" and not run.distributed:
        return [
            "%s: recorded %s, but its log holds a total of %s images/sec" % (where, status, parsed.total_images_per_sec)
        ]
    return []


def _figure_findings(run: BundleRun, where: str) -> List[str]:
    """Only an ok run has a figure, and an ok run has one, of a model tf_cnn_benchmarks has (`sweep` runs no
    other: a model spelled otherwise, ``ResNet50``, would have no known cost and so no ceiling)."""
    if run.ok and run.model not in KNOWN_MODELS:
        return [
            "%s: model %s is not one tf_cnn_benchmarks has (%s, ...)"
            % (where, run.model[:60], ", ".join(sorted(KNOWN_MODELS)[:3]))
        ]
    if run.ok and run.images_per_sec is None:
        return ["%s: recorded ok without images/sec" % where]
    if not run.ok and run.images_per_sec is not None:
        return [
            "%s: recorded %s, yet it carries a figure of %s images/sec (only an ok run has one)"
            % (where, run.status, run.images_per_sec)
        ]
    return []


def _run_findings(
    run: BundleRun, logs: Optional[Mapping[str, LogEntry]], expect: Expected, seen: _Seen, index: int
) -> List[str]:
    where = run.where
    out = _bounds_findings(run, where) + _figure_findings(run, where)
    name = run.log
    if logs is None:
        return out
    entry = logs.get(name) if name else None
    if entry is None:
        if run.ok:
            out.append("%s: its log %s is not in the bundle" % (where, name))
        return out
    owner = seen.owners.setdefault(str(name), (index, where))  # each run leaves its own log: one log is one run
    if owner[0] != index:
        return out + ["%s: its log %s is the log of %s (every run leaves its own)" % (where, name, owner[1])]

    if sha256_text(entry.text) != entry.sha256:
        return out + ["%s: log %s does not match its sha256 (the text was changed)" % (where, name)]
    parsed = parse_text(entry.text)
    strict = run.ok
    out += header_findings(run, parsed, where, strict)
    if strict and not out:
        out += (
            _job_findings(run, parsed, where, expect)
            + condition_findings(parsed, entry.text, where, expect, seen.named)
            + steps_findings(run, parsed, where, expect)
        )
    return out + result_findings(run, parsed, where)


def _mean(values: List[float]) -> float:
    """The mean of bounded numbers (tfcnnwrap.share.bundle: within +-2**53), summed exactly: cannot overflow."""
    return math.fsum(values) / len(values)


def _summary_findings(bundle: Bundle) -> List[str]:
    """Every summary row (no key exempts one): its mean is the mean of its configuration's ok runs (of its host
    where it names one), and a configuration without an ok run has no mean."""
    values: Dict[Tuple[object, ...], List[float]] = {}
    for run in bundle.runs:
        if run.ok and run.images_per_sec is not None:
            config: Config = run.config
            values.setdefault(config, []).append(run.images_per_sec)
            if run.host is not None:
                values.setdefault(config + (run.host,), []).append(run.images_per_sec)
    out = []
    for row in bundle.summary:
        key, mean, name = row.key, row.mean, row.name
        if key not in values:
            if mean is not None:
                out.append("%s: a mean of %s without an ok run to stand on" % (name, mean))
        elif not _same(mean, _mean(values[key])):
            out.append("%s: mean %s is not the mean of its runs (%.2f)" % (name, mean, _mean(values[key])))
    return out


def verify(bundle: Bundle, allowed_signers: Optional[Path] = None) -> Verdict:
    """The Verdict of a bundle read by tfcnnwrap.share.bundle (its shape checked; its id checked here too);
    signers are named by principal from ``allowed_signers`` (an OpenSSH allowed_signers file) where it names
    them."""
    logs = bundle.logs
    signers = tuple(signing.check_all(bundle, allowed_signers))
    findings = [] if bundles.genuine_id(bundle) else [bundles.ID_CHANGED % bundle.id[:16]]
    findings += signing.signature_findings(signers)
    expect, seen = _expected(bundle), _Seen()
    for index, run in enumerate(bundle.runs):
        findings.extend(_run_findings(run, logs, expect, seen, index))
        if len(findings) >= _MAX_FINDINGS:
            break
    findings.extend(_gpu_findings(bundle, expect, seen))
    findings.extend(_summary_findings(bundle))
    findings.extend(ceilings.implausible(bundle))  # a figure no such GPU can reach (results/ceilings.py)
    planned, notes = plan_findings(bundle)
    findings.extend(planned)
    if findings:
        # they quote the bundle's own text (model, status, log name, its logs' header): shown, never obeyed
        return Verdict(FAILED, tuple(shown(f) for f in findings[:_MAX_FINDINGS]), signers, tuple(notes))
    if logs is None:
        return Verdict(
            UNVERIFIED,
            ("exported with --no-logs: there is nothing to check its figures against",),
            signers,
            tuple(notes),
        )
    return Verdict(VERIFIED, (), signers, tuple(notes))


@dataclass(frozen=True)
class VerifyArgs:
    """`verify BUNDLE...`: ``allowed_signers`` the file naming whom the user trusts (None: the config's)."""

    bundles: Tuple[str, ...]
    allowed_signers: Optional[str] = None


def cmd_verify(args: VerifyArgs) -> int:
    """One line per finding and one per bundle; exit 0 all verified, 1 some not, 2 some unreadable."""
    if not args.bundles:
        raise UsageError("give bundle files to verify, or --repo DIR for a results repository")
    code = 0
    allowed = signing.allowed_signers_path(args.allowed_signers)
    for path in args.bundles:
        try:
            bundle = read_path(path, check_id=False)  # a wrong id is a finding: readable, not genuine (exit 1)
        except BundleRefused as exc:
            sys.stdout.write("%s: unreadable: %s\n" % (path, exc.message))
            code = 2
            continue
        verdict = verify(bundle, allowed)
        for finding in verdict.findings + tuple("note: " + n for n in ceilings.notes(bundle)):
            sys.stdout.write("%s: %s\n" % (path, shown(finding)))
        for signer in verdict.signers:
            if signer.valid:
                sys.stdout.write("%s: %s\n" % (path, signer.describe()))
        notes = "".join(", %s" % shown(note) for note in verdict.notes)
        sys.stdout.write(
            "%s: %s (%s, %d runs, bundle %s%s)\n"
            % (path, verdict.state, shown(bundle.gpu), len(bundle.runs), bundle.short_id, notes)
        )
        if not verdict.verified:
            code = max(code, 1)
    return code
