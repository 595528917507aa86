"""Stand-in for tensorflow/benchmarks' scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py, for tests only.

It accepts the real flags (absl style), prints the real log format and can fake the ordinary failures.
It runs on any Python 3 without TensorFlow. Behaviour is steered by environment variables:

FAKE_TFCNN_IPS         "model=v1/v2/v3,..." total images/sec of successive invocations of a model (cycled);
                       default: the seed's RTX 2070 figure for the model, else 100.0
FAKE_TFCNN_FAULTS      "key=mode,..." where key is a model, "model#N" (its Nth invocation), "#N" (the Nth
                       invocation overall) or "*"; modes: oom, crash, segv, hang, hang_tree, no_total,
                       garbage, huge, slow
FAKE_TFCNN_STATE       directory that counts invocations (needed for the #N keys and for IPS sequences)
FAKE_TFCNN_STEP_DELAY  seconds between step lines (default 0)
FAKE_TFCNN_HUGE_MB     size of the noise that mode "huge" prints (default 100)
FAKE_TFCNN_REJECT      "flag1,flag2": flags this "branch" does not know (absl's flag error, exit 1)
FAKE_TFCNN_TF_VERSION  what the "TensorFlow:" header says (default 1.12)
FAKE_TFCNN_CRLF        "1": end lines with CRLF
FAKE_TFCNN_READY_FIFO  a named pipe: modes hang/hang_tree write "<pid> <child pid>" into it once hanging, so a
                       test can block on it instead of sleeping
FAKE_TFCNN_WAIT_FIFO   a named pipe to read a line from before starting (blocks until its writer, e.g. the
                       stand-in nvidia-smi, has written), so that a test's ordering needs no sleeps
FAKE_TFCNN_FLAGS_OUT   a file: each invocation appends the flags it parsed as one JSON object per line (upstream's
                       header does not show --use_fp16/--xla, so tests read what reached the benchmark here)
FAKE_TFCNN_HARNESS_OUT a file: each invocation appends one line, "pandas" or "no pandas": whether the harness
                       (tfcnnwrap: the first ancestor that is not a supervisor, `python -I -S -c`) has pandas loaded
                       while this run runs (Linux)
FAKE_TFCNN_ANCESTRY_OUT a file: each invocation appends one JSON line, the pids from its parent up to the harness
                       (its supervisors, then tfcnnwrap) (Linux)
FAKE_TFCNN_GPU_EFFICIENCY  scaling efficiency (default 1.0): with --num_gpus=N > 1 the totals are the
                       one-device figure (FAKE_TFCNN_IPS) x N x this, as tf_cnn_benchmarks reports images/sec over
                       every device (batch size per device)
FAKE_TFCNN_DRIFT       percent: the step lines' images/sec change by this much from first to last (a card heating up:
                       negative); the total stays FAKE_TFCNN_IPS's
mode leave_child       a normal run that, before exiting, starts a child which keeps stdout open and sleeps; once
                       the benchmark has exited the child writes "<benchmark pid> <child pid>" into
                       FAKE_TFCNN_READY_FIFO (if set)
mode leave_child_setsid  the same, the child in a session of its own (setsid)
mode hang_tree_setsid  as hang_tree, the child in a session of its own (setsid), holding stdout
mode hang_after_total  a normal run that prints its total, then writes "<pid> 0" into FAKE_TFCNN_READY_FIFO (if
                       set) and hangs

--data_dir=DIR (with --data_name)  the header's dataset is "imagenet", not "imagenet (synthetic)"; a DIR without
                       train-*-of-* files fails as upstream's input pipeline does (ValueError, exit 1)

Distributed mode (--job_name=ps|worker|controller, as upstream): each task binds its own port from
--ps_hosts/--worker_hosts/--controller_host (a taken port fails like TensorFlow: "Could not start gRPC
server") and listens once it is up; a worker waits until every ps accepts connections (a missing ps: it
hangs silently), a controller until every worker does. A ps prints "Running parameter server N" and never
exits; under distributed_all_reduce a worker prints "Starting worker N" and never exits while the controller
reports. A worker's step lines show its own rate (the FAKE_TFCNN_IPS figure) and its total is workers x that
rate, the cluster's total.
Upstream's refusals are copied: replicated/independent/horovod with --job_name, distributed_replicated
without, collective_all_reduce/distributed_all_reduce without an all_reduce_spec, the latter without a
controller.
FAKE_TFCNN_TASK_FAULTS "task=mode,..." where task is ps0, worker1, controller0...; modes as FAKE_TFCNN_FAULTS
                       (a ps or a blocked worker knows crash, oom and exit0: ending by itself)
FAKE_TFCNN_PID_DIR     directory: each task writes its pid to <role><index>.pid there when it starts
FAKE_TFCNN_HOST_FACTOR "host=factor,...": on the machine whose hostname is host, images/sec x factor (a slow node)
FAKE_TFCNN_TASKS_FIFO  a named pipe: each distributed task writes "<role><index> <hostname> <pid>" into it once its
                       server listens, a single run "run <hostname> <pid>" after its header (skipped when nobody
                       reads it), so a test can act on a running task
"""

import glob
import os
import signal
import subprocess
import sys
import time

SEED_2070 = {"resnet50": 176.93, "resnet152": 62.22, "inception3": 113.24, "vgg16": 110.23, "alexnet": 2258.94}

KNOWN_FLAGS = {
    "model",
    "batch_size",
    "num_gpus",
    "variable_update",
    "num_batches",
    "num_warmup_batches",
    "device",
    "data_format",
    "use_fp16",
    "optimizer",
    "data_dir",
    "data_name",
    "display_every",
    "xla",
    "xla_compile",
    "local_parameter_device",
    "all_reduce_spec",
    "forward_only",
    "print_training_accuracy",
    "num_epochs",
    "distortions",
    "mkl",
    "num_intra_threads",
    "num_inter_threads",
    "train_dir",
    "allow_growth",
    "gpu_memory_frac_for_testing",
    "use_tf_layers",
    "tfprof_file",
    "trace_file",
    "benchmark_log_dir",
}

DISTRIBUTED_FLAGS = {
    "job_name",
    "task_index",
    "ps_hosts",
    "worker_hosts",
    "controller_host",
    "server_protocol",
    "cross_replica_sync",
    "horovod_device",
}
KNOWN_FLAGS |= DISTRIBUTED_FLAGS

NL = "\r\n" if os.environ.get("FAKE_TFCNN_CRLF") == "1" else "\n"


def out(text=""):
    sys.stdout.write(text + NL)
    sys.stdout.flush()


def _drift(step, num_batches):
    pct = float(os.environ.get("FAKE_TFCNN_DRIFT") or 0)
    return 1.0 + pct / 100.0 * step / max(1, num_batches - 1)


def flag_error(message):
    sys.stderr.write(
        "FATAL Flags parsing error: %s%sPass --helpshort or --helpfull to see help on flags.%s" % (message, NL, NL)
    )
    sys.stderr.flush()
    sys.exit(1)


def parse_flags(argv):
    rejected = {f for f in os.environ.get("FAKE_TFCNN_REJECT", "").split(",") if f}
    flags = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            flag_error("Received unknown positional arguments: %s" % arg)
        name, eq, value = arg[2:].partition("=")
        if not eq:
            if name.startswith("no") and name[2:] in KNOWN_FLAGS:
                name, value = name[2:], "false"
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                i += 1
                value = argv[i]
            else:
                value = "true"
        if name not in KNOWN_FLAGS or name in rejected:
            flag_error("Unknown command line flag '%s'" % name)
        flags[name] = value
        i += 1
    return flags


def record_flags(flags):
    path = os.environ.get("FAKE_TFCNN_FLAGS_OUT")
    if path:
        import json

        with open(path, "a") as fh:
            fh.write(json.dumps(flags, sort_keys=True) + "\n")


def _parent_of(pid):
    with open("/proc/%d/stat" % pid, "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


def _is_supervisor(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as fh:
        return fh.read().split(b"\0")[1:4] == [b"-I", b"-S", b"-c"]


def ancestry():
    """Our ancestors' pids from our parent up to the harness: the supervisors (one per run, and the sweep's
    shared one above them when there is one), then tfcnnwrap."""
    chain = [os.getppid()]
    while _is_supervisor(chain[-1]) and len(chain) < 8:
        chain.append(_parent_of(chain[-1]))
    return chain


def record_harness():
    """Whether the harness (tfcnnwrap, above its supervisors) has pandas loaded now, from its memory map: the
    harness must not load it while a benchmark runs; and the chain of ancestors up to it."""
    path, chain_path = os.environ.get("FAKE_TFCNN_HARNESS_OUT"), os.environ.get("FAKE_TFCNN_ANCESTRY_OUT")
    if not path and not chain_path:
        return
    chain = ancestry()
    if chain_path:
        import json

        with open(chain_path, "a") as fh:
            fh.write(json.dumps(chain) + "\n")
    if not path:
        return
    with open("/proc/%d/maps" % chain[-1], "rb") as fh:
        loaded = b"/pandas/" in fh.read()
    with open(path, "a") as fh:
        fh.write("pandas\n" if loaded else "no pandas\n")


def count_invocation(model):
    """(overall, per-model) 1-based invocation numbers, kept in FAKE_TFCNN_STATE."""
    state = os.environ.get("FAKE_TFCNN_STATE")
    if not state:
        return 1, 1
    os.makedirs(state, exist_ok=True)
    numbers = []
    for name in ("all", "model-" + model):
        path = os.path.join(state, name)
        n = int(open(path).read()) + 1 if os.path.exists(path) else 1
        with open(path, "w") as fh:
            fh.write(str(n))
        numbers.append(n)
    return numbers[0], numbers[1]


def pick_fault(model, overall, per_model):
    faults = {}
    for item in os.environ.get("FAKE_TFCNN_FAULTS", "").split(","):
        if "=" in item:
            key, mode = item.split("=", 1)
            faults[key.strip()] = mode.strip()
    for key in ("#%d" % overall, "%s#%d" % (model, per_model), model, "*"):
        if key in faults:
            return faults[key]
    return None


def pick_ips(model, per_model):
    for item in os.environ.get("FAKE_TFCNN_IPS", "").split(","):
        if "=" in item:
            key, values = item.split("=", 1)
            if key.strip() == model:
                seq = [float(v) for v in values.split("/")]
                return seq[(per_model - 1) % len(seq)]
    return SEED_2070.get(model, 100.0)


def noise():
    sys.stderr.write(
        "2026-11-30 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU "
        "supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA" + NL
    )
    sys.stderr.write(
        "W1130 10:00:01.000000 140000000000000 deprecation.py:323] From benchmark_cnn.py:2268: "
        "Supervisor.__init__ (from tensorflow.python.training.supervisor) is deprecated." + NL
    )
    sys.stderr.flush()


def check_data_dir(flags):
    """Upstream's input pipeline finds no files: a traceback and exit 1, as TensorFlow's glob fails."""
    data_dir = flags.get("data_dir")
    if data_dir and not glob.glob(os.path.join(data_dir, "train-*-of-*")):
        sys.stderr.write(
            "Traceback (most recent call last):" + NL + "ValueError: Found no files in --data_dir "
            "matching: %s" % os.path.join(data_dir, "train-*-of-*") + NL
        )
        sys.stderr.flush()
        sys.exit(1)


def print_header(flags, model, batch, num_gpus, num_batches, device):
    """The header block upstream prints before it builds the model."""
    noise()
    out("TensorFlow:  %s" % os.environ.get("FAKE_TFCNN_TF_VERSION", "1.12"))
    out("Model:       %s" % model)
    # upstream names the dataset and adds " (synthetic)" only without --data_dir (benchmark_cnn.py)
    out("Dataset:     %s" % (flags.get("data_name", "imagenet") if flags.get("data_dir") else "imagenet (synthetic)"))
    out("Mode:        training")
    out("SingleSess:  False")
    workers = len(flags["worker_hosts"].split(",")) if flags.get("job_name") and flags.get("worker_hosts") else 1
    out("Batch size:  %d global" % (batch * num_gpus * workers))  # upstream: batch x devices x workers
    out("             %d per device" % batch)
    out("Num batches: %d" % num_batches)
    out("Num epochs:  %.2f" % (batch * num_gpus * num_batches / 1281167.0))
    out("Devices:     %s" % ["/%s:%d" % (device, i) for i in range(num_gpus)])
    out("NUMA bind:   False")
    out("Data format: %s" % flags.get("data_format", "NCHW"))
    out("Optimizer:   %s" % flags.get("optimizer", "sgd"))
    out("Variables:   %s" % flags.get("variable_update", "parameter_server"))
    out("==========")


def warm_up_fault(fault, batch):
    """The faults that strike during warm-up: an exit code, or None to go on to the steps."""
    if fault == "oom":
        sys.stderr.write(
            "2026-11-30 10:00:05.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:271] Allocator "
            "(GPU_0_bfc) ran out of memory trying to allocate 784.00MiB."
            + NL
            + "Traceback (most recent call last):"
            + NL
            + "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
            "shape[%d,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator "
            "GPU_0_bfc" % batch + NL
        )
        sys.stderr.flush()
        return 1
    if fault == "crash":
        sys.stderr.write(
            "Traceback (most recent call last):"
            + NL
            + '  File "tf_cnn_benchmarks.py", line 68, in <module>'
            + NL
            + "ValueError: Invalid data_format"
            + NL
        )
        return 1
    if fault == "segv":
        sys.stdout.flush()
        if hasattr(signal, "SIGSEGV") and os.name == "posix":
            os.kill(os.getpid(), signal.SIGSEGV)
        os._exit(139)
    if fault in ("hang", "hang_tree", "hang_tree_setsid"):
        out("Done warm up")
        if fault != "hang":
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=fault == "hang_tree_setsid"
            )
            out("child pid: %d" % child.pid)
        out("hanging")
        fifo = os.environ.get("FAKE_TFCNN_READY_FIFO")
        if fifo:
            with open(fifo, "w") as fh:
                fh.write("%d %d\n" % (os.getpid(), child.pid if fault != "hang" else 0))
        time.sleep(3600)
        return 0
    if fault == "garbage":
        sys.stdout.flush()
        junk = b"\xff\xfe\x00binary\x80\x81 noise \xc3\x28"
        sys.stdout.buffer.write(junk + NL.encode() + bytes(range(256)) + NL.encode())
        sys.stdout.buffer.flush()
    if fault == "huge":
        line = (
            "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1511] Adding visible gpu devices: 0 " + "x" * 900 + NL
        )
        chunk = line * 1000
        mb = float(os.environ.get("FAKE_TFCNN_HUGE_MB", "100"))
        for _ in range(int(mb * 1024 * 1024 / len(chunk)) + 1):
            sys.stderr.write(chunk)
        sys.stderr.flush()
    return None


def main(argv):
    flags = parse_flags(argv)
    record_flags(flags)
    record_harness()
    model = flags.get("model", "trivial")
    batch = int(flags.get("batch_size", "32"))
    num_gpus = int(flags.get("num_gpus", "1"))
    num_batches = int(flags.get("num_batches", "100"))
    device = flags.get("device", "gpu")
    overall, per_model = count_invocation(model)
    fault = pick_fault(model, overall, per_model)
    ips = pick_ips(model, per_model) * host_factor()
    if num_gpus > 1:
        ips *= num_gpus * float(os.environ.get("FAKE_TFCNN_GPU_EFFICIENCY", "1") or 1)
    step_ips = ips
    if flags.get("job_name") or flags.get("variable_update") == "distributed_replicated":
        fault = task_fault(flags) or fault
        code = distributed_task(flags, fault)
        if code is not None:
            return code
        if flags.get("job_name") == "worker":
            ips = ips * len(flags["worker_hosts"].split(","))  # upstream: workers x this worker's rate
    delay = float(os.environ.get("FAKE_TFCNN_STEP_DELAY", "0") or 0)

    wait_fifo = os.environ.get("FAKE_TFCNN_WAIT_FIFO")
    if wait_fifo:
        with open(wait_fifo) as fh:
            fh.readline()  # one line: the writer may hand the next line to the next run
    print_header(flags, model, batch, num_gpus, num_batches, device)
    check_data_dir(flags)
    if flags.get("job_name"):
        code = distributed_join(flags, fault)
        if code is not None:
            return code
    else:
        announce("run")  # a single run (a fleet's host): running from now on
    out("Generating training model")
    out("Initializing graph")
    out("Running warm up")

    code = warm_up_fault(fault, batch)
    if code is not None:
        return code

    out("Done warm up")
    print_steps(step_ips, num_batches, delay)
    if fault == "slow":
        time.sleep(3600)
    if fault == "no_total":
        return 0
    out("-" * 64)
    out("total images/sec: %.2f" % ips)
    out("-" * 64)
    if fault in ("leave_child", "leave_child_setsid"):
        leave_child(setsid=fault == "leave_child_setsid")
    if fault == "hang_after_total":
        ready_fifo(os.getpid(), 0)
        time.sleep(3600)
    return 0


def print_steps(step_ips, num_batches, delay):
    """The timed steps, a line every 10 (and the first), as upstream prints them."""
    out("Step\tImg/sec\ttotal_loss")
    loss = 8.2
    for step in range(num_batches):
        if step == 0 or (step + 1) % 10 == 0:
            if delay:
                time.sleep(delay)
            out(
                "%i\timages/sec: %.1f +/- %.1f (jitter = %.1f)\t%.3f"
                % (step + 1, step_ips * (0.995 if step == 0 else 1.0) * _drift(step, num_batches), 0.3, 0.8, loss)
            )
            loss -= 0.05


def ready_fifo(*pids):
    fifo = os.environ.get("FAKE_TFCNN_READY_FIFO")
    if fifo:
        with open(fifo, "w") as fh:
            fh.write(" ".join(str(p) for p in pids) + "\n")


# The child learns that the benchmark has exited when its stdin (a pipe from the benchmark) reaches its end.
LEFT_CHILD = (
    "import os, sys, time\n"
    "sys.stdin.read()\n"
    "fifo = os.environ.get('FAKE_TFCNN_READY_FIFO')\n"
    "if fifo:\n"
    "    with open(fifo, 'w') as fh:\n"
    "        fh.write('%s %d\\n' % (sys.argv[1], os.getpid()))\n"
    "time.sleep(3600)\n"
)


def leave_child(setsid=False):
    """A child that outlives the benchmark and keeps its stdout (the caller's pipe) open; ``setsid``: in a
    session (and process group) of its own, out of reach of a group kill."""
    child = subprocess.Popen(
        [sys.executable, "-c", LEFT_CHILD, str(os.getpid())], stdin=subprocess.PIPE, start_new_session=setsid
    )
    out("child pid: %d" % child.pid)


def task_fault(flags):
    items = os.environ.get("FAKE_TFCNN_TASK_FAULTS", "").split(",")
    faults = dict(item.split("=", 1) for item in items if "=" in item)
    return faults.get("%s%s" % (flags.get("job_name"), flags.get("task_index", "0")))


def value_error(message):
    sys.stderr.write(
        "Traceback (most recent call last):"
        + NL
        + '  File "benchmark_cnn.py", line 1607, in __init__'
        + NL
        + "ValueError: %s" % message
        + NL
    )
    sys.stderr.flush()
    return 1


def distributed_refusal(flags):
    """Upstream's ValueErrors for distributed flags it refuses (None: accepted)."""
    job, update = flags.get("job_name"), flags.get("variable_update", "parameter_server")
    if job and update in ("replicated", "independent", "horovod"):
        return "Invalid variable_update in distributed mode: %s" % update
    if not job and update == "distributed_replicated":
        return "Invalid variable_update in local mode: %s" % update
    if update == "distributed_all_reduce" and not flags.get("controller_host"):
        return "When variable_update==distributed_all_reduce controller_host must also be specified."
    if update in ("distributed_all_reduce", "collective_all_reduce") and not flags.get("all_reduce_spec"):
        return "%s requires a non-empty all_reduce_spec" % update
    if job in ("ps", "worker") and not flags.get("worker_hosts"):
        return "--worker_hosts must be given with --job_name"
    return None


def own_address(flags):
    job, index = flags["job_name"], int(flags.get("task_index", "0"))
    if job == "controller":
        return None  # upstream's controller runs no server
    hosts = flags.get("%s_hosts" % job, "").split(",")
    host, _, port = hosts[index].rpartition(":")
    return host, int(port)


def wait_for(address):
    """Connect until ``address`` accepts, as a TensorFlow session does: forever, silently."""
    import socket

    host, _, port = address.rpartition(":")
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError:
            time.sleep(0.02)


def distributed_task(flags, fault):
    """Refuse what upstream refuses, write the pid, bind the port (None: go on)."""
    import socket

    refusal = distributed_refusal(flags)
    if refusal:
        return value_error(refusal)
    job, index = flags["job_name"], flags.get("task_index", "0")
    pid_dir = os.environ.get("FAKE_TFCNN_PID_DIR")
    if pid_dir:
        path = os.path.join(pid_dir, "%s%s.pid" % (job, index))
        with open(path + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(path + ".tmp", path)  # a task killed while writing leaves no empty pid file
    address = own_address(flags)
    if address is not None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.bind(("", address[1]))
        except OSError as exc:
            sys.stderr.write(
                "E0000 grpc_server_lib.cc:618] UNKNOWN: Could not start gRPC server"
                + NL
                + "Traceback (most recent call last):"
                + NL
                + '  File "cnn_util.py", line 239, in __init__'
                + NL
                + "tensorflow.python.framework.errors_impl.UnknownError: Could not start gRPC "
                "server (%s)" % exc + NL
            )
            return 1
        SERVERS.append(server)  # listens once the task is up (distributed_join): peers wait until then
    return None


SERVERS = []


def host_factor():
    import socket

    for item in os.environ.get("FAKE_TFCNN_HOST_FACTOR", "").split(","):
        host, eq, factor = item.partition("=")
        if eq and host.strip() == socket.gethostname():
            return float(factor)
    return 1.0


def announce(name):
    """One line into FAKE_TFCNN_TASKS_FIFO (atomic: shorter than PIPE_BUF); nothing when no one reads it."""
    import socket

    path = os.environ.get("FAKE_TFCNN_TASKS_FIFO")
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.write(fd, ("%s %s %d\n" % (name, socket.gethostname(), os.getpid())).encode())
    finally:
        os.close(fd)


def distributed_join(flags, fault):
    """After the header, as upstream: a ps (a distributed_all_reduce worker) joins its server for good;
    other tasks wait for the tasks they need."""
    job, index = flags["job_name"], flags.get("task_index", "0")
    blocks = job == "ps" or (job == "worker" and flags.get("variable_update") == "distributed_all_reduce")
    if blocks:
        out("Running parameter server %s" % index if job == "ps" else "Starting worker %s" % index)
    for server in SERVERS:
        server.listen(64)
    announce("%s%s" % (job, index))
    if blocks:
        if fault == "oom":
            sys.stderr.write(
                "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
                "tensor on /job:%s/replica:0/task:%s" % (job, index) + NL
            )
            return 1
        if fault == "crash":
            return value_error("Simulated crash in %s%s" % (job, index))
        if fault == "exit0":
            return 0
        while True:
            time.sleep(3600)  # join_server: never returns
    if job == "worker":
        for ps_address in filter(None, flags.get("ps_hosts", "").split(",")):
            wait_for(ps_address)
    elif job == "controller":  # its single session spans every worker
        for worker_address in flags["worker_hosts"].split(","):
            wait_for(worker_address)
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
