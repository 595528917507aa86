"""A terminal made narrower while the live view runs redraws it cleanly (issue 38.2: shrinking the window
left a torn bar line). Most terminals (VTE, Konsole, iTerm2, kitty, Windows Terminal, tmux) reflow the lines
that no longer fit, so the view's old frame takes more rows than it was drawn in; the emulator here does the
same before the next frame comes."""

import fcntl
import os
import signal
import struct
import termios

import pytest
from test_screens import pty_sweep, tf112  # noqa: F401 - tf112 is a fixture

pytestmark = pytest.mark.slow


def reflow(session, columns):
    """Make the session's terminal ``columns`` wide as a reflowing terminal does: each line longer than that
    continues on the next row, the cursor moves with its character; then tell the pty."""
    import pyte

    old = session.screen
    rows, cursor = [], None
    for y, line in enumerate(session.lines()):
        chunks = [line[i : i + columns] for i in range(0, len(line), columns)] or [""]
        if y == old.cursor.y:
            x = min(old.cursor.x, max(len(line), 0))
            cursor = (len(rows) + x // columns, x % columns)
        rows.extend(chunks)
    while rows and not rows[-1] and len(rows) - 1 > cursor[0]:
        rows.pop()
    screen = pyte.Screen(columns, old.lines)
    stream = pyte.ByteStream(screen)
    top = max(0, len(rows) - old.lines)  # rows pushed off the top scroll away
    stream.feed("\r\n".join(rows[top:]).encode("utf-8"))
    stream.feed(("\x1b[%d;%dH" % (cursor[0] - top + 1, cursor[1] + 1)).encode())
    session.screen, session.stream = screen, stream
    fcntl.ioctl(session.master, termios.TIOCSWINSZ, struct.pack("HHHH", old.lines, columns, 0, 0))


@pytest.mark.parametrize("before, after", [(120, 60), (80, 60)])
def test_a_narrower_terminal_redraws_the_view_without_a_torn_line(tmp_path, tf112, before, after):  # noqa: F811
    session = pty_sweep(tmp_path, tf112, before, "resnet50", 3, "--num-batches", "30", FAKE_TFCNN_STEP_DELAY="1")
    wide = session.read_until("[1/3] resnet50", "run 2 of 3", "step 1", timeout=60)
    assert sum("elapsed" in line for line in wide) == 1, wide
    reflow(session, after)
    narrow = session.read_until("[2/3] resnet50", "run 3 of 3", "step 1", timeout=60)
    os.killpg(session.proc.pid, signal.SIGINT)
    session.finish()
    text = "\n".join(narrow)
    assert sum("elapsed" in line for line in narrow) == 1, text  # one progress line, no torn copy
    assert sum("\u2501" in line for line in narrow) == 1, text  # one bar
    assert sum("run 3/3" in line for line in narrow) == 1, text
    assert max(len(line) for line in narrow) <= after, text
    assert sum(line.startswith("[1/3] resnet50") for line in narrow) == 1, text  # finished lines kept
