# Stand-alone probe run *inside the target interpreter* (``--python``), which may be as old as Python 3.5
# with TensorFlow 1.x and may not have tfcnnwrap installed. Keep it to the standard library, no f-strings,
# no importlib.metadata. It answers with lines ``TFCNNWRAP-PROBE-JSON: {...}`` on stdout (the last one
# counts); everything else it or TensorFlow prints is noise to the caller.
#
# usage: python _probe.py [--full] [--matmul] [--bandwidth]
#   (no flag)  version from package metadata only (~0.1 s); imports tensorflow only when metadata has none
#   --full     also import tensorflow: GPUs, CUDA/cuDNN build info, tf_keras
#   --matmul   also time the seed's [10000x1000].[1000x2000] float32 product on /cpu:0 and /gpu:0
#   --bandwidth also time 128 MiB copies host->/gpu:0 and /gpu:0->host (GB/s, median of 7 after a warm-up)
#
# A snapshot line is printed after every stage (metadata, import, build_info, devices, bandwidth,
# matmul_cpu, matmul_gpu) and a last one with "complete": true; when a stage crashes the interpreter or hangs, the
# caller still has the snapshot before it.

import json
import os
import platform
import re
import sys
import time

MARKER = "TFCNNWRAP-PROBE-JSON: "

# Distribution names that install the ``tensorflow`` module, in order of preference.
DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow_gpu",
    "tensorflow_cpu",
    "tf_nightly",
    "tf_nightly_gpu",
    "tensorflow_macos",
    "tensorflow_intel",
    "intel_tensorflow",
    "tensorflow_rocm",
)

_META_DIR = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+?)-(?P<version>[0-9][^-]*?)(-py[0-9.]+)?\.(dist-info|egg-info)$")


def _normalise(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_version(meta_path):
    for fname in ("METADATA", "PKG-INFO"):
        path = os.path.join(meta_path, fname)
        if os.path.isfile(path):
            try:
                with open(path, "rb") as fh:
                    for raw in fh:
                        line = raw.decode("utf-8", "replace").strip()
                        if not line:
                            break
                        if line.lower().startswith("version:"):
                            return line.split(":", 1)[1].strip()
            except (IOError, OSError):
                pass
    return None


def find_distribution():
    """Return (distribution, version, location) of the first TensorFlow distribution on sys.path."""
    found = {}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            m = _META_DIR.match(name)
            if not m:
                continue
            dist = _normalise(m.group("name"))
            if dist in DISTRIBUTIONS and dist not in found:
                meta = os.path.join(entry, name)
                version = _metadata_version(meta) or m.group("version")
                found[dist] = (dist.replace("_", "-"), version, entry)
    for dist in DISTRIBUTIONS:
        if dist in found:
            return found[dist]
    return None


def module_present(name):
    try:
        import importlib.util  # in the target's Python, which may be 3.5

        return importlib.util.find_spec(name) is not None
    except Exception:  # noqa: BLE001 - a broken package must not break the probe
        return False


def _gpu_names(tf, warnings):
    """Names of the GPUs TensorFlow sees; [] when none; None when it cannot tell."""
    config = getattr(tf, "config", None)
    lister = getattr(config, "list_physical_devices", None) if config is not None else None
    if lister is None and config is not None:
        experimental = getattr(config, "experimental", None)
        lister = getattr(experimental, "list_physical_devices", None)
    if lister is not None:
        try:
            devices = lister("GPU")
            names = []
            details = getattr(getattr(config, "experimental", None), "get_device_details", None)
            for dev in devices:
                name = None
                if details is not None:
                    try:
                        name = details(dev).get("device_name")
                    except Exception:  # noqa: BLE001
                        name = None
                names.append(name or getattr(dev, "name", str(dev)))
            return names
        except Exception as exc:  # noqa: BLE001
            warnings.append("tf.config.list_physical_devices failed: %s: %s" % (type(exc).__name__, exc))
    try:
        from tensorflow.python.client import device_lib  # TF 1.x

        names = []
        for dev in device_lib.list_local_devices():
            if dev.device_type == "GPU":
                desc = getattr(dev, "physical_device_desc", "") or ""
                m = re.search(r"name: ([^,]+)", desc)
                names.append(m.group(1).strip() if m else dev.name)
        return names
    except Exception as exc:  # noqa: BLE001
        warnings.append("could not list GPUs through device_lib: %s: %s" % (type(exc).__name__, exc))
    test = getattr(tf, "test", None)
    available = getattr(test, "is_gpu_available", None) if test is not None else None
    if available is not None:
        try:
            # Only yes or no: the GPU's name stays unknown.
            return ["/gpu:0"] if available() else []
        except Exception as exc:  # noqa: BLE001
            warnings.append("tf.test.is_gpu_available failed: %s: %s" % (type(exc).__name__, exc))
    return None


def _build_info(tf, result, warnings):
    """CUDA and cuDNN versions TensorFlow was built with (tf.sysconfig.get_build_info from TF 2.3)."""
    sysconfig = getattr(tf, "sysconfig", None)
    getter = getattr(sysconfig, "get_build_info", None) if sysconfig is not None else None
    if getter is not None:
        try:
            info = dict(getter())
            result["cuda_version"] = info.get("cuda_version")
            result["cudnn_version"] = info.get("cudnn_version")
            result["is_cuda_build"] = info.get("is_cuda_build")
            return
        except Exception as exc:  # noqa: BLE001
            warnings.append("tf.sysconfig.get_build_info failed: %s: %s" % (type(exc).__name__, exc))
    try:
        # TF 1.x: the generated module holds the versions on some builds (the Windows ones, mostly).
        from tensorflow.python.platform import build_info  # in the target's Python: TensorFlow only when asked

        result["cuda_version"] = getattr(build_info, "cuda_version_number", None)
        result["cudnn_version"] = getattr(build_info, "cudnn_version_number", None)
        if getattr(build_info, "is_cuda_build", None) is not None:
            result["is_cuda_build"] = bool(build_info.is_cuda_build)
    except Exception:  # noqa: BLE001 - optional everywhere
        pass
    test = getattr(tf, "test", None)
    built = getattr(test, "is_built_with_cuda", None) if test is not None else None
    if built is not None and result["is_cuda_build"] is None:
        try:
            result["is_cuda_build"] = bool(built())
        except Exception as exc:  # noqa: BLE001
            warnings.append("tf.test.is_built_with_cuda failed: %s: %s" % (type(exc).__name__, exc))
    if result["cuda_version"] is None and result["is_cuda_build"] is not False:
        warnings.append("this TensorFlow does not say which CUDA and cuDNN it was built with")


def _time_matmul(tf, device, repeats=5):
    """GFLOP/s of the seed's product on one device (best of ``repeats`` after a warm-up)."""
    flops = 2.0 * 10000 * 1000 * 2000
    eager = getattr(tf, "executing_eagerly", None)
    if eager is not None and eager():
        with tf.device(device):
            a = tf.random.normal([10000, 1000])
            b = tf.random.normal([1000, 2000])
            tf.reduce_sum(tf.matmul(a, b)).numpy()
            best = None
            for _ in range(repeats):
                start = time.perf_counter()
                tf.reduce_sum(tf.matmul(a, b)).numpy()
                took = time.perf_counter() - start
                best = took if best is None else min(best, took)
    else:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(device):
                a = tf.random_normal([10000, 1000])
                b = tf.random_normal([1000, 2000])
                a_var = tf.Variable(a)
                b_var = tf.Variable(b)
                total = tf.reduce_sum(tf.matmul(a_var, b_var))
            config = tf.ConfigProto(allow_soft_placement=False)
            with tf.Session(graph=graph, config=config) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(total)
                best = None
                for _ in range(repeats):
                    start = time.time()
                    sess.run(total)
                    took = time.time() - start
                    best = took if best is None else min(best, took)
    assert best is not None  # the loop ran at least once
    return round(flops / best / 1e9, 1)


COPY_BYTES = 128 * 1024 * 1024  # large enough that per-copy overhead is under 1 % even on a PCIe 4 x16 link
COPY_REPEATS = 7


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def _copy_times_eager(tf, count, repeats):
    """(h2d seconds, d2h seconds) per repeat. Every repeat copies a fresh tensor, made outside the timing:
    TensorFlow keeps a copy of a tensor on the device it was copied to, so a second copy of the same one
    would time nothing."""
    h2d, d2h = [], []
    for i in range(repeats + 1):
        with tf.device("/cpu:0"):
            host = tf.fill([count], float(i))
        start = time.perf_counter()
        with tf.device("/gpu:0"):
            dev = tf.identity(host)
            dev[:1].numpy()  # waits until the whole copy has landed
        middle = time.perf_counter()
        dev.numpy()
        end = time.perf_counter()
        if i:  # the first round is the warm-up (allocator, CUDA streams)
            h2d.append(middle - start)
            d2h.append(end - middle)
    return h2d, d2h


def _copy_times_graph(tf, count, repeats):
    """TF 1.x: a session run copies a /cpu:0 variable to /gpu:0 (fetching one element), and fetches a
    /gpu:0 variable to the host."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:0"):
            host = tf.Variable(tf.zeros([count]))
        with tf.device("/gpu:0"):
            dev = tf.Variable(tf.zeros([count]))
            to_gpu = tf.identity(host)[:1]
        config = tf.ConfigProto(allow_soft_placement=False)
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            h2d, d2h = [], []
            for i in range(repeats + 1):
                start = time.time()
                sess.run(to_gpu)
                middle = time.time()
                sess.run(dev)
                end = time.time()
                if i:
                    h2d.append(middle - start)
                    d2h.append(end - middle)
    return h2d, d2h


def _bandwidth(tf, result, warnings):
    """Host<->/gpu:0 copy bandwidth in GB/s (median), or a reason why there is none."""
    found = {"h2d_gbps": None, "d2h_gbps": None, "reason": None}  # type: dict
    result["bandwidth"] = found
    if result["gpus"] is None:
        found["reason"] = "TensorFlow could not list its GPUs"
        return
    if not result["gpus"]:
        found["reason"] = "TensorFlow sees no GPU (CPU only): there is no link to measure"
        return
    eager = getattr(tf, "executing_eagerly", None)
    timer = _copy_times_eager if eager is not None and eager() else _copy_times_graph
    try:
        h2d, d2h = timer(tf, COPY_BYTES // 4, COPY_REPEATS)
    except Exception as exc:  # noqa: BLE001
        found["reason"] = "copying to /gpu:0 failed: %s: %s" % (type(exc).__name__, exc)
        warnings.append(found["reason"])
        return
    for key, times in (("h2d_gbps", h2d), ("d2h_gbps", d2h)):
        took = median(times)
        found[key] = round(COPY_BYTES / took / 1e9, 2) if took > 0 else None


def emit(result, stage, complete=False):
    """Print a snapshot of what is known so far; the caller keeps the last one it sees.

    A probe that crashes or hangs in a later stage (TensorFlow built for CPU instructions this CPU lacks,
    a CUDA initialisation that never returns) still leaves what the earlier stages learned.
    """
    result["stage"] = stage
    result["complete"] = complete
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()


def _matmul(tf, result, warnings):
    timings = {"cpu_gflops": None, "gpu_gflops": None}
    result["matmul"] = timings
    try:
        timings["cpu_gflops"] = _time_matmul(tf, "/cpu:0")
    except Exception as exc:  # noqa: BLE001
        warnings.append("matmul on /cpu:0 failed: %s: %s" % (type(exc).__name__, exc))
    emit(result, "matmul_cpu")
    if result["gpus"]:
        try:
            timings["gpu_gflops"] = _time_matmul(tf, "/gpu:0")
        except Exception as exc:  # noqa: BLE001
            warnings.append("matmul on /gpu:0 failed: %s: %s" % (type(exc).__name__, exc))
        emit(result, "matmul_gpu")


def _ask(tf, result, warnings, full, bandwidth, matmul):
    """The stages after the import, each followed by its snapshot."""
    if full:
        _build_info(tf, result, warnings)
        emit(result, "build_info")
        result["gpus"] = _gpu_names(tf, warnings)
        emit(result, "devices")
    if bandwidth:
        _bandwidth(tf, result, warnings)
        emit(result, "bandwidth")
    if matmul:
        _matmul(tf, result, warnings)


def main(argv):
    full = "--full" in argv or "--matmul" in argv
    matmul = "--matmul" in argv
    bandwidth = "--bandwidth" in argv
    full = full or bandwidth
    warnings = []  # type: list
    result = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "tensorflow_version": None,
        "tensorflow_distribution": None,
        "tensorflow_location": None,
        "version_source": None,
        "tf_keras": module_present("tf_keras"),
        "tf_use_legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS"),
        "tensorflow_importable": None,
        "gpus": None,
        "cuda_version": None,
        "cudnn_version": None,
        "is_cuda_build": None,
        "matmul": None,
        "bandwidth": None,
        "warnings": warnings,
    }
    dist = find_distribution()
    if dist is not None:
        result["tensorflow_distribution"], result["tensorflow_version"], result["tensorflow_location"] = dist
        result["version_source"] = "metadata"
        if not module_present("tensorflow"):
            warnings.append("distribution %s %s is recorded but the tensorflow module is missing" % (dist[0], dist[1]))
    emit(result, "metadata")
    if full or dist is None:
        try:
            import tensorflow as tf  # in the target's Python: TensorFlow only when asked

            result["tensorflow_importable"] = True
        except Exception as exc:  # noqa: BLE001 - report, never raise
            tf = None
            result["tensorflow_importable"] = False
            if dist is not None or module_present("tensorflow"):
                warnings.append("import tensorflow failed: %s: %s" % (type(exc).__name__, exc))
        if tf is not None:
            version = getattr(tf, "__version__", None) or getattr(tf, "VERSION", None)
            if version and not result["tensorflow_version"]:
                result["tensorflow_version"] = str(version)
                result["version_source"] = "import"
            result["tensorflow_location"] = result["tensorflow_location"] or os.path.dirname(
                os.path.dirname(getattr(tf, "__file__", "") or "")
            )
            emit(result, "import")
            _ask(tf, result, warnings, full, bandwidth, matmul)
    if bandwidth and result["bandwidth"] is None:
        result["bandwidth"] = {"h2d_gbps": None, "d2h_gbps": None, "reason": "TensorFlow cannot be imported"}
    emit(result, "done", complete=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
