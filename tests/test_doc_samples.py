"""Every sample of tfcnnwrap's output in README.md and docs/*.md is what the tool prints (CONTRIBUTING.md,
"Samples in the docs").

A fenced block whose first line is ``$ python -m tfcnnwrap ARGS`` (or ``$ tfcnnwrap ARGS``) is a checked sample:
each ``$`` command runs in this process through ``cli.main``, in tests/data/samples/ (the seed's sweeps under
``results/``), on a terminal 80 columns wide (``<!-- sample: columns=N -->`` above the block for another width)
without colour, no config file and an empty library; what it prints (stdout and stderr as they interleave,
trailing blanks aside) must be the lines under it. ``$ echo $?`` and a number: the exit status of the command
before; without one the command must exit 0. A block of output that cannot come from the fixture says why above
it: ``<!-- sample: unchecked: REASON -->``. Any other block holds commands only, so a new sample pasted without
either fails here.

    python tests/test_doc_samples.py            # say which samples differ from the tool (exit 1 if any)
    python tests/test_doc_samples.py --update   # rewrite them from the tool
"""

import contextlib
import difflib
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script: the checkout's tfcnnwrap, as under pytest
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from tfcnnwrap import cli  # noqa: E402
from tfcnnwrap.sweep.main import sweep_stamp  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "samples"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COLUMNS = 80
FENCE = re.compile(r"^(\s*)```")
PROMPT = re.compile(r"^\$ (?:python -m tfcnnwrap|tfcnnwrap)(?: (?P<args>.*))?$")
STATUS = "$ echo $?"
MARK = re.compile(r"^\s*<!-- sample: (?P<what>.*?) -->\s*$")
UNCHECKED = re.compile(r"^unchecked: (?P<reason>\S.*)$")
WIDTH = re.compile(r"^columns=(?P<columns>[0-9]+)$")
# The first words of a line in a block of commands (a recipe, a batch script); a block with any other line shows
# output, and is checked or says why not.
COMMAND_WORDS = frozenset(
    "python python3 py pipx tfcnnwrap eval export source conda cd exec exit sudo sbatch salloc srun".split()
)
# What could steer the tool from outside the fixture: a colour wish, a config file, remembered directories.
ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TFCNNWRAP_RESULTS",
               "TFCNNWRAP_PYTHON", "TFCNNWRAP_VENDOR_DIR")  # fmt: skip


@dataclass
class Block:
    """One fenced block: ``line`` is its opening fence's (1-based), ``body`` the lines between the fences,
    ``mark`` the text of a ``<!-- sample: ... -->`` comment right above it."""

    doc: str
    line: int
    body: List[str]
    mark: Optional[str]

    @property
    def where(self) -> str:
        return "%s:%d" % (self.doc, self.line)

    @property
    def unchecked(self) -> Optional[str]:
        match = UNCHECKED.match(self.mark or "")
        return match.group("reason") if match else None

    @property
    def checked(self) -> bool:
        return self.unchecked is None and bool(self.body) and bool(PROMPT.match(self.body[0]))

    @property
    def columns(self) -> int:
        match = WIDTH.match(self.mark or "")
        return int(match.group("columns")) if match else COLUMNS


@dataclass
class Step:
    """One ``$`` command of a checked block, the lines it should print and the exit status it should give."""

    command: str
    args: List[str]
    output: List[str]
    status: int
    shows_status: bool


def parse_blocks(text: str, doc: str) -> List[Block]:
    """Every fenced block of a Markdown text (an unclosed one runs to the end)."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith(opening.group(1) + "```"):
            end += 1
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARK.match(above)
        indent = len(opening.group(1))
        body = [line[indent:] for line in lines[i + 1 : end]]
        blocks.append(Block(doc, i + 1, body, mark.group("what") if mark else None))
        i = end + 1
    return blocks


def doc_blocks() -> List[Block]:
    """The blocks of README.md and every page of docs/."""
    found = []
    for path in DOCS:
        found += parse_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    return found


def _trimmed(lines: List[str]) -> List[str]:
    """Lines as a terminal shows them: no blanks at the end of a line, no blank lines at the end."""
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def steps(block: Block) -> List[Step]:
    """The ``$`` commands of a checked block with what each should print."""
    found: List[Step] = []
    for line in block.body:
        prompt = PROMPT.match(line)
        if prompt:
            found.append(Step(line, shlex.split(prompt.group("args") or ""), [], 0, False))
        elif line.strip() == STATUS:
            found[-1].output.append(STATUS)  # the status follows: see below
        elif found[-1].output[-1:] == [STATUS] and line.strip().isdigit():
            found[-1].output.pop()
            found[-1].status, found[-1].shows_status = int(line.strip()), True
        elif line.startswith("$ "):
            raise AssertionError("%s: `%s` is not a tfcnnwrap command" % (block.where, line))
        else:
            found[-1].output.append(line)
    for step in found:
        step.output = _trimmed(step.output)
    return found


def looks_like_commands(block: Block) -> bool:
    """True when every line of the block is a command, a comment or the continuation of a command."""
    continued = False
    for line in block.body:
        text = line.strip()
        words = text.split()
        if not (continued or not text or text.startswith("#") or words[0] in COMMAND_WORDS):
            return False
        continued = text.endswith("\\")
    return True


class Terminal(io.StringIO):
    """A terminal's screen, text only: stdout and stderr in the order written. A terminal, so tables fit its
    width and prose wraps as they do for a person; TERM=dumb keeps colour and links out."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def sample_setting(columns: int) -> Iterator[None]:
    """Where a sample runs: in the fixture, COLUMNS wide, no colour, no config file, an empty library."""
    saved, here = dict(os.environ), os.getcwd()
    with tempfile.TemporaryDirectory(prefix="tfcnnwrap-samples-") as empty:
        for name in ENVIRONMENT:
            os.environ.pop(name, None)
        # LINES too: rich takes a dumb terminal without both for 80 x 25, whatever COLUMNS says
        os.environ.update(COLUMNS=str(columns), LINES="50", TERM="dumb")
        os.environ.update(TFCNNWRAP_CONFIG=os.devnull, TFCNNWRAP_DATA=empty)
        os.chdir(FIXTURE)
        try:
            yield
        finally:
            os.chdir(here)
            os.environ.clear()
            os.environ.update(saved)


def run_sample(args: List[str], columns: int = COLUMNS) -> Tuple[List[str], int]:
    """What ``tfcnnwrap ARGS`` shows on the sample terminal, and its exit status."""
    screen = Terminal()
    with sample_setting(columns), contextlib.redirect_stdout(screen), contextlib.redirect_stderr(screen):
        try:
            status = cli.main(args)
        except SystemExit as stop:  # argparse's usage errors, --help
            status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    return _trimmed(screen.getvalue().split("\n")), status


def sample_diff(block: Block) -> List[str]:
    """A unified diff from the block as written to the block as the tool prints it (empty: they agree)."""
    fresh = rendered(block)
    return list(difflib.unified_diff(block.body, fresh, block.where, "what tfcnnwrap prints", lineterm=""))


def rendered(block: Block) -> List[str]:
    """The block's body as the tool prints it: each command, its output, and its status where the block
    shows one (or where the command did not exit 0)."""
    body: List[str] = []
    for step in steps(block):
        output, status = run_sample(step.args, block.columns)
        body += [step.command, *output]
        if status or step.shows_status:
            body += [STATUS, str(status)]
    return body


def update(path: Path) -> int:
    """Rewrite the checked blocks of one document from the tool; returns how many changed."""
    lines = path.read_text(encoding="utf-8").split("\n")
    changed = 0
    for block in reversed(parse_blocks("\n".join(lines), path.relative_to(ROOT).as_posix())):
        if not block.checked:
            continue
        fresh = rendered(block)
        if fresh != block.body:
            lines[block.line : block.line + len(block.body)] = fresh
            changed += 1
    if changed:
        path.write_text("\n".join(lines), encoding="utf-8")
    return changed


CHECKED = [b for b in doc_blocks() if b.checked]


@pytest.mark.parametrize("block", CHECKED, ids=[b.where for b in CHECKED])
def test_sample_is_what_the_tool_prints(block):
    diff = sample_diff(block)
    assert not diff, "the sample is not what tfcnnwrap prints (python tests/test_doc_samples.py --update):\n" + (
        "\n".join(diff)
    )


def _folded(lines: List[str], columns: int) -> List[str]:
    """Lines as a terminal ``columns`` wide shows them: a longer line goes on in the next row."""
    return [line[k : k + columns].rstrip() for line in lines for k in range(0, max(len(line), 1), columns)]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal is POSIX's")
@pytest.mark.parametrize("block", CHECKED, ids=[b.where for b in CHECKED])
def test_the_sample_terminal_shows_what_a_real_one_does(block):
    from ptyscreen import run_in_pty  # conftest's environment for a spawned CLI: only this slow test needs it

    for step in steps(block):
        shown, status = run_sample(step.args, block.columns)
        real = run_in_pty(step.args, columns=block.columns, cwd=FIXTURE)
        assert (real.lines, real.returncode) == (_folded(shown, block.columns), status), real


def test_every_block_of_output_is_checked_or_says_why_not():
    loose = [b.where for b in doc_blocks() if not b.checked and not b.unchecked and not looks_like_commands(b)]
    assert not loose, (
        "blocks that show output but are neither a `$ python -m tfcnnwrap ...` sample nor marked "
        "`<!-- sample: unchecked: REASON -->` (CONTRIBUTING.md, Samples in the docs): %s" % loose
    )


def test_every_mark_is_understood_and_sits_on_a_block():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        marks = [m.group("what") for m in map(MARK.match, text.split("\n")) if m]
        used = [b.mark for b in parse_blocks(text, path.name) if b.mark is not None]
        assert marks == used, "%s: a <!-- sample: ... --> comment not right above a block" % path.name
        for what in marks:
            assert UNCHECKED.match(what) or WIDTH.match(what), "%s: <!-- sample: %s --> means nothing" % (
                path.name,
                what,
            )


def test_the_docs_hold_checked_samples():
    # the seed's report and compare samples at least: a parser that found none would pass everything
    assert {b.doc for b in CHECKED} >= {"README.md", "docs/usage.md"}
    assert len(CHECKED) >= 5


def test_the_default_sweep_directory_in_the_docs_is_the_one_sweep_makes():
    # a sample in prose: results-format.md and usage.md name it as sweep_stamp does (local time, UTC offset)
    local = datetime(2026, 11, 30, 10, 15, tzinfo=timezone(timedelta(hours=1)))
    name = "`results/%s`" % sweep_stamp(local)
    for doc in ("docs/results-format.md", "docs/usage.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert name in text and "<UTC yyyymmdd" not in text, doc


SAMPLE_DOC = """\
```
python -m tfcnnwrap report results/x   # a command
```

```
$ python -m tfcnnwrap report results/x
model  batch
$ echo $?
1
```

<!-- sample: unchecked: the live view, mid-run -->
```
[3/15] resnet50 bs=64 run 3/3: ok  176.93 images/sec
```

```
resnet50     64   3       0      176.93
```
"""


def test_a_pasted_sample_without_a_command_or_a_reason_is_caught():
    blocks = parse_blocks(SAMPLE_DOC, "x.md")
    assert [(b.line, b.checked, b.unchecked) for b in blocks] == [
        (1, False, None),
        (5, True, None),
        (13, False, "the live view, mid-run"),
        (17, False, None),
    ]
    assert [looks_like_commands(b) for b in blocks] == [True, False, False, False]
    step = steps(blocks[1])[0]
    assert (step.args, step.output, step.status) == (["report", "results/x"], ["model  batch"], 1)


def test_a_sample_that_differs_shows_the_difference():
    block = parse_blocks(SAMPLE_DOC, "x.md")[1]
    block.body = ["$ python -m tfcnnwrap report results/20261130-101500", "model  batch"]
    diff = "\n".join(sample_diff(block))
    assert "-model  batch" in diff and "+resnet50       64   3       0      176.93" in diff, diff


def _main(argv: List[str]) -> int:
    if argv not in ([], ["--update"]):
        sys.stderr.write("usage: python tests/test_doc_samples.py [--update]\n")
        return 2
    if argv:
        for path in DOCS:
            changed = update(path)
            print("%s: %d sample(s) rewritten" % (path.relative_to(ROOT).as_posix(), changed))
        return 0
    diffs = [line for block in doc_blocks() if block.checked for line in sample_diff(block)]
    print("\n".join(diffs) if diffs else "every sample is what tfcnnwrap prints")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
