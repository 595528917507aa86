"""Reads tf_cnn_benchmarks output: the header block, step lines, the total and failure signatures.

Pure and single-pass, with two engines over one set of line handlers:

- the *streaming engine* (``LogParser.feed`` / ``feed_bytes``): the sweep runner feeds each line as it
  arrives; every line is tested for the markers of each concern and handed to that concern's handler;
- the *whole-file scanner* (``_FileScanner``, used by ``parse_file`` for the ``parse`` verb): reads bytes in
  chunks and jumps from marker to marker with ``bytes.find`` instead of looking at every line (most lines
  of a TensorFlow log are noise), handing the lines it finds to the same handlers.

The boundary is the handler interface of ``LogParser`` (``_progress``, ``_header_line``, ``_failure_line``,
``_oom_line``, ``_add_steps``, ``_in_header_block``, ``_in_traceback``): the scanner touches nothing else of
the parser. Each concern's markers (``PROGRESS_MARKERS``, ``HEADER_MARKERS``, ``FAILURE_MARKERS``) are
defined once, below, and both engines look for exactly those, so both give the same ``ParsedLog`` for the
same text (tests/test_logparse.py feeds fuzzed logs to both).

What a line may carry before the text tf_cnn_benchmarks printed (stripped before matching; at most two
such prefixes, e.g. a timestamp then a logger):

- leading whitespace (spaces or tabs);
- an absl/glog prefix: ``I1130 10:00:00.000000 140000 benchmark_cnn.py:123] `` (also the
  ``I0000 00:00:1796016972.504125 6565 port.cc:153] `` form TensorFlow 2.x prints before absl is set up);
- a Python logging prefix: ``INFO:tensorflow:``, ``WARNING:absl:``, ``INFO:root:`` ...;
- an ISO timestamp followed by whitespace, as added by ``ts`` or a logging formatter:
  ``2026-11-30 10:00:00,123 ``, ``[2026-11-30T10:00:00Z] ``;
- an MPI / Horovod output tag: ``[1,0]<stdout>:``.

TensorFlow's C++ log prefix (``2026-11-30 10:00:00.000000: I tensorflow/...cc:141] ``) is deliberately not
one of them: tf_cnn_benchmarks never prints through it, so a header or total after it is not believed.
Failure signatures (OOM, flag errors, crashes) are looked for anywhere in a line.

The header is read only inside its block: from a ``TensorFlow:`` line (or, in a log that has none, a
``Model:`` line) up to the ``==========`` line or 48 lines, so a stray ``Mode:`` in noise is not believed.
Each block replaces the previous one, so a log holding several runs yields the last run's header, the last
total and the last step.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, List, Optional, Tuple, Union

if TYPE_CHECKING:
    from pathlib import Path

MAX_LINE = 1 << 20  # longer lines are cut to this many characters for parsing
CHUNK_SIZE = 1 << 20  # parse_file reads files in blocks of this size; smaller files are read whole
_BLOCK_WINDOW = 4096  # the scanner splits a header block or traceback into lines this many bytes at a time

HEADER_BLOCK_LINES = 48
TRACEBACK_LINES = 2000
MESSAGE_CHARS = 500

# failure kinds, best first (result() reports the best one found)
OOM = "oom"
FLAG_ERROR = "flag_error"
ERROR = "error"
BAD_TOTAL = "bad_total"  # a total that is no finite, positive number: nan, inf, 0, -5

# -- failure signatures: each is looked for anywhere in a line -------------------------------------------
TRACEBACK_START = "Traceback (most recent call last)"
OOM_SIGNATURES = ("OOM when allocating", "ResourceExhaustedError", "CUDA_ERROR_OUT_OF_MEMORY")
FLAG_SIGNATURES = (
    "FATAL Flags parsing error",
    "Received unknown positional arguments",  # tf_cnn_benchmarks raises it as a ValueError
    "UnrecognizedFlagError",
    "IllegalFlagValueError",
    "error: unrecognized arguments",
)
FLAG_EXCEPTIONS = ("UnrecognizedFlagError", "IllegalFlagValueError")
CRASH_SIGNATURES = ("Segmentation fault", "core dumped", "Fatal Python error", "Check failed")

# -- markers: every line the parser acts on holds one of its concern's markers (header lines only inside
# the header block, exception lines only after a Traceback line). Both engines test exactly these, with
# substring tests before any regex. "rror" stands for every ...Error signature, "OUT_OF_MEMORY" for
# CUDA_ERROR_OUT_OF_MEMORY (upper case).
PROGRESS_MARKERS = ("/sec",)  # step lines (images/sec, examples/sec) and the total
HEADER_MARKERS = ("TensorFlow:", "Model:")
OOM_MARKERS = ("rror", "OOM when allocating", "OUT_OF_MEMORY")  # what an OOM or flag-error line holds
FAILURE_MARKERS = ("Traceback",) + OOM_MARKERS + ("Segmentation fault", "core dumped", "Check failed")
_PROGRESS_MARKER = PROGRESS_MARKERS[0]
_PROGRESS_BYTES = _PROGRESS_MARKER.encode()
_HEADER_BYTES = tuple(m.encode() for m in HEADER_MARKERS)
_FAILURE_BYTES = tuple(m.encode() for m in FAILURE_MARKERS)
_OOM_BYTES = tuple(m.encode() for m in OOM_SIGNATURES)


def good_total(value: Optional[float]) -> bool:
    """A total worth recording: a finite number above zero (a log may say nan, inf, 0 or -5)."""
    return value is not None and math.isfinite(value) and value > 0


def _holds_any(line: str, markers: Tuple[str, ...]) -> bool:
    for marker in markers:
        if marker in line:
            return True
    return False


_A = re.ASCII  # \d, \s and \w mean what they mean in bytes patterns

_PREFIX_RE = re.compile(
    r"\s*(?:"
    r"[IWEF]\d{4}\s+\d\d:\d\d:\d+(?:\.\d+)?\s[^\]\n]{0,200}\]"  # absl / glog
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL):[\w.]*:"  # python logging
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?=\s)"  # ISO timestamp
    r"|\[\d+,\d+\]<std(?:out|err)>:"  # mpirun --tag-output
    r")",
    _A,
)
_PREFIX_START = frozenset(" \tIWEFDCR[0123456789")
_TF_CPP_PREFIX_RE = re.compile(r"\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWEF] [^\]\n]{0,300}\]\s*", _A)

_FLOAT = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
_NUM = "(" + _FLOAT + ")"
# a step line is "<step> images/sec: <speed>" (what _STEP_RE demands); the rest is read when needed
_STEP_RE = re.compile(r"(\d+)\s+images/sec:\s*" + _NUM, _A)
_STEP_BYTES_RE = re.compile(_STEP_RE.pattern.encode())
_STEP_TAIL_RE = re.compile(
    r"(?:\s*\+/-\s*" + _NUM + r"\s*\(\s*jitter\s*=\s*" + _NUM + r"\s*\))?"
    r"(?:\s+" + _NUM + r")?(?:\s+" + _NUM + r")?(?:\s+" + _NUM + r")?",
    _A,
)
_EVAL_STEP_RE = re.compile(r"(\d+)\s+" + _NUM + r"\s+examples/sec\b", _A)
_TOTAL_RE = re.compile(r"total images/sec:\s*" + _NUM, _A)

_HEADER_RE = re.compile(r"([A-Z][A-Za-z ]{1,19}):\s*(.*?)\s*$", _A)  # "Key:   value" (known keys kept)
_HEADER_KEYS = frozenset(
    [
        "TensorFlow",
        "Model",
        "Dataset",
        "Mode",
        "SingleSess",
        "Batch size",
        "Num batches",
        "Num epochs",
        "Devices",
        "NUMA bind",
        "Data format",
        "Layout optimizer",
        "RewriterConfig",
        "Optimizer",
        "Variables",
        "AllReduce",
        "Sync",
        "Staged vars",
        "Horovod on",
    ]
)
# Header lines whose value is kept as text, and the ParsedLog field each fills.
_TEXT_HEADERS = {
    "TensorFlow": "tf_version",
    "Model": "model",
    "Dataset": "dataset",
    "Mode": "mode",
    "Data format": "data_format",
    "Optimizer": "optimizer",
    "Variables": "variable_update",
}
_HEADER_FIELDS = (
    "tf_version",
    "model",
    "dataset",
    "mode",
    "batch_size_global",
    "batch_size",
    "num_batches",
    "num_epochs",
    "devices",
    "data_format",
    "optimizer",
    "variable_update",
)
_PER_DEVICE_RE = re.compile(r"(\d+(?:\.\d*)?)\s+per\s+device\b", _A)
_GLOBAL_RE = re.compile(r"(\d+)\s*global\b", _A)
_DEVICE_RE = re.compile(r"""['"]([^'"]+)['"]""")
# -- stages of one run, for the live view (streaming engine only; ParsedLog does not hold them): each is
# entered on the line upstream prints at its start (benchmark_cnn.py's log_fn calls), never left backwards.
STAGE_STARTING = "starting TensorFlow"  # the process runs; TensorFlow has printed nothing of ours yet
STAGE_BUILDING = "building the model"  # the header block (TensorFlow is up), "Generating training model"
STAGE_WARMUP = "warm-up"  # "Running warm up"
STAGE_TIMED = "timed steps"  # "Done warm up", or the first step line
STAGE_FINISHING = "finishing"  # the total is printed; the process is tearing down
STAGES = (STAGE_STARTING, STAGE_BUILDING, STAGE_WARMUP, STAGE_TIMED, STAGE_FINISHING)
# (substring, stage): what a line holds that moves the run on; "TensorFlow:" opens the header block
STAGE_MARKERS = (
    ("TensorFlow:", STAGE_BUILDING),
    ("Generating", STAGE_BUILDING),
    ("Running warm up", STAGE_WARMUP),
    ("Done warm up", STAGE_TIMED),
)


_EXCEPTION_RE = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*[a-z]\w*)(?::\s*(.*?))?\s*$", _A)
_LINE_SPLIT_RE = re.compile(r"\r\n|\r|\n")

# -- prefixes learned from the log: see learn_prefix --------------------------------------------------------
MAX_PREFIX = 200  # a header line's prefix longer than this is not learned
_PREFIX_SPAN = 2 * MAX_PREFIX  # a learned prefix is looked for in this many characters (bounds its regex)
# CSI (colours, cursor moves; cut off too), OSC (titles), other escapes (ESC 7, ESC ( B), and a lone ESC
_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?")
_ANSI_BYTES_RE = re.compile(_ANSI_RE.pattern.encode())
_TF_HEADER_RE = re.compile(r"TensorFlow:[ \t]+v?\d+\.\d+", _A)
_PREFIX_TOKEN_RE = re.compile(r"(\d+)|(\w+)|([ \t]+)|(.)", _A | re.S)
_CLOCK_RE = re.compile(r"\d\d?:\d\d", _A)
MAX_RANKS = 4096  # ranks told apart in one log; lines of further ones go to the rank that printed last
# tf_cnn_benchmarks' own text: a learned prefix that would match the start of one of these is no prefix
_OWN_LINES = (
    "TensorFlow:  2.21",
    "Model:       resnet50",
    "Batch size:  64 global",
    "total images/sec: 1.0",
    "10\timages/sec: 1.0 +/- 0.0 (jitter = 0.0)\t7.0",
    "Traceback (most recent call last):",
    "Done warm up",
    "Step\tImg/sec\ttotal_loss",
    "Running warm up",
    "==========",
)
_DIGITS_RE = re.compile(r"\d+", _A)


@dataclass
class Step:
    step: int
    images_per_sec: float
    uncertainty: Optional[float]
    jitter: Optional[float]
    loss: Optional[float]
    top_1_accuracy: Optional[float] = None
    top_5_accuracy: Optional[float] = None


@dataclass
class ParsedLog:
    tf_version: Optional[str] = None
    model: Optional[str] = None
    dataset: Optional[str] = None
    mode: Optional[str] = None
    batch_size_global: Optional[int] = None
    batch_size: Optional[int] = None  # per device
    num_batches: Optional[int] = None
    num_epochs: Optional[float] = None
    devices: Optional[list] = None  # e.g. ['/gpu:0']
    data_format: Optional[str] = None
    optimizer: Optional[str] = None
    variable_update: Optional[str] = None
    steps_seen: int = 0
    last_step: Optional[Step] = None
    total_images_per_sec: Optional[float] = None
    failure_kind: Optional[str] = None  # 'oom' | 'flag_error' | 'error' | 'bad_total' | None
    failure_message: Optional[str] = None  # the most telling line
    totals_seen: int = 0
    ranks: int = 1  # how many ranks printed a header, in a log where every line carries a rank's tag

    def to_dict(self) -> dict:
        return asdict(self)


def _float(text: Optional[str]) -> Optional[float]:
    return None if text is None else float(text)


def _payload(line: str) -> str:
    """The line without leading whitespace and up to two logger/timestamp prefixes."""
    if line[:1] not in _PREFIX_START:
        return line
    for _ in range(2):
        m = _PREFIX_RE.match(line)
        if m is None or m.end() == 0:
            break
        line = line[m.end() :]
    return line.lstrip()


def _message(line: str) -> str:
    """One line for people: no TF C++ or logger prefix, at most MESSAGE_CHARS long."""
    m = _TF_CPP_PREFIX_RE.match(line)
    text = line[m.end() :] if m is not None else _payload(line)
    text = text.strip()
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def _step_from(text: str) -> Step:
    """The Step of a step line (its payload, on which ``_STEP_RE`` matches)."""
    m = _STEP_RE.match(text)
    assert m is not None  # called on step lines only
    tail = _STEP_TAIL_RE.match(text, m.end()).groups()  # type: ignore[union-attr]  # the tail pattern is optional parts
    return Step(
        int(m.group(1)),
        float(m.group(2)),
        _float(tail[0]),
        _float(tail[1]),
        _float(tail[2]),
        _float(tail[3]),
        _float(tail[4]),
    )


def strip_ansi_bytes(data: bytes) -> bytes:
    """``strip_ansi`` for raw bytes (what parse sniffs before deciding a file is a log)."""
    return _ANSI_BYTES_RE.sub(b"", data) if b"\x1b" in data else data


def strip_ansi(line: str) -> str:
    """The line without ANSI/VT escape sequences (colours, cursor moves, OSC titles)."""
    return _ANSI_RE.sub("", line) if "\x1b" in line else line


@dataclass(frozen=True)
class Prefix:
    """What a log puts in front of every line, learned from its ``TensorFlow:`` header line.

    ``pattern`` is that line's prefix with each run of digits made ``\\d+``, each other run of word
    characters ``\\w+``, inner blanks ``[ \\t]+`` and the rest literal, so a timestamp, a line number or
    a rank may change from line to line while the shape stays. ``ranked``: the prefix holds no clock time,
    so its numbers name the process that printed the line (srun's ``3: ``, mpirun's ``[1,3]<stdout>:``, a
    peer's ``10.0.0.7.10000::stdout] ``) and lines with different numbers are different ranks' output.
    """

    pattern: "re.Pattern[str]"
    ranked: bool

    def split(self, line: str) -> Optional[tuple]:
        """(rank key, the line without its prefix), or None when the line does not carry it."""
        m = self.pattern.match(line, 0, _PREFIX_SPAN)
        if m is None:
            return None
        text = m.group()
        return (tuple(int(d) for d in _DIGITS_RE.findall(text)) if self.ranked else ()), line[m.end() :]


def learn_prefix(line: str) -> Optional[Prefix]:
    """The Prefix of a ``TensorFlow:  <version>`` header line (ANSI codes already stripped), or None.

    None when the line carries nothing in front of its header, only blanks, or only a prefix the fixed
    patterns of ``_payload`` strip and that names no rank (a logger's level and name, an absl or ISO time
    stamp: no digits, or a clock time). A prefix must end in punctuation (``] ``, ``| ``, ``: ``, ``>:``):
    ``printed TensorFlow:  2.21`` in noise is no prefix, or every line would lose its first word.
    """
    i = line.find("TensorFlow:")
    if i <= 0 or i > MAX_PREFIX or _TF_HEADER_RE.match(line, i) is None:
        return None
    head = line[:i]
    last = head.rstrip()[-1:]
    if not last or last.isalnum() or last == "_":
        return None
    if _payload(line).startswith("TensorFlow:") and (
        _CLOCK_RE.search(head) is not None or _DIGITS_RE.search(head) is None
    ):
        return None
    pattern = _prefix_pattern(head)
    if any(pattern.match(text) for text in _OWN_LINES):
        return None  # "note: TensorFlow:  2.21" would teach "\w+: ", which eats "Model: " off every line
    return Prefix(pattern, _CLOCK_RE.search(head) is None)


def _prefix_pattern(head: str) -> re.Pattern:
    parts = []
    for m in _PREFIX_TOKEN_RE.finditer(head):
        digits, word, blank, other = m.groups()
        if digits:
            parts.append(r"\d+")
        elif word:
            parts.append(r"\w+")
        elif blank:  # leading: srun pads its labels; trailing: exact, the line's own indentation follows
            parts.append("[ \t]*" if m.start() == 0 else "[ \t]+" if m.end() < len(head) else re.escape(blank))
        else:
            parts.append(re.escape(other))
    return re.compile("".join(parts), _A)


class LogParser:
    """Feed it lines, in order; ask for ``result()`` at any time.

    The work is split in three independent concerns -- progress (steps and the total), the header, and
    failures -- each with its own markers and state, so that ``parse_file`` can look for each one's markers
    separately and still give what feeding every line would.
    """

    def __init__(self):
        self._log = ParsedLog()
        # progress: the last step line is kept as text and made a Step only when asked
        self._last_step_line = None
        # header
        self._header_left = 0  # lines left in the current header block
        self._tf_seen = False
        self._after_batch_size = False
        # failures: (rank, message) of the best line of each kind
        self._traceback_left = 0  # lines left to find the exception line of a traceback
        self._oom = None
        self._flag = None
        self._error = None
        # feed_bytes: the start of a line not complete yet
        self._pending = b""
        self._skipping = False
        # the run's stage (one of STAGES), for the live view; only the streaming engine moves it
        self.stage = STAGE_STARTING
        # a log whose lines carry a learned prefix: one parser per rank (see _route)
        self._learns = True
        self._prefix = None
        self._ranks = None  # {rank key: LogParser}
        self._current = None  # the rank that printed the last line: it gets lines without the prefix
        self._first = None  # the parser of the first rank, holding what came before the first header

    # -- public ---------------------------------------------------------------------------------

    def feed(self, line: str) -> Optional[Step]:
        """Take one line (its newline may be left on); returns the Step if it was a step line."""
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if "\r" in line or "\n" in line:
            step = None
            for part in _LINE_SPLIT_RE.split(line):
                step = self._feed_one(part) or step
            return step
        return self._feed_one(line)

    def feed_bytes(self, data: bytes, final: bool = False) -> Optional[Step]:
        """Take raw output as it arrives, in chunks of any size; returns the last Step it completed.

        Complete lines are fed (decoded with replacement, cut to MAX_LINE); the rest waits for the next
        chunk. ``final=True`` (at end of output) also feeds a last line that has no line ending.
        """
        if self._skipping:  # the rest of a line already cut to MAX_LINE
            cut = _first_break(data)
            if cut < 0:
                data = b""
            else:
                data, self._skipping = data[cut:], False
        buf = self._pending + data if self._pending else data
        last = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if last == len(buf) - 1 and buf.endswith(b"\r") and not final:
            last = max(buf.rfind(b"\n", 0, last), buf.rfind(b"\r", 0, last))  # may be half of a CRLF
        step = None
        if last >= 0:
            for raw in buf[: last + 1].splitlines():  # bytes split at LF, CR and CRLF only
                step = self._feed_one(raw[:MAX_LINE].decode("utf-8", "replace")) or step
        self._pending, self._skipping = _cut(buf[last + 1 :], self._skipping)
        if final and self._pending:
            step = self._feed_one(self._pending.rstrip(b"\r").decode("utf-8", "replace")) or step
            self._pending, self._skipping = b"", False
        return step

    def result(self) -> ParsedLog:
        """What has been read so far (a copy: feeding more lines does not change it).

        In a log of several ranks, the run of the lowest rank that printed a header (rank 0, the first
        peer), with ``ranks`` saying how many did; when that run has neither a total nor a failure, another
        rank's failure says why the job died.
        """
        if self._ranks is None:
            return self._own_result()
        runs = sorted((key, rank) for key, rank in self._ranks.items() if rank._tf_seen)
        primary = runs[0][1] if runs else next(iter(self._ranks.values()))
        log = primary._own_result()
        log.ranks = max(1, len(runs))
        if log.failure_kind is None and not good_total(log.total_images_per_sec):
            for rank in self._ranks.values():
                other = rank._own_result()
                if other.failure_kind is not None:
                    log.failure_kind, log.failure_message = other.failure_kind, other.failure_message
                    break
        return log

    def _own_result(self) -> ParsedLog:
        log = self._log
        if self._last_step_line is not None:
            log.last_step = _step_from(self._last_step_line)
            self._last_step_line = None
        log.failure_kind = log.failure_message = None
        for kind, found in ((OOM, self._oom), (FLAG_ERROR, self._flag), (ERROR, self._error)):
            if found is not None:
                log.failure_kind, log.failure_message = kind, found[1]
                break
        total = log.total_images_per_sec
        if log.failure_kind is None and total is not None and not good_total(total):
            log.failure_kind = BAD_TOTAL
            log.failure_message = "total images/sec: %s is no finite, positive number" % total
        return replace(log)

    # -- one line, every concern ----------------------------------------------------------------

    def _feed_one(self, line: str) -> Optional[Step]:
        """The streaming engine: one line to every concern whose markers it holds."""
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        if "\x1b" in line:
            line = _ANSI_RE.sub("", line)
        if self._ranks is not None:
            return self._route(line)
        if self._learns and "TensorFlow:" in line:
            if line.lstrip().startswith("TensorFlow:"):
                self._learns = False  # a bare header line: this log's lines carry no prefix
            else:
                prefix = learn_prefix(line)
                if prefix is not None:
                    self._start_ranks(prefix)
                    return self._route(line)
        step = None
        if _PROGRESS_MARKER in line and self._progress(line):
            if self._last_step_line is not None:
                self._log.last_step = _step_from(self._last_step_line)
                self._last_step_line = None
            step = self._log.last_step
        if self._header_left > 0 or _holds_any(line, HEADER_MARKERS):
            self._header_line(line)
        if self._traceback_left > 0 or _holds_any(line, FAILURE_MARKERS):
            self._failure_line(line)
        if self.stage is not STAGE_FINISHING:
            self._stage_line(line, step)
        return step

    def _stage_line(self, line: str, step: Optional[Step]) -> None:
        """Move the stage on (never back) when the line starts a later one."""
        found = None
        if self.stage is STAGE_TIMED and not self._log.totals_seen:
            return  # the common case, every step line: nothing but a total moves it on
        if self._log.totals_seen:
            found = STAGE_FINISHING
        elif step is not None:
            found = STAGE_TIMED
        else:
            for marker, stage in STAGE_MARKERS:
                if marker in line:
                    found = stage
                    break
        if found is not None and STAGES.index(found) > STAGES.index(self.stage):
            self.stage = found

    def _start_ranks(self, prefix: Prefix) -> None:
        """From here on, lines are told apart by rank; what was read before the first header belongs to
        the first rank (its state moves to that rank's parser)."""
        first = LogParser()
        for name in (
            "_log",
            "_last_step_line",
            "_header_left",
            "_tf_seen",
            "_after_batch_size",
            "_traceback_left",
            "_oom",
            "_flag",
            "_error",
            "stage",
        ):
            setattr(first, name, getattr(self, name))
        first._learns = False
        self._log = ParsedLog()
        self._prefix, self._ranks, self._current = prefix, {}, first
        self._first = first

    def _route(self, line: str) -> Optional[Step]:
        """One line to the parser of the rank whose prefix it carries, without that prefix; a line without
        the prefix (a launcher's own message) to the rank that printed the last line."""
        prefix, ranks, rank = self._prefix, self._ranks, self._current
        assert prefix is not None and ranks is not None and rank is not None  # _learn set them first
        split = prefix.split(line)
        if split is not None:
            key, line = split
            known = ranks.get(key)
            if known is None and len(ranks) >= MAX_RANKS:  # hostile input: memory stays bounded
                return rank._feed_one(line)
            if known is None:
                known = self._first if not ranks and self._first is not None else LogParser()
                known._learns = False
                ranks[key] = known
            self._current = rank = known
        step = rank._feed_one(line)
        first = self._first
        if first is not None and rank is first:
            self.stage = first.stage  # the live view follows the first rank, as it follows its steps
        return step

    # -- the line handlers: both engines hand them the lines that hold their concern's markers ----------

    def _add_steps(self, count: int, last_line: str) -> None:
        """``count`` plain step lines the scanner counted without decoding; ``last_line`` the last one."""
        self._log.steps_seen += count
        self._last_step_line = last_line

    def _in_header_block(self) -> bool:
        return self._header_left > 0

    def _in_traceback(self) -> bool:
        return self._traceback_left > 0

    # -- progress -------------------------------------------------------------------------------

    def _progress(self, line: str) -> bool:
        """Count a step or total line; True for a step line (the last one is kept)."""
        m = _STEP_RE.match(line)  # most step lines carry no prefix
        if m is None:
            text = _payload(line)
            if text.startswith("total"):
                m = _TOTAL_RE.match(text)
                if m is not None:
                    self._log.total_images_per_sec = float(m.group(1))
                    self._log.totals_seen += 1
                return False
            m = _STEP_RE.match(text)
            if m is None:
                m = _EVAL_STEP_RE.match(text)
                if m is not None:
                    self._log.steps_seen += 1
                    self._log.last_step = Step(int(m.group(1)), float(m.group(2)), None, None, None)
                    self._last_step_line = None
                    return True
                return False
            line = text
        self._log.steps_seen += 1
        self._last_step_line = line
        return True

    # -- header ---------------------------------------------------------------------------------

    def _header_line(self, line: str) -> None:
        if self._header_left > 0:
            self._header_left -= 1
            if "==========" in line:
                self._header_left = 0
            else:
                self._in_header(line if line[:1] not in _PREFIX_START else _payload(line))
        if "TensorFlow:" in line or ("Model:" in line and not self._tf_seen and self._header_left == 0):
            m = _HEADER_RE.match(_payload(line))
            if m is not None and m.group(1) in ("TensorFlow", "Model") and m.group(2):
                if m.group(1) == "TensorFlow":
                    self._tf_seen = True
                for field in _HEADER_FIELDS:  # a new run's header replaces the last one
                    setattr(self._log, field, None)
                self._header_left = HEADER_BLOCK_LINES
                self._header(m.group(1), m.group(2))

    def _in_header(self, text: str) -> None:
        if self._after_batch_size:
            m = _PER_DEVICE_RE.match(text)
            if m is not None:
                self._after_batch_size = False
                self._log.batch_size = int(float(m.group(1)))
                return
        m = _HEADER_RE.match(text)
        if m is not None and m.group(1) in _HEADER_KEYS:
            self._header(m.group(1), m.group(2))

    def _header(self, key: str, value: str) -> None:
        log = self._log
        self._after_batch_size = False  # "N per device" follows "Batch size:", noise lines aside
        field = _TEXT_HEADERS.get(key)
        if field is not None:
            setattr(log, field, value or None)
            return
        try:
            if key == "Batch size":
                self._batch_size(value)
            elif key == "Num batches":
                log.num_batches = int(value)
            elif key == "Num epochs":
                log.num_epochs = float(value)
            elif key == "Devices":
                log.devices = _DEVICE_RE.findall(value)
        except ValueError:
            pass  # a mangled number: leave the field unknown

    def _batch_size(self, value: str) -> None:
        m = _GLOBAL_RE.match(value)
        if m is not None:
            self._log.batch_size_global = int(m.group(1))
        m = _PER_DEVICE_RE.search(value)
        if m is not None:
            self._log.batch_size = int(float(m.group(1)))
        else:
            self._after_batch_size = True

    # -- failures -------------------------------------------------------------------------------

    def _failure_line(self, line: str) -> None:
        if self._traceback_left > 0:
            self._traceback_left -= 1
            if line[:1] not in (" ", "\t") and line.strip():
                text = _payload(line)
                m = _EXCEPTION_RE.match(text)
                if m is not None:
                    self._traceback_left = 0
                    self._exception_line(m.group(1), text)
        if TRACEBACK_START in line:
            self._traceback_left = TRACEBACK_LINES
        if _holds_any(line, OOM_MARKERS):
            self._oom_line(line)
            if self._flag is None and _holds_any(line, FLAG_SIGNATURES):
                self._flag = (1, _message(line))
        if self._error is None and _holds_any(line, CRASH_SIGNATURES):
            self._error = (1, _message(line))

    def _oom_line(self, line: str) -> None:
        oom_when, exhausted, cuda_oom = OOM_SIGNATURES
        if oom_when in line:
            # the exception line that says it names the failure best; TF's own log line is next
            rank = 3 if exhausted in line else 2
        elif exhausted in line or cuda_oom in line:
            rank = 1
        else:
            return
        if self._oom is None or rank > self._oom[0]:
            self._oom = (rank, _message(line))

    def _exception_line(self, name: str, text: str) -> None:
        if name.endswith(FLAG_EXCEPTIONS) or "Received unknown positional arguments" in text:
            self._flag = (2, _message(text))
        # the last exception of a log is the one that ended it; it outranks the other crash signs
        self._error = (2, _message(text))


class _FileScanner:
    """The whole-file engine: finds the lines that hold each concern's markers with ``bytes.find`` and
    hands them to ``parser``'s line handlers (the only part of LogParser it uses), one concern at a time.

    Feeding every line to the streaming engine gives the same result; what makes that true is that a
    concern's handler sees exactly the lines holding its markers, plus every line of a block (header,
    traceback) while the handler says it is inside one.
    """

    def __init__(self, parser: LogParser) -> None:
        self.parser = parser

    def scan(self, data: bytes, markers: Tuple[bytes, ...], handle: Callable, in_block: Callable) -> None:
        """Hand ``handle`` every line of ``data`` (bytes, complete lines) holding one of ``markers``
        (bytes), and every line while ``in_block()``; jumps from marker to marker with bytes.find."""
        end = len(data)
        lf_only = b"\r" not in data
        nexts = [data.find(m) for m in markers]
        pos = 0
        while pos < end:
            if in_block():
                pos = self.block(data, pos, handle, in_block)
                continue
            hit = -1
            for i, n in enumerate(nexts):
                if 0 <= n < pos:
                    n = nexts[i] = data.find(markers[i], pos)
                if n >= 0 and (hit < 0 or n < hit):
                    hit = n
            if hit < 0:
                return
            start = max(data.rfind(b"\n", pos, hit) + 1, pos)
            if not lf_only:
                start = data.rfind(b"\r", start, hit) + 1 or start
            stop, after = _line_end(data, hit, lf_only)
            handle(data[start : min(stop, start + MAX_LINE)].decode("utf-8", "replace"))
            pos = after

    def progress(self, data: bytes) -> None:
        """scan for the progress marker, with plain step lines counted without decoding them."""
        find, rfind, match = data.find, data.rfind, _STEP_BYTES_RE.match
        lf_only = b"\r" not in data
        end = len(data)
        parser = self.parser
        count, last = 0, None
        pos = find(_PROGRESS_BYTES)
        while pos >= 0:
            start = rfind(b"\n", 0, pos) + 1
            stop = find(b"\n", pos)
            if stop < 0:
                stop = end
            if not lf_only:
                start = rfind(b"\r", start, pos) + 1 or start
                cr = find(b"\r", pos, stop)
                if cr >= 0:
                    stop = cr
            cut = min(stop, start + MAX_LINE)
            if match(data, start, cut) is not None:
                count += 1
                last = (start, cut)
            else:
                if last is not None:  # the steps before this line come first
                    parser._add_steps(count, data[last[0] : last[1]].decode("utf-8", "replace"))
                    count, last = 0, None
                parser._progress(data[start:cut].decode("utf-8", "replace"))
            pos = find(_PROGRESS_BYTES, stop)
        if last is not None:
            parser._add_steps(count, data[last[0] : last[1]].decode("utf-8", "replace"))

    def block(self, data: bytes, pos: int, handle: Callable, in_block: Callable) -> int:
        """Hand ``handle`` the lines from ``pos`` on while ``in_block()``; returns where it stopped."""
        end = len(data)
        while pos < end and in_block():
            window = data[pos : pos + _BLOCK_WINDOW]
            lines = window.splitlines(True)  # bytes split at LF, CR and CRLF only
            if pos + len(window) < end:
                if len(lines) > 1:
                    lines.pop()  # may be cut short by the window
                else:  # a line longer than the window
                    stop, after = _line_end(data, pos, False)
                    handle(data[pos : min(stop, pos + MAX_LINE)].decode("utf-8", "replace"))
                    pos = after
                    continue
            for raw in lines:
                pos += len(raw)
                handle(raw[:MAX_LINE].rstrip(b"\r\n").decode("utf-8", "replace"))
                if not in_block():
                    break
        return pos

    def header(self, data: bytes, whole_file: bool = False) -> None:
        parser = self.parser
        if not whole_file:
            self.scan(data, _HEADER_BYTES, parser._header_line, parser._in_header_block)
            return
        # The header blocks of a whole text: those at TensorFlow: lines, or, when it has none, at
        # Model: lines -- what feeding every line gives, one marker search at a time.
        self.scan(data, _HEADER_BYTES[:1], parser._header_line, parser._in_header_block)
        if not parser._tf_seen:
            self.scan(data, _HEADER_BYTES[1:], parser._header_line, parser._in_header_block)

    def failures(self, data: bytes, oom_first: bool = False) -> None:
        # An OOM outranks every other failure and its lines carry their own markers: once one is found,
        # the other signatures cannot change the result. oom_first pays off where OOMs are likely.
        parser = self.parser
        if oom_first:
            self.scan(data, _OOM_BYTES, parser._oom_line, _never)
            if parser._oom is not None:
                return
        self.scan(data, _FAILURE_BYTES, parser._failure_line, parser._in_traceback)


def _never() -> bool:
    return False


def _line_end(data: bytes, pos: int, lf_only: bool) -> Tuple[int, ...]:
    """(end of the line at pos, start of the next line); a line ends at LF, CR or CRLF."""
    nl = data.find(b"\n", pos)
    if nl < 0:
        nl = len(data)
    if lf_only:
        return nl, nl + 1
    cr = data.find(b"\r", pos, nl)
    if cr < 0:
        return nl, nl + 1
    return cr, (cr + 2 if data.startswith(b"\n", cr + 1) else cr + 1)


def parse_lines(lines: Iterable[str]) -> ParsedLog:
    parser = LogParser()
    for line in lines:
        parser.feed(line)
    return parser.result()


def parse_file(path: Union[Path, str], failures: str = "always", chunk_size: int = CHUNK_SIZE) -> ParsedLog:
    """Parse a log file of any size in flat memory: bytes in chunks, lines decoded with replacement.

    ``failures="always"`` gives exactly what ``parse_lines`` gives for the file's lines.
    ``failures="without_total"`` looks for failure signatures only when the log holds no good total (then
    ``failure_kind``/``failure_message`` are None for a log with one), which is all ``classify`` needs
    for a log whose exit code is unknown, and much faster for big logs.
    """
    if failures not in ("always", "without_total"):
        raise ValueError("failures must be 'always' or 'without_total', not %r" % (failures,))
    parser = LogParser()
    scanner = _FileScanner(parser)
    whole = _read_whole(path, chunk_size)
    if whole is not None:
        if _needs_lines(whole):
            _feed_block(parser, whole)
            return _finish(parser, failures)
        scanner.progress(whole)
        scanner.header(whole, whole_file=True)
        if failures == "always":
            scanner.failures(whole)
        elif not good_total(parser._log.total_images_per_sec):
            scanner.failures(whole, oom_first=True)
        return parser.result()
    return _parse_chunks(path, failures, chunk_size)


def _parse_chunks(path: Union[Path, str], failures: str, chunk_size: int) -> ParsedLog:
    """parse_file for a file bigger than one chunk: the scanner over blocks of whole lines."""
    parser = LogParser()
    scanner = _FileScanner(parser)
    scans = [scanner.progress, scanner.header]
    if failures == "always":
        scans.append(scanner.failures)
    for data in _complete_lines(path, chunk_size):
        if _needs_lines(data):  # from the start, every line through the streaming engine
            parser = LogParser()
            for block in _complete_lines(path, chunk_size):
                _feed_block(parser, block)
            return _finish(parser, failures)
        for scan in scans:
            scan(data)
    if failures == "without_total" and not good_total(parser._log.total_images_per_sec):
        for data in _complete_lines(path, chunk_size):
            scanner.failures(data, oom_first=True)
    return parser.result()


def _needs_lines(data: bytes) -> bool:
    """Whether a block of a log must go through the streaming engine: it holds ANSI escapes, or a
    ``TensorFlow:`` header line carrying a prefix to learn (the scanner's marker search knows neither)."""
    if b"\x1b" in data:
        return True
    pos = data.find(b"TensorFlow:")
    while pos >= 0:
        start = max(data.rfind(b"\n", 0, pos), data.rfind(b"\r", 0, pos)) + 1
        if not data[start:pos].strip():
            return False  # a bare header line: the streaming engine stops learning there too
        if pos <= start + MAX_PREFIX and learn_prefix(data[start : pos + 64].decode("utf-8", "replace")) is not None:
            return True
        pos = data.find(b"TensorFlow:", pos + 1)
    return False


def _feed_block(parser: LogParser, data: bytes) -> None:
    for raw in data.splitlines():  # bytes split at LF, CR and CRLF only
        parser._feed_one(raw[:MAX_LINE].decode("utf-8", "replace"))


def _finish(parser: LogParser, failures: str) -> ParsedLog:
    """The result, with the failure left out of a log with a good total when only those without one are
    looked at (what the scanner gives for ``failures="without_total"``)."""
    log = parser.result()
    if failures == "without_total" and good_total(log.total_images_per_sec):
        log.failure_kind = log.failure_message = None
    return log


def _read_whole(path: Union[Path, str], chunk_size: int) -> Optional[bytes]:
    """The file's bytes when it fits in one chunk, else None."""
    with open(path, "rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > chunk_size:
            return None
        data = fh.read(size + 1)
    return data if len(data) <= size else None  # a file that grows is read in chunks


def _complete_lines(path: Union[Path, str], chunk_size: int) -> Iterator[bytes]:
    """The file as a series of byte blocks of whole lines (lines over MAX_LINE cut to MAX_LINE)."""
    carry = b""
    skipping = False  # inside a line already cut to MAX_LINE: drop bytes up to its end
    with open(path, "rb", buffering=0) as fh:
        while True:
            block = fh.read(chunk_size)
            if not block:
                break
            if skipping:
                cut = _first_break(block)
                if cut < 0:
                    continue
                block, skipping = block[cut:], False  # the cut line (in carry) ends here
            data = carry + block if carry else block
            last = max(data.rfind(b"\n"), data.rfind(b"\r"))
            if last == len(data) - 1 and data.endswith(b"\r"):  # may be half of a CRLF: wait for more
                last = max(data.rfind(b"\n", 0, last), data.rfind(b"\r", 0, last))
            if last < 0:
                carry = data
            else:
                yield data[: last + 1]
                carry = data[last + 1 :]
            carry, skipping = _cut(carry, skipping)
    if carry:
        yield carry


def _cut(rest: bytes, skipping: bool) -> Tuple[bytes, bool]:
    """(rest, skipping) with an unfinished line cut to MAX_LINE; skipping: drop bytes up to its end."""
    if len(rest) <= MAX_LINE:
        return rest, skipping
    if rest.endswith(b"\r"):  # a whole line but for a possible LF
        return rest[:MAX_LINE] + b"\r", False
    return rest[:MAX_LINE], True


def _first_break(block: bytes) -> int:
    nl, cr = block.find(b"\n"), block.find(b"\r")
    if nl < 0:
        return cr
    return nl if cr < 0 else min(nl, cr)


# -- within-run steadiness (pure) -------------------------------------------------------------------------

DRIFT_LIMIT_PCT = 3.0


@dataclass(frozen=True)
class Steadiness:
    """A run's step rates: ``steady`` is their median; ``drift_pct`` the last third's mean against the
    first third's (negative: the run slowed down, as a card that heats up does)."""

    steady_images_per_sec: float
    drift_pct: float
    drifting: bool
    steps: int


def step_points(data: bytes) -> List[Any]:
    """(step, images/sec) of every training step line in a log's bytes, in order (totals and eval lines
    aside)."""
    points = []
    for m in _STEP_BYTES_RE.finditer(data):
        value = float(m.group(2))
        if math.isfinite(value):
            points.append((int(m.group(1)), value))
    return points


def step_rates(data: bytes) -> List[float]:
    return [rate for _, rate in step_points(data)]


def step_points_file(path: Path) -> List[Tuple[int, float]]:
    """``step_points`` of a log file of any size, read in blocks of whole lines (flat memory)."""
    points = []
    for block in _complete_lines(path, CHUNK_SIZE):
        points += step_points(block)
    return points


def step_rates_file(path: Path) -> List[float]:
    return [rate for _, rate in step_points_file(path)]


def steadiness(rates: List[float], limit_pct: float = DRIFT_LIMIT_PCT) -> Optional[Steadiness]:
    """The Steadiness of a run's step rates; None with fewer than 3 positive rates (no thirds to compare)."""
    rates = [r for r in rates if r > 0]
    if len(rates) < 3:
        return None
    third = len(rates) // 3
    first = sum(rates[:third]) / third
    last = sum(rates[-third:]) / third
    median = statistics.median(rates)
    drift = (last / first - 1.0) * 100.0
    return Steadiness(round(median, 3), round(drift, 3), abs(drift) > limit_pct, len(rates))


def classify(parsed: ParsedLog, exit_code: Optional[int], timed_out: bool = False, interrupted: bool = False) -> str:
    """The run status of the contract: ok, oom, timeout, crashed, no_result or interrupted.

    ``exit_code`` None means unknown (a log read from disk); a negative one is a POSIX signal.
    """
    if interrupted:
        return "interrupted"
    if timed_out:
        return "timeout"
    if good_total(parsed.total_images_per_sec) and exit_code in (0, None):
        return "ok"
    if parsed.failure_kind == OOM:
        return "oom"
    if exit_code not in (0, None):
        return "crashed"
    if exit_code is None and parsed.failure_kind in (FLAG_ERROR, ERROR):
        return "crashed"
    return "no_result"


def last_line_of(text: str, limit: int = 500) -> Optional[str]:
    """The last non-blank line of ``text`` (stripped, at most ``limit`` characters), or None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else None


def last_line(path: Path, tail_bytes: int = 4096, limit: int = 500) -> Optional[str]:
    """A file's last non-blank line, read from its last ``tail_bytes``: the reason when no failure signature
    says one (a ps that exits quietly, a TensorFlow C++ error line, srun's own message); None if unreadable."""
    try:
        with open(str(path), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - tail_bytes))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    return last_line_of(text, limit)
