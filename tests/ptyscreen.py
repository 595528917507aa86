"""Run the CLI in a real pseudo-terminal of a given size and read back the screen a person would see.

rich sizes its output from the terminal (``os.get_terminal_size`` on a pty), so this is the only honest way
to test what fits at 60, 80 or 120 columns. The bytes written to the pty are fed to pyte, a VT100 terminal
emulator, so cursor movements of the live view are applied as a terminal applies them.

    screen = run_in_pty(["report", sweep_dir], columns=80)
    screen.lines      # the final screen, one string per row, trailing blanks removed
    screen.returncode
"""

import os
import select
import struct
import subprocess
import sys

from conftest import cli_env

POSIX_PTY = os.name == "posix"


class Screen:
    def __init__(self, lines, raw, returncode, columns):
        self.lines = lines
        self.raw = raw
        self.returncode = returncode
        self.columns = columns

    @property
    def text(self):
        return "\n".join(self.lines)

    def widest(self):
        return max((len(line) for line in self.lines), default=0)

    def __repr__(self):
        return "<Screen %d cols rc=%s\n%s\n>" % (self.columns, self.returncode, self.text)


def _set_size(fd, columns, rows):
    import fcntl
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def _read_all(master, proc, timeout):
    """Everything the child writes until it exits and the pty drains (EIO on Linux once the slave closes)."""
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            raise TimeoutError("no output for %s s" % timeout)
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every slave end is closed
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def run_in_pty(args, columns, rows=200, env=None, cwd=None, timeout=60, argv=None, sized=True):
    """Run ``python -m tfcnnwrap ARGS`` (or ``argv``) with stdout and stderr on a pty of ``columns`` x ``rows``.
    ``sized=False``: the pty says nothing of its size (0 x 0, as under `script`, `docker exec -t` or an ssh
    session that sent none); the screen that shows it is still ``columns`` wide."""
    import pyte

    extra = dict(env or {})
    full_env = cli_env(extra)
    for name in ("COLUMNS", "LINES", "NO_COLOR"):
        if name not in extra:
            full_env.pop(name, None)
    full_env["TERM"] = "xterm-256color"
    master, slave = os.openpty()
    if sized:
        _set_size(slave, columns, rows)
    cmd = argv or [sys.executable, "-m", "tfcnnwrap", *[str(a) for a in args]]
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=cwd, env=full_env, start_new_session=True
        )
    finally:
        os.close(slave)
    try:
        raw = _read_all(master, proc, timeout)
    finally:
        os.close(master)
    returncode = proc.wait(timeout=timeout)
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    stream.feed(raw)  # the pty translated \n to \r\n (ONLCR), as a terminal expects
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return Screen(lines, raw, returncode, columns)
