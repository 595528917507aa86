"""Reads tf_cnn_benchmarks output: the header block, step lines, the total and failure signatures.

Pure and single-pass. The sweep runner feeds each line to a ``LogParser`` as it arrives; ``parse`` reads
whole files with ``parse_file``, which reads bytes in chunks and jumps from marker to marker instead of
looking at every line (most lines of a TensorFlow log are noise).

What a line may carry before the text tf_cnn_benchmarks printed (stripped before matching; at most two
such prefixes, e.g. a timestamp then a logger):

- leading whitespace (spaces or tabs);
- an absl/glog prefix: ``I1130 10:00:00.000000 140000 benchmark_cnn.py:123] ``;
- a Python logging prefix: ``INFO:tensorflow:``, ``WARNING:absl:``, ``INFO:root:`` ...;
- an ISO timestamp followed by whitespace, as added by ``ts`` or a logging formatter:
  ``2026-11-30 10:00:00,123 ``, ``[2026-11-30T10:00:00Z] ``;
- an MPI / Horovod output tag: ``[1,0]<stdout>:``.

TensorFlow's C++ log prefix (``2026-11-30 10:00:00.000000: I tensorflow/...cc:141] ``) is deliberately not
one of them: tf_cnn_benchmarks never prints through it, so a header or total after it is not believed.
Failure signatures (OOM, flag errors, crashes) are looked for anywhere in a line.

The header is read only inside its block: from a ``TensorFlow:`` or ``Model:`` line up to the
``==========`` line (or 48 lines), so a stray ``Mode:`` in noise cannot overwrite it. A log holding several
runs yields the last run's header and the last total.
"""

import re
from dataclasses import asdict, dataclass
from typing import Iterable, Optional

MAX_LINE = 1 << 20  # longer lines are cut to this many characters for parsing
CHUNK_SIZE = 1 << 20

OOM = "oom"
FLAG_ERROR = "flag_error"
ERROR = "error"

HEADER_BLOCK_LINES = 48
TRACEBACK_LINES = 2000
MESSAGE_CHARS = 500

_NUM = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)"

# Substrings of which every line the parser acts on holds at least one (header lines only inside the
# header block, exception lines only after a Traceback line). Checked before any other regex.
MARKERS = (
    "/sec",  # step lines and the total
    "TensorFlow:",
    "Model:",  # the header block starts here (v1.5 prints TensorFlow: before it too)
    "Traceback",
    "rror",  # ...Error:, FATAL Flags parsing error, Fatal Python error, error: unrecognized arguments
    "OOM when allocating",
    "OUT_OF_MEMORY",
    "Segmentation fault",
    "core dumped",
    "Check failed",
)
_MARKER_RE = re.compile("|".join(re.escape(m) for m in MARKERS))

_PREFIX_RE = re.compile(
    r"\s*(?:"
    r"[IWEF]\d{4}\s+\d\d:\d\d:\d+(?:\.\d+)?\s[^\]\n]{0,200}\]"  # absl / glog
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL):[\w.]*:"  # python logging
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?=\s)"  # ISO timestamp
    r"|\[\d+,\d+\]<std(?:out|err)>:"  # mpirun --tag-output
    r")"
)
_PREFIX_START = frozenset(" \tIWEFDCR[0123456789")

_STEP_RE = re.compile(
    r"(\d+)\s+images/sec:\s*" + _NUM
    + r"(?:\s*\+/-\s*" + _NUM + r"\s*\(\s*jitter\s*=\s*" + _NUM + r"\s*\))?"
    r"(?:\s+" + _NUM + r")?(?:\s+" + _NUM + r")?(?:\s+" + _NUM + r")?"
)
_EVAL_STEP_RE = re.compile(r"(\d+)\s+" + _NUM + r"\s+examples/sec\b")
_TOTAL_RE = re.compile(r"total images/sec:\s*" + _NUM)

_HEADER_RE = re.compile(
    r"(TensorFlow|Model|Dataset|Mode|SingleSess|Batch size|Num batches|Num epochs|Devices|NUMA bind"
    r"|Data format|Layout optimizer|RewriterConfig|Optimizer|Variables|AllReduce|Sync|Staged vars"
    r"|Horovod on):\s*(.*?)\s*$"
)
_PER_DEVICE_RE = re.compile(r"(\d+(?:\.\d*)?)\s+per\s+device\b")
_GLOBAL_RE = re.compile(r"(\d+)\s*global\b")
_DEVICE_RE = re.compile(r"""['"]([^'"]+)['"]""")
_EXCEPTION_RE = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*[a-z]\w*)(?::\s*(.*?))?\s*$")
_TF_CPP_PREFIX_RE = re.compile(r"\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWEF] [^\]\n]{0,300}\]\s*")
_LINE_SPLIT_RE = re.compile(r"\r\n|\r|\n")

_OOM_SIGNATURES = ("ResourceExhaustedError", "OOM when allocating", "CUDA_ERROR_OUT_OF_MEMORY")
_FLAG_SIGNATURES = (
    "FATAL Flags parsing error",
    "Received unknown positional arguments",
    "UnrecognizedFlagError",
    "IllegalFlagValueError",
    "error: unrecognized arguments",
)
_CRASH_SIGNATURES = ("Segmentation fault", "core dumped", "Fatal Python error", "Check failed")


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
    failure_kind: Optional[str] = None  # 'oom' | 'flag_error' | 'error' | None
    failure_message: Optional[str] = None  # the most telling line
    totals_seen: int = 0
    traceback_seen: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _float(text):
    return None if text is None else float(text)


def _payload(line):
    """The line without leading whitespace and up to two logger/timestamp prefixes."""
    if line[:1] not in _PREFIX_START:
        return line
    for _ in range(2):
        m = _PREFIX_RE.match(line)
        if m is None or m.end() == 0:
            break
        line = line[m.end():]
    return line.lstrip()


def _message(line):
    """One line for people: no TF C++ or logger prefix, at most MESSAGE_CHARS long."""
    m = _TF_CPP_PREFIX_RE.match(line)
    text = line[m.end():] if m is not None else _payload(line)
    text = text.strip()
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


class LogParser:
    """Feed it lines (in order); ask for ``result()`` at any time."""

    def __init__(self):
        self._log = ParsedLog()
        self._header_left = 0  # lines left in the header block
        self._traceback_left = 0  # lines left to find the exception line of a traceback
        self._after_batch_size = False
        self._oom = None  # (rank, message)
        self._flag = None
        self._error = None

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

    def result(self) -> ParsedLog:
        log = self._log
        for kind, found in ((OOM, self._oom), (FLAG_ERROR, self._flag), (ERROR, self._error)):
            if found is not None:
                log.failure_kind, log.failure_message = kind, found[1]
                break
        else:
            log.failure_kind = log.failure_message = None
        return log

    @property
    def wants_every_line(self) -> bool:
        """True inside the header block or a traceback, where lines without markers matter too."""
        return self._header_left > 0 or self._traceback_left > 0

    # -- lines ----------------------------------------------------------------------------------

    def _feed_one(self, line):
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        if self._header_left > 0 or self._traceback_left > 0:
            self._in_block(line)
        if _MARKER_RE.search(line) is None:
            return None
        return self._marked(line)

    def _in_block(self, line):
        if self._traceback_left > 0:
            self._traceback_left -= 1
            if line[:1] not in (" ", "\t") and line.strip():
                text = _payload(line)
                m = _EXCEPTION_RE.match(text)
                if m is not None:
                    self._traceback_left = 0
                    self._exception_line(m.group(1), text)
        if self._header_left > 0:
            self._header_left -= 1
            if "==========" in line:
                self._header_left = 0
                return
            text = _payload(line)
            if self._after_batch_size:
                m = _PER_DEVICE_RE.match(text)
                if m is not None:
                    self._after_batch_size = False
                    self._log.batch_size = int(float(m.group(1)))
                    return
            m = _HEADER_RE.match(text)
            if m is not None:
                self._header(m.group(1), m.group(2))

    def _marked(self, line):
        if "/sec" in line:
            text = _payload(line)
            if text.startswith("total"):
                m = _TOTAL_RE.match(text)
                if m is not None:
                    self._log.total_images_per_sec = float(m.group(1))
                    self._log.totals_seen += 1
                    return None
            m = _STEP_RE.match(text)
            if m is not None:
                return self._step(m)
            m = _EVAL_STEP_RE.match(text)
            if m is not None:
                step = Step(int(m.group(1)), float(m.group(2)), None, None, None)
                self._log.steps_seen += 1
                self._log.last_step = step
                return step
        if self._header_left == 0 and ("TensorFlow:" in line or "Model:" in line):
            text = _payload(line)
            m = _HEADER_RE.match(text)
            if m is not None and m.group(1) in ("TensorFlow", "Model") and m.group(2):
                self._header_left = HEADER_BLOCK_LINES
                self._header(m.group(1), m.group(2))
        if "Traceback" in line and "Traceback (most recent call last)" in line:
            self._log.traceback_seen = True
            self._traceback_left = TRACEBACK_LINES
        self._signatures(line)
        return None

    def _step(self, m):
        g = m.groups()
        step = Step(
            step=int(g[0]),
            images_per_sec=float(g[1]),
            uncertainty=_float(g[2]),
            jitter=_float(g[3]),
            loss=_float(g[4]),
            top_1_accuracy=_float(g[5]),
            top_5_accuracy=_float(g[6]),
        )
        self._log.steps_seen += 1
        self._log.last_step = step
        return step

    def _header(self, key, value):
        log = self._log
        self._after_batch_size = False  # "N per device" follows "Batch size:", noise lines aside
        try:
            if key == "TensorFlow":
                log.tf_version = value or None
            elif key == "Model":
                log.model = value or None
            elif key == "Dataset":
                log.dataset = value or None
            elif key == "Mode":
                log.mode = value or None
            elif key == "Batch size":
                m = _GLOBAL_RE.match(value)
                if m is not None:
                    log.batch_size_global = int(m.group(1))
                m = _PER_DEVICE_RE.search(value)
                if m is not None:
                    log.batch_size = int(float(m.group(1)))
                else:
                    self._after_batch_size = True
            elif key == "Num batches":
                log.num_batches = int(value)
            elif key == "Num epochs":
                log.num_epochs = float(value)
            elif key == "Devices":
                log.devices = _DEVICE_RE.findall(value)
            elif key == "Data format":
                log.data_format = value or None
            elif key == "Optimizer":
                log.optimizer = value or None
            elif key == "Variables":
                log.variable_update = value or None
        except ValueError:
            pass  # a mangled number: leave the field unknown

    # -- failures -------------------------------------------------------------------------------

    def _signatures(self, line):
        if "rror" in line or "OOM" in line or "OUT_OF_MEMORY" in line:
            if "OOM when allocating" in line:
                # the exception line that says it names the failure best; TF's own log line is next
                self._note_oom(3 if "ResourceExhaustedError" in line else 2, line)
            elif "ResourceExhaustedError" in line or "CUDA_ERROR_OUT_OF_MEMORY" in line:
                self._note_oom(1, line)
            if self._flag is None:
                for sig in _FLAG_SIGNATURES:
                    if sig in line:
                        self._flag = (1, _message(line))
                        break
        if self._error is None:
            for sig in _CRASH_SIGNATURES:
                if sig in line:
                    self._error = (1, _message(line))
                    break

    def _note_oom(self, rank, line):
        if self._oom is None or rank > self._oom[0]:
            self._oom = (rank, _message(line))

    def _exception_line(self, name, text):
        if name.endswith(("UnrecognizedFlagError", "IllegalFlagValueError")) or (
            "Received unknown positional arguments" in text
        ):
            self._flag = (2, _message(text))
        # the last exception of a log is the one that ended it; it outranks the other crash signs
        self._error = (2, _message(text))

    # -- whole texts (parse_file) ---------------------------------------------------------------

    def _scan(self, text):
        """Feed the lines of ``text`` (complete lines) that can matter, skipping from marker to marker."""
        pos = 0
        end = len(text)
        search = _MARKER_RE.search
        while pos < end:
            if self._header_left > 0 or self._traceback_left > 0:
                stop, after = _line_end(text, pos)
                self._feed_one(text[pos:stop])
                pos = after
                continue
            m = search(text, pos)
            if m is None:
                return
            hit = m.start()
            start = max(text.rfind("\n", pos, hit), text.rfind("\r", pos, hit), pos - 1) + 1
            stop, after = _line_end(text, hit)
            self._feed_one(text[start:stop])
            pos = after


def _line_end(text, pos):
    """(end of the line at pos, start of the next line); a line ends at LF, CR or CRLF."""
    nl = text.find("\n", pos)
    if nl < 0:
        nl = len(text)
    cr = text.find("\r", pos, nl)
    if cr < 0:
        return nl, nl + 1
    return cr, (cr + 2 if text.startswith("\n", cr + 1) else cr + 1)


def parse_lines(lines: Iterable[str]) -> ParsedLog:
    parser = LogParser()
    for line in lines:
        parser.feed(line)
    return parser.result()


def parse_file(path, chunk_size: int = CHUNK_SIZE) -> ParsedLog:
    """Parse a log file of any size in flat memory: bytes in chunks, decoded with replacement."""
    parser = LogParser()
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
                parser._scan(carry.decode("utf-8", "replace"))
                carry, skipping = b"", False
                block = block[cut:]
            data = carry + block if carry else block
            last = max(data.rfind(b"\n"), data.rfind(b"\r"))
            if last < 0:
                carry = data
                if len(carry) > MAX_LINE:
                    carry, skipping = carry[:MAX_LINE], True
                continue
            parser._scan(data[: last + 1].decode("utf-8", "replace"))
            carry = data[last + 1:]
            if len(carry) > MAX_LINE:
                carry, skipping = carry[:MAX_LINE], True
    if carry:
        parser._scan(carry.decode("utf-8", "replace"))
    return parser.result()


def _first_break(block):
    nl, cr = block.find(b"\n"), block.find(b"\r")
    if nl < 0:
        return cr
    return nl if cr < 0 else min(nl, cr)


def classify(parsed: ParsedLog, exit_code: Optional[int], timed_out=False, interrupted=False) -> str:
    """The run status of the contract: ok, oom, timeout, crashed, no_result or interrupted.

    ``exit_code`` None means unknown (a log read from disk); a negative one is a POSIX signal.
    """
    if interrupted:
        return "interrupted"
    if timed_out:
        return "timeout"
    if parsed.total_images_per_sec is not None and exit_code in (0, None):
        return "ok"
    if parsed.failure_kind == OOM:
        return "oom"
    if exit_code not in (0, None):
        return "crashed"
    if exit_code is None and parsed.failure_kind in (FLAG_ERROR, ERROR):
        return "crashed"
    return "no_result"
