"""The log parser over realistic tf_cnn_benchmarks logs; feeding lines and reading files must agree."""

import random
import time
import tracemalloc

import pytest

from tfcnnwrap.run import logparse
from tfcnnwrap.run.logparse import LogParser, ParsedLog, Step, classify, parse_file, parse_lines

HEADER_1_12 = """\
TensorFlow:  1.12
Model:       resnet50
Dataset:     imagenet (synthetic)
Mode:        training
SingleSess:  False
Batch size:  64 global
             64 per device
Num batches: 100
Num epochs:  0.00
Devices:     ['/gpu:0']
NUMA bind:   False
Data format: NCHW
Optimizer:   sgd
Variables:   parameter_server
==========
"""

TF_NOISE = """\
2026-11-30 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports \
instructions that this TensorFlow binary was not compiled to use: AVX2 FMA
2026-11-30 10:00:00.100000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 with \
properties: 
name: GeForce RTX 2070 major: 7 minor: 5 memoryClockRate(GHz): 1.62
pciBusID: 0000:01:00.0
totalMemory: 7.79GiB freeMemory: 7.32GiB
"""

DEPRECATION = """\
W1130 10:00:01.000000 140000000000000 deprecation.py:323] From benchmark_cnn.py:2268: Supervisor.__init__ \
(from tensorflow.python.training.supervisor) is deprecated and will be removed in a future version.
Instructions for updating:
Please switch to tf.train.MonitoredTrainingSession
INFO:tensorflow:Running local_init_op.
INFO:tensorflow:Done running local_init_op.
"""

STEPS = """\
Running warm up
Done warm up
Step\tImg/sec\ttotal_loss
1\timages/sec: 175.9 +/- 0.0 (jitter = 0.0)\t8.169
10\timages/sec: 176.6 +/- 0.2 (jitter = 0.6)\t7.593
20\timages/sec: 176.8 +/- 0.1 (jitter = 0.5)\t7.701
100\timages/sec: 176.9 +/- 0.1 (jitter = 0.7)\t7.491
"""

TOTAL = """\
----------------------------------------------------------------
total images/sec: 176.93
----------------------------------------------------------------
"""

OK_LOG = TF_NOISE + HEADER_1_12 + "Generating training model\n" + DEPRECATION + "Initializing graph\n" + STEPS + TOTAL

OOM_TAIL = """\
2026-11-30 10:00:05.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:267] Allocator (GPU_0_bfc) ran \
out of memory trying to allocate 784.00MiB.  Current allocation summary follows.
2026-11-30 10:00:05.000100: I tensorflow/core/common_runtime/bfc_allocator.cc:597] Bin (256): \tTotal Chunks: \
120, Chunks in use: 120. 30.0KiB allocated for chunks.
2026-11-30 10:00:05.000200: I tensorflow/core/common_runtime/bfc_allocator.cc:632] Chunk at 0x7f1234000000 of \
size 256
2026-11-30 10:00:05.000300: W tensorflow/core/framework/op_kernel.cc:1273] OP_REQUIRES failed at \
conv_ops.cc:446 : Resource exhausted: OOM when allocating tensor with shape[512,64,112,112] and type float on \
/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/tensorflow/python/client/session.py", line 1334, in _do_call
    return fn(*args)
tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with \
shape[512,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
\t [[{{node tower_0/v/cg/conv0/conv2d/Conv2D}} = Conv2D[T=DT_FLOAT, data_format="NCHW"]]]
Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom \
to RunOptions for current allocation info.
"""

OOM_MESSAGE = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[512,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)

HARMLESS_ALLOCATOR = (
    "2026-11-30 10:00:06.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:211] Allocator (GPU_0_bfc) "
    "ran out of memory trying to allocate 2.20GiB. The caller indicates that this is not a failure, but may mean "
    "that there could be performance gains if more memory were available.\n"
)

# What TensorFlow 2.21 and tf_cnn_benchmarks (master) printed here for
# --device=cpu --data_format=NHWC --model=trivial --forward_only=True (trimmed).
REAL_TF2_FORWARD_ONLY = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1796017058.910782    9037 port.cc:153] oneDNN custom operations are on. You may see slightly \
different numerical results due to floating-point round-off errors from different computation orders.
I0000 00:00:1796017058.911113    9037 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will \
not be used.
E0000 00:00:1796017060.702554    9037 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed \
call to cuInit: UNKNOWN ERROR (303)
TensorFlow:  2.21
Model:       trivial
Dataset:     imagenet (synthetic)
Mode:        forward only
SingleSess:  False
Batch size:  4 global
             4 per device
Num batches: 10
Num epochs:  0.00
Devices:     ['/cpu:0']
NUMA bind:   False
Data format: NHWC
Optimizer:   sgd
Variables:   parameter_server
==========
Generating training model
Initializing graph
WARNING:tensorflow:From /tmp/tfb/scripts/tf_cnn_benchmarks/benchmark_cnn.py:2245: Supervisor.__init__ (from \
tensorflow.python.training.supervisor) is deprecated and will be removed in a future version.
Instructions for updating:
Please switch to tf.train.MonitoredTrainingSession
I1130 05:37:40.866308 139706444495744 session_manager.py:545] Running local_init_op.
Running warm up
Done warm up
Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy
1\timages/sec: 2634.0 +/- 0.0 (jitter = 0.0)\t0.000\t0.250\t0.250
10\timages/sec: 2003.4 +/- 80.4 (jitter = 129.8)\t0.000\t0.250\t0.250
----------------------------------------------------------------
total images/sec: 1440.30
----------------------------------------------------------------
"""

# The same, for `tf_cnn_benchmarks.py --device=cpu extra` (trimmed).
REAL_TF2_POSITIONAL = """\
E0000 00:00:1796017055.014843    8211 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed \
call to cuInit: UNKNOWN ERROR (303)
Traceback (most recent call last):
  File "/tmp/tfb/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py", line 68, in <module>
    app.run(main)  # Raises error on invalid flags, unlike tf.app.run()
    ^^^^^^^^^^^^^
  File "/work/tfenv/venv/lib/python3.11/site-packages/absl/app.py", line 355, in _run_main
    sys.exit(main(argv))
             ^^^^^^^^^^
  File "/tmp/tfb/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py", line 51, in main
    raise ValueError('Received unknown positional arguments: %s'
ValueError: Received unknown positional arguments: ['extra']
"""

# And for `--foo=1`.
REAL_ABSL_FLAG_ERROR = """\
WARNING:tensorflow:From /work/tfenv/venv/lib/python3.11/site-packages/tensorflow/python/compat/v2_compat.py:98: \
disable_resource_variables (from tensorflow.python.ops.resource_variables_toggle) is deprecated.
FATAL Flags parsing error: Unknown command line flag 'foo'. Did you mean: force_gpu_compatible, forward_only ?
Pass --helpshort or --helpfull to see help on flags.
"""

# cnn_tf_v1.5_compatible under Python 3: "per device" is a float, no Num batches, a Layout optimizer line.
V1_5_LOG = """\
TensorFlow:  1.5
Model:       vgg16
Dataset:     imagenet (synthetic)
Mode:        training
SingleSess:  False
Batch size:  32 global
             32.0 per device
Devices:     ['/gpu:0']
Data format: NCHW
Layout optimizer: False
Optimizer:   sgd
Variables:   parameter_server
==========
Generating model
Running warm up
Done warm up
Step\tImg/sec\tloss
1\timages/sec: 110.1 +/- 0.0 (jitter = 0.0)\t7.259
10\timages/sec: 110.2 +/- 0.1 (jitter = 0.3)\t7.261
----------------------------------------------------------------
total images/sec: 110.23
----------------------------------------------------------------
"""


def both(text, tmp_path, encoding="utf-8", chunk_sizes=(1 << 20, 64, 7)):
    """Parse ``text`` by feeding lines and by reading it as a file in several chunk sizes; they must agree."""
    data = text.encode(encoding, "surrogateescape") if isinstance(text, str) else text
    lines = data.decode("utf-8", "replace").splitlines(True)
    fed = parse_lines(lines)
    path = tmp_path / "run.log"
    path.write_bytes(data)
    for size in chunk_sizes:
        assert repr(parse_file(path, chunk_size=size)) == repr(fed), "chunk size %d" % size  # repr: NaN == NaN
        live = LogParser()
        for i in range(0, len(data), size):
            live.feed_bytes(data[i : i + size])
        live.feed_bytes(b"", final=True)
        assert repr(live.result()) == repr(fed), "feed_bytes in chunks of %d" % size
    return fed


# -- the happy path ---------------------------------------------------------------------------------


def test_ok_log_reads_header_steps_and_total(tmp_path):
    log = both(OK_LOG, tmp_path)
    assert log.tf_version == "1.12"
    assert log.model == "resnet50"
    assert log.dataset == "imagenet (synthetic)"
    assert log.mode == "training"
    assert (log.batch_size_global, log.batch_size) == (64, 64)
    assert log.num_batches == 100
    assert log.num_epochs == 0.0
    assert log.devices == ["/gpu:0"]
    assert (log.data_format, log.optimizer, log.variable_update) == ("NCHW", "sgd", "parameter_server")
    assert log.steps_seen == 4
    assert log.last_step == Step(100, 176.9, 0.1, 0.7, 7.491)
    assert log.total_images_per_sec == 176.93
    assert log.failure_kind is None and log.failure_message is None
    assert classify(log, 0) == "ok"
    assert classify(log, None) == "ok"


def test_to_dict_is_plain(tmp_path):
    d = both(OK_LOG, tmp_path).to_dict()
    assert d["last_step"]["images_per_sec"] == 176.9
    assert d["model"] == "resnet50" and d["total_images_per_sec"] == 176.93


def test_real_tf2_log_with_accuracy_columns(tmp_path):
    log = both(REAL_TF2_FORWARD_ONLY, tmp_path)
    assert (log.tf_version, log.model, log.mode, log.batch_size, log.devices) == (
        "2.21",
        "trivial",
        "forward only",
        4,
        ["/cpu:0"],
    )
    assert log.last_step == Step(10, 2003.4, 80.4, 129.8, 0.0, 0.25, 0.25)
    assert log.steps_seen == 2
    assert log.total_images_per_sec == 1440.30
    assert log.failure_kind is None  # "CUDA error: ... UNKNOWN ERROR" on a CPU machine is no failure
    assert classify(log, 0) == "ok"


def test_v1_5_branch_format(tmp_path):
    log = both(V1_5_LOG, tmp_path)
    assert (log.tf_version, log.model, log.batch_size, log.batch_size_global) == ("1.5", "vgg16", 32, 32)
    assert log.num_batches is None and log.data_format == "NCHW" and log.variable_update == "parameter_server"
    assert log.total_images_per_sec == 110.23 and log.last_step.loss == 7.261


def test_speed_without_uncertainty_and_eval_steps(tmp_path):
    text = HEADER_1_12 + "1\timages/sec: 111.3\t8.1\n10\timages/sec: 112.5\t7.9\n"
    log = both(text, tmp_path)
    assert log.last_step == Step(10, 112.5, None, None, 7.9)
    log = both(HEADER_1_12 + "10\t1093.2 examples/sec\n20\t1101.0 examples/sec\n", tmp_path)
    assert log.steps_seen == 2 and log.last_step == Step(20, 1101.0, None, None, None)


def test_nan_loss_and_trailing_tokens(tmp_path):
    log = both(HEADER_1_12 + "10\timages/sec: 100.0 +/- 0.1 (jitter = 0.2)\tnan\textra words here\n", tmp_path)
    assert log.last_step.images_per_sec == 100.0 and log.last_step.loss != log.last_step.loss  # NaN


def test_several_totals_take_the_last_and_a_new_header_replaces_the_old(tmp_path):
    second = HEADER_1_12.replace("resnet50", "vgg16").replace("Num batches: 100\n", "")
    text = OK_LOG + second + STEPS.replace("176.", "110.") + TOTAL.replace("176.93", "110.23")
    log = both(text, tmp_path)
    assert log.total_images_per_sec == 110.23 and log.totals_seen == 2
    assert log.model == "vgg16"
    assert log.num_batches is None  # from the second header, which has none
    assert log.steps_seen == 8 and log.last_step.images_per_sec == 110.9


# -- tolerance ----------------------------------------------------------------------------------------


def test_crlf_and_lone_cr(tmp_path):
    for newline in ("\r\n", "\r"):
        log = both(OK_LOG.replace("\n", newline), tmp_path)
        assert (log.model, log.batch_size, log.steps_seen, log.total_images_per_sec) == ("resnet50", 64, 4, 176.93)


def test_crlf_cut_between_cr_and_lf_by_a_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(logparse, "HEADER_BLOCK_LINES", 3)
    text = "TensorFlow:  1.12\r\nModel:       a\r\nDataset:     b\r\nMode:        c\r\n"
    log = both(text, tmp_path, chunk_sizes=range(3, 40))
    assert (log.model, log.dataset, log.mode) == ("a", "b", "c")


def test_garbage_bytes(tmp_path):
    data = (
        (TF_NOISE + HEADER_1_12).encode()
        + b"\xff\xfe\x00binary\x80\x81 noise \xc3\x28\n"
        + bytes(range(256))
        + b"\n"
        + (STEPS + TOTAL).encode()
    )
    log = both(data, tmp_path)
    assert (log.model, log.steps_seen, log.total_images_per_sec) == ("resnet50", 4, 176.93)


def test_whitespace_stripped_or_tabbed(tmp_path):
    text = "\n".join(line.strip() for line in OK_LOG.splitlines()) + "\n"  # "64 per device" flush left
    log = both(text, tmp_path)
    assert (log.batch_size_global, log.batch_size, log.num_batches) == (64, 64, 100)
    tabbed = OK_LOG.replace("Model:       ", "Model:\t").replace("1\timages/sec: ", "1  images/sec:  ")
    log = both(tabbed, tmp_path)
    assert log.model == "resnet50" and log.steps_seen == 4


def test_noise_between_batch_size_and_per_device(tmp_path):
    text = HEADER_1_12.replace(
        "             64 per device", "2026-11-30 10:00:00.000000: I tensorflow/x.cc:1] noise\n  64 per device"
    )
    assert both(text, tmp_path).batch_size == 64


@pytest.mark.parametrize(
    "prefix",
    [
        "I1130 10:00:00.000000 140000 benchmark_cnn.py:123] ",
        "INFO:tensorflow:",
        "2026-11-30 10:00:00,123 ",
        "[2026-11-30T10:00:00Z] INFO:tensorflow:",
        "[1,0]<stdout>:",
        "    ",
    ],
)
def test_tolerated_prefixes(tmp_path, prefix):
    text = "".join(prefix + line + "\n" for line in (HEADER_1_12 + STEPS + TOTAL).splitlines())
    log = both(text, tmp_path)
    assert (log.model, log.batch_size, log.steps_seen, log.total_images_per_sec) == ("resnet50", 64, 4, 176.93)


def test_strict_where_it_matters(tmp_path):
    text = (
        "2026-11-30 10:00:00.000000: I tensorflow/x.cc:1] total images/sec: 999.00\n"  # TF C++ log: not ours
        "Mode:        inference\n"  # a header line outside the header block
        "the model said total images/sec: 5\n"
        "x10\timages/sec: 1.0\n"
        + OK_LOG
        + "Model:       alexnet\n"  # after the block: ignored, the log has a TensorFlow: line
    )
    log = both(text, tmp_path)
    assert log.total_images_per_sec == 176.93 and log.totals_seen == 1
    assert log.mode == "training" and log.model == "resnet50" and log.steps_seen == 4


def test_header_without_tensorflow_line(tmp_path):
    log = both(HEADER_1_12.split("\n", 1)[1] + STEPS + TOTAL, tmp_path)
    assert log.tf_version is None and log.model == "resnet50" and log.batch_size == 64


def test_lines_longer_than_the_limit_are_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(logparse, "MAX_LINE", 200)
    text = HEADER_1_12 + "noise " * 100 + "OOM when allocating\n" + "x" * 5000 + "\n" + STEPS
    log = both(text, tmp_path, chunk_sizes=(1 << 20, 150, 64))
    assert log.failure_kind is None and log.steps_seen == 4  # the OOM words lay past the cut


# -- failures -----------------------------------------------------------------------------------------


def test_oom(tmp_path):
    log = both(TF_NOISE + HEADER_1_12 + DEPRECATION + "Running warm up\n" + OOM_TAIL, tmp_path)
    assert log.failure_kind == "oom"
    assert log.failure_message == OOM_MESSAGE
    assert log.total_images_per_sec is None
    assert classify(log, 1) == "oom"
    assert classify(log, None) == "oom"


def test_oom_from_tf_log_line_or_cuda_alone(tmp_path):
    line = OOM_TAIL.splitlines()[3]
    log = both(HEADER_1_12 + line + "\n", tmp_path)
    assert log.failure_kind == "oom" and log.failure_message.startswith("OP_REQUIRES failed at conv_ops.cc:446")
    cuda = (
        "2026-11-30 10:00:05.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate "
        "3.2G (3435973836 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY\n"
    )
    log = both(HEADER_1_12 + cuda, tmp_path)
    assert log.failure_kind == "oom" and log.failure_message.endswith("CUDA_ERROR_OUT_OF_MEMORY")
    assert classify(log, -9) == "oom"


def test_harmless_allocator_warning_with_a_total_is_ok(tmp_path):
    log = both(OK_LOG.replace("Done warm up\n", "Done warm up\n" + HARMLESS_ALLOCATOR), tmp_path)
    assert log.failure_kind is None
    assert classify(log, 0) == "ok"


def test_crash_with_traceback(tmp_path):
    text = HEADER_1_12 + (
        "Traceback (most recent call last):\n"
        '  File "tf_cnn_benchmarks.py", line 68, in <module>\n'
        "    app.run(main)\n"
        "2026-11-30 10:00:05.000000: W tensorflow/core/kernels/x.cc:1] interleaved noise\n"
        "WARNING:tensorflow:interleaved python logging\n"
        "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(64, 2048)\n"
    )
    log = both(text, tmp_path)
    assert log.failure_kind == "error"
    assert log.failure_message == (
        "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(64, 2048)"
    )
    assert classify(log, 1) == "crashed" and classify(log, None) == "crashed"


def test_chained_tracebacks_keep_the_last_exception(tmp_path):
    text = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "a.py", line 3, in g\nKeyboardInterrupt\n'
    )
    log = both(text, tmp_path)
    assert (log.failure_kind, log.failure_message) == ("error", "KeyboardInterrupt")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            REAL_ABSL_FLAG_ERROR,
            "FATAL Flags parsing error: Unknown command line flag 'foo'. "
            "Did you mean: force_gpu_compatible, forward_only ?",
        ),
        (REAL_TF2_POSITIONAL, "ValueError: Received unknown positional arguments: ['extra']"),
        (
            "FATAL Flags parsing error: Unknown command line flag 'use_fp17'\n"
            "Pass --helpshort or --helpfull to see help on flags.\n",
            "FATAL Flags parsing error: Unknown command line flag 'use_fp17'",
        ),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1\n'
            "absl.flags._exceptions.UnrecognizedFlagError: Unknown command line flag 'xla_compile'\n",
            "absl.flags._exceptions.UnrecognizedFlagError: Unknown command line flag 'xla_compile'",
        ),
    ],
)
def test_flag_errors(tmp_path, text, message):
    log = both(text, tmp_path)
    assert (log.failure_kind, log.failure_message) == ("flag_error", message)
    assert classify(log, 1) == "crashed" and classify(log, None) == "crashed"


@pytest.mark.parametrize(
    "line",
    [
        "Segmentation fault (core dumped)",
        "Aborted (core dumped)",
        "Fatal Python error: Segmentation fault",
        "2026-11-30 10:00:05.000000: F tensorflow/core/kernels/x.cc:12] Check failed: status.ok()",
    ],
)
def test_crash_signatures(tmp_path, line):
    log = both(HEADER_1_12 + STEPS + line + "\n", tmp_path)
    assert log.failure_kind == "error" and line.endswith(log.failure_message)
    assert classify(log, None) == "crashed"


def test_no_total(tmp_path):
    log = both(TF_NOISE + HEADER_1_12 + STEPS, tmp_path)
    assert log.total_images_per_sec is None and log.failure_kind is None and log.steps_seen == 4
    assert classify(log, 0) == "no_result" and classify(log, None) == "no_result"
    assert classify(log, 1) == "crashed" and classify(log, -11) == "crashed"


def test_empty_file(tmp_path):
    log = both("", tmp_path)
    assert log == ParsedLog() and classify(log, None) == "no_result"


# -- classify -----------------------------------------------------------------------------------------

OK = ParsedLog(total_images_per_sec=100.0)
OOM_LOG = ParsedLog(failure_kind="oom", failure_message="ResourceExhaustedError: OOM when allocating")
OK_WITH_OOM = ParsedLog(total_images_per_sec=100.0, failure_kind="oom")
FLAG = ParsedLog(failure_kind="flag_error")
ERR = ParsedLog(failure_kind="error")
NOTHING = ParsedLog()


@pytest.mark.parametrize(
    "parsed, exit_code, timed_out, interrupted, status",
    [
        (OK, 0, False, False, "ok"),
        (OK, None, False, False, "ok"),
        (OK_WITH_OOM, 0, False, False, "ok"),
        (OK_WITH_OOM, 1, False, False, "oom"),
        (OK, 1, False, False, "crashed"),
        (OK, -11, False, False, "crashed"),
        (OK, 0, False, True, "interrupted"),
        (OK, 0, True, False, "timeout"),
        (NOTHING, -9, True, True, "interrupted"),
        (NOTHING, -9, True, False, "timeout"),
        (OOM_LOG, 1, False, False, "oom"),
        (OOM_LOG, None, False, False, "oom"),
        (OOM_LOG, 0, False, False, "oom"),
        (OOM_LOG, -6, False, False, "oom"),
        (FLAG, 1, False, False, "crashed"),
        (FLAG, None, False, False, "crashed"),
        (ERR, None, False, False, "crashed"),
        (ERR, 0, False, False, "no_result"),
        (NOTHING, 0, False, False, "no_result"),
        (NOTHING, None, False, False, "no_result"),
        (NOTHING, 2, False, False, "crashed"),
        (NOTHING, -11, False, False, "crashed"),
    ],
)
def test_classify(parsed, exit_code, timed_out, interrupted, status):
    assert classify(parsed, exit_code, timed_out=timed_out, interrupted=interrupted) == status


# -- live use -----------------------------------------------------------------------------------------


def test_feed_returns_steps_and_takes_any_line_ending():
    parser = LogParser()
    returned = [parser.feed(line) for line in (HEADER_1_12 + STEPS).replace("\n", "\r\n").splitlines(True)]
    steps = [s for s in returned if s is not None]
    assert [s.step for s in steps] == [1, 10, 20, 100]
    assert steps[0] == Step(1, 175.9, 0.0, 0.0, 8.169)
    snapshot = parser.result()  # result() may be asked for mid-run; it does not change afterwards
    assert snapshot.model == "resnet50" and snapshot.steps_seen == 4
    assert parser.feed("total images/sec: 176.93\n") is None
    assert parser.feed("10\t1093.2 examples/sec") == Step(10, 1093.2, None, None, None)
    assert parser.feed("one\rtwo\r20\timages/sec: 5.0\r") == Step(20, 5.0, None, None, None)
    log = parser.result()
    assert log.total_images_per_sec == 176.93 and log.steps_seen == 6 and log.last_step.step == 20
    assert snapshot.steps_seen == 4 and snapshot.total_images_per_sec is None


def test_feed_bytes_returns_steps_as_they_complete():
    parser = LogParser()
    assert parser.feed_bytes(HEADER_1_12.encode()) is None
    assert parser.feed_bytes(b"10\timages/sec: 176.6 +/- 0.2 (jitter = 0.6)\t7.5") is None  # not complete yet
    assert parser.feed_bytes(b"93\r") is None  # may be the first half of CRLF
    step = parser.feed_bytes(b"\n20\timages/sec: 1")
    assert step == Step(10, 176.6, 0.2, 0.6, 7.593)
    assert parser.feed_bytes(b"77.0\r\n") == Step(20, 177.0, None, None, None)
    assert parser.feed_bytes(b"total images/sec: 176.93", final=True) is None
    log = parser.result()
    assert (log.model, log.steps_seen, log.total_images_per_sec) == ("resnet50", 2, 176.93)


def test_without_total_mode_skips_failures_only_when_a_total_was_read(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(OK_LOG.replace("Done warm up\n", "Done warm up\nSegmentation fault\n"), encoding="utf-8")
    assert parse_file(path).failure_kind == "error"
    quick = parse_file(path, failures="without_total")
    assert quick.failure_kind is None and quick.total_images_per_sec == 176.93 and quick.model == "resnet50"
    path.write_text(HEADER_1_12 + OOM_TAIL + "Segmentation fault\n", encoding="utf-8")
    for size in (1 << 20, 100):
        assert parse_file(path, failures="without_total", chunk_size=size) == parse_file(path, chunk_size=size)
    with pytest.raises(ValueError):
        parse_file(path, failures="sometimes")


def test_every_marker_reaches_its_concern(monkeypatch):
    seen = []
    monkeypatch.setattr(LogParser, "_failure_line", lambda self, line: seen.append(("failure", line)))
    monkeypatch.setattr(LogParser, "_header_line", lambda self, line: seen.append(("header", line)))
    monkeypatch.setattr(LogParser, "_progress", lambda self, line: seen.append(("progress", line)))
    parser = LogParser()
    parser.feed("plain noise: nothing to see")
    assert seen == []
    for concern, markers in (
        ("progress", logparse.PROGRESS_MARKERS),
        ("header", logparse.HEADER_MARKERS),
        ("failure", logparse.FAILURE_MARKERS),
    ):
        for marker in markers:
            seen.clear()
            parser.feed("noise %s noise" % marker)
            assert seen == [(concern, "noise %s noise" % marker)]


# -- feeding lines and reading files agree on anything -------------------------------------------------

POOL = (
    OK_LOG.splitlines()
    + OOM_TAIL.splitlines()
    + REAL_TF2_POSITIONAL.splitlines()
    + REAL_ABSL_FLAG_ERROR.splitlines()
    + V1_5_LOG.splitlines()
    + [
        "",
        "Segmentation fault (core dumped)",
        "KeyboardInterrupt",
        "Traceback (most recent call last):",
        "INFO:tensorflow:total images/sec: 12.5",
        "  64 per device",
        "Model: x",
        "\udcff\udcfe",
        "10\t1093.2 examples/sec",
        "x" * 300,
        "   ",
        "\t",
        "x" * 1000,
        "TensorFlow:  9.9",
        "Traceback (most recent call last):" + "y" * 300,
        "OOM when allocating" + "z" * 300,
    ]
)


@pytest.mark.slow  # a property-based search: seconds in process
def test_fuzzed_logs_agree(tmp_path, monkeypatch):
    monkeypatch.setattr(logparse, "MAX_LINE", 256)
    monkeypatch.setattr(logparse, "HEADER_BLOCK_LINES", 6)
    monkeypatch.setattr(logparse, "TRACEBACK_LINES", 4)
    monkeypatch.setattr(logparse, "_BLOCK_WINDOW", 40)
    rng = random.Random(7)
    for _case in range(300):
        lines = [rng.choice(POOL) for _ in range(rng.randrange(1, 60))]
        endings = rng.choice([["\n", "\n", "\n", "\r\n", "\r"], ["\r\n"], ["\r"]])
        ends = [rng.choice(endings) for _ in lines]
        text = "".join(line + end for line, end in zip(lines, ends))
        if rng.random() < 0.3:
            text = text.rstrip("\r\n")
        data = text.encode("utf-8", "surrogateescape")
        both(data, tmp_path, chunk_sizes=(1 << 20, rng.randrange(1, 20), rng.randrange(20, 400)))


# -- big files ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_parse_file_is_streaming_and_flat_in_memory(tmp_path):
    noise = (
        "2026-11-30 10:00:05.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1511] Adding "
        "visible gpu devices: 0 " + "y" * 100 + "\n"
    ).encode()
    block = noise * 8192  # ~1.7 MB
    path = tmp_path / "big.log"
    with open(path, "wb") as fh:
        fh.write(HEADER_1_12.encode())
        for _ in range(29):  # ~50 MB
            fh.write(block)
        fh.write(b"z" * (12 << 20) + b"\n")  # a 12 MiB line, cut to 1 MiB for parsing
        fh.write((STEPS + TOTAL).encode())
    assert path.stat().st_size > 50_000_000
    started = time.perf_counter()
    tracemalloc.start()
    try:
        log = parse_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (log.model, log.steps_seen, log.total_images_per_sec) == ("resnet50", 4, 176.93)
    assert peak < 8 * 1024 * 1024, "peak %.1f MB" % (peak / 1e6)
    assert time.perf_counter() - started < 3


# -- issue 11, item 10: a total that is no finite, positive number is no result --------------------------


@pytest.mark.parametrize("total", ["nan", "inf", "-inf", "-5", "0", "0.0", "-0.5"])
def test_a_bad_total_is_no_result_with_the_reason(tmp_path, total):
    log = both(HEADER_1_12 + STEPS + "total images/sec: %s\n" % total, tmp_path)
    assert log.totals_seen == 1
    assert log.failure_kind == "bad_total" and total in log.failure_message
    assert "no finite, positive number" in log.failure_message
    assert classify(log, 0) == "no_result" and classify(log, None) == "no_result"
    assert classify(log, 1) == "crashed"
    quick = parse_file(tmp_path / "run.log", failures="without_total")
    assert quick.failure_kind == "bad_total" and classify(quick, None) == "no_result"


def test_a_bad_total_does_not_hide_a_real_failure(tmp_path):
    log = both(HEADER_1_12 + "total images/sec: nan\n" + OOM_TAIL, tmp_path)
    assert log.failure_kind == "oom" and classify(log, None) == "oom"
    path = tmp_path / "run.log"
    assert parse_file(path, failures="without_total").failure_kind == "oom"  # failures looked for


def test_good_total():
    assert logparse.good_total(0.01) and not logparse.good_total(None)
    assert not any(logparse.good_total(v) for v in (0.0, -1.0, float("nan"), float("inf")))


def test_every_signature_holds_its_concern_marker():
    # the markers are defined once; every signature the failure handlers look for must reach them
    for sig in logparse.OOM_SIGNATURES + logparse.CRASH_SIGNATURES + (logparse.TRACEBACK_START,):
        assert any(m in sig for m in logparse.FAILURE_MARKERS), sig
    for sig in logparse.OOM_SIGNATURES + logparse.FLAG_SIGNATURES:
        if sig != "Received unknown positional arguments":  # only ever inside a "ValueError: ..." line
            assert any(m in sig for m in logparse.OOM_MARKERS), sig
