"""A result bundle as records (docs/results-format.md), read once from its checked JSON and read by every stage.

share/bundle.py reads a bundle's bytes as hostile input (sizes, numbers, names, shape) and makes a ``Bundle``
of the JSON object it checked; export makes one of a sweep; verify, the library, publish, pull, signing, the
ceilings and the site read its typed fields. As pyperf's Benchmark, a record owns its JSON: ``from_dict`` and
``to_dict``. Each keeps the JSON object it was made from (``raw``) and writes it back as it was: the id is the
hash of those exact values (format 1 spells ``40.0`` and ``40`` differently, key order is the file's), and a
stranger's bundle may hold any value where a field expects one, so a field is read from the JSON and never
written back in another spelling. Below share/ because results/ceilings.py reads bundles too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple, Union

from tfcnnwrap.results.records import JsonObject, Status, opt_object, opt_text, opt_whole

MAX_NUMBER = 2**53  # every number of a bundle lies within +-MAX_NUMBER (share/bundle.py refuses others)
PLAN_MOST_RUNS = 100000  # a plan's runs per configuration (a bundle holds at most 100,000 runs in all)
# A JSON object of a bundle is a dict as json.loads makes it (isinstance of dict: typing.Mapping's check costs more).

# (model, batch size per device, GPUs): a configuration of a plan and of the runs
Config = Tuple[str, int, int]


def _number(value: object) -> Optional[float]:
    """A number as the JSON spelled it (an int stays an int: findings quote it), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _list(value: object) -> List[object]:
    return value if isinstance(value, list) else []


def _bounded(value: object, low: int = 1, high: int = PLAN_MOST_RUNS) -> Optional[int]:
    found = opt_whole(value)
    return found if found is not None and low <= found <= high else None


@dataclass(frozen=True)
class LogEntry:
    """One of ``logs``: a run's log text and the sha256 the bundle claims for it."""

    text: str
    sha256: str

    @classmethod
    def from_dict(cls, data: JsonObject) -> "LogEntry":
        return cls(text=str(data.get("text", "")), sha256=str(data.get("sha256", "")))

    def to_dict(self) -> Dict[str, object]:
        return {"sha256": self.sha256, "text": self.text}


@dataclass(frozen=True)
class Signature:
    """One of ``signatures``: an armored SSH signature over the id, and the key and fingerprint its signer
    claims (shown, never trusted: verify reads the key from the signature itself)."""

    signature: str
    key: Optional[str] = None
    fingerprint: Optional[str] = None
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "Signature":
        return cls(
            signature=str(data.get("signature", "")),
            key=opt_text(data.get("key")),
            fingerprint=opt_text(data.get("fingerprint")),
            raw=dict(data),
        )

    @classmethod
    def of(cls, signature: str, key: str, fingerprint: str) -> "Signature":
        """A new signature entry, keys in the order export writes them."""
        return cls.from_dict({"signature": signature, "key": key, "fingerprint": fingerprint})

    def to_dict(self) -> Dict[str, object]:
        return dict(self.raw)


@dataclass(frozen=True)
class BundleRun:
    """One of ``runs``: what a run claims (share/bundle.py checked the types of model, batch_size, run, status,
    images_per_sec, num_gpus and log)."""

    model: str
    batch_size: int
    run: int
    status: str
    images_per_sec: Optional[float] = None  # as the JSON spelled it
    num_gpus: Optional[int] = None  # None: one (0 stays 0, out of bounds)
    log: Optional[str] = None
    host: Optional[str] = None
    started_at: Optional[str] = None
    exit_code: Optional[int] = None
    hung_after_total: bool = False  # killed at the timeout after its total printed: ok
    distributed: bool = False  # it carries a ``cluster``: one run of a distributed job
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "BundleRun":
        exit_code = data.get("exit_code")
        return cls(
            model=str(data.get("model", "")),
            batch_size=opt_whole(data.get("batch_size")) or 0,
            run=opt_whole(data.get("run")) or 0,
            status=str(data.get("status", "")),
            images_per_sec=_number(data.get("images_per_sec")),
            num_gpus=opt_whole(data.get("num_gpus")),
            log=opt_text(data.get("log")),
            host=opt_text(data.get("host")),
            started_at=opt_text(data.get("started_at")),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            hung_after_total=bool(data.get("hung_after_total")),
            distributed=bool(data.get("cluster")),
            raw=dict(data),
        )

    def to_dict(self) -> Dict[str, object]:
        return dict(self.raw)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def devices(self) -> int:
        """The run's GPUs (a run that names none ran on one)."""
        return self.num_gpus or 1

    @property
    def config(self) -> Config:
        return (self.model, self.batch_size, self.devices)

    @property
    def where(self) -> str:
        """How findings name the run: ``resnet50 bs64 run 2``."""
        return "%s bs%s run %s" % (self.model, self.batch_size, self.run)


@dataclass(frozen=True)
class SummaryEntry:
    """One of ``summary``: the mean a row claims for its configuration. Any value may stand where a field is
    expected, so the configuration is kept as a hashable key of what the row holds (a value that is neither
    text nor a whole number by its repr): such a row matches no configuration, and is still checked."""

    key: Tuple[Union[str, int], ...]  # (model, batch_size, num_gpus or 1[, host])
    mean: Optional[float]
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "SummaryEntry":
        parts = [data.get("model"), data.get("batch_size"), data.get("num_gpus") or 1]
        if data.get("host") is not None:
            parts.append(data["host"])
        key = tuple(v if isinstance(v, (str, int)) else repr(v)[:40] for v in parts)
        return cls(key=key, mean=_number(data.get("mean")), raw=dict(data))

    def to_dict(self) -> Dict[str, object]:
        return dict(self.raw)

    @property
    def name(self) -> str:
        """How findings name the row: ``summary resnet50 bs64`` (`` host host-1``)."""
        return "summary %s bs%s%s" % (self.key[0], self.key[1], " host %s" % self.key[3] if len(self.key) > 3 else "")


@dataclass(frozen=True)
class Conditions:
    """``conditions``: what a reader needs to tell whether two results are comparable. Text fields are None
    where the bundle holds no text."""

    gpu: str
    gpus: Optional[Tuple[str, ...]] = None  # the ``gpus`` list, each as text; None where it is not a list
    device: Optional[str] = None  # "cpu" or "gpu" (contract), any text from others
    precision: Optional[str] = None
    xla: Optional[str] = None
    variable_update: Optional[str] = None
    data: Optional[str] = None  # synthetic / real
    tensorflow_version: Optional[str] = None
    workers: Optional[int] = None  # ``cluster.workers`` of a distributed job (not of a fleet), as given
    fleet: bool = False  # ``cluster.fleet``: hosts that each ran their own job
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "Conditions":
        listed = data.get("gpus")
        cluster = opt_object(data.get("cluster"))
        fleet = bool(cluster.get("fleet"))
        return cls(
            gpu=str(data.get("gpu", "")),
            gpus=tuple(str(n) for n in listed) if isinstance(listed, list) else None,
            device=opt_text(data.get("device")),
            precision=opt_text(data.get("precision")),
            xla=opt_text(data.get("xla")),
            variable_update=opt_text(data.get("variable_update")),
            data=opt_text(data.get("data")),
            tensorflow_version=opt_text(data.get("tensorflow_version")),
            workers=None if fleet else opt_whole(cluster.get("workers")),
            fleet=fleet,
            raw=dict(data),
        )

    def to_dict(self) -> Dict[str, object]:
        return dict(self.raw)

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"

    @property
    def link(self) -> object:
        """``link`` as the bundle holds it (results/gpuid.link_class reads it)."""
        return self.raw.get("link")

    def listed_gpus(self) -> Tuple[str, ...]:
        """The GPUs the bundle lists (``gpus``, else ``gpu`` split at commas), stripped, none empty: a run may
        have run on any of them."""
        names = self.gpus if self.gpus is not None else tuple(self.gpu.split(","))
        return tuple(n.strip() for n in names if n.strip())

    def gpu_counts(self) -> str:
        """The sweep's GPU counts as a commit message shows them: ``1+2`` (``num_gpus``, a list)."""
        counts = self.raw.get("num_gpus") or [1]
        return "+".join(str(n) for n in counts) if isinstance(counts, list) else str(counts)


@dataclass(frozen=True)
class BundlePlan:
    """``plan``: the runs asked per configuration (``runs``; with ``until_ci`` from ``runs`` up to
    ``max_runs``), the configurations planned and the planned runs that never started."""

    runs: int
    until_ci: Optional[float]
    max_runs: Optional[int]
    configurations: Tuple[Config, ...]
    not_started: Tuple[Tuple[Config, int], ...]
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @property
    def most_runs(self) -> int:
        """The most runs a configuration may have."""
        return max(self.runs, self.max_runs or self.runs) if self.until_ci is not None else self.runs

    @classmethod
    def of(
        cls,
        runs: int,
        until_ci: Optional[float],
        max_runs: Optional[int],
        configurations: List[Config],
        not_started: List[Tuple[Config, int]],
    ) -> Dict[str, object]:
        """The ``plan`` object export writes (keys in its order)."""
        return {
            "runs": runs,
            "until_ci": until_ci,
            "max_runs": max_runs,
            "configurations": [{"model": m, "batch_size": b, "num_gpus": g} for m, b, g in configurations],
            "not_started": [{"model": m, "batch_size": b, "num_gpus": g, "run": k} for (m, b, g), k in not_started],
        }

    @classmethod
    def read(cls, value: object) -> Optional["BundlePlan"]:
        """The plan of a well-formed ``plan`` object, else None (verify says it is not one)."""
        if not isinstance(value, dict) or _bounded(value.get("runs")) is None:
            return None
        until_ci, max_runs = value.get("until_ci"), value.get("max_runs")
        if until_ci is not None and _number(until_ci) is None:
            return None
        if max_runs is not None and _bounded(max_runs) is None:
            return None
        listed, never_listed = value.get("configurations"), value.get("not_started", [])
        if not isinstance(listed, list) or not isinstance(never_listed, list):
            return None
        configs = [_plan_config(c) for c in listed if isinstance(c, dict)]
        never = [(_plan_config(r), _bounded(r.get("run"))) for r in never_listed or [] if isinstance(r, dict)]
        if not configs or len(never) != len(never_listed or []):
            return None
        found = [c for c in configs if c is not None]
        started = [(c, k) for c, k in never if c is not None and k is not None]
        if len(found) != len(configs) or len(started) != len(never):
            return None
        return cls(value["runs"], _number(until_ci), max_runs, tuple(found), tuple(started), dict(value))

    def to_dict(self) -> Dict[str, object]:
        return dict(self.raw)


def _plan_config(item: JsonObject) -> Optional[Config]:
    if not isinstance(item.get("model"), str):
        return None
    batch, gpus = _bounded(item.get("batch_size"), high=MAX_NUMBER), _bounded(item.get("num_gpus") or 1)
    return None if batch is None or gpus is None else (item["model"], batch, gpus)


@dataclass(frozen=True)
class Bundle:
    """A whole bundle: one sweep's conditions, runs, summary, logs, plan and signatures under its id."""

    format: int
    id: str
    tool_version: str
    created_at: str
    conditions: Conditions
    runs: Tuple[BundleRun, ...]
    summary: Tuple[SummaryEntry, ...] = ()
    logs: Optional[Mapping[str, LogEntry]] = None  # None: exported with --no-logs
    plan: Optional[BundlePlan] = None  # None: no plan, or one that is not well-formed (has_plan says which)
    has_plan: bool = False
    signatures: Tuple[Signature, ...] = ()
    raw: JsonObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: JsonObject) -> "Bundle":
        """The records of a bundle's JSON object as share/bundle.py checked it (a value of the wrong type reads
        as absent; a run needs a text model and whole batch size and run number)."""
        logs = data.get("logs")
        runs, summary, sigs = (_list(data.get(k)) for k in ("runs", "summary", "signatures"))
        return cls(
            format=opt_whole(data.get("format")) or 0,
            id=str(data.get("id", "")),
            tool_version=str(data.get("tool_version", "")),
            created_at=str(data.get("created_at", "")),
            conditions=Conditions.from_dict(opt_object(data.get("conditions"))),
            runs=tuple(BundleRun.from_dict(r) for r in runs if isinstance(r, dict)),
            summary=tuple(SummaryEntry.from_dict(r) for r in summary if isinstance(r, dict)),
            logs=(
                {str(k): LogEntry.from_dict(opt_object(v)) for k, v in logs.items()} if isinstance(logs, dict) else None
            ),
            plan=BundlePlan.read(data.get("plan")),
            has_plan="plan" in data,
            signatures=tuple(Signature.from_dict(s) for s in sigs if isinstance(s, dict)),
            raw=dict(data),
        )

    def to_dict(self) -> Dict[str, object]:
        """The JSON object, as it was read or made (the id is the hash of exactly this)."""
        return dict(self.raw)

    @property
    def gpu(self) -> str:
        return self.conditions.gpu

    @property
    def short_id(self) -> str:
        return self.id[:12]

    def signed(self, signature: Signature) -> Optional["Bundle"]:
        """This bundle with ``signature`` added to its signatures (the id leaves them out); None when that key
        has signed it already."""
        if any(s.fingerprint == signature.fingerprint for s in self.signatures):
            return None
        listed = [s.to_dict() for s in self.signatures] + [signature.to_dict()]
        return Bundle.from_dict({**self.raw, "signatures": listed})

    def ok_figures(self) -> Dict[Config, List[float]]:
        """{configuration: images/sec of its ok runs} (a fleet's hosts pooled), in the runs' order."""
        out: Dict[Config, List[float]] = {}
        for run in self.runs:
            if run.ok and run.images_per_sec is not None:
                out.setdefault(run.config, []).append(run.images_per_sec)
        return out
