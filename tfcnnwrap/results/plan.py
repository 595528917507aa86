"""What a sweep runs: models, batch sizes, runs and the tf_cnn_benchmarks flags, checked before anything runs.

Pure: no subprocesses, no I/O. The plan is stored in sweep.json and a resumed sweep rebuilds it from there.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from tfcnnwrap import bounds
from tfcnnwrap.bounds import OutOfBounds
from tfcnnwrap.cluster import layout
from tfcnnwrap.errors import DamagedFile, UsageError
from tfcnnwrap.prose import some_of

if TYPE_CHECKING:
    from tfcnnwrap.bounds import Bound

# The seed's sweep: model and per-device batch size.
DEFAULT_MODELS: List[Tuple[str, int]] = [
    ("resnet50", 64),
    ("resnet152", 32),
    ("inception3", 64),
    ("vgg16", 64),
    ("alexnet", 512),
]
DEFAULT_RUNS = 3
DEFAULT_NUM_GPUS = 1
DEFAULT_VARIABLE_UPDATE = "parameter_server"
DEFAULT_MAX_RUNS = 10  # --until-ci without --max-runs
DEFAULT_GENERATED_IMAGES = 512  # --data generated: ~32 MB, ~10 s to write on a laptop's CPU
ORDERS = ("grouped", "interleaved")
# What a run's images are, as its conditions say it: made on the GPU, or real images decoded on the host.
DATA_KINDS = ("synthetic", "real")

QUICK_RUNS = 1
QUICK_BATCH_DIVISOR = 8
QUICK_NUM_BATCHES = 10
QUICK_NUM_WARMUP_BATCHES = 2

# Every model name tf_cnn_benchmarks knows on any of its cnn_tf_v*_compatible branches or master
# (models/model_config.py), so a typo is caught before a 10-minute sweep starts.
KNOWN_MODELS = frozenset(
    """
    alexnet deepspeech2 densenet100_k12 densenet100_k24 densenet40_k12 googlenet inception3 inception4 lenet
    mobilenet nasnet nasnetlarge ncf official_resnet101 official_resnet101_v2 official_resnet152
    official_resnet152_v2 official_resnet18 official_resnet18_v2 official_resnet200 official_resnet200_v2
    official_resnet34 official_resnet34_v2 official_resnet50 official_resnet50_v2 overfeat resnet101
    resnet101_v2 resnet110 resnet110_v2 resnet152 resnet152_v2 resnet20 resnet20_v2 resnet32 resnet32_v2
    resnet44 resnet44_v2 resnet50 resnet50_v1.5 resnet50_v2 resnet56 resnet56_v2 ssd300 trivial vgg11 vgg16
    vgg19
    """.split()
)

CLUSTER_BACKENDS = ("local", "slurm")

VARIABLE_UPDATES = (
    "parameter_server",
    "replicated",
    "distributed_replicated",
    "independent",
    "distributed_all_reduce",
    "collective_all_reduce",
    "horovod",
)

# Flags the plan sets itself; passing them after `--` would contradict the plan.
MANAGED_FLAGS = {
    "model": "--models",
    "batch_size": "--batch-size MODEL=N",
    "num_gpus": "--num-gpus",
    "variable_update": "--variable-update",
    "num_batches": "--num-batches",
    "num_warmup_batches": "--num-warmup-batches",
    "device": "--device",
}
# absl flags that read more flags from elsewhere, where the check above cannot see them.
UNCHECKABLE_FLAGS = frozenset(["flagfile"])


class RunSpec(NamedTuple):
    """One run the plan asks for; (model, batch_size, num_gpus, run, data) is its record's key (host aside).
    ``data``: synthetic or real in a sweep of both kinds (``--data synthetic,generated``), else None."""

    model: str
    batch_size: int
    num_gpus: int
    run: int
    data: Optional[str] = None

    @property
    def config(self) -> Config:
        """The configuration the run measures; its runs are pooled in the summary."""
        return (self.model, self.batch_size, self.num_gpus, self.data)


# (model, batch_size, num_gpus, data): a configuration of a plan; data None unless the sweep runs both kinds.
Config = Tuple[str, int, int, Optional[str]]


@dataclass
class Plan:
    models: List[Tuple[str, int]] = field(default_factory=lambda: list(DEFAULT_MODELS))
    runs: int = DEFAULT_RUNS
    device: str = "auto"  # requested: auto | gpu | cpu
    num_gpus: int = DEFAULT_NUM_GPUS
    variable_update: str = DEFAULT_VARIABLE_UPDATE
    num_batches: Optional[int] = None
    num_warmup_batches: Optional[int] = None
    quick: bool = False
    timeout_s: Optional[float] = None
    extra_args: List[str] = field(default_factory=list)
    # Several GPU counts (`--num-gpus 1,2,4`): one configuration per count; None = just ``num_gpus``.
    gpu_counts: Optional[List[int]] = None
    # sweepflow: precision, XLA, adaptive runs and run order (sweep.json from before them reads as defaults)
    fp16: bool = False
    xla: bool = False
    until_ci: Optional[float] = None  # keep running a configuration until its 95% CI is within +-this %
    max_runs: Optional[int] = None  # with until_ci: at most this many runs of a configuration
    order: str = "grouped"  # grouped: a configuration's runs back to back; interleaved: round by round
    # Distributed jobs (`--cluster local|slurm --workers W --ps P`, `--fleet`); None: one process per run.
    cluster: Optional[str] = None
    workers: Optional[int] = None
    ps: Optional[int] = None
    fleet: Optional[bool] = None
    # Thermal control (issue 14): a pause between runs, and a temperature to wait for before each run.
    cooldown_s: Optional[float] = None
    cool_to_c: Optional[float] = None
    # Host-fed data (issue 36): None = synthetic; "data-dir" (the user's records) or "generated:N" (N generated
    # images, cached), with ``data_dir`` the directory the runs read (a generated set's is filled in before the
    # first run, so that --resume reads the same records).
    data_source: Optional[str] = None
    data_dir: Optional[str] = None
    # Both kinds in one sweep (`--data synthetic,generated[:N]`): DATA_KINDS in the order given, one
    # configuration per kind (``data_source`` is then the real kind's); None = the one kind above.
    data_kinds: Optional[List[str]] = None

    @property
    def counts(self) -> List[int]:
        """The GPU counts the plan runs, in order (weak scaling: the batch size stays per device)."""
        return list(self.gpu_counts) if self.gpu_counts else [self.num_gpus]

    @property
    def scaling(self) -> bool:
        return len(self.counts) > 1

    @property
    def kinds(self) -> List[Optional[str]]:
        """The data kinds a configuration can have: both of DATA_KINDS in a sweep of both, else [None]."""
        return list(self.data_kinds) if self.data_kinds else [None]

    def benchmark_flags(
        self,
        model: str,
        batch_size: int,
        device: str,
        num_gpus: Optional[int] = None,
        features: Sequence[str] = (),
        data: Optional[str] = None,
    ) -> List[str]:
        """tf_cnn_benchmarks flags for one run; ``device`` is the resolved device (gpu or cpu); ``features``:
        --fp16/--xla as the checked-out branch spells them (``features.branch_flags``); ``data``: the run's
        kind in a sweep of both (synthetic: no --data_dir)."""
        flags = [
            "--model=%s" % model,
            "--batch_size=%d" % batch_size,
            "--num_gpus=%d" % (num_gpus if num_gpus is not None else self.num_gpus),
            "--variable_update=%s" % self.variable_update,
        ]
        if self.num_batches is not None:
            flags.append("--num_batches=%d" % self.num_batches)
        if self.num_warmup_batches is not None:
            flags.append("--num_warmup_batches=%d" % self.num_warmup_batches)
        if device == "cpu":
            flags += ["--device=cpu", "--data_format=NHWC"]
        if self.data_dir and data != "synthetic":
            flags += ["--data_dir=%s" % self.data_dir, "--data_name=imagenet"]
        return flags + list(features) + list(self.extra_args)

    @property
    def generated_count(self) -> Optional[int]:
        """N of ``--data generated:N``, else None."""
        kind, _, count = (self.data_source or "").partition(":")
        return int(count) if kind == "generated" and count.isdigit() else None

    def data_origin(self) -> str:
        """Where the images came from: ``synthetic`` (made on the GPU), ``data-dir`` (the user's TFRecords),
        ``generated:N`` (N generated images), or ``data_dir flag`` (passed through after --); a sweep of both
        kinds names both, ``synthetic,generated:N``."""
        if self.data_kinds:
            return ",".join("synthetic" if k == "synthetic" else str(self.data_source) for k in self.data_kinds)
        if self.data_source:
            return self.data_source
        return "data_dir flag" if self.conditions()["data"] == "real" else "synthetic"

    def run_specs(self) -> List[RunSpec]:
        """The planned RunSpecs in execution order: grouped, each configuration's runs back to back (as the
        seed ran them); interleaved, run 1 of every configuration, then run 2, ..."""
        runs = range(1, self.runs + 1)
        if self.order == "interleaved":
            return [RunSpec(m, bs, g, k, d) for k in runs for m, bs, g, d in self.configs()]
        return [RunSpec(m, bs, g, k, d) for m, bs, g, d in self.configs() for k in runs]

    @property
    def most_runs(self) -> int:
        """The most runs a configuration may get: --max-runs with --until-ci, else --runs."""
        return max(self.runs, self.max_runs or DEFAULT_MAX_RUNS) if self.until_ci else self.runs

    def configs(self) -> List[Config]:
        """(model, batch_size, num_gpus, data) in plan order: a model's data kinds side by side."""
        return [(m, bs, g, d) for m, bs in self.models for g in self.counts for d in self.kinds]

    def only_data(self, kind: str) -> Plan:
        """The plan of one data kind of a sweep of both: as if it had run that kind alone."""
        if not self.data_kinds:
            return self
        if kind == "synthetic":
            return replace(self, data_kinds=None, data_source=None, data_dir=None)
        return replace(self, data_kinds=None)

    @property
    def features(self) -> List[str]:
        """--fp16 / --xla as the plan asks for them, in FEATURE_FLAGS' order (features.py spells them)."""
        return [f for f in FEATURE_FLAGS if getattr(self, f)]

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["models"] = [{"model": m, "batch_size": bs} for m, bs in self.models]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan recorded in sweep.json, held to the same bounds as the flags (a hand-edited plan with
        ``runs: 1e9`` must not exhaust memory on --resume)."""
        try:
            models = [(check_model(str(m["model"])), bounds.BATCH_SIZE.parse(m["batch_size"])) for m in data["models"]]
            plan = cls(
                models=models,
                runs=bounds.RUNS.parse(data["runs"]),
                device=str(data.get("device", "auto")),
                num_gpus=bounds.NUM_GPUS.parse(data.get("num_gpus", DEFAULT_NUM_GPUS)),
                variable_update=str(data.get("variable_update", DEFAULT_VARIABLE_UPDATE)),
                num_batches=_recorded(data.get("num_batches"), bounds.NUM_BATCHES),
                num_warmup_batches=_recorded(data.get("num_warmup_batches"), bounds.NUM_WARMUP_BATCHES),
                quick=bool(data.get("quick", False)),
                timeout_s=_recorded(data.get("timeout_s"), bounds.TIMEOUT),
                extra_args=[str(a) for a in data.get("extra_args") or []],
                gpu_counts=_recorded_counts(data.get("gpu_counts")),
                **_recorded_flow(data),
                **_recorded_cluster(data),
                cooldown_s=_recorded(data.get("cooldown_s"), bounds.COOLDOWN),
                cool_to_c=_recorded(data.get("cool_to_c"), bounds.COOL_TO),
                **_recorded_data(data),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DamagedFile("the sweep's recorded plan is unreadable (%s); start a new sweep" % exc) from None
        return plan

    def job_workers(self) -> int:
        """How many workers one run's total is summed over: ``--workers`` of a distributed job (each with the
        plan's GPUs per worker), else 1 (a fleet sweep runs the single-node sweep on each node)."""
        if self.cluster and not self.fleet and self.workers:
            return int(self.workers)
        return 1

    def _data_condition(self, data_dir_flag: Optional[str]) -> str:
        """synthetic, real, or both kinds as the sweep ran them (``synthetic,real``)."""
        if self.data_kinds:
            return ",".join(self.data_kinds)
        return "real" if self.data_source or self.data_dir or data_dir_flag else "synthetic"

    def conditions(self) -> Dict[str, Any]:
        """What the plan measures under, in the reference CSV's terms: precision, num_gpus, variable_update,
        data. fp16 and real data come from the plan's own fields where it has them, else from the
        pass-through flags (``--use_fp16``, ``--data_dir``), the only way an older plan could ask for them."""

        def flag(name: str) -> Optional[str]:
            args = [str(a) for a in self.extra_args or []]
            for i, arg in enumerate(args):
                if arg == "--" + name:
                    return args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else "true"
                if arg.startswith("--%s=" % name):
                    return arg.split("=", 1)[1]
            return None

        def on(name: str) -> bool:
            value = flag(name)
            return value is not None and value.strip().lower() in ("1", "true", "yes", "t", "y")

        fp16 = self.fp16 or on("use_fp16")
        xla = self.xla or on("xla") or on("xla_compile")
        num_gpus = self.num_gpus[0] if isinstance(self.num_gpus, (list, tuple)) else self.num_gpus
        return {
            "precision": "fp16" if fp16 else "fp32",
            "num_gpus": int(num_gpus or 1) * self.job_workers(),
            "variable_update": str(self.variable_update or DEFAULT_VARIABLE_UPDATE),
            "data": self._data_condition(flag("data_dir")),
            "xla": "yes" if xla else "no",
        }


def _recorded(value: object, bound: Bound) -> Any:  # Any: Bound.parse's int (a whole bound) or float
    return None if value is None else bound.parse(value)


def _recorded_flow(data: Mapping[str, Any]) -> Dict[str, Any]:
    """fp16, xla, until_ci, max_runs and order as recorded (absent in sweeps from before them: defaults)."""
    order = str(data.get("order") or "grouped")
    if order not in ORDERS:
        raise ValueError("order %r is not one of %s" % (order, ", ".join(ORDERS)))
    return {
        "fp16": data.get("fp16") is True,
        "xla": data.get("xla") is True,
        "until_ci": _recorded(data.get("until_ci"), bounds.UNTIL_CI),
        "max_runs": _recorded(data.get("max_runs"), bounds.MAX_RUNS),
        "order": order,
    }


def _recorded_data(data: Mapping[str, Any]) -> Dict[str, Any]:
    """data_source, data_dir and data_kinds as recorded (absent in sweeps from before host-fed data:
    synthetic; data_kinds absent before sweeps of both kinds: None)."""
    source, directory, kinds = data.get("data_source"), data.get("data_dir"), data.get("data_kinds")
    if source is not None:
        source = parse_data(str(source))
    if directory is not None and not isinstance(directory, str):
        raise TypeError("data_dir is not a path")
    if kinds is not None:
        if not isinstance(kinds, list) or sorted(map(str, kinds)) != sorted(DATA_KINDS) or source is None:
            raise ValueError("data_kinds %r is not both of %s with a data_source" % (kinds, ", ".join(DATA_KINDS)))
        kinds = [str(k) for k in kinds]
    return {"data_source": source, "data_dir": directory, "data_kinds": kinds}


def parse_data(text: str) -> Optional[str]:
    """``--data synthetic|generated[:N]`` as the plan records it: None (synthetic), ``generated:N`` or
    ``data-dir`` (recorded plans only); UsageError otherwise."""
    kind, sep, count = str(text).strip().lower().partition(":")
    if kind == "synthetic" and not sep:
        return None
    if kind == "data-dir" and not sep:
        return "data-dir"
    if kind == "generated":
        try:
            n = bounds.GENERATED_IMAGES.parse(count) if sep else DEFAULT_GENERATED_IMAGES
        except OutOfBounds as exc:
            raise UsageError("--data generated:N: N %s" % exc) from None
        return "generated:%d" % n
    raise UsageError(
        "--data takes synthetic or generated[:N] (e.g. --data generated:500), got %r; for your own "
        "ImageNet TFRecords use --data-dir DIR" % text
    )


def _recorded_cluster(data: Mapping[str, Any]) -> Dict[str, Any]:
    """The cluster fields of a recorded plan (absent in sweeps written before them: None)."""
    cluster = data.get("cluster")
    if cluster not in (None,) + CLUSTER_BACKENDS:
        raise ValueError("cluster %r" % (cluster,))
    return {
        "cluster": cluster,
        "workers": _recorded(data.get("workers"), bounds.WORKERS),
        "ps": _recorded(data.get("ps"), bounds.PS),
        "fleet": None if data.get("fleet") is None else bool(data.get("fleet")),
    }


def _recorded_counts(value: Optional[List[int]]) -> Optional[List[int]]:
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError("gpu_counts is not a list")
    counts = [bounds.NUM_GPUS.parse(v) for v in value]
    if len(set(counts)) != len(counts):
        # as --num-gpus refuses it: each count would run every configuration twice
        raise OutOfBounds("gpu_counts lists a value twice: %s" % ",".join(str(c) for c in counts))
    return counts or None


# tf_cnn_benchmarks' default batch size per model: the size each model class passes to Model.__init__ (the
# script's --batch_size=0), as upstream master's models/*.py give them (imagenet; the CIFAR-10-only models
# their CIFAR-10 size). tests/test_plan_defaults.py reads them back from the real repository.
UPSTREAM_BATCH_SIZES = {
    "alexnet": 512,
    "googlenet": 32,
    "inception3": 32,
    "inception4": 32,
    "lenet": 32,
    "ncf": 2048,
    "overfeat": 32,
    "trivial": 32,
    "vgg11": 64,
    "vgg16": 64,
    "vgg19": 64,
    "resnet50": 64,
    "resnet50_v1.5": 64,
    "resnet50_v2": 64,
    "resnet101": 32,
    "resnet101_v2": 32,
    "resnet152": 32,
    "resnet152_v2": 32,
    "official_resnet18": 32,
    "official_resnet18_v2": 32,
    "official_resnet34": 32,
    "official_resnet34_v2": 32,
    "official_resnet50": 128,
    "official_resnet50_v2": 128,
    "official_resnet101": 32,
    "official_resnet101_v2": 32,
    "official_resnet152": 32,
    "official_resnet152_v2": 32,
    "official_resnet200": 32,
    "official_resnet200_v2": 32,
    "resnet20": 128,
    "resnet20_v2": 128,
    "resnet32": 128,
    "resnet32_v2": 128,
    "resnet44": 128,
    "resnet44_v2": 128,
    "resnet56": 128,
    "resnet56_v2": 128,
    "resnet110": 128,
    "resnet110_v2": 128,
    "densenet40_k12": 64,
    "densenet100_k12": 64,
    "densenet100_k24": 64,
    "mobilenet": 32,
    "nasnet": 32,
    "nasnetlarge": 16,
    "ssd300": 32,
    "deepspeech2": 128,
}


def check_model(name: str) -> str:
    """The model's name as tf_cnn_benchmarks spells it (``ResNet50`` -> ``resnet50``), or UsageError with the
    closest known names."""
    canonical = str(name).strip().lower()
    if canonical in KNOWN_MODELS:
        return canonical
    close = difflib.get_close_matches(canonical, sorted(KNOWN_MODELS), n=4, cutoff=0.6)
    # resnet5 is as close to resnet56 as to resnet50; the seed's models are the likelier meaning
    defaults = [m for m, _ in DEFAULT_MODELS]
    close.sort(key=lambda m: m not in defaults)
    hint = " (did you mean %s?)" % " or ".join(close) if close else ""
    # the closest first, then the rest by name: the list stays a line (prose.some_of)
    ranked = sorted(KNOWN_MODELS, key=lambda m: (-difflib.SequenceMatcher(None, canonical, m).ratio(), m))
    raise UsageError(
        "unknown model %r%s; tf_cnn_benchmarks knows %d: %s (Tab completes every name: `tfcnnwrap completion --help`)"
        % (name, hint, len(KNOWN_MODELS), some_of(ranked))
    )


def _int(value: object, bound: Bound, flag: Optional[str] = None) -> Any:  # Any: as _recorded
    """``value`` within ``bound`` (tfcnnwrap.bounds), or UsageError naming ``flag``."""
    try:
        return bound.parse(value)
    except OutOfBounds as exc:
        raise UsageError("%s %s" % (flag or bound.flag, exc)) from None


def parse_batch_size(item: str) -> Tuple[str, int]:
    """'vgg16=32' -> ('vgg16', 32)."""
    model, sep, size = str(item).partition("=")
    model = model.strip()
    if not sep or not model or not size.strip():
        raise UsageError("--batch-size takes MODEL=N (e.g. --batch-size vgg16=32), got %r" % item)
    model = check_model(model)
    return model, _int(size, bounds.BATCH_SIZE, "--batch-size %s: the batch size" % model)


def parse_models(text: str) -> List[str]:
    names = []
    for part in str(text).split(","):
        name = part.strip()
        if not name:
            continue
        name = check_model(name)
        if name not in names:
            names.append(name)
    if not names:
        raise UsageError("--models needs at least one model name, e.g. --models resnet50,vgg16")
    return names


def flag_name(arg: str) -> Optional[str]:
    """The absl flag a pass-through argument sets, or None for a value.

    absl reads ``--flag=v``, ``-flag=v``, ``--flag v``, ``-flag v``, ``--flag`` and ``--noflag``, so all
    of them are normalised before the plan's own flags are looked for: ``-model=vgg16`` or ``--nomodel``
    would otherwise relabel a run. ``--noX`` comes back as ``X`` when X is a managed flag.
    """
    if not arg.startswith("-") or arg in ("-", "--"):
        return None
    name = arg[2:] if arg.startswith("--") else arg[1:]
    name = name.split("=", 1)[0].strip()
    if name.startswith("no") and name[2:] in MANAGED_FLAGS:
        return name[2:]
    return name


# --fp16 / --xla: the option and the upstream flags it stands for, the branches' own spelling first. The one
# table: the plan's features, the pass-through check (given both ways, in any spelling, --noX included, refused)
# and features.py's per-branch flags.
FEATURE_FLAGS = {"fp16": ("--fp16", ("use_fp16",)), "xla": ("--xla", ("xla", "xla_compile"))}


def _feature_clash(name: str, features: Sequence[str]) -> Optional[str]:
    for feature in features:
        ours, theirs = FEATURE_FLAGS[feature]
        if name in theirs or (name.startswith("no") and name[2:] in theirs):
            return ours
    return None


def check_extra_args(extra: Sequence[str], features: Sequence[str] = ()) -> List[str]:
    """Pass-through flags after `--`: refuse those that would contradict the plan, in any spelling.

    ``features``: the plan's "fp16" / "xla"; their upstream flags may still come after -- on their own.
    """
    args = list(extra or [])
    if args and args[0] == "--":
        args = args[1:]
    for arg in args:
        name = flag_name(arg)
        clash = _feature_clash(name, features) if name else None
        if clash:
            raise UsageError(
                "%s sets %s itself: pass it one way, drop %s after -- (or drop %s)"
                % (clash, arg.split("=", 1)[0], arg.split("=", 1)[0], clash)
            )
        if name in MANAGED_FLAGS:
            raise UsageError(
                "pass %s through tfcnnwrap's own flag %s, not after -- (it sets --%s itself)"
                % (arg.split("=", 1)[0], MANAGED_FLAGS[name], name)
            )
        if name in UNCHECKABLE_FLAGS:
            raise UsageError(
                "%s cannot be passed after --: the flags it holds could contradict the plan; "
                "pass them one by one" % arg.split("=", 1)[0]
            )
    return args


def default_batch_size(name: str, quick: bool = False) -> int:
    """The seed's size where it chose one, else tf_cnn_benchmarks' own (what the script runs by hand with no
    --batch_size); divided by 8 under --quick."""
    size = dict(DEFAULT_MODELS).get(name) or UPSTREAM_BATCH_SIZES.get(name)
    if size is None:
        raise UsageError("%s has no default batch size; give one with --batch-size %s=N" % (name, name))
    return max(1, size // QUICK_BATCH_DIVISOR) if quick else size


@dataclass(frozen=True)
class SweepArgs:
    """The sweep's options as the command line gave them (cli/sweep.py builds it once; argparse has bounded the
    numbers); a default is what `sweep` with no flags gives. ``build_plan`` checks how they combine."""

    # what to run (recorded in the plan; refused with --resume)
    models: Optional[str] = None  # "resnet50,vgg16", checked by parse_models
    batch_size: Tuple[str, ...] = ()  # "MODEL=N", one per --batch-size
    runs: Optional[int] = None
    device: Optional[str] = None  # auto | gpu | cpu
    num_gpus: Optional[Tuple[int, ...]] = None
    variable_update: Optional[str] = None
    num_batches: Optional[int] = None
    num_warmup_batches: Optional[int] = None
    quick: bool = False
    data: Optional[str] = None  # "synthetic", "generated:N", checked by parse_data
    data_dir: Optional[str] = None
    fp16: bool = False
    xla: bool = False
    until_ci: Optional[float] = None
    max_runs: Optional[int] = None
    order: Optional[str] = None  # grouped | interleaved
    timeout: Optional[float] = None
    cooldown: Optional[float] = None
    cool_to: Optional[float] = None
    cluster: Optional[str] = None  # local | slurm
    workers: Optional[int] = None
    ps: Optional[int] = None
    fleet: bool = False
    extra: Tuple[str, ...] = ()  # after --, for tf_cnn_benchmarks
    # where (not the plan's)
    python: Optional[str] = None
    vendor_dir: Optional[str] = None
    out: Optional[str] = None
    resume: Optional[str] = None
    retry_failed: bool = False
    dry_run: bool = False


def _plan_models(args: SweepArgs, quick: bool) -> List[Tuple[str, int]]:
    """[(model, batch size)] from --models and --batch-size MODEL=N, defaults (divided under --quick) else."""
    explicit_sizes = dict(parse_batch_size(item) for item in args.batch_size)

    if args.models:
        names = parse_models(args.models)
    else:
        names = [m for m, _ in DEFAULT_MODELS]
    for model in explicit_sizes:
        if model not in names:
            if args.models:
                raise UsageError(
                    "--batch-size %s=%d names a model that --models leaves out; add it to --models"
                    % (model, explicit_sizes[model])
                )
            names.append(model)

    models = [(name, explicit_sizes.get(name) or default_batch_size(name, quick)) for name in names]
    return models


def build_plan(args: SweepArgs) -> Plan:
    """A Plan from the sweep's options, or UsageError naming the bad flag."""
    quick = bool(args.quick)
    models = _plan_models(args, quick)
    runs = _int(args.runs, bounds.RUNS) if args.runs is not None else (QUICK_RUNS if quick else DEFAULT_RUNS)

    counts = gpu_counts(args.num_gpus)
    variable_update = args.variable_update or DEFAULT_VARIABLE_UPDATE
    if variable_update not in VARIABLE_UPDATES:
        raise UsageError(
            "--variable-update %r is not one tf_cnn_benchmarks knows; choose one of %s"
            % (variable_update, ", ".join(VARIABLE_UPDATES))
        )
    if args.num_batches is not None:
        num_batches = _int(args.num_batches, bounds.NUM_BATCHES)
    else:
        num_batches = QUICK_NUM_BATCHES if quick else None
    if args.num_warmup_batches is not None:
        num_warmup = _int(args.num_warmup_batches, bounds.NUM_WARMUP_BATCHES)
    else:
        num_warmup = QUICK_NUM_WARMUP_BATCHES if quick else None
    timeout = None if args.timeout is None else float(_int(args.timeout, bounds.TIMEOUT))
    flow = _flow(args, runs)
    features = [f for f in FEATURE_FLAGS if flow[f]]
    data = data_fields(args)
    if data["data_kinds"] and args.order is None:
        flow["order"] = "interleaved"  # both kinds side by side, so a slow drift weighs on each alike

    return Plan(
        models=models,
        runs=runs,
        device=args.device or "auto",
        num_gpus=counts[0],
        variable_update=variable_update,
        num_batches=num_batches,
        num_warmup_batches=num_warmup,
        quick=quick,
        timeout_s=timeout,
        extra_args=check_extra_args(args.extra, features),
        gpu_counts=counts if len(counts) > 1 else None,
        cooldown_s=_optional_float(args.cooldown, bounds.COOLDOWN),
        cool_to_c=_optional_float(args.cool_to, bounds.COOL_TO),
        **data,
        **flow,
        **cluster_fields(args, variable_update),
    )


def _flow(args: SweepArgs, runs: int) -> Dict[str, Any]:
    """fp16, xla, until_ci, max_runs and order from the flags (argparse has bounded the numbers)."""
    until_ci = args.until_ci
    max_runs = args.max_runs
    if max_runs is not None and until_ci is None:
        raise UsageError("--max-runs caps --until-ci; add --until-ci PCT (or use --runs N for a fixed count)")
    if until_ci is not None:
        until_ci = float(_int(until_ci, bounds.UNTIL_CI))
        max_runs = _int(max_runs, bounds.MAX_RUNS) if max_runs is not None else max(DEFAULT_MAX_RUNS, runs)
        if max_runs < runs:
            raise UsageError("--max-runs %d is below --runs %d; raise --max-runs or lower --runs" % (max_runs, runs))
    order = args.order or "grouped"
    if order not in ORDERS:
        raise UsageError("--order takes %s, got %r" % (" or ".join(ORDERS), order))
    return {"fp16": bool(args.fp16), "xla": bool(args.xla), "until_ci": until_ci, "max_runs": max_runs, "order": order}


def gpu_counts(value: Optional[Union[str, int, Sequence[int]]]) -> List[int]:
    """``--num-gpus`` as a list of counts: the CLI's parsed list, a single number, or text ``"1,2,4"``."""
    if value is None:
        return [DEFAULT_NUM_GPUS]
    try:
        if isinstance(value, (list, tuple)):
            counts = [bounds.NUM_GPUS.parse(v) for v in value]
            if len(set(counts)) != len(counts):
                raise OutOfBounds("lists a value twice: %s" % ",".join(str(c) for c in counts))
            return counts
        return bounds.NUM_GPUS.parse_list(value) if isinstance(value, str) else [bounds.NUM_GPUS.parse(value)]
    except OutOfBounds as exc:
        raise UsageError("--num-gpus %s" % exc) from None


def parse_data_kinds(text: str) -> Tuple[Optional[str], Optional[List[str]]]:
    """``--data`` as (data_source, data_kinds): one kind (``parse_data``, kinds None), or both in one sweep,
    ``synthetic,generated[:N]`` in either order: (``generated:N``, their DATA_KINDS in that order)."""
    parts = [part.strip() for part in str(text).split(",")]
    if len(parts) == 1:
        return parse_data(parts[0]), None
    sources = [parse_data(part) for part in parts]
    if len(sources) != 2 or sources.count(None) != 1 or "data-dir" in sources:
        raise UsageError(
            "--data takes one kind, or synthetic and one generated[:N] to run both in one sweep "
            "(--data synthetic,generated:500), got %r" % text
        )
    return next(s for s in sources if s is not None), ["synthetic" if s is None else "real" for s in sources]


def data_fields(args: SweepArgs) -> Dict[str, Any]:
    """data_source, data_kinds (and data_dir for --data-dir) from ``--data`` / ``--data-dir``; the directory is
    checked by the sweep (environment/datagen.py), the plan stays pure."""
    data_dir, data = args.data_dir, args.data
    source, kinds = parse_data_kinds(data) if data is not None else (None, None)
    if data_dir is not None and source is not None:
        raise UsageError("--data-dir runs on your records and --data %s on others: give one of them" % data)
    if data_dir is not None:
        source = "data-dir"
    if source is not None:
        clash = [a.split("=", 1)[0] for a in args.extra if flag_name(str(a)) in ("data_dir", "data_name")]
        if clash:
            raise UsageError(
                "%s sets --data_dir and --data_name itself: drop %s after --"
                % ("--data-dir" if data_dir is not None else "--data", clash[0])
            )
    return {"data_source": source, "data_dir": data_dir, "data_kinds": kinds}


def cluster_fields(args: SweepArgs, variable_update: str) -> Dict[str, Any]:
    """Plan fields of ``--cluster/--workers/--ps/--fleet``, checked as far as the flags alone allow (the
    checkout's branch is checked once it is known, before anything runs)."""
    cluster = args.cluster
    workers, ps = args.workers, args.ps
    fleet = bool(args.fleet)
    if cluster is None:
        given = [
            flag
            for flag, value in (("--workers", workers), ("--ps", ps), ("--fleet", fleet or None))
            if value is not None
        ]
        if given == ["--fleet"]:
            # a fleet runs the single-node sweep on every node of a Slurm allocation; local has no fleet
            raise UsageError("--fleet needs --cluster slurm (run it inside a Slurm allocation)")
        if given:
            raise UsageError("%s needs --cluster local or --cluster slurm" % " and ".join(given))
        return {}
    if fleet:
        if cluster != "slurm":
            raise UsageError("--fleet runs the sweep on every node of a Slurm allocation: use --cluster slurm --fleet")
        if workers is not None or ps is not None:
            raise UsageError("--fleet runs the single-node sweep on each node: drop --workers/--ps, or drop --fleet")
        return {"cluster": cluster, "fleet": True}
    if workers is None:
        raise UsageError(
            "--cluster %s runs distributed jobs: say how many with --workers N (and --ps N for "
            "parameter_server)" % cluster
        )
    ps, _ = layout.validate(variable_update, _int(workers, bounds.WORKERS), None if ps is None else _int(ps, bounds.PS))
    return {"cluster": cluster, "workers": workers, "ps": ps}


def _optional_float(value: Optional[float], bound: Bound) -> Optional[float]:
    return None if value is None else float(bound.parse(value))


PLAN_FLAGS = (
    ("models", "--models"),
    ("batch_size", "--batch-size"),
    ("runs", "--runs"),
    ("device", "--device"),
    ("num_gpus", "--num-gpus"),
    ("variable_update", "--variable-update"),
    ("num_batches", "--num-batches"),
    ("num_warmup_batches", "--num-warmup-batches"),
    ("quick", "--quick"),
    ("timeout", "--timeout"),
    ("fp16", "--fp16"),
    ("xla", "--xla"),
    ("until_ci", "--until-ci"),
    ("max_runs", "--max-runs"),
    ("order", "--order"),
    ("out", "--out"),
    ("extra", "-- EXTRA"),
    ("cluster", "--cluster"),
    ("workers", "--workers"),
    ("ps", "--ps"),
    ("fleet", "--fleet"),
    ("cooldown", "--cooldown"),
    ("cool_to", "--cool-to"),
    ("data", "--data"),
    ("data_dir", "--data-dir"),
)


def plan_flags_given(args: SweepArgs) -> List[Any]:
    """The plan flags a user gave (refused with --resume: the sweep's own plan rules)."""
    given = []
    for attr, flag in PLAN_FLAGS:
        value = getattr(args, attr)
        # identity, not equality: --num-warmup-batches 0 is given (0 == False)
        if not (value is None or value is False or value == ()):
            given.append(flag)
    return given
