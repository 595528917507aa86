"""Writes realistic tf_cnn_benchmarks logs for the parsing benchmark (and for anyone who wants a corpus).

Each log looks like a real run: TensorFlow's start-up noise on stderr (merged), the header block of the
branch it pretends to come from, deprecation warnings, step lines and the total -- or one of the ordinary
failures: out of memory (with the allocator's long dump), a crash with a traceback, a flag error, a run
cut short, binary garbage, a segfault. Some logs use CRLF, some print accuracy columns, some carry
``--log_device_placement`` output (large), some are from the v1.5 branch.

    python benchmarks/make_log_corpus.py DIR [--logs 2000] [--seed 0]
    python benchmarks/make_log_corpus.py BIG.log --big-mb 1024
"""

import argparse
import os
import random
import sys
from pathlib import Path

MODELS = {
    "resnet50": 64,
    "resnet152": 32,
    "inception3": 64,
    "vgg16": 64,
    "alexnet": 512,
    "googlenet": 64,
    "resnet101": 64,
    "inception4": 32,
    "trivial": 32,
}
IPS = {
    "resnet50": 176.9,
    "resnet152": 62.2,
    "inception3": 113.2,
    "vgg16": 110.2,
    "alexnet": 2258.9,
    "googlenet": 520.1,
    "resnet101": 101.5,
    "inception4": 50.3,
    "trivial": 9000.0,
}
GPUS = ["GeForce RTX 2070", "GeForce GTX 1080 Ti", "GeForce RTX 2080 Ti", "Tesla V100-SXM2-16GB"]

DEPRECATIONS = [
    (
        "benchmark_cnn.py:2157",
        "Supervisor.__init__ (from tensorflow.python.training.supervisor)",
        "Please switch to tf.train.MonitoredTrainingSession",
    ),
    (
        "convolutional.py:108",
        "conv2d (from tensorflow.python.layers.convolutional)",
        "Use keras.layers.conv2d instead.",
    ),
    (
        "pooling.py:225",
        "max_pooling2d (from tensorflow.python.layers.pooling)",
        "Use keras.layers.max_pooling2d instead.",
    ),
    ("core.py:143", "dense (from tensorflow.python.layers.core)", "Use keras.layers.dense instead."),
    ("losses_impl.py:209", "to_float (from tensorflow.python.ops.math_ops)", "Use tf.cast instead."),
    (
        "normalization.py:307",
        "batch_normalization (from tensorflow.python.layers.normalization)",
        "Use keras.layers.BatchNormalization instead.",
    ),
    (
        "op_def_library.py:263",
        "colocate_with (from tensorflow.python.framework.ops)",
        "Colocations handled automatically by placer.",
    ),
]


def _ts(rng, second):
    return "2026-11-30 10:%02d:%02d.%06d" % (second // 60 % 60, second % 60, rng.randrange(1000000))


def _prelude(rng, gpu, tf_version, modern):
    lines = []
    if modern:
        lines.append("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR")
        lines.append(
            "I0000 00:00:1796016972.%06d    6565 port.cc:153] oneDNN custom operations are on. You may "
            "see slightly different numerical results due to floating-point round-off errors from "
            "different computation orders. To turn them off, set the environment variable "
            "`TF_ENABLE_ONEDNN_OPTS=0`." % rng.randrange(1000000)
        )
    lines.append(
        "%s: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports instructions that "
        "this TensorFlow binary was not compiled to use: AVX2 FMA" % _ts(rng, 0)
    )
    lines.append(
        "%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 with properties: " % _ts(rng, 1)
    )
    lines.append("name: %s major: 7 minor: 5 memoryClockRate(GHz): 1.62" % gpu)
    lines.append("pciBusID: 0000:01:00.0")
    lines.append("totalMemory: 7.79GiB freeMemory: 7.32GiB")
    lines.append(
        "%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1511] Adding visible gpu devices: 0" % _ts(rng, 1)
    )
    lines.append(
        "%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:982] Device interconnect "
        "StreamExecutor with strength 1 edge matrix:" % _ts(rng, 1)
    )
    lines.append("%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:988]      0 " % _ts(rng, 1))
    lines.append("%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1001] 0:   N " % _ts(rng, 1))
    lines.append(
        "%s: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1115] Created TensorFlow device "
        "(/job:localhost/replica:0/task:0/device:GPU:0 with 7051 MB memory) -> physical GPU (device: 0, "
        "name: %s, pci bus id: 0000:01:00.0, compute capability: 7.5)" % (_ts(rng, 2), gpu)
    )
    return lines


def _header(model, batch, num_batches, tf_version, old_branch, data_format="NCHW"):
    lines = [
        "TensorFlow:  %s" % tf_version,
        "Model:       %s" % model,
        "Dataset:     imagenet (synthetic)",
        "Mode:        training",
        "SingleSess:  False",
        "Batch size:  %d global" % batch,
    ]
    if old_branch:  # cnn_tf_v1.5_compatible under Python 3 divides with /
        lines += [
            "             %.1f per device" % batch,
            "Devices:     ['/gpu:0']",
            "Data format: %s" % data_format,
            "Layout optimizer: False",
        ]
    else:
        lines += [
            "             %d per device" % batch,
            "Num batches: %d" % num_batches,
            "Num epochs:  %.2f" % (batch * num_batches / 1281167.0),
            "Devices:     ['/gpu:0']",
            "NUMA bind:   False",
            "Data format: %s" % data_format,
        ]
    lines += ["Optimizer:   sgd", "Variables:   parameter_server", "=========="]
    return lines


def _deprecations(rng, count):
    lines = []
    for i in range(count):
        where, what, how = DEPRECATIONS[i % len(DEPRECATIONS)]
        path = "/home/user/benchmarks/scripts/tf_cnn_benchmarks/" + where
        lines.append(
            "W1130 10:00:%02d.%06d 140234567890 deprecation.py:323] From %s: %s is deprecated and will "
            "be removed in a future version." % (3 + i % 50, rng.randrange(1000000), path, what)
        )
        lines.append("Instructions for updating:")
        lines.append(how)
        lines.append(
            "WARNING:tensorflow:From %s: %s is deprecated and will be removed in a future version." % (path, what)
        )
        lines.append("Instructions for updating:")
        lines.append(how)
    return lines


def _placement(rng, count):
    ops = ["Conv2D", "FusedBatchNorm", "Relu", "MaxPool", "MatMul", "BiasAdd", "ApplyGradientDescent"]
    return [
        "%s: I tensorflow/core/common_runtime/placer.cc:54] tower_0/v/cg/resnet_v1%d/conv%d/%s: "
        "(%s)/job:localhost/replica:0/task:0/device:GPU:0"
        % (_ts(rng, 4), rng.randrange(50), i, ops[i % len(ops)], ops[i % len(ops)])
        for i in range(count)
    ]


def _steps(rng, ips, num_batches, accuracy):
    header = "Step\tImg/sec\ttotal_loss" + ("\ttop_1_accuracy\ttop_5_accuracy" if accuracy else "")
    lines = [header]
    loss = 8.2
    for step in range(num_batches):
        if step == 0 or (step + 1) % 10 == 0:
            speed = ips * rng.uniform(0.97, 1.01)
            line = "%i\timages/sec: %.1f +/- %.1f (jitter = %.1f)\t%.3f" % (
                step + 1,
                speed,
                rng.uniform(0, 1),
                rng.uniform(0, 3),
                loss,
            )
            if accuracy:
                line += "\t%.3f\t%.3f" % (rng.uniform(0, 0.01), rng.uniform(0, 0.05))
            lines.append(line)
            loss -= rng.uniform(0, 0.05)
    return lines


def _bfc_dump(rng, chunks):
    lines = []
    for b in range(21):
        size = 256 << b
        lines.append(
            "%s: I tensorflow/core/common_runtime/bfc_allocator.cc:597] Bin (%d): \tTotal Chunks: %d, "
            "Chunks in use: %d. %.1fKiB allocated for chunks. %.1fKiB in use in bin. 1.2KiB "
            "client-requested in use in bin." % (_ts(rng, 9), size, chunks, chunks, size / 1024.0, size / 1024.0)
        )
    lines.append(
        "%s: I tensorflow/core/common_runtime/bfc_allocator.cc:613] Bin for 784.00MiB was 256.00MiB, "
        "Chunk State: " % _ts(rng, 9)
    )
    address = 0x7F1234000000
    for _ in range(chunks):
        size = 256 << rng.randrange(12)
        lines.append(
            "%s: I tensorflow/core/common_runtime/bfc_allocator.cc:632] Chunk at %x of size %d"
            % (_ts(rng, 9), address, size)
        )
        address += size
    lines += [
        "%s: I tensorflow/core/common_runtime/bfc_allocator.cc:652] Sum Total of in-use chunks: 6.84GiB" % _ts(rng, 9),
        "%s: I tensorflow/core/common_runtime/bfc_allocator.cc:654] Stats: " % _ts(rng, 9),
        "Limit:                  7392346112",
        "InUse:                  7345223424",
        "MaxInUse:               7345223424",
        "NumAllocs:                    %d" % chunks,
        "MaxAllocSize:           1234567890",
        "",
        "%s: W tensorflow/core/common_runtime/bfc_allocator.cc:271] " % _ts(rng, 9) + "*" * 100,
    ]
    return lines


def _oom(rng, batch):
    shape = (
        "shape[%d,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator "
        "GPU_0_bfc" % batch
    )
    lines = [
        "%s: W tensorflow/core/common_runtime/bfc_allocator.cc:267] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate 784.00MiB.  Current allocation summary follows." % _ts(rng, 9)
    ]
    lines += _bfc_dump(rng, rng.randrange(400, 1800))
    lines.append(
        "%s: W tensorflow/core/framework/op_kernel.cc:1273] OP_REQUIRES failed at conv_ops.cc:446 : "
        "Resource exhausted: OOM when allocating tensor with %s" % (_ts(rng, 9), shape)
    )
    for _ in range(2):
        lines += [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/dist-packages/tensorflow/python/client/session.py", line 1334, in _do_call',
            "    return fn(*args)",
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with " + shape,
            '\t [[{{node tower_0/v/cg/conv0/conv2d/Conv2D}} = Conv2D[T=DT_FLOAT, data_format="NCHW", '
            'padding="SAME", strides=[1, 1, 2, 2]]]',
            "Hint: If you want to see a list of allocated tensors when OOM happens, add "
            "report_tensor_allocations_upon_oom to RunOptions for current allocation info.",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
        ]
    return lines[:-3]


def make_log(rng, kind):
    """(text, expected status) of one log of ``kind``."""
    model = rng.choice(sorted(MODELS))
    batch = MODELS[model]
    old_branch = rng.random() < 0.08
    modern = not old_branch and rng.random() < 0.3
    tf_version = "1.5" if old_branch else ("2.21" if modern else rng.choice(["1.12", "1.13", "1.14", "1.15"]))
    num_batches = rng.choice([100, 100, 100, 100, 200, 500])
    accuracy = rng.random() < 0.05
    gpu = rng.choice(GPUS)

    if kind == "flag_error":
        lines = _prelude(rng, gpu, tf_version, modern)[:2]
        lines += [
            "FATAL Flags parsing error: Unknown command line flag 'use_fp17'",
            "Pass --helpshort or --helpfull to see help on flags.",
        ]
        return lines, "crashed"
    lines = _prelude(rng, gpu, tf_version, modern)
    lines += _header(model, batch, num_batches, tf_version, old_branch)
    lines.append("Generating training model")
    lines += _deprecations(rng, rng.randrange(4, 12))
    lines.append("Initializing graph")
    if rng.random() < 0.1:
        lines += _placement(rng, rng.randrange(400, 1200))
    lines += [
        "INFO:tensorflow:Running local_init_op.",
        "INFO:tensorflow:Done running local_init_op.",
        "I1130 10:00:09.123456 140234567890 session_manager.py:491] Running local_init_op.",
        "I1130 10:00:09.223456 140234567890 session_manager.py:493] Done running local_init_op.",
        "Running warm up",
    ]
    if kind == "oom":
        return lines + _oom(rng, batch), "oom"
    if kind == "crash":
        return lines + [
            "Traceback (most recent call last):",
            '  File "tf_cnn_benchmarks.py", line 68, in <module>',
            "    app.run(main)",
            '  File "benchmark_cnn.py", line 1789, in run',
            "    return self._benchmark_train()",
            "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : "
            "a.shape=(64, 2048), b.shape=(2048, 1000), m=64, n=1000, k=2048",
        ], "crashed"
    if kind == "segv":
        return lines + ["Done warm up", "Step\tImg/sec\ttotal_loss", "Segmentation fault (core dumped)"], "crashed"
    lines.append("Done warm up")
    if rng.random() < 0.2:
        lines.append(
            "%s: W tensorflow/core/common_runtime/bfc_allocator.cc:211] Allocator (GPU_0_bfc) ran out "
            "of memory trying to allocate 2.20GiB. The caller indicates that this is not a failure, but "
            "may mean that there could be performance gains if more memory were available." % _ts(rng, 8)
        )
    lines += _steps(rng, IPS[model], num_batches, accuracy)
    if kind == "no_total":
        return lines, "no_result"
    if kind == "garbage":
        lines.insert(rng.randrange(5, len(lines)), "\udcff\udcfe binary \udc80\udc81 noise")
    lines += ["-" * 64, "total images/sec: %.2f" % (IPS[model] * rng.uniform(0.98, 1.0)), "-" * 64]
    return lines, "ok"


KINDS = [
    ("ok", 0.80),
    ("oom", 0.07),
    ("crash", 0.04),
    ("flag_error", 0.03),
    ("no_total", 0.03),
    ("garbage", 0.02),
    ("segv", 0.01),
]


def _write(path, lines, crlf=False):
    newline = "\r\n" if crlf else "\n"
    data = (newline.join(lines) + newline).encode("utf-8", "surrogateescape")
    Path(path).write_bytes(data)
    return len(data)


def make_corpus(directory, logs=2000, seed=0):
    """Write ``logs`` logs under ``directory`` (in a few subfolders); returns (bytes, {status: count})."""
    rng = random.Random(seed)
    directory = Path(directory)
    total, expected = 0, {}
    for i in range(logs):
        kind = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
        lines, status = make_log(rng, kind)
        sub = directory / ("host%d" % (i % 4)) / ("sweep%02d" % (i % 37))
        sub.mkdir(parents=True, exist_ok=True)
        total += _write(sub / ("run-%05d.log" % i), lines, crlf=rng.random() < 0.05)
        expected[status] = expected.get(status, 0) + 1
    return total, expected


def make_big_log(path, megabytes=1024, seed=0):
    """One log of about ``megabytes`` MiB: a normal run whose middle is a flood of TF noise."""
    rng = random.Random(seed)
    head = _prelude(rng, GPUS[0], "1.12", False) + _header("resnet50", 64, 100, "1.12", False)
    head += ["Generating training model", "Initializing graph", "Running warm up", "Done warm up"]
    noise_line = (
        "2026-11-30 10:00:05.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1511] Adding "
        "visible gpu devices: 0 " + "x" * 300 + "\n"
    )
    block = (noise_line * 4096).encode()
    with open(path, "wb") as fh:
        fh.write(("\n".join(head) + "\n").encode())
        written = 0
        while written < megabytes * 1024 * 1024:
            fh.write(block)
            written += len(block)
        tail = _steps(rng, 176.9, 100, False) + ["-" * 64, "total images/sec: 176.93", "-" * 64]
        fh.write(("\n".join(tail) + "\n").encode())
    return os.path.getsize(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="corpus directory, or the file to write with --big-mb")
    p.add_argument("--logs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--big-mb", type=int, help="write one log of this many MiB instead of a corpus")
    args = p.parse_args(argv)
    if args.big_mb:
        size = make_big_log(args.target, args.big_mb, args.seed)
        print("%s: %.1f MB" % (args.target, size / 1e6))
    else:
        size, expected = make_corpus(args.target, args.logs, args.seed)
        print("%s: %d logs, %.1f MB, expected statuses %s" % (args.target, args.logs, size / 1e6, expected))
    return 0


if __name__ == "__main__":
    sys.exit(main())
