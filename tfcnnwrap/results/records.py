"""The data model of a sweep: small immutable records that read and write their own JSON.

As pyperf's Run/Benchmark/BenchmarkSuite, each record knows its keys, its types and its file's format
version, so every reader (store, aggregate, report, live, compare) sees the same typed fields instead of
reading dicts with ``.get()``. Unknown keys are kept (``extra``) and written back, so a record read from a
newer or hand-extended file loses nothing. Bottom floor: imports nothing of tfcnnwrap but errors.
"""

import math
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from tfcnnwrap.errors import UsageError

# The sweep.json format this tfcnnwrap writes, and the newest it reads.
FORMAT_VERSION = 1

# A JSON object as read or written: its values are any JSON value (json.loads gives them untyped). Kept so for
# what tfcnnwrap passes through as recorded: a run's telemetry and cluster, a plan (plan.Plan gives it
# meaning), an environment (envinfo.Environment writes it; old and hand-edited sweeps hold any shape).
JsonObject = Mapping[str, Any]


class Status(str, Enum):
    """A run's status (docs/results-format.md); a str, so it compares and serialises as its value."""

    OK = "ok"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    NO_RESULT = "no_result"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def read(cls, value: object) -> Union["Status", str]:
        """The Status of ``value``; a status this tfcnnwrap does not know stays its text (never dropped)."""
        try:
            return cls(value)
        except ValueError:
            return str(value)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> Optional[float]:
    """A finite float, or None for anything else (null, text, bool, NaN): what statistics may use."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# Readers of one JSON value as the records' fields take it (a wrong type reads as not given); doctor's and
# envinfo's records read theirs with these too.
def opt_whole(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def opt_text(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


def opt_object(value: object) -> JsonObject:
    """A JSON object read from a record: the mapping itself, or an empty one for anything else."""
    return value if isinstance(value, Mapping) else {}


def _opt_dict(value: object) -> Optional[JsonObject]:
    return dict(value) if isinstance(value, Mapping) else None


# -- one run ---------------------------------------------------------------------------------------------

# Keys every record written today carries, in the writer's order (null when not known).
_RUN_ALWAYS = (
    "model",
    "batch_size",
    "run",
    "status",
    "images_per_sec",
    "exit_code",
    "duration_s",
    "started_at",
    "log",
    "command",
    "failure",
    "steps_seen",
    "last_step_images_per_sec",
    "log_bytes",
    "tensorflow_reported",
    "telemetry",
)
# The contract's optional keys: written only when set, so older records stay byte-identical on a re-write.
_RUN_OPTIONAL = (
    "num_gpus",
    "host",
    "data",
    "cluster",
    "start_temp_c",
    "cooldown_s",
    "steady_images_per_sec",
    "drift_pct",
    "drifting",
)


@dataclass(frozen=True)
class RunRecord:
    """One line of runs.jsonl."""

    model: str
    batch_size: int
    run: int
    status: Union[Status, str]  # the text of a status this version does not know stays text
    images_per_sec: Optional[float] = None
    exit_code: Optional[int] = None
    duration_s: Optional[float] = None
    started_at: Optional[str] = None
    log: Optional[str] = None
    command: Tuple[str, ...] = ()
    failure: Optional[str] = None
    steps_seen: Optional[int] = None
    last_step_images_per_sec: Optional[float] = None
    log_bytes: Optional[int] = None
    tensorflow_reported: Optional[str] = None
    telemetry: Optional[JsonObject] = None
    num_gpus: Optional[int] = None
    host: Optional[str] = None
    cluster: Optional[JsonObject] = None
    start_temp_c: Optional[float] = None
    cooldown_s: Optional[float] = None
    # within-run steadiness (logparse.steadiness)
    steady_images_per_sec: Optional[float] = None
    drift_pct: Optional[float] = None
    drifting: Optional[bool] = None
    data: Optional[str] = None  # synthetic or real in a sweep of both kinds (--data synthetic,generated), else None
    extra: JsonObject = field(default_factory=dict)

    @staticmethod
    def is_valid(data: object) -> bool:
        """A record with the fields every reader relies on (a hand-edited line without them is skipped)."""
        return (
            isinstance(data, Mapping)
            and isinstance(data.get("model"), str)
            and _whole(data.get("batch_size"))
            and _whole(data.get("run"))
        )

    @classmethod
    def from_dict(cls, data: object, default_num_gpus: Optional[int] = None) -> "RunRecord":
        """The record of a runs.jsonl object; ValueError if it lacks model, batch_size or run.

        ``default_num_gpus``: the plan's GPU count, for records written before runs carried their own.
        """
        if not isinstance(data, Mapping) or not cls.is_valid(data):
            raise ValueError("not a run record: needs a text model and whole-number batch_size and run")
        known = {f.name for f in fields(cls)} - {"extra"}
        command = data.get("command")
        num_gpus = opt_whole(data.get("num_gpus"))
        return cls(
            model=data["model"],
            batch_size=data["batch_size"],
            run=data["run"],
            status=Status.read(data.get("status")),
            images_per_sec=_number(data.get("images_per_sec")),
            exit_code=opt_whole(data.get("exit_code")),
            duration_s=_number(data.get("duration_s")),
            started_at=opt_text(data.get("started_at")),
            log=opt_text(data.get("log")),
            command=tuple(str(a) for a in command) if isinstance(command, list) else (),
            failure=opt_text(data.get("failure")),
            steps_seen=opt_whole(data.get("steps_seen")),
            last_step_images_per_sec=_number(data.get("last_step_images_per_sec")),
            log_bytes=opt_whole(data.get("log_bytes")),
            tensorflow_reported=opt_text(data.get("tensorflow_reported")),
            telemetry=_opt_dict(data.get("telemetry")),
            num_gpus=num_gpus if num_gpus is not None else default_num_gpus,
            host=opt_text(data.get("host")),
            cluster=_opt_dict(data.get("cluster")),
            start_temp_c=_number(data.get("start_temp_c")),
            cooldown_s=_number(data.get("cooldown_s")),
            steady_images_per_sec=_number(data.get("steady_images_per_sec")),
            drift_pct=_number(data.get("drift_pct")),
            drifting=data.get("drifting") if isinstance(data.get("drifting"), bool) else None,
            data=opt_text(data.get("data")),
            extra={k: v for k, v in data.items() if k not in known},
        )

    def updated(self, values: JsonObject) -> "RunRecord":
        """A copy with ``values`` set: its fields replaced, any other key kept in ``extra`` and written back as
        it is (what cooling adds to a record, say ``cool_to_problem``, needs no field of its own)."""
        known = {f.name for f in fields(self)} - {"extra"}
        extra = {k: v for k, v in values.items() if k not in known}
        return replace(self, **{k: v for k, v in values.items() if k in known}, extra={**self.extra, **extra})

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {}
        for name in _RUN_ALWAYS:
            value = getattr(self, name)
            out[name] = value.value if isinstance(value, Status) else value
            if name == "batch_size" and self.num_gpus is not None:
                out["num_gpus"] = self.num_gpus  # where the sweep has always written it
        out["command"] = list(self.command)
        out["telemetry"] = dict(self.telemetry) if self.telemetry is not None else None
        for name in _RUN_OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[name] = dict(value) if isinstance(value, Mapping) else value
        out.update(self.extra)
        return out

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def value(self) -> Optional[float]:
        """images/sec when the run is ok and gave a finite figure, else None."""
        return self.images_per_sec if self.ok else None

    @property
    def config(self) -> Tuple[str, int, Optional[int], Optional[str], Optional[str]]:
        """What the run measured: (model, batch_size, num_gpus, host, data)."""
        return (self.model, self.batch_size, self.num_gpus, self.host, self.data)

    @property
    def key(self) -> Tuple[str, int, Optional[int], Optional[str], Optional[str], int]:
        """Which run this is; a re-run of it (resume) replaces it."""
        return self.config + (self.run,)

    @property
    def throttled(self) -> Optional[bool]:
        """True/False as the run's GPU telemetry judged it; None without telemetry."""
        flag = (self.telemetry or {}).get("throttled")
        return flag if isinstance(flag, bool) else None

    @property
    def max_temp_c(self) -> Optional[float]:
        return _number((self.telemetry or {}).get("max_temp_c"))

    @property
    def gpu(self) -> Optional["GpuTelemetry"]:
        """The run's GPU telemetry, typed (GpuTelemetry); None when the run recorded none."""
        return GpuTelemetry.from_dict(self.telemetry) if self.telemetry is not None else None


@dataclass(frozen=True)
class GpuTelemetry:
    """What nvidia-smi said while a run ran (the record's ``telemetry``); older records lack the newer
    keys, which then read as None / ()."""

    samples: Optional[int] = None
    max_temp_c: Optional[float] = None
    mean_power_w: Optional[float] = None
    max_power_w: Optional[float] = None
    mean_sm_clock_mhz: Optional[float] = None
    throttled: Optional[bool] = None
    throttle_reasons: Tuple[str, ...] = ()
    pcie_link: Optional[str] = None  # "gen3 x4 of gen3 x16"
    pcie_degraded: Optional[bool] = None
    samples_file: Optional[str] = None

    @classmethod
    def from_dict(cls, found: object) -> "GpuTelemetry":
        data = opt_object(found)
        reasons = data.get("throttle_reasons")
        link = opt_object(data.get("pcie_link"))
        degraded = link.get("degraded")
        return cls(
            samples=opt_whole(data.get("samples")),
            max_temp_c=_number(data.get("max_temp_c")),
            mean_power_w=_number(data.get("mean_power_w")),
            max_power_w=_number(data.get("max_power_w")),
            mean_sm_clock_mhz=_number(data.get("mean_sm_clock_mhz")),
            throttled=data.get("throttled") if isinstance(data.get("throttled"), bool) else None,
            throttle_reasons=tuple(str(r) for r in reasons) if isinstance(reasons, list) else (),
            pcie_link=opt_text(link.get("text")),
            pcie_degraded=degraded if isinstance(degraded, bool) else None,
            samples_file=opt_text(data.get("samples_file")),
        )


# -- the sweep -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    url: Optional[str] = None
    branch: Optional[str] = None
    commit: Optional[str] = None


def _bad_meta(where: str, what: str) -> UsageError:
    return UsageError("%s is not a sweep description: %s; give a sweep made by `tfcnnwrap sweep`" % (where, what))


_JSON_TYPE = {
    dict: "an object",
    list: "a list",
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true/false",
    type(None): "null",
}


def _json_type(value: object) -> str:
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _check_plan(plan: object, where: str) -> None:
    if not isinstance(plan, Mapping):
        raise _bad_meta(where, "`plan` is %s, not an object" % _json_type(plan))
    models = plan.get("models", [])
    if not isinstance(models, list):
        raise _bad_meta(where, "`plan.models` is %s, not a list" % _json_type(models))
    for item in models:
        if not (isinstance(item, Mapping) and isinstance(item.get("model"), str) and _whole(item.get("batch_size"))):
            raise _bad_meta(where, "`plan.models` holds %r, not {model: text, batch_size: whole number}" % (item,))


def _check_types(data: JsonObject, where: str) -> None:
    expected = {
        "plan": dict,
        "upstream": dict,
        "environment": dict,
        "device": str,
        "tensorflow_version": str,
        "created_at": str,
        "tfcnnwrap_version": str,
        "resumed": list,
        "tool": str,
        "command_template": list,
        "script_dir": str,
        "python": str,
        "vendor_dir": str,
        "argv": list,
    }
    for key, kind in expected.items():
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise _bad_meta(where, "`%s` is %s, not %s" % (key, _json_type(value), _JSON_TYPE[kind]))
    _check_plan(data.get("plan") or {}, where)
    for entry in data.get("resumed") or []:
        if not isinstance(entry, Mapping):
            raise _bad_meta(where, "`resumed` holds %s, not an object" % _json_type(entry))


def check_format(data: JsonObject, where: str) -> int:
    """The sweep.json format number; exit 2 for one a newer tfcnnwrap wrote (or a value that is no number)."""
    fmt = data.get("format", 1)
    if not _whole(fmt) or fmt < 1:
        raise _bad_meta(where, "`format` is %r, not a whole number" % (fmt,))
    if fmt > FORMAT_VERSION:
        raise UsageError(
            "%s was written by tfcnnwrap %s in sweep format %d; this tfcnnwrap reads format %d at most: "
            "upgrade tfcnnwrap to read it" % (where, data.get("tfcnnwrap_version") or "(newer)", fmt, FORMAT_VERSION)
        )
    return fmt


@dataclass(frozen=True)
class Resumption:
    """One ``--resume`` of a sweep (sweep.json's ``resumed``): when, with which python, vendor directory,
    tfcnnwrap and command line."""

    at: Optional[str] = None
    python: Optional[str] = None
    vendor_dir: Optional[str] = None
    tfcnnwrap_version: Optional[str] = None
    argv: Tuple[str, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "Resumption":
        known = ("at", "python", "vendor_dir", "tfcnnwrap_version", "argv")
        at, python, vendor_dir, version = (opt_text(data.get(k)) for k in known[:4])
        return cls(
            at,
            python,
            vendor_dir,
            version,
            argv=_texts(data.get("argv")) or (),
            extra={k: v for k, v in data.items() if k not in known},
        )

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "at": self.at,
            "python": self.python,
            "vendor_dir": self.vendor_dir,
            "tfcnnwrap_version": self.tfcnnwrap_version,
            "argv": list(self.argv),
        }
        out.update(self.extra)
        return out


def _texts(value: object) -> Optional[Tuple[str, ...]]:
    """A JSON list as a tuple of texts, or None when it is no list."""
    return tuple(str(v) for v in value) if isinstance(value, list) else None


def _listed(value: Optional[Tuple[str, ...]]) -> Optional[List[str]]:
    return list(value) if value is not None else None


# sweep.json's keys beyond the always-written ones, in the writer's order: written only when known, so a sweep
# written before one existed (no ``vendor_dir``, no ``resumed``) reads and writes back as it was.
_META_OPTIONAL = ("tool", "command_template", "script_dir", "python", "vendor_dir", "argv", "resumed")


@dataclass(frozen=True)
class SweepMeta:
    """sweep.json: the plan (as recorded; plan.Plan gives it meaning), device, upstream, environment, where it
    ran (``python``, ``vendor_dir``, ``script_dir``), its command line and each ``--resume``."""

    format: int = FORMAT_VERSION
    plan: JsonObject = field(default_factory=dict)  # plan.Plan.to_dict(): Plan.from_dict reads it
    device: Optional[str] = None
    upstream: Upstream = field(default_factory=Upstream)
    environment: JsonObject = field(default_factory=dict)  # envinfo.Environment's JSON, as recorded
    tensorflow_version: Optional[str] = None
    tfcnnwrap_version: Optional[str] = None
    created_at: Optional[str] = None
    tool: Optional[str] = None
    command_template: Optional[Tuple[str, ...]] = None
    script_dir: Optional[str] = None
    python: Optional[str] = None
    vendor_dir: Optional[str] = None
    argv: Optional[Tuple[str, ...]] = None
    resumed: Optional[Tuple[Resumption, ...]] = None
    extra: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: object, where: str = "sweep.json") -> "SweepMeta":
        """The meta of a sweep.json object; UsageError (exit 2, one line) for a wrong shape or a newer format."""
        if not isinstance(data, Mapping):
            raise _bad_meta(where, "it holds %s, not an object" % _json_type(data))
        fmt = check_format(data, where)
        _check_types(data, where)
        upstream = data.get("upstream") or {}
        known = {f.name for f in fields(cls)} - {"extra"}
        resumed = data.get("resumed")
        return cls(
            format=fmt,
            plan=dict(data.get("plan") or {}),
            device=data.get("device"),
            upstream=Upstream(*(opt_text(upstream.get(k)) for k in ("url", "branch", "commit"))),
            environment=dict(data.get("environment") or {}),
            tensorflow_version=data.get("tensorflow_version"),
            tfcnnwrap_version=data.get("tfcnnwrap_version"),
            created_at=data.get("created_at"),
            tool=data.get("tool"),
            command_template=_texts(data.get("command_template")),
            script_dir=data.get("script_dir"),
            python=data.get("python"),
            vendor_dir=data.get("vendor_dir"),
            argv=_texts(data.get("argv")),
            resumed=tuple(Resumption.from_dict(r) for r in resumed) if isinstance(resumed, list) else None,
            extra={k: v for k, v in data.items() if k not in known},
        )

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "format": self.format,
            "tool": self.tool,
            "tfcnnwrap_version": self.tfcnnwrap_version,
            "created_at": self.created_at,
            "plan": dict(self.plan),
            "device": self.device,
            "command_template": _listed(self.command_template),
            "script_dir": self.script_dir,
            "upstream": {"url": self.upstream.url, "branch": self.upstream.branch, "commit": self.upstream.commit},
            "tensorflow_version": self.tensorflow_version,
            "python": self.python,
            "vendor_dir": self.vendor_dir,
            "argv": _listed(self.argv),
            "environment": dict(self.environment),
            "resumed": [r.to_dict() for r in self.resumed] if self.resumed is not None else None,
        }
        for name in _META_OPTIONAL:
            if out[name] is None:
                del out[name]
        out.update(self.extra)
        return out

    def resumed_by(self, entry: Resumption) -> "SweepMeta":
        """This meta with one more ``--resume`` recorded."""
        return replace(self, resumed=(self.resumed or ()) + (entry,))

    @property
    def plan_order(self) -> List[Tuple[str, int]]:
        """(model, batch_size) pairs in the order the plan lists them."""
        return [(m["model"], m["batch_size"]) for m in self.plan.get("models") or []]

    @property
    def plan_num_gpus(self) -> Optional[int]:
        """The GPU count of a single-count plan (the count of records that do not carry one), else None."""
        count = self.plan.get("num_gpus", 1)
        if isinstance(count, list) and len(count) == 1:
            count = count[0]
        return count if _whole(count) else None

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu" or self.plan.get("device") == "cpu"

    def gpu_names(self) -> str:
        """The GPU names the environment recorded (TensorFlow's view, else nvidia-smi's), joined, or ''."""
        gpus = self.environment.get("gpus") or self.environment.get("nvidia_smi_gpus")
        names = []
        for gpu in gpus if isinstance(gpus, list) else []:
            name = gpu.get("name") if isinstance(gpu, Mapping) else gpu
            if name and str(name) not in names:
                names.append(str(name))
        return ", ".join(names)


# -- derived: summary rows and comparisons ---------------------------------------------------------------

SUMMARY_COLUMNS = [
    "model",
    "batch_size",
    "runs_ok",
    "runs_failed",
    "mean",
    "std",
    "cv_pct",
    "min",
    "max",
    "median",
    "failures",
    "num_gpus",
    "ci95_pct",
    "throttled_runs",
    "max_temp_c",
]
# Columns only a sweep of several GPU counts has (speed-up over one GPU, and speed-up / count in %).
SCALING_COLUMNS = ["speedup", "efficiency_pct"]
# Columns only a sweep of both data kinds has: the row's kind, and on a real-data row what the input path costs,
# its mean against the same configuration's synthetic one, in %, with that change's 95 % interval.
DATA_COLUMNS = ["data", "vs_synthetic_pct", "vs_synthetic_ci95_low", "vs_synthetic_ci95_high"]
# Issue 14: trustworthy numbers (aggregate.thermal_columns / steadiness_columns).
THERMAL_COLUMNS = [
    "mean_power_w",
    "mean_sm_clock_mhz",
    "throttle_reasons",
    "pcie_link",
    "drifting_runs",
    "outlier_runs",
    "ci95_wide",
]
# Issue 22: the verdict beside every mean (quality.py): the trend between runs and the flags it all earns.
QUALITY_COLUMNS = ["trend_pct", "trend_significant", "flags"]
SUMMARY_COLUMNS += THERMAL_COLUMNS + QUALITY_COLUMNS


@dataclass(frozen=True)
class SummaryRow:
    """One row of summary.csv and `report --format json`: statistics over a configuration's ok runs."""

    model: str
    batch_size: int
    runs_ok: int = 0
    runs_failed: int = 0
    mean: Optional[float] = None
    std: Optional[float] = None
    cv_pct: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None
    median: Optional[float] = None
    failures: str = ""
    num_gpus: Optional[int] = None
    ci95_pct: Optional[float] = None
    throttled_runs: Optional[int] = None
    max_temp_c: Optional[float] = None
    host: Optional[str] = None
    # A sweep of several GPU counts (aggregate.add_scaling): against the same model at one GPU.
    speedup: Optional[float] = None
    efficiency_pct: Optional[float] = None
    scaling: bool = False  # the row is part of such a sweep: SCALING_COLUMNS are its columns (maybe null)
    # Fleet sweeps: this host's mean against the fleet's median of host means, and why it is flagged.
    vs_fleet_pct: Optional[float] = None
    fleet_flag: Optional[str] = None
    mean_power_w: Optional[float] = None  # mean over ok runs of each run's busy-sample mean
    mean_sm_clock_mhz: Optional[float] = None
    # {"sw_thermal_slowdown": 3, "sw_power_cap": 1}: the ok runs each reason was active in
    throttle_reasons: Mapping[str, int] = field(default_factory=dict)
    pcie_link: str = ""  # the links the runs saw, "gen3 x4 of gen3 x16"
    drifting_runs: Optional[int] = None  # ok runs whose step rate drifted more than 3 % (None: no step data)
    outlier_runs: Tuple[int, ...] = ()  # run numbers outside median +- 3 MAD, e.g. (2, 5); flagged, never dropped
    ci95_wide: Optional[bool] = None  # ci95_pct wider than 2 %: more runs (or --until-ci) would help
    trend_pct: Optional[float] = None  # last third of the ok runs against the first, in % (quality.trend_pct)
    trend_significant: Optional[bool] = None  # the trend's 95 % interval excludes zero (quality.trend_significant)
    flags: Tuple[str, ...] = ()  # quality.FLAGS this configuration earned: "outlier", "wide CI", "drift", ...
    # A sweep of both data kinds (aggregate.add_input_cost): the row's kind; a real row against the synthetic.
    data: Optional[str] = None
    vs_synthetic_pct: Optional[float] = None
    vs_synthetic_ci95_low: Optional[float] = None
    vs_synthetic_ci95_high: Optional[float] = None

    @property
    def pair(self) -> Tuple[str, int]:
        return (self.model, self.batch_size)

    def to_dict(self) -> Dict[str, object]:
        out = {name: getattr(self, name) for name in SUMMARY_COLUMNS}
        if self.host is not None:
            out["host"] = self.host
            out["vs_fleet_pct"] = self.vs_fleet_pct
            out["fleet_flag"] = self.fleet_flag
        if self.scaling:
            out.update((name, getattr(self, name)) for name in SCALING_COLUMNS)
        if self.data is not None:
            out.update((name, getattr(self, name)) for name in DATA_COLUMNS)
        return out


@dataclass(frozen=True)
class ReferenceCell:
    """One measured configuration against one reference GPU's closest published figure."""

    name: str  # as the user typed it (the column header)
    id: str
    gpu_name: str
    images_per_sec: Optional[float] = None
    published: Optional[str] = None  # the figure as published (its own digits)
    ratio_pct: Optional[float] = None  # measured / reference x 100
    comparable: Optional[bool] = None  # False: measured under other conditions (see differs)
    # condition -> {"reference": ..., "sweep": ...}
    differs: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    conditions: Optional[JsonObject] = None
    source: Optional[str] = None  # where the published figure comes from
    tf_version: Optional[str] = None  # the TensorFlow the reference ran, as published ('' not recorded)

    @property
    def found(self) -> bool:
        return self.published is not None


@dataclass(frozen=True)
class ReferenceRow:
    model: str
    batch_size: int
    measured: Optional[float]
    runs_ok: Optional[int]
    cells: Tuple[ReferenceCell, ...]
    num_gpus: Optional[int] = None


@dataclass(frozen=True)
class GeomeanCell:
    """The geometric mean of one reference's comparable ratios, over ``count`` of ``of`` measured rows."""

    name: str
    id: str
    gpu_name: str
    ratio_pct: Optional[float]
    count: int
    of: int


@dataclass(frozen=True)
class ChangeRow:
    """One configuration in both sweeps: means, change and Welch's test."""

    model: str
    batch_size: int
    baseline: Optional[float]
    candidate: Optional[float]
    change_pct: Optional[float]
    significant: Optional[bool]
    p_value: Optional[float]
    baseline_runs: Optional[int]
    candidate_runs: Optional[int]
    baseline_std: Optional[float]
    candidate_std: Optional[float]
    num_gpus: Optional[int] = None
    change_ci95_low: Optional[float] = None  # 95% CI of change_pct (Fieller), %
    change_ci95_high: Optional[float] = None
    candidate_dir: Optional[str] = None  # set when several candidates follow one baseline
    data: Optional[str] = None  # synthetic or real: a configuration of sweeps that ran both data kinds

    def to_dict(self) -> Dict[str, object]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("candidate_dir", "data"):
            if out[name] is None:
                del out[name]
        return out
