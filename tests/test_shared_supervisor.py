"""One supervisor process for a whole sweep (issue 39): ``procs.SharedSupervisor`` forks each command's
supervisor instead of starting an interpreter per command. A command started through it behaves as one with a
supervisor of its own: output, input, exit codes, the errors Popen gives, its whole tree ended at its timeout,
and a new supervisor of its own when the shared one is gone."""

import os
import signal
import subprocess
import sys

import pytest
from conftest import wait_gone

from tfcnnwrap.run import procs

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="Windows uses job objects")]
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def shared():
    opened = procs.SharedSupervisor.start()
    assert opened is not None
    yield opened
    opened.close()


def _parent(pid):
    with open("/proc/%d/stat" % pid, "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


PRINT_IDS = (
    "import os, sys; print(os.getpid(), os.getppid(), os.getsid(0), os.getpgid(0)); print('err', file=sys.stderr)"
)


@LINUX
def test_commands_run_under_forks_of_the_one_supervisor_each_in_a_session_of_its_own(shared):
    found = []
    for _ in range(3):
        code, out, err = procs.run_captured([sys.executable, "-c", PRINT_IDS], timeout=60)
        assert (code, err) == (0, b"err\n")
        found.append([int(x) for x in out.split()])
    supervisors = [parent for _, parent, _, _ in found]
    assert len(set(supervisors)) == 3
    assert all(session == group == parent for _, parent, session, group in found)  # the supervisor leads both
    assert all(wait_gone(pid) for pid in supervisors)  # each ended with its command's group
    assert os.getpid() != shared.process.pid and shared.process.poll() is None


def test_input_environment_directory_and_exit_code_reach_the_command(shared, tmp_path):
    script = "import os, sys; print(sys.stdin.read(), os.environ['SHARED_X'], os.getcwd()); sys.exit(3)"
    env = dict(os.environ, SHARED_X="set")
    code, out, _ = procs.run_captured([sys.executable, "-c", script], timeout=60, env=env, cwd=tmp_path, stdin=b"in")
    assert code == 3 and out.split() == [b"in", b"set", str(tmp_path).encode()]


def test_a_command_or_directory_that_is_not_there_is_oserror_as_popen_gives(shared, tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        procs.ProcessGroup([str(tmp_path / "nothing")])
    assert missing.value.filename == str(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError) as no_dir:
        procs.ProcessGroup(["true"], cwd=tmp_path / "no-dir")
    assert no_dir.value.filename == str(tmp_path / "no-dir")


@LINUX
def test_a_timeout_ends_the_whole_tree_a_child_in_another_session_included(shared):
    script = (
        "import os, subprocess; p = subprocess.Popen(['sleep', '60'], start_new_session=True); "
        "print(p.pid, flush=True); os.system('sleep 60')"
    )
    code, out, _ = procs.run_captured([sys.executable, "-c", script], timeout=2)
    assert code is None
    assert wait_gone(int(out.split()[0])), "a descendant in another session outlived its command's timeout"


def test_a_sigterm_to_the_shared_supervisor_leaves_it_serving(shared):
    os.kill(shared.process.pid, signal.SIGTERM)  # a batch system's job kill reaches every process
    code, out, _ = procs.run_captured(["echo", "still"], timeout=60)
    assert (code, out) == (0, b"still\n") and shared.process.poll() is None


@LINUX
def test_a_command_started_after_the_shared_supervisor_died_gets_a_supervisor_of_its_own(shared):
    shared.process.kill()
    shared.process.wait()
    with procs.ProcessGroup([sys.executable, "-c", PRINT_IDS], stdout=subprocess.PIPE) as group:
        pid, parent, _, _ = [int(x) for x in group.stdout.readline().split()]
        assert _parent(parent) == os.getpid()  # its supervisor is our child, not the dead one's
        assert group.wait(60) == 0


def test_closing_ends_the_shared_supervisor_and_a_later_command_gets_its_own(shared):
    shared.close()
    assert shared.process.returncode is not None
    assert procs.SharedSupervisor._current is None
    assert procs.run_captured(["echo", "own"], timeout=60)[:2] == (0, b"own\n")
