"""`export`: a sweep directory as one bundle (tfcnnwrap.share.bundle), private data redacted.

What a bundle keeps of the sweep: the conditions a reader needs to compare it (GPU, driver, CUDA, cuDNN,
TensorFlow, branch and commit, precision, XLA, GPU counts, variable update, data, batch sizes, cluster shape),
every run record, the summary rows and each run's log with its sha256. The host name, the user name and home
paths become placeholders everywhere (conditions, commands and log text) unless ``--keep-host`` keeps the host
name; the hashes are of the redacted text, which is what the bundle holds.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

from tfcnnwrap import safefs
from tfcnnwrap.errors import DamagedFile, TfcnnwrapError, UsageError
from tfcnnwrap.jsontext import plain
from tfcnnwrap.results.bundlerecords import Bundle, BundlePlan, LogEntry
from tfcnnwrap.results.comparesweep import Sweep
from tfcnnwrap.results.records import JsonObject
from tfcnnwrap.results.store import fs_error
from tfcnnwrap.share import bundle as bundles
from tfcnnwrap.share import signing

if TYPE_CHECKING:
    from tfcnnwrap.results.plan import Config, RunSpec
    from tfcnnwrap.results.records import RunRecord

HOST, USER, HOME = "<host>", "<user>", "~"
# A TensorFlow device line: "name: GeForce RTX 2070 major: 7 ..." (1.x) or "..., name: ..., pci bus id" (2.x).
_DEVICE_NAME = re.compile(r"\bname:\s*([^,\n]+?)(?:,\s*pci bus id|\s+major:|\s*$)", re.MULTILINE)
_HOME_PATH = re.compile(r"(/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)([^/\\\s'\"<>:]+)")
_RUN_KEYS = (
    "model",
    "batch_size",
    "run",
    "status",
    "images_per_sec",
    "exit_code",
    "duration_s",
    "started_at",
    "num_gpus",
    "host",
    "failure",
    "steps_seen",
    "last_step_images_per_sec",
    "telemetry",
    "start_temp_c",
    "cooldown_s",
    "steady_images_per_sec",
    "drift_pct",
    "drifting",
    "command",
    "hung_after_total",
)


class Redactor:
    """Replaces the host name, the user name and home paths in every string it is given."""

    def __init__(self, hosts: Iterable[object] = (), keep_host: bool = False) -> None:
        self.patterns = []
        home = str(Path.home())
        if len(home) > 1:
            self.patterns.append((re.compile(re.escape(home)), HOME))
        self.patterns.append((_HOME_PATH, r"\1" + USER))
        names: Set[Optional[str]] = set() if keep_host else {h for h in hosts if isinstance(h, str) and len(h) >= 2}
        if not keep_host:
            names.add(_safe(socket.gethostname))
        for name in sorted(n for n in names if n and len(n) >= 2):
            self.patterns.append((re.compile(r"(?<![\w.-])%s(?![\w-])" % re.escape(name)), HOST))
        user = _safe(getpass.getuser)
        if user and len(user) >= 3:  # a one- or two-letter name would eat digits and words of a log
            self.patterns.append((re.compile(r"(?<![\w.-])%s(?![\w-])" % re.escape(user)), USER))

    def text(self, value: str) -> str:
        for pattern, repl in self.patterns:
            value = pattern.sub(repl, value)
        return value

    def any(self, value: object) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.any(k): self.any(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.any(v) for v in value]
        return value


def _safe(func: Callable[[], str]) -> Optional[str]:
    try:
        return func()
    except Exception:  # noqa: BLE001 - no host or user name is nothing to redact
        return None


def gpu_from_logs(texts: Iterator[Any]) -> str:
    """The first GPU name a TensorFlow device line in ``texts`` gives, or ''."""
    for text in texts:
        found = _DEVICE_NAME.search(text or "")
        if found and found.group(1).strip():
            return found.group(1).strip()
    return ""


def _log_name(relpath: str) -> str:
    """``logs/resnet50-bs64-run1.log`` -> ``resnet50-bs64-run1.log``; a log in a folder keeps its folders
    as ``--`` (a bundle's log names are plain names)."""
    parts = [p for p in re.split(r"[\\/]+", str(relpath)) if p not in ("", ".", "..")]
    if parts and parts[0] == "logs":
        parts = parts[1:]
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "_", "--".join(parts)).lstrip(".") or "run.log"
    return name.replace("..", "_")[:200]


def _regular_file_bytes(path: Path) -> Optional[bytes]:
    """The bytes of ``path`` when it is a regular file, else None: a link is never followed, and a FIFO or
    device would block or never end. Bounded: a log larger than a bundle can carry is refused."""
    try:
        info = os.lstat(str(path))
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    limit = bundles.MAX_LOG_CHARS
    if info.st_size > limit:  # no run writes that much: the file is not the log it is named as
        raise DamagedFile(
            "%s is %d bytes, more than a bundle's log may hold (%d: a real tf_cnn_benchmarks log is "
            "far smaller); export with --no-logs" % (path, info.st_size, limit)
        )
    try:
        with open(str(path), "rb") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _read_logs(sweep: Sweep, runs: List[RunRecord], redact: Redactor) -> Dict[str, Tuple[str, str]]:
    """{bundle log name: (relpath, redacted text)} of every run's log that is on disk."""
    logs = {}
    for run in runs:
        if not run.log:
            continue
        path = sweep.dir.inside(run.log)  # None: the record points out of the sweep; never followed
        data = None if path is None else _regular_file_bytes(path)
        if data is None:
            continue
        logs[_log_name(run.log)] = (run.log, redact.text(data.decode("utf-8", "replace")))
    return logs


def _run_dict(run: RunRecord, redact: Redactor, keep_host: bool, hosts: List[str]) -> JsonObject:
    """A run's JSON object in the bundle (BundleRun reads it): the record's shareable keys, redacted."""
    data = run.to_dict()
    out = {k: data.get(k) for k in _RUN_KEYS if data.get(k) is not None or k in ("images_per_sec", "log")}
    out["log"] = _log_name(run.log) if run.log else None
    if run.num_gpus is None:
        out["num_gpus"] = 1
    if run.cluster:
        out["cluster"] = {"backend": run.cluster.get("backend"), "tasks": len(run.cluster.get("tasks") or [])}
    if run.host and not keep_host:
        out["host"] = "host-%d" % (hosts.index(run.host) + 1)
    return redact.any(out)


def conditions_of(sweep: Sweep, gpu: str, redact: Redactor, keep_host: bool) -> JsonObject:
    """The bundle's ``conditions`` (Conditions reads them): what a reader needs to tell whether two results
    are comparable."""
    meta, env = sweep.meta, sweep.meta.environment
    cond = sweep.conditions()
    counts = sorted({r.num_gpus or 1 for r in sweep.rows})
    upstream = meta.upstream
    os_info = env.get("os") if isinstance(env.get("os"), dict) else {}
    out = {
        "gpu": gpu,
        "gpus": [g.strip() for g in gpu.split(",")],
        "vendor": bundles.vendor_of(gpu),
        "driver": env.get("nvidia_driver"),
        "cuda_version": env.get("cuda_version"),
        "cudnn_version": env.get("cudnn_version"),
        "tensorflow_version": meta.tensorflow_version or env.get("tensorflow_version"),
        "tensorflow_distribution": env.get("tensorflow_distribution"),
        "branch": upstream.branch,
        "commit": upstream.commit,
        "upstream_url": upstream.url,
        "precision": cond.get("precision"),
        "xla": cond.get("xla"),
        "num_gpus": counts,
        "variable_update": cond.get("variable_update"),
        "data": cond.get("data"),
        "data_source": sweep.plan.data_origin(),
        "link": sweep.link(),
        "batch_sizes": {m: b for m, b in meta.plan_order},
        "device": "cpu" if meta.on_cpu else meta.device,
        "cluster": (
            {
                "backend": sweep.plan.cluster,
                "workers": sweep.plan.workers,
                "ps": sweep.plan.ps,
                "fleet": bool(sweep.plan.fleet),
            }
            if sweep.plan.cluster
            else None
        ),
        "os": {k: os_info.get(k) for k in ("system", "release", "machine")} if os_info else None,
        "cpu_model": env.get("cpu_model"),
        "host": (env.get("host") if keep_host else HOST) if env.get("host") else None,
    }
    return redact.any(out)


def lacking_text(specs: List[RunSpec], planned: int, limit: int = 6) -> str:
    """``2 of 6 planned runs: vgg16 bs=64 run 2, 3`` (the first ``limit`` configurations, then how many more)."""
    by_config: Dict[Config, List[int]] = {}
    for spec in specs:
        by_config.setdefault(spec.config, []).append(spec.run)
    parts = [
        "%s bs=%d%s%s run %s"
        % (model, bs, " gpus=%d" % n if n != 1 else "", " %s data" % d if d else "", ", ".join(map(str, runs)))
        for (model, bs, n, d), runs in list(by_config.items())[:limit]
    ]
    more = len(by_config) - limit
    return "%d of %d planned runs: %s%s" % (
        len(specs),
        planned,
        "; ".join(parts),
        "; and %d more configurations" % more if more > 0 else "",
    )


def plan_of(sweep: Sweep) -> JsonObject:
    """The bundle's ``plan``: runs asked per configuration, the until-ci bounds, the configurations and the
    planned runs that never started (an interrupted sweep's bundle says it is incomplete)."""
    plan = sweep.plan
    done = {(r.model, r.batch_size, r.num_gpus or 1, r.run) for r in sweep.runs}
    configs = [c[:3] for c in plan.configs()]
    never = [(c, k) for c in configs for k in range(1, plan.runs + 1) if c + (k,) not in done]
    return BundlePlan.of(plan.runs, plan.until_ci, plan.most_runs if plan.until_ci else None, configs, never)


def _check_log_bounds(log_map: Mapping[str, LogEntry]) -> None:
    """DamagedFile when a log passes what a reader takes of one (no run writes that much), UsageError when
    the logs together do (a sweep too large to carry its logs) (tfcnnwrap.share.bundle's bounds on logs)."""
    for name, entry in log_map.items():
        if bundles.log_lines(entry.text) > bundles.MAX_LOG_LINES:
            raise DamagedFile(
                "log %s holds more than %d lines, more than a bundle's log may; export with --no-logs"
                % (name, bundles.MAX_LOG_LINES)
            )
    chars = sum(len(e.text) for e in log_map.values())
    lines = sum(bundles.log_lines(e.text) for e in log_map.values())
    if chars > bundles.MAX_LOGS_CHARS or lines > bundles.MAX_LOGS_LINES:
        raise UsageError(
            "the logs hold %d characters in %d lines, more than a bundle's logs may (%d, %d); export "
            "with --no-logs" % (chars, lines, bundles.MAX_LOGS_CHARS, bundles.MAX_LOGS_LINES)
        )


def build(
    sweep_path: Union[Path, str],
    logs: bool = True,
    keep_host: bool = False,
    verb: str = "export",
    data: Optional[str] = None,
) -> Bundle:
    """The bundle of the sweep at ``sweep_path``; UsageError when it has no GPU name or no run, or is
    still running (its writer lock held); an interrupted sweep's bundle comes with a warning naming the runs it
    lacks. A sweep of both data kinds gives one kind's runs (``data``, default synthetic) as if it had run
    that kind alone: a bundle's conditions hold one."""
    sweep = _one_kind(sweep_path, data, verb)
    if sweep.dir.writer_running():  # a bundle of it would hold some of its runs and say nothing of the rest
        raise UsageError("%s is still running: wait or stop it, then %s it" % (sweep_path, verb))
    if not sweep.runs:
        raise UsageError("%s has no finished run yet; nothing to export" % sweep_path)
    hosts = sorted({r.host for r in sweep.runs if r.host})
    env_host = sweep.meta.environment.get("host")
    redact = Redactor(hosts + [env_host] if env_host else hosts, keep_host)
    found = _read_logs(sweep, sweep.runs, redact)
    gpu = _device_name(sweep, sweep_path, found)
    lacking = sweep.lacking()
    if lacking:
        sys.stderr.write(
            "tfcnnwrap %s: warning: %s was interrupted; the bundle lacks %s\n"
            % (verb, sweep_path, lacking_text(lacking, len(sweep.plan.run_specs())))
        )
    runs = [_run_dict(r, redact, keep_host, hosts) for r in sweep.runs]
    summary = [redact.any({k: v for k, v in row.to_dict().items()}) for row in sweep.rows]
    log_map = {name: LogEntry(text, bundles.sha256_text(text)) for name, (_, text) in found.items()}
    if logs:
        _check_log_bounds(log_map)
    created = sweep.meta.created_at or ""
    return bundles.new_bundle(
        conditions_of(sweep, gpu, redact, keep_host),
        runs,
        _clean(summary),
        log_map if logs else None,
        created,
        plan=redact.any(plan_of(sweep)),
    )


def _one_kind(sweep_path: Union[Path, str], data: Optional[str], verb: str) -> Sweep:
    sweep = Sweep(sweep_path)
    if not sweep.plan.data_kinds:
        if data is not None:
            raise UsageError("--data picks one kind of a sweep that ran both; %s ran one: drop --data" % sweep_path)
        return sweep
    if data is None:
        sys.stderr.write(
            "tfcnnwrap %s: %s ran synthetic and real data; a bundle holds one kind: this one its synthetic runs "
            "(export --data real for the others)\n" % (verb, sweep_path)
        )
    return Sweep(sweep_path, data=data or "synthetic")


def _device_name(sweep: Sweep, sweep_path: Union[Path, str], found: Dict[str, Tuple[str, str]]) -> str:
    """What the bundle names where the GPU goes: the GPU, or on a CPU sweep the CPU model (contract)."""
    if sweep.meta.on_cpu:
        cpu = sweep.meta.environment.get("cpu_model")
        if isinstance(cpu, str) and cpu.strip():
            return cpu.strip()
        raise UsageError(
            "%s ran on the CPU but records no CPU model (environment.cpu_model in sweep.json); a "
            "bundle without its device compares with nothing" % sweep_path
        )
    gpu = sweep.meta.gpu_names() or gpu_from_logs(text for _, text in found.values())
    if not gpu.strip():
        raise UsageError(
            "%s records no GPU name (not in sweep.json, nvidia-smi's samples or TensorFlow's "
            "device lines in the logs); a bundle without its GPU compares with nothing" % sweep_path
        )
    return gpu


def _clean(value: List[JsonObject]) -> List[JsonObject]:
    return plain(value)


@dataclass(frozen=True)
class ExportArgs:
    """`export SWEEP_DIR`: ``out`` a file or a folder for it (None: <id>.tfcw.json.gz here); ``sign`` a key;
    ``data`` the kind a bundle of a sweep of both holds (None: synthetic)."""

    sweep_dir: str
    out: Optional[str] = None
    no_logs: bool = False
    keep_host: bool = False
    sign: Optional[str] = None
    data: Optional[str] = None


def cmd_export(args: ExportArgs) -> int:
    bundle = build(args.sweep_dir, logs=not args.no_logs, keep_host=args.keep_host, data=args.data)
    if args.sign:
        bundle = bundle.signed(signing.sign_id(bundle.id, args.sign)) or bundle
    data = bundles.to_bytes(bundle)
    if len(data) > bundles.max_bytes():
        raise UsageError(
            "the bundle would be %d bytes, over the %d-byte limit; export it with --no-logs"
            % (len(data), bundles.max_bytes())
        )
    out = Path(args.out) if args.out else Path(bundles.file_name(bundle))
    if out.is_dir():
        out = out / bundles.file_name(bundle)
    try:
        safefs.atomic_write(out, data)
    except OSError as exc:
        raise fs_error("write", out, exc) from None
    note = "" if bundle.logs is not None else " (no logs: unverified wherever it is shown)"
    note += "".join(", signed by %s" % entry.fingerprint for entry in bundle.signatures)
    sys.stdout.write("%s\n" % out)
    sys.stderr.write(
        "tfcnnwrap export: %s, %d runs, bundle %s%s\n" % (bundle.gpu, len(bundle.runs), bundle.short_id, note)
    )
    return 0


@dataclass(frozen=True)
class SignArgs:
    """`sign BUNDLE --key KEY`."""

    bundle: str
    key: str


def cmd_sign(args: SignArgs) -> int:
    """`sign BUNDLE --key KEY`: the bundle file gains a signature, rewritten in place (its id, so its name,
    stays). A bundle that is not verified is not signed (exit 1): a signature says "I stand behind this"."""
    from tfcnnwrap.share.verify import FAILED, verify  # the verdict's module imports signing, as this does

    path = Path(args.bundle)
    bundle = bundles.read_path(path)
    if bundle.format < bundles.JCS_FORMAT:
        raise UsageError(
            "%s is bundle format %d, whose id covers every key: it cannot carry signatures; export "
            "the sweep again with this tfcnnwrap and sign that" % (path, bundle.format)
        )
    verdict = verify(bundle)
    if verdict.state == FAILED:
        raise TfcnnwrapError("%s is not verified (%s); not signed" % (path, verdict.findings[0]), exit_code=1)
    entry = signing.sign_id(bundle.id, args.key)
    signed = bundle.signed(entry)
    if signed is None:
        sys.stdout.write("%s: already signed by %s; nothing to do\n" % (path, entry.fingerprint))
        return 0
    try:
        safefs.atomic_write(path, bundles.to_bytes(signed))
    except OSError as exc:
        raise fs_error("write", path, exc) from None
    sys.stdout.write(
        "%s: signed by %s (%d signature%s)\n"
        % (path, entry.fingerprint, len(signed.signatures), "" if len(signed.signatures) == 1 else "s")
    )
    return 0
