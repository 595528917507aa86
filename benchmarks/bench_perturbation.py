"""Does the harness perturb the benchmark? Real tf_cnn_benchmarks on CPU TensorFlow, direct vs under
`tfcnnwrap sweep` with the live view on (a pseudo-terminal) and GPU telemetry on (the stand-in nvidia-smi),
alternating, paired; then where the harness's CPU goes while a benchmark runs.

Each pair runs the same benchmark twice in the same checkout: once directly (output to a log file, as a
person would), once as a one-run `tfcnnwrap sweep` in a pty. The direct arm gets the argv the sweep recorded
and the environment the sweep gave its benchmark (read from /proc/PID/environ during a first, uncounted
wrapped run), so the arms differ only by the harness. The figure compared is tf_cnn_benchmarks' own `total
images/sec`. The order inside a pair alternates (D W, W D, ...) so drift and load hit both alike.
Goal (issue 14): mean of the per-pair ratios within 0.5 % of 1, and a paired t-test not significant.

Telemetry needs a GPU sweep, so the sweep is asked for `--device gpu` with `-- --data_format=NHWC`; the
CPU-only TensorFlow places every op on the CPU (tf_cnn_benchmarks allows soft placement).

After the pairs, ``--cpu-runs`` more wrapped runs are watched from outside (Linux /proc, 4 looks a second by
this script, not the harness): the CPU each process of the sweep's tree used while the benchmark ran.

    python benchmarks/bench_perturbation.py --pairs 30 --cpu-runs 3 \\
        --tf-python /work/tfvenv/bin/python --mirror /work/.mirror/tensorflow+benchmarks/repo
    python benchmarks/bench_perturbation.py --report /tmp/tfcnnwrap-perturb-XXXX/pairs.json
"""

import argparse
import json
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE_SMI = ROOT / "tests" / "fake" / "nvidia-smi"


def setup_vendor(work, tf_python, mirror):
    vendor = work / "vendor"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tfcnnwrap",
            "setup",
            "--python",
            tf_python,
            "--repo-url",
            mirror,
            "--branch",
            "master",
            "--vendor-dir",
            str(vendor),
        ],
        cwd=str(ROOT),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return vendor


def run_in_pty(argv, env, cwd, columns=100, on_start=None):
    """Run ``argv`` with a pty as its terminal, draining what it draws; its exit code. ``on_start(pid)``
    is called once the child runs."""
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(cwd), start_new_session=True
    )
    os.close(slave)
    if on_start:
        on_start(proc.pid)
    while True:
        ready, _, _ = select.select([master], [], [], 600)
        if not ready:
            proc.kill()
            break
        try:
            if not os.read(master, 65536):
                break
        except OSError:  # EIO: the child closed the terminal
            break
    os.close(master)
    return proc.wait()


def wrapped(work, k, vendor, tf_python, opts, on_start=None):
    out = work / ("sweep-%02d" % k)
    env = dict(
        os.environ, TFCNNWRAP_NVIDIA_SMI=str(FAKE_SMI), TERM="xterm-256color", PYTHONPATH=str(ROOT), COLUMNS="100"
    )
    env.pop("NO_COLOR", None)
    argv = [
        sys.executable,
        "-m",
        "tfcnnwrap",
        "sweep",
        "--python",
        tf_python,
        "--vendor-dir",
        str(vendor),
        "--device",
        "gpu",
        "--models",
        opts.model,
        "--batch-size",
        "%s=%d" % (opts.model, opts.batch_size),
        "--runs",
        "1",
        "--num-batches",
        str(opts.num_batches),
        "--num-warmup-batches",
        "2",
        "--out",
        str(out),
        "--",
        "--data_format=NHWC",
    ]
    code = run_in_pty(argv, env, work, on_start=on_start)
    record = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    if code != 0 or record["status"] != "ok":
        raise SystemExit("wrapped run %d failed (exit %d): see %s" % (k, code, out))
    if not (record.get("telemetry") or {}).get("samples"):
        raise SystemExit("wrapped run %d had no telemetry: the comparison would not be the issue's" % k)
    return record["images_per_sec"], record["command"]


def direct(work, k, vendor, argv, tf_version_env):
    log = work / ("direct-%02d.log" % k)
    script_dir = vendor / "benchmarks" / "scripts" / "tf_cnn_benchmarks"
    with open(log, "wb") as fh:
        # A session of its own, as the sweep gives its benchmark (and as a person's terminal is): with
        # Linux's autogroup scheduling a session is the unit of CPU fairness, so sharing the bench's own
        # session would make the two arms differ by more than the harness.
        subprocess.run(
            argv,
            cwd=str(script_dir),
            env=tf_version_env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=True,
            start_new_session=True,
        )
    from tfcnnwrap.run.logparse import parse_file

    return parse_file(log).total_images_per_sec  # read as the sweep reads the wrapped arm's log


# -- where the CPU goes while a wrapped benchmark runs ----------------------------------------------------


def _cpu_ns(pid):
    """User + system CPU of process ``pid``, every thread it has had included (/proc/PID/stat, in ticks)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


def _tree(root):
    """{pid: role} for ``root`` and its descendants: wrapper, supervisor, benchmark, nvidia-smi."""
    parent, cmd = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as fh:
                    parent[int(name)] = int(fh.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % name, "rb") as fh:
                    cmd[int(name)] = fh.read().replace(b"\0", b" ")
            except (OSError, ValueError, IndexError):
                pass
    roles, todo = {root: "wrapper"}, [root]
    while todo:
        pid = todo.pop()
        for child, ppid in parent.items():
            if ppid == pid and child not in roles:
                line = cmd.get(child, b"")
                # The supervisor's command line carries the benchmark's: test for it first.
                roles[child] = (
                    "supervisor"
                    if b" -I -S -c " in line
                    else "benchmark"
                    if b"tf_cnn_benchmarks.py" in line
                    else "nvidia-smi"
                    if b"nvidia-smi" in line
                    else "other"
                )
                todo.append(child)
    return roles


class TreeWatch:
    """Looks at the wrapped sweep's process tree 4 times a second from a thread of this script (not the
    harness) until ``look(roles)`` returns True or the sweep ends; roles as ``_tree`` names them, except
    that a benchmark stays one while it exits (its command line is then empty). Between fork and exec it
    still reads as the supervisor that forked it."""

    def __init__(self):
        self.roles = {}

    def start(self, pid):
        import threading

        threading.Thread(target=self._watch, args=(pid,), daemon=True).start()

    def _watch(self, root):
        import time

        while os.path.exists("/proc/%d" % root):
            roles = _tree(root)
            for pid, role in roles.items():
                if self.roles.get(pid) != "benchmark":
                    self.roles[pid] = role
                roles[pid] = self.roles[pid]
            if self.look(roles):
                return
            time.sleep(0.25)


class CpuWatch(TreeWatch):
    """Per role, the CPU used between the first and the last look that saw the benchmark."""

    def __init__(self):
        super().__init__()
        self.first, self.last = None, None

    def look(self, roles):
        import time

        if "benchmark" in roles.values():
            snap = {"wall": time.monotonic(), "ns": {}}
            for pid, role in roles.items():
                ns = _cpu_ns(pid)
                if ns is not None:
                    snap["ns"][(pid, role)] = ns
            self.first = self.first or snap
            self.last = snap
        return False

    def per_second(self):
        """{role: on-CPU ms per wall second} over the benchmark's life, and the seconds watched."""
        wall = self.last["wall"] - self.first["wall"]
        used = {}
        for key, ns in self.last["ns"].items():
            used[key[1]] = used.get(key[1], 0) + ns - self.first["ns"].get(key, 0)
        return {role: ns / 1e6 / wall for role, ns in used.items()}, wall


class BenchmarkEnv(TreeWatch):
    """The environment the sweep gave its benchmark, read from /proc/PID/environ (Linux), so the direct arm
    runs with the same variables in the same order: the size and layout of the environment alone moves
    a program's speed by a few per cent (Mytkowicz et al., "Producing wrong data without doing anything
    obviously wrong!", ASPLOS 2009), and an earlier version of this script gave the two arms different ones."""

    def __init__(self):
        super().__init__()
        self.environ = None

    def look(self, roles):
        for pid, role in roles.items():
            if role == "benchmark":  # after exec: before it, the child reads as the supervisor
                try:
                    with open("/proc/%d/environ" % pid, "rb") as fh:
                        pairs = [item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item]
                except OSError:
                    continue
                self.environ = {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}
                return True
        return False


def cpu_accounting(work, vendor, tf_python, opts, runs):
    rates, walls = {}, 0.0
    for k in range(runs):
        watch = CpuWatch()
        wrapped(work, 900 + k, vendor, tf_python, opts, on_start=watch.start)
        per, wall = watch.per_second()
        walls += wall
        for role, ms in per.items():
            rates[role] = rates.get(role, 0.0) + ms * wall
    print("CPU while the benchmark ran (%d wrapped runs, %.0f s watched), ms of CPU per second:" % (runs, walls))
    for role in ("benchmark", "wrapper", "supervisor", "nvidia-smi", "other"):
        if role in rates:
            print("  %-10s %8.2f ms/s (%.3f %% of one core)" % (role, rates[role] / walls, rates[role] / walls / 10))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--num-batches", type=int, default=10)
    ap.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    ap.add_argument("--mirror", default="/work/.mirror/tensorflow+benchmarks/repo")
    ap.add_argument(
        "--cpu-runs",
        type=int,
        default=3,
        help="wrapped runs, after the pairs, whose process tree is watched for CPU (Linux)",
    )
    ap.add_argument("--report", metavar="PAIRS_JSON", help="only report the pairs a run saved")
    opts = ap.parse_args()
    if opts.report:
        report(json.loads(Path(opts.report).read_text()))
        return

    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-perturb-"))
    print("work: %s" % work, flush=True)
    vendor = setup_vendor(work, opts.tf_python, opts.mirror)
    # The first wrapped run gives the exact argv and environment; it is a warm-up (file caches, TF's first
    # import) and is not counted.
    seen = BenchmarkEnv()
    _, argv = wrapped(work, 0, vendor, opts.tf_python, opts, on_start=seen.start)
    env = seen.environ or dict(os.environ, TF_USE_LEGACY_KERAS="1", PYTHONUNBUFFERED="1")
    print("argv: %s" % " ".join(argv), flush=True)
    print(
        "environment of the direct arm: %s (%d variables, %d bytes)"
        % (
            "the one the sweep gave its benchmark" if seen.environ else "this script's + TF_USE_LEGACY_KERAS",
            len(env),
            sum(len(k) + len(v) + 2 for k, v in env.items()),
        ),
        flush=True,
    )
    rows = []
    for k in range(1, opts.pairs + 1):
        load0 = os.getloadavg()[0]
        if k % 2:
            d = direct(work, k, vendor, argv, env)
            w, _ = wrapped(work, k, vendor, opts.tf_python, opts)
        else:
            w, _ = wrapped(work, k, vendor, opts.tf_python, opts)
            d = direct(work, k, vendor, argv, env)
        rows.append((d, w, load0, os.getloadavg()[0]))
        print(
            "pair %d: direct %.3f  wrapped %.3f  ratio %.4f  load %.2f -> %.2f" % (k, d, w, w / d, load0, rows[-1][3]),
            flush=True,
        )
        (work / "pairs.json").write_text(json.dumps(rows))
    if rows:
        report(rows)
    if opts.cpu_runs and os.path.isdir("/proc/self/task"):
        cpu_accounting(work, vendor, opts.tf_python, opts, opts.cpu_runs)


def report(rows):
    from scipy import stats

    ds, ws = [r[0] for r in rows], [r[1] for r in rows]
    ratios = [w / d for d, w, _, _ in rows]
    mean_ratio = sum(ratios) / len(ratios)
    t, p = stats.ttest_rel(ws, ds)
    print("pairs: %d" % len(rows))
    print("direct  mean %.3f images/sec (min %.3f, max %.3f)" % (sum(ds) / len(ds), min(ds), max(ds)))
    print("wrapped mean %.3f images/sec (min %.3f, max %.3f)" % (sum(ws) / len(ws), min(ws), max(ws)))
    print(
        "wrapped / direct: mean of pair ratios %.4f (%+.2f %%), min %.4f, max %.4f"
        % (mean_ratio, (mean_ratio - 1) * 100, min(ratios), max(ratios))
    )
    if len(ratios) > 1:
        sd = stats.tstd(ratios)
        half = stats.t.ppf(0.975, len(ratios) - 1) * sd / len(ratios) ** 0.5
        print(
            "pair ratios: SD %.4f; 95 %% interval of their mean %.4f to %.4f"
            % (sd, mean_ratio - half, mean_ratio + half)
        )
        # The pairs have heavy tails (a run now and then several per cent off): the median and a rank test
        # are the figures that one such pair cannot move.
        print(
            "median pair ratio %.4f; Wilcoxon signed-rank p = %.3f"
            % (statistics.median(ratios), stats.wilcoxon([r - 1 for r in ratios]).pvalue)
        )
    print("paired t-test: t = %.3f, p = %.3f (%s at 5 %%)" % (t, p, "significant" if p < 0.05 else "not significant"))
    print("load average (1 min) during the pairs: %.2f to %.2f" % (min(r[2] for r in rows), max(r[3] for r in rows)))
    within = abs(mean_ratio - 1) <= 0.005
    print("verdict: %s" % ("within 0.5 %" if within else "NOT within 0.5 %"))


if __name__ == "__main__":
    main()
