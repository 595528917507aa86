"""The task list of one distributed tf_cnn_benchmarks job (pure: no processes, no sockets, no files).

tf_cnn_benchmarks runs distributed with its own runtime: every task is the same script with
``--job_name=ps|worker|controller --task_index=i --ps_hosts=... --worker_hosts=... [--controller_host=...]``.
Which tasks a job needs, which one prints the job's figure and which never exit depend on
``--variable_update`` (checked against upstream's benchmark_cnn.py on every cnn_tf_v*_compatible branch):

- parameter_server, distributed_replicated: one or more ps tasks, which never exit (``join_server``);
  worker 0 reports. distributed_replicated is refused by upstream without ``--job_name``.
- collective_all_reduce (branches from cnn_tf_v1.9 on): workers only, ``--all_reduce_spec=collective``.
- distributed_all_reduce: workers plus one controller that drives them in a single session; the controller
  reports and the workers block in ``join_server`` until stopped. Needs an all_reduce_spec.
- replicated, independent: refused in distributed mode by upstream; horovod is started by mpirun.

Every worker prints ``total images/sec`` = workers x its own rate: already the cluster's total, so the job's
figure is the reporting task's total, never a sum. The plan round-trips through JSON, because the task entry
point (``python -m tfcnnwrap.cli.node task``) and Slurm read it from a file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from tfcnnwrap import jsontext
from tfcnnwrap.errors import DamagedFile, UsageError

FORMAT = 1
ROLES = ("ps", "worker", "controller")
PS_MODES = ("parameter_server", "distributed_replicated")
ALL_REDUCE_MODES = ("collective_all_reduce", "distributed_all_reduce")
DISTRIBUTED_MODES = PS_MODES + ALL_REDUCE_MODES
LOCAL_ONLY_MODES = ("replicated", "independent", "horovod")
DEFAULT_BASE_PORT = 2222  # TensorFlow's customary first port; each further task on a host takes the next
DEFAULT_DAR_SPEC = "pscpu"  # an all_reduce_spec that works across workers on CPUs and GPUs alike
# The flags a plan sets on every task; the same flags in the base command are dropped, not duplicated.
PLAN_FLAGS = ("job_name", "task_index", "ps_hosts", "worker_hosts", "controller_host", "variable_update")
# Upstream's own distributed test gives workers that share a machine 0.7 of its GPU memory between them.
SHARED_GPU_MEMORY = 0.7
SUPERVISOR_RECOVERY_WAIT_S = 30  # tf.train.Supervisor's default, which benchmark_cnn keeps
# Branches older than the first one with collective_all_reduce (cnn_tf_v1.9_compatible).
_NO_COLLECTIVE = ("cnn_tf_v1.5_compatible", "cnn_tf_v1.8_compatible")
_BRANCH_RE = re.compile(r"cnn_tf_v(\d+)\.(\d+)_compatible$")
_HOST_RE = re.compile(r"^[A-Za-z0-9_.:\[\]-]+$")


def modes_for_branch(branch: Optional[str]) -> Tuple[str, ...]:
    """The distributed variable_update values a checkout of ``branch`` knows (unknown branch: master's)."""
    match = _BRANCH_RE.match(branch or "")
    if branch in _NO_COLLECTIVE or (match and (int(match.group(1)), int(match.group(2))) < (1, 9)):
        return PS_MODES + ("distributed_all_reduce",)
    return DISTRIBUTED_MODES


@dataclass(frozen=True)
class Task:
    """One process of the job. ``reports``: its ``total images/sec`` is the job's figure. ``stop_at_end``:
    it never exits by itself (a ps; a worker under distributed_all_reduce), so it is stopped once the
    reporting tasks end. ``env``: variables set for this task only, as (name, value) pairs."""

    role: str
    index: int
    host: str
    port: int
    reports: bool = False
    stop_at_end: bool = False
    env: Tuple[Tuple[str, str], ...] = ()

    @property
    def address(self) -> str:
        return "%s:%d" % (self.host, self.port)

    @property
    def name(self) -> str:
        """``ps0``, ``worker1``, ``controller0``: the name in log files and messages."""
        return "%s%d" % (self.role, self.index)

    def to_dict(self) -> dict:
        return {
            "role": self.role,
            "index": self.index,
            "host": self.host,
            "port": self.port,
            "reports": self.reports,
            "stop_at_end": self.stop_at_end,
            "env": dict(self.env),
        }


@dataclass(frozen=True)
class ClusterPlan:
    mode: str
    tasks: Tuple[Task, ...]
    all_reduce_spec: Optional[str] = None
    branch: Optional[str] = None
    extra_worker_flags: Tuple[str, ...] = ()

    def by_role(self, role: str) -> List[Task]:
        return [t for t in self.tasks if t.role == role]

    @property
    def workers(self) -> int:
        return len(self.by_role("worker"))

    @property
    def startup_wait_s(self) -> float:
        """Seconds a job may wait before its first step beyond a single run's start-up: with a ps and several
        workers, TensorFlow's Supervisor has each non-chief worker look every 30 s (``recovery_wait_secs``)
        whether worker 0 has initialised the model, and worker 0's synchronous steps wait for them. Worth
        counting in a timeout or an estimate; all-reduce jobs run in one session or without the Supervisor
        wait (measured on 2 CPU cores, trivial model: 2-worker collective job 5-8 s; 2-worker ps job 18-38 s,
        depending on whether worker 0 was ready at the non-chief's first look)."""
        return float(SUPERVISOR_RECOVERY_WAIT_S) if self.mode in PS_MODES and self.workers > 1 else 0.0

    def reporting(self) -> List[Task]:
        return [t for t in self.tasks if t.reports]

    def to_stop(self) -> List[Task]:
        return [t for t in self.tasks if t.stop_at_end]

    def task(self, role: str, index: int) -> Task:
        for t in self.tasks:
            if t.role == role and t.index == index:
                return t
        raise KeyError("%s%d" % (role, index))

    def flags_for(self, task: Task) -> List[str]:
        """The distributed flags of ``task``, in the ``--name=value`` form every branch's absl accepts."""
        flags = ["--job_name=%s" % task.role, "--task_index=%d" % task.index]
        ps = self.by_role("ps")
        if ps:
            flags.append("--ps_hosts=" + ",".join(t.address for t in ps))
        flags.append("--worker_hosts=" + ",".join(t.address for t in self.by_role("worker")))
        controller = self.by_role("controller")
        if controller:
            flags.append("--controller_host=" + controller[0].address)
        flags.append("--variable_update=" + self.mode)
        if self.all_reduce_spec:
            flags.append("--all_reduce_spec=" + self.all_reduce_spec)
        if task.role == "worker":
            flags.extend(self.extra_worker_flags)
        return flags

    def argv_for(self, task: Task, base_argv: Sequence[str]) -> List[str]:
        """``base_argv`` (interpreter, script, the run's flags) with this task's distributed flags; the
        base's own values of those flags are dropped so that no branch sees a flag twice."""
        owned = set(PLAN_FLAGS)
        if self.all_reduce_spec:
            owned.add("all_reduce_spec")
        owned.update(f[2:].partition("=")[0] for f in self.extra_worker_flags)
        return drop_flags(base_argv, owned) + self.flags_for(task)

    def hostfile_lines(self) -> List[str]:
        """One host per task in task order: a Slurm ``SLURM_HOSTFILE`` for ``srun --distribution=arbitrary``,
        so that the task ``SLURM_PROCID`` picks runs on the host the plan gave it."""
        return [t.host for t in self.tasks]

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "mode": self.mode,
            "all_reduce_spec": self.all_reduce_spec,
            "branch": self.branch,
            "extra_worker_flags": list(self.extra_worker_flags),
            "tasks": [t.to_dict() for t in self.tasks],
        }

    def to_json(self) -> str:
        return jsontext.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ClusterPlan":
        try:
            return _plan_from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DamagedFile("not a tfcnnwrap cluster plan (%s): write it with ClusterPlan.to_json" % exc) from None

    @classmethod
    def from_json(cls, text: str) -> "ClusterPlan":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DamagedFile("the cluster plan is not JSON (%s): write it with ClusterPlan.to_json" % exc) from None
        return cls.from_dict(data)


def _plan_from_dict(data: Dict[str, Any]) -> ClusterPlan:
    if data.get("format", FORMAT) > FORMAT:
        raise ValueError("format %s is newer than this tfcnnwrap's %d" % (data["format"], FORMAT))
    tasks = []
    for item in data["tasks"]:
        if item["role"] not in ROLES:
            raise ValueError("unknown role %r" % item["role"])
        env = item.get("env") or {}
        tasks.append(
            Task(
                role=item["role"],
                index=_int(item["index"]),
                host=_host(item["host"]),
                port=_int(item["port"]),
                reports=bool(item.get("reports")),
                stop_at_end=bool(item.get("stop_at_end")),
                env=tuple((str(k), str(v)) for k, v in env.items()),
            )
        )
    if data["mode"] not in DISTRIBUTED_MODES:
        raise ValueError("mode %r" % data["mode"])
    return ClusterPlan(
        mode=data["mode"],
        tasks=tuple(tasks),
        all_reduce_spec=data.get("all_reduce_spec"),
        branch=data.get("branch"),
        extra_worker_flags=tuple(str(f) for f in data.get("extra_worker_flags") or ()),
    )


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%r is not a non-negative integer" % (value,))
    return value


def _host(value: str) -> str:
    if not isinstance(value, str) or not _HOST_RE.match(value):
        raise ValueError("%r is not a host name" % (value,))
    return value


def drop_flags(argv: Sequence[str], names: Iterable[str]) -> List[str]:
    """``argv`` without ``--name=value`` / ``--name value`` entries for ``names`` (all value flags)."""
    names = set(names)
    kept = []
    skip_next = False
    for arg in argv:
        if skip_next:
            skip_next = False
            continue
        if arg.startswith("--"):
            name, eq, _ = arg[2:].partition("=")
            if name in names:
                skip_next = not eq
                continue
        kept.append(arg)
    return kept


def flag_value(argv: Sequence[str], name: str) -> Optional[str]:
    """The last value ``argv`` gives ``--name`` (absl's rule: the last one wins), or None."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--" + name and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--%s=" % name):
            found = arg.split("=", 1)[1]
    return found


def validate(
    mode: str, workers: int, ps: Optional[int], branch: Optional[str] = None, all_reduce_spec: Optional[str] = None
) -> Tuple[int, Optional[str]]:
    """(number of ps, all_reduce_spec) for a valid job; UsageError naming the fix otherwise."""
    if mode in ("replicated", "independent"):
        raise UsageError(
            "--variable-update %s runs on one machine only (tf_cnn_benchmarks refuses it with --job_name): "
            "with --cluster use parameter_server, distributed_replicated, collective_all_reduce or "
            "distributed_all_reduce" % mode
        )
    if mode == "horovod":
        raise UsageError(
            "--variable-update horovod is started by mpirun or horovodrun, not by tfcnnwrap's "
            "--cluster: drop --cluster, or use parameter_server or collective_all_reduce"
        )
    if mode not in DISTRIBUTED_MODES:
        raise UsageError(
            "unknown --variable-update %r: with --cluster use one of %s" % (mode, ", ".join(DISTRIBUTED_MODES))
        )
    if mode not in modes_for_branch(branch):
        raise UsageError(
            "%s needs a tf_cnn_benchmarks checkout of cnn_tf_v1.9_compatible or newer (this one is "
            "%s): run `tfcnnwrap setup --branch master`, or use parameter_server" % (mode, branch)
        )
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UsageError("a cluster job needs at least one worker, not %r: pass --workers 1 or more" % (workers,))
    if mode in PS_MODES:
        ps = 1 if ps is None else ps
        if isinstance(ps, bool) or not isinstance(ps, int) or ps < 1:
            raise UsageError("%s keeps its variables on parameter servers: pass --ps 1 or more" % mode)
    elif ps:
        raise UsageError("%s uses no parameter servers: drop --ps %s" % (mode, ps))
    else:
        ps = 0
    return ps, _spec(mode, workers, all_reduce_spec)


def _spec(mode: str, workers: int, spec: Optional[str]) -> Optional[str]:
    if mode == "collective_all_reduce":
        if spec not in (None, "", "collective"):
            raise UsageError(
                "collective_all_reduce takes --all_reduce_spec=collective only, not %r: drop it "
                "from the extra flags" % spec
            )
        return "collective"
    if mode == "distributed_all_reduce":
        if spec and workers > 1 and "nccl" in spec.split("#")[-1].split("/")[0]:
            raise UsageError(
                "--all_reduce_spec=%s cannot reduce across workers: use pscpu (the default), psgpu or xring" % spec
            )
        return spec or DEFAULT_DAR_SPEC
    return None


def build_plan(
    mode: str,
    workers: int,
    ps: Optional[int] = None,
    hosts: Sequence[str] = ("localhost",),
    ports: Optional[Sequence[int]] = None,
    base_port: int = DEFAULT_BASE_PORT,
    branch: Optional[str] = None,
    all_reduce_spec: Optional[str] = None,
    gpus_per_host: Optional[int] = None,
    gpus_per_worker: int = 1,
) -> ClusterPlan:
    """The job's tasks: ps first, then workers, then the controller (that order is also the Slurm
    ``SLURM_PROCID`` order), placed round-robin over ``hosts`` in that order. ``ports``: one per task in
    that order (the local backend's free ports); otherwise each host counts up from ``base_port``. ps and
    controller get no GPU; with ``gpus_per_host`` known (None: leave the workers' GPUs alone, as under
    Slurm) workers get GPUs of their own when they fit, else a share of every GPU's memory."""
    ps, spec = validate(mode, workers, ps, branch, all_reduce_spec)
    hosts = [_checked_host(h) for h in hosts]
    if not hosts:
        raise UsageError("a cluster plan needs hosts: give at least one host name")
    kinds = [("ps", i) for i in range(ps)] + [("worker", i) for i in range(workers)]
    if mode == "distributed_all_reduce":
        kinds.append(("controller", 0))
    # One round-robin over all tasks, not one per role: with as many hosts as tasks, each task gets a host of
    # its own (a ps beside a worker would share its network card and CPU with it).
    roles = [(role, index, hosts[n % len(hosts)]) for n, (role, index) in enumerate(kinds)]
    addresses = _ports(roles, ports, base_port)
    gpu_env, extra = _gpu_placement(roles, gpus_per_host, gpus_per_worker)
    tasks = []
    for (role, index, host), port in zip(roles, addresses):
        reports = role == "controller" or (role == "worker" and index == 0 and mode != "distributed_all_reduce")
        stop = role == "ps" or (role == "worker" and mode == "distributed_all_reduce")
        tasks.append(
            Task(role, index, host, port, reports=reports, stop_at_end=stop, env=gpu_env.get((role, index), ()))
        )
    return ClusterPlan(mode=mode, tasks=tuple(tasks), all_reduce_spec=spec, branch=branch, extra_worker_flags=extra)


def _checked_host(host: str) -> str:
    try:
        return _host(host)
    except ValueError:
        raise UsageError("%r is not a host name: give names or addresses such as node1 or 10.0.0.2" % (host,)) from None


def _ports(roles: List[Tuple[str, int, str]], ports: Optional[Sequence[int]], base_port: int) -> List[int]:
    if ports is not None:
        ports = list(ports)
        if len(ports) != len(roles):
            raise UsageError(
                "the cluster plan has %d tasks but %d ports: give one port per task" % (len(roles), len(ports))
            )
        if len(set(zip((r[2] for r in roles), ports))) != len(ports):
            raise UsageError("two tasks of the cluster plan share a host and port: give each its own port")
        return ports
    next_port: dict = {}
    out = []
    for _, _, host in roles:
        port = next_port.get(host, base_port)
        next_port[host] = port + 1
        out.append(port)
    return out


def _gpu_placement(
    roles: List[Tuple[str, int, str]], gpus_per_host: Optional[int], gpus_per_worker: int
) -> Tuple[Dict[Any, Any], Tuple[Any, ...]]:
    """({(role, index): env pairs}, extra worker flags) for ``gpus_per_host`` GPUs on each host. A ps or a
    controller never sees a GPU (as in upstream's own distributed test): a TensorFlow server that sees one
    takes its memory from the worker beside it."""
    env = {}
    per_host: dict = {}
    for role, index, host in roles:
        if role == "worker":
            per_host.setdefault(host, []).append(index)
        else:
            env[(role, index)] = (("CUDA_VISIBLE_DEVICES", ""),)
    if not gpus_per_host:  # None: unknown (Slurm sets each task's GPUs); 0: none to share
        return env, ()
    crowded = max(len(v) for v in per_host.values())
    if crowded * gpus_per_worker <= gpus_per_host:
        for indexes in per_host.values():
            for slot, index in enumerate(indexes):
                ids = range(slot * gpus_per_worker, (slot + 1) * gpus_per_worker)
                env[("worker", index)] = (("CUDA_VISIBLE_DEVICES", ",".join(str(i) for i in ids)),)
        return env, ()
    return env, ("--gpu_memory_frac_for_testing=%.4f" % (SHARED_GPU_MEMORY / crowded),)
