"""Shared fixtures: a local git repo shaped like tensorflow/benchmarks, stand-in TensorFlow installs,
a ready vendor checkout, and a way to drive the CLI as a user does (a subprocess)."""

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import venv
import warnings
from pathlib import Path

import pytest
from pidwait import pid_alive, wait_gone  # noqa: F401 - the tests' one pid helper, imported from here too

# A suite started in the background by a non-interactive shell inherits SIGINT ignored (POSIX shells do that
# to `cmd &`), and so would every process it starts: the Ctrl-C tests need what a terminal gives.
if hasattr(signal, "SIGINT") and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS = Path(__file__).resolve().parent
FAKE_SCRIPT = TESTS / "fake" / "tf_cnn_benchmarks.py"
REPO_ROOT = TESTS.parent
NO_LIBRARY = Path(tempfile.gettempdir()) / ("tfcnnwrap-tests-no-library-%d" % os.getpid())
# the user's own config file (tfcnnwrap.toml) never steers a test, in process or in a spawned CLI: an empty one
os.environ["TFCNNWRAP_CONFIG"] = os.devnull

# Compiled bytecode for this process and every Python it starts, kept outside the source tree: a shell that sets
# PYTHONDONTWRITEBYTECODE (this project's CI machine does) would otherwise make each of the suite's thousands of
# spawned CLIs compile its modules again (0.15 s a spawn) and pytest rewrite every test module each session; an
# installed package has its .pyc files, so this is also closer to what users run. CPython writes a .pyc whole or
# not at all, so workers share it safely; a stale one is recompiled (source mtime and size are checked).
PYCACHE = REPO_ROOT / ".pytest_cache" / "pycache"
PYCACHE.mkdir(parents=True, exist_ok=True)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
sys.dont_write_bytecode = False
sys.pycache_prefix = str(PYCACHE)

COMPAT_VERSIONS = ["1.5", "1.8", "1.9", "1.10", "1.11", "1.12", "1.13", "1.14", "1.15", "2.0", "2.1"]
COMPAT_BRANCHES = ["cnn_tf_v%s_compatible" % v for v in COMPAT_VERSIONS]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd, *args):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(
        ["git", *args], cwd=str(cwd), env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ).stdout.decode()


class FakeUpstream:
    def __init__(self, path):
        self.path = Path(path)
        self.url = self.path.as_uri()
        self.branches = COMPAT_BRANCHES + ["master"]

    def head(self, branch):
        return git(self.path, "rev-parse", "refs/heads/%s" % branch).strip()

    def commit_to(self, branch, message="another commit"):
        """Add a commit on ``branch`` (for --update tests); returns the new sha."""
        work = self.path.parent / ("work-" + branch)
        if not work.exists():
            git(self.path.parent, "clone", "-q", "--branch", branch, self.url, str(work))
        else:
            git(work, "pull", "-q", "origin", branch)
        (work / "CHANGES").write_text(message + "\n", encoding="utf-8")
        git(work, "add", "CHANGES")
        git(work, "commit", "-q", "-m", message)
        git(work, "push", "-q", "origin", branch)
        return self.head(branch)


def build_fake_upstream(path, history=3, filler_kb=0):
    """A bare-ish repo with the compat branches and master, each holding the stand-in script.

    ``history`` commits on master (each optionally adding ``filler_kb`` of incompressible data, so that a
    full clone is measurably bigger than a shallow one).
    """
    path = Path(path)
    work = path.parent / (path.name + "-src")
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "master")
    script_dir = work / "scripts" / "tf_cnn_benchmarks"
    script_dir.mkdir(parents=True)
    shutil.copy(FAKE_SCRIPT, script_dir / "tf_cnn_benchmarks.py")
    (work / "README.md").write_text("stand-in for tensorflow/benchmarks\n", encoding="utf-8")
    for i in range(history):
        (work / "HISTORY").write_text("commit %d\n" % i, encoding="utf-8")
        if filler_kb:
            (work / "filler.bin").write_bytes(os.urandom(filler_kb * 1024))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "master commit %d" % i)
    for branch in COMPAT_BRANCHES:
        git(work, "checkout", "-q", "-b", branch, "master")
        (work / "BRANCH").write_text(branch + "\n", encoding="utf-8")
        git(work, "add", "BRANCH")
        git(work, "commit", "-q", "-m", "branch %s" % branch)
    git(work, "checkout", "-q", "master")
    (work / "BRANCH").write_text("master\n", encoding="utf-8")
    git(work, "add", "BRANCH")
    git(work, "commit", "-q", "-m", "master marker")
    git(path.parent, "clone", "-q", "--bare", str(work), str(path))
    shutil.rmtree(work)
    return FakeUpstream(path)


@pytest.fixture(scope="session")
def fake_upstream(tmp_path_factory):
    """A local repo shaped like tensorflow/benchmarks (compat branches 1.5 ... 2.1 and master)."""
    return build_fake_upstream(tmp_path_factory.mktemp("upstream") / "benchmarks.git")


@pytest.fixture
def fresh_upstream(tmp_path):
    """Like fake_upstream, but private to one test (which may add commits or delete it)."""
    return build_fake_upstream(tmp_path / "upstream" / "benchmarks.git")


def venv_python(env_dir):
    env_dir = Path(env_dir)
    if os.name == "nt":
        return env_dir / "Scripts" / "python.exe"
    return env_dir / "bin" / "python"


def site_packages(env_dir):
    env_dir = Path(env_dir)
    if os.name == "nt":
        return env_dir / "Lib" / "site-packages"
    return next((env_dir / "lib").glob("python*/site-packages"))


FAKE_TF_INIT = '''"""Stand-in TensorFlow {version} for tfcnnwrap's tests."""
import os
__version__ = "{version}"
if os.environ.get("FAKE_TF_IMPORT_ERROR"):
    raise ImportError(os.environ["FAKE_TF_IMPORT_ERROR"])
'''

FAKE_TF2_EXTRA = """
class _PhysicalDevice(object):
    def __init__(self, i):
        self.name = "/physical_device:GPU:%d" % i
        self.device_type = "GPU"


class _Experimental(object):
    @staticmethod
    def get_device_details(dev):
        names = [n for n in os.environ.get("FAKE_TF_GPUS", "").split(",") if n]
        return {{"device_name": names[int(dev.name.rsplit(":", 1)[1])]}}


class config(object):
    experimental = _Experimental

    @staticmethod
    def list_physical_devices(kind):
        names = [n for n in os.environ.get("FAKE_TF_GPUS", "").split(",") if n]
        return [_PhysicalDevice(i) for i, _ in enumerate(names)] if kind == "GPU" else []


class sysconfig(object):
    @staticmethod
    def get_build_info():
        return {{"cuda_version": "11.2", "cudnn_version": "8", "is_cuda_build": True}}


# Eager copies for `doctor --bandwidth`: a "copy" copies the bytes in host memory, so it takes real time.
class _Tensor(object):
    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        return _Tensor(self.data[:4])

    def numpy(self):
        return bytes(self.data)


class device(object):
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def executing_eagerly():
    return True


def fill(dims, value):
    return _Tensor(bytearray(4 * dims[0]))


def identity(tensor):
    if os.environ.get("FAKE_TF_COPY_ERROR"):
        raise RuntimeError(os.environ["FAKE_TF_COPY_ERROR"])
    return _Tensor(bytes(tensor.data))
"""


def make_fake_tf_env(env_dir, version, dist="tensorflow", with_module=True, with_metadata=True, tf_keras=False):
    """A venv whose python has a stand-in ``tensorflow`` (and/or its metadata); returns that python."""
    env_dir = Path(env_dir)
    if not venv_python(env_dir).exists():
        venv.EnvBuilder(with_pip=False, symlinks=(os.name != "nt")).create(str(env_dir))
    site = site_packages(env_dir)
    if with_module:
        pkg = site / "tensorflow"
        pkg.mkdir(exist_ok=True)
        major_minor = tuple(int(x) for x in version.split(".")[:2])
        body = FAKE_TF_INIT.format(version=version)
        if major_minor >= (2, 1):
            body += FAKE_TF2_EXTRA.format()
        (pkg / "__init__.py").write_text(body, encoding="utf-8")
    if with_metadata:
        meta = site / ("%s-%s.dist-info" % (dist.replace("-", "_"), version))
        meta.mkdir(exist_ok=True)
        (meta / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: %s\nVersion: %s\n\nStand-in.\n" % (dist, version), encoding="utf-8"
        )
    if tf_keras:
        (site / "tf_keras").mkdir(exist_ok=True)
        (site / "tf_keras" / "__init__.py").write_text("", encoding="utf-8")
    return venv_python(env_dir)


@pytest.fixture(scope="session")
def fake_tf(tmp_path_factory):
    """fake_tf(version, dist="tensorflow", **kw) -> path of a python with a stand-in TensorFlow."""
    cache = {}

    def make(version, dist="tensorflow", **kw):
        key = (version, dist, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = make_fake_tf_env(tmp_path_factory.mktemp("tf-%s" % version), version, dist, **kw)
        return cache[key]

    return make


def make_vendor(vendor_dir, branch="cnn_tf_v1.12_compatible", tf_version="1.12.0", script=FAKE_SCRIPT):
    """A vendor directory as `setup` leaves it, without git: the stand-in script plus a manifest."""
    vendor_dir = Path(vendor_dir)
    script_dir = vendor_dir / "benchmarks" / "scripts" / "tf_cnn_benchmarks"
    script_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(script, script_dir / "tf_cnn_benchmarks.py")
    manifest = {
        "url": "https://github.com/tensorflow/benchmarks.git",
        "branch": branch,
        "commit": "0" * 40,
        "tf_version": tf_version,
        "tf_version_source": "test",
        "python": sys.executable,
        "fetched_at": "2026-11-30T00:00:00Z",
        "checkout": "benchmarks",
    }
    (vendor_dir / "tfcnnwrap-setup.json").write_text(json.dumps(manifest), encoding="utf-8")
    return vendor_dir


@pytest.fixture
def vendor(tmp_path):
    """A ready vendor directory (stand-in tf_cnn_benchmarks, branch cnn_tf_v1.12_compatible)."""
    return make_vendor(tmp_path / "vendor")


class CliResult:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout.decode("utf-8", "replace")
        self.stderr = proc.stderr.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.stdout)

    def rows(self):
        """The rows of a `--format json` envelope (format 2: docs/results-format.md), checked to be one."""
        data = self.json()
        assert data["format"] == 2 and isinstance(data["rows"], list) and "conditions" in data, data
        return data["rows"]

    def __repr__(self):
        return "<rc=%s\nstdout=%s\nstderr=%s>" % (self.returncode, self.stdout[-3000:], self.stderr[-3000:])


def cli_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["COLUMNS"] = "200"
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    # compare reads the library's community results: never the user's own library (a missing one is none)
    env["TFCNNWRAP_DATA"] = str(NO_LIBRARY)
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


# --- The CLI, in a process of its own or in this one ------------------------------------------------------------
# A verb that only reads files and prints (no process started, no signal, no pool), and any verb's --help, runs
# in this process through the entry point `python -m tfcnnwrap` calls, with the same argv, environment, working
# directory, standard streams (files, not terminals) and exit code: a spawned one costs ~1 s of CPU for Python,
# pandas and the rest, and the suite spawns it thousands of times. tests/test_cli_in_process.py holds the two
# ways to the same bytes.
# Every other verb, and any call that sets a timeout, input, the interpreter's own environment (PYTHON*, PATH,
# LD_*) or worker processes (*_JOBS), runs in a process of its own; TFCNNWRAP_TEST_SPAWN=1 sends every call there.
# `import` of 64 bundles or more and `site` of 16 sources or more start worker pools: in process the guard ends
# such a call with exit 3 and the guard's message (call spawn_cli for it).
IN_PROCESS_VERBS = frozenset(
    {"report", "compare", "references", "export", "verify", "list", "completion", "parse", "library", "import", "site"}
)
_PRISTINE_WARNINGS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


# What starts a process, for the two guards that refuse it: the fast tier's and the in-process CLI's.
_PROCESS_STARTERS = tuple(
    [(subprocess.Popen, "_execute_child")]
    + [(os, name) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system") if hasattr(os, name)]
)


def _refuse_in_process(*args, **kwargs):
    raise AssertionError("a verb run in process started a process: take it out of IN_PROCESS_VERBS (conftest)")


def _in_process_ok(args, env, timeout, input):
    if os.environ.get("TFCNNWRAP_TEST_SPAWN") == "1" or timeout is not None or input is not None:
        return False
    if any(k.startswith(("PYTHON", "LD_")) or k == "PATH" or k.endswith("_JOBS") for k in (env or {})):
        return False
    words = [str(a) for a in args]
    verb = next((w for w in words if not w.startswith("-")), None)
    if "--debug" in words or "--sign" in words:  # export --sign runs ssh-keygen; so do verify, import and site
        return False  # of a signed bundle: call spawn_cli for those (tests/test_signing.py does)
    # help is printed by argparse before any verb runs: every verb's, like the verbs that only read
    return verb in IN_PROCESS_VERBS or bool({"-h", "--help"} & set(words))


def _show_warning(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _call_main(main, argv):
    """main's exit code as the interpreter would end on it."""
    import traceback

    try:
        return main(argv)
    except SystemExit as exc:  # a code, None for 0, anything else printed and 1
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 - escaped main: a traceback on stderr and 1, as a process ends
        traceback.print_exc(file=sys.stderr)
        return 1


def _as_a_new_process(stack, argv, cwd, env, streams):
    """What `python -m tfcnnwrap ARGV` would start with, for as long as ``stack`` is open."""
    from unittest import mock

    stack.enter_context(mock.patch.dict(os.environ, cli_env(env), clear=True))
    stack.callback(os.chdir, os.getcwd())
    os.chdir(str(cwd) if cwd else os.getcwd())
    stack.enter_context(mock.patch.object(sys, "argv", [str(REPO_ROOT / "tfcnnwrap" / "__main__.py"), *argv]))
    stack.enter_context(mock.patch.object(sys, "stdin", io.TextIOWrapper(io.BytesIO(), encoding="utf-8")))
    stack.enter_context(mock.patch.object(sys, "stdout", streams[0]))
    stack.enter_context(mock.patch.object(sys, "stderr", streams[1]))
    stack.enter_context(mock.patch.object(tempfile, "tempdir", None))  # TMPDIR is read again
    stack.callback(signal.signal, signal.SIGINT, signal.getsignal(signal.SIGINT))
    for owner, name in _PROCESS_STARTERS:
        stack.enter_context(mock.patch.object(owner, name, _refuse_in_process))
    stack.enter_context(warnings.catch_warnings())
    warnings.resetwarnings()
    for action, category, module in reversed(_PRISTINE_WARNINGS):
        warnings.filterwarnings(action, category=category, module=module)
    # on this stderr, as a process shows them (pytest's own recorder would keep them from the test)
    warnings.showwarning = _show_warning


# matplotlib builds its font cache when it is first imported, on a machine without one, by running `fc-list`: a
# step of the import, which a process of its own takes once and this process has taken once too. The guard is
# there for processes a verb starts (groups, signals, pools), so a call that draws imports matplotlib before it.
_DRAWS = frozenset({"--plot"})


def _import_what_draws():
    try:
        import matplotlib.font_manager  # noqa: F401 - its import builds the font cache where none is
    except ImportError:  # the plot extra is missing: the verb says so itself
        pass


def _run_in_process(args, cwd, env):
    import contextlib

    from tfcnnwrap.cli import main

    argv = [str(a) for a in args]
    if any(word.split("=", 1)[0] in _DRAWS for word in argv):
        _import_what_draws()
    streams = [io.TextIOWrapper(tempfile.TemporaryFile(), encoding="utf-8", newline="") for _ in range(2)]
    with contextlib.ExitStack() as stack:
        _as_a_new_process(stack, argv, cwd, env, streams)
        code = _call_main(main, argv)
    out = []
    for stream in streams:
        stream.flush()
        stream.buffer.seek(0)
        out.append(stream.buffer.read())
        stream.close()
    return subprocess.CompletedProcess(argv, code, *out)


def run_cli(*args, cwd=None, env=None, timeout=None, input=None):
    """Run `python -m tfcnnwrap ARGS` as a user would; returns CliResult (never raises on exit code)."""
    if _in_process_ok(args, env, timeout, input):
        return CliResult(_run_in_process(args, cwd, env))
    return spawn_cli(*args, cwd=cwd, env=env, timeout=timeout, input=input)


def spawn_cli(*args, cwd=None, env=None, timeout=None, input=None):
    """`python -m tfcnnwrap ARGS` in a process of its own, whatever the verb."""
    proc = subprocess.run(
        [sys.executable, "-m", "tfcnnwrap", *[str(a) for a in args]],
        cwd=str(cwd) if cwd else None,
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if input is None else None,
        input=input,
        timeout=120 if timeout is None else timeout,
    )
    return CliResult(proc)


@pytest.fixture
def cli():
    return run_cli


def assert_clean_error(result, code=2, *needles):
    """One-line error, right exit code, no traceback."""
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result
    for needle in needles:
        assert needle in lines[0], (needle, result)
    return lines[0]


# --- Slurm (docs/slurm.md) ---------------------------------------------------------------------------------

SLURM_NOT_UP = (
    "Slurm is not up: bring up the one-node test cluster with `.ci/slurm-up DIR` (root; installs slurm-wlm "
    "and munge if missing), then export SLURM_CONF=DIR/slurm.conf TFCNNWRAP_SLURM=1 (.ci/run does all this)"
)


class SlurmCluster:
    """The test cluster the environment promises: its config, its node, the environment for its clients."""

    def __init__(self, conf, node):
        self.conf = conf
        self.node = node
        self.env = {"SLURM_CONF": conf}


@pytest.fixture(scope="session")
def slurm():
    """A running Slurm cluster. Skips (naming why) unless TFCNNWRAP_SLURM=1; when that promises a cluster
    that does not answer, fails: CI would otherwise pass without running a single Slurm test."""
    if os.environ.get("TFCNNWRAP_SLURM") != "1":
        pytest.skip(SLURM_NOT_UP)
    conf = os.environ.get("SLURM_CONF")
    if not conf or not Path(conf).is_file():
        pytest.fail("TFCNNWRAP_SLURM=1 but SLURM_CONF (%r) names no file; %s" % (conf, SLURM_NOT_UP))
    if shutil.which("sinfo") is None:
        pytest.fail("TFCNNWRAP_SLURM=1 but sinfo is not on PATH; " + SLURM_NOT_UP)
    done = subprocess.run(
        ["sinfo", "--noheader", "--format=%n %T"],
        env=dict(os.environ, SLURM_CONF=conf),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=60,
    )
    nodes = [line.split() for line in done.stdout.splitlines() if line.strip()]
    ready = [n for n, state in nodes if state.rstrip("*") in ("idle", "mixed", "allocated")]
    if done.returncode != 0 or not ready:
        pytest.fail("TFCNNWRAP_SLURM=1 but sinfo says %r %r; %s" % (done.stdout, done.stderr, SLURM_NOT_UP))
    return SlurmCluster(conf, ready[0])


# --- Test tiers (README: the everyday loop is `python -m pytest -q -m "not slow"`) ----------------------------
# Each test says its tier itself: `slow` (starts a process or waits, or takes seconds in process: a figure drawn,
# a property-based search), and `tf`, `slurm`, `browser` for what else it needs, as `pytestmark` for a whole file
# or a decorator on one test. A test of the `tf`, `slurm` or `browser` tier is slow too. The guard below makes a
# test that starts a process without the `slow` mark fail, in every tier, instead of slowing the fast one down.
TIER_MARKS = ("slow", "tf", "slurm", "browser")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(m) is not None for m in TIER_MARKS[1:]):
            item.add_marker("slow")


def _refuse_to_start(*args, **kwargs):
    raise AssertionError("this test starts a process: mark it @pytest.mark.slow (tests/conftest.py, test tiers)")


@pytest.fixture(autouse=True)
def _fast_tier_guard(request, monkeypatch):
    """Holds the fast tier to its promise: a test not marked slow cannot start a process."""
    if request.node.get_closest_marker("slow") is None:
        for owner, name in _PROCESS_STARTERS:
            monkeypatch.setattr(owner, name, _refuse_to_start)
    yield
