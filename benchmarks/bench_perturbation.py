"""Does the harness perturb the benchmark? Real tf_cnn_benchmarks on CPU TensorFlow, direct vs under
`tfcnnwrap sweep` with the live view on (a pseudo-terminal) and GPU telemetry on (the stand-in nvidia-smi),
alternating, paired.

Each pair runs the *same argv* twice in the same checkout: once directly (output to a log file, as a person
would), once as a one-run `tfcnnwrap sweep` in a pty. The figure compared is tf_cnn_benchmarks' own `total
images/sec`. The order inside a pair alternates (D W, W D, ...) so drift and load hit both alike.
Goal (issue 14): mean of the per-pair ratios within 0.5 % of 1, and a paired t-test not significant.

Telemetry needs a GPU sweep, so the sweep is asked for `--device gpu` with `-- --data_format=NHWC`; the
CPU-only TensorFlow places every op on the CPU (tf_cnn_benchmarks allows soft placement), and the direct
run uses exactly the argv the sweep recorded.

    python benchmarks/bench_perturbation.py --pairs 6 \\
        --tf-python /work/tfvenv/bin/python --mirror /work/.mirror/tensorflow+benchmarks/repo
"""

import argparse
import json
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE_SMI = ROOT / "tests" / "fake" / "nvidia-smi"
TOTAL_RE = re.compile(rb"total images/sec:\s*([0-9.]+)")


def setup_vendor(work, tf_python, mirror):
    vendor = work / "vendor"
    subprocess.run([sys.executable, "-m", "tfcnnwrap", "setup", "--python", tf_python, "--repo-url", mirror,
                    "--branch", "master", "--vendor-dir", str(vendor)], cwd=str(ROOT), check=True,
                   stdout=subprocess.DEVNULL)
    return vendor


def run_in_pty(argv, env, cwd, columns=100):
    """Run ``argv`` with a pty as its terminal, draining what it draws; its exit code."""
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(cwd),
                            start_new_session=True)
    os.close(slave)
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


def wrapped(work, k, vendor, tf_python, opts):
    out = work / ("sweep-%02d" % k)
    env = dict(os.environ, TFCNNWRAP_NVIDIA_SMI=str(FAKE_SMI), TERM="xterm-256color",
               PYTHONPATH=str(ROOT), COLUMNS="100")
    env.pop("NO_COLOR", None)
    argv = [sys.executable, "-m", "tfcnnwrap", "sweep", "--python", tf_python, "--vendor-dir", str(vendor),
            "--device", "gpu", "--models", opts.model, "--batch-size", "%s=%d" % (opts.model, opts.batch_size),
            "--runs", "1", "--num-batches", str(opts.num_batches), "--num-warmup-batches", "2", "--out", str(out),
            "--", "--data_format=NHWC"]
    code = run_in_pty(argv, env, work)
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
        subprocess.run(argv, cwd=str(script_dir), env=tf_version_env, stdout=fh, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, check=True, start_new_session=True)
    m = TOTAL_RE.findall(log.read_bytes())
    return float(m[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--num-batches", type=int, default=10)
    ap.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    ap.add_argument("--mirror", default="/work/.mirror/tensorflow+benchmarks/repo")
    opts = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tfcnnwrap-perturb-"))
    vendor = setup_vendor(work, opts.tf_python, opts.mirror)
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", PYTHONUNBUFFERED="1")
    # The first wrapped run gives the exact argv; it is a warm-up (file caches, TF's first import) and
    # is not counted.
    _, argv = wrapped(work, 0, vendor, opts.tf_python, opts)
    print("argv: %s" % " ".join(argv), flush=True)
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
        print("pair %d: direct %.3f  wrapped %.3f  ratio %.4f  load %.2f -> %.2f"
              % (k, d, w, w / d, load0, rows[-1][3]), flush=True)
    report(rows)


def report(rows):
    from scipy import stats

    ds, ws = [r[0] for r in rows], [r[1] for r in rows]
    ratios = [w / d for d, w, _, _ in rows]
    mean_ratio = sum(ratios) / len(ratios)
    t, p = stats.ttest_rel(ws, ds)
    print("pairs: %d" % len(rows))
    print("direct  mean %.3f images/sec (min %.3f, max %.3f)" % (sum(ds) / len(ds), min(ds), max(ds)))
    print("wrapped mean %.3f images/sec (min %.3f, max %.3f)" % (sum(ws) / len(ws), min(ws), max(ws)))
    print("wrapped / direct: mean of pair ratios %.4f (%+.2f %%), min %.4f, max %.4f"
          % (mean_ratio, (mean_ratio - 1) * 100, min(ratios), max(ratios)))
    print("paired t-test: t = %.3f, p = %.3f (%s at 5 %%)" % (t, p, "significant" if p < 0.05 else "not significant"))
    print("load average (1 min) during the pairs: %.2f to %.2f" % (min(r[2] for r in rows), max(r[3] for r in rows)))
    within = abs(mean_ratio - 1) <= 0.005
    print("verdict: %s" % ("within 0.5 %" if within else "NOT within 0.5 %"))


if __name__ == "__main__":
    main()
