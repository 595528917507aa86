"""What a sweep shows while it runs: a rich live view on a terminal, one plain line per run otherwise.

The live view redraws once a second from rich's own refresh thread (what changes by itself, the clock and
nvidia-smi's samples, changes once a second), and at once when a step, a run or a wait changes what it
shows, never more than 4 times a second: feeding it a chatty benchmark's steps costs nothing extra. Each
redraw costs the CPU the benchmark runs on (about 4 ms while TensorFlow keeps every core busy, ten times
the figure on an idle machine), so it redraws no more often than its figures change. The GPU's temperature,
SM clock and power come from a source set with ``set_gpu_source`` (telemetry's latest sample), read at a
redraw and never faster; ``waiting(text)`` shows what the sweep is waiting for (the GPU cooling down)
until ``waiting(None)``.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable, List, Mapping, Optional, Sequence, TextIO, Tuple, Union

from tfcnnwrap.prose import CONTINUATION, fill
from tfcnnwrap.render import gpus_text
from tfcnnwrap.run.logparse import STAGE_TIMED

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.live import Live

    from tfcnnwrap.results.records import JsonObject, RunRecord
    from tfcnnwrap.run.logparse import Step

TICKS_PER_SECOND = 1
MAX_REDRAWS_PER_SECOND = 4


def _fmt_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    if seconds >= 60:
        return "%dm%02ds" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def run_label(
    model: str, batch_size: int, run: int, runs: int, num_gpus: Optional[int] = None, data: Optional[str] = None
) -> str:
    """``resnet50 bs=64 run 1/3``; in a sweep of both data kinds ``resnet50 bs=64 real data run 1/3``."""
    kind = " %s data" % data if data else ""
    return "%s bs=%d%s%s run %d/%d" % (model, batch_size, gpus_text(num_gpus), kind, run, runs)


def result_text(record: RunRecord) -> str:
    """One finished run for people: its images/sec, or its status, failure and log."""
    took = _fmt_duration(record.duration_s or 0.0)
    if record.value is not None:
        return "ok  %.2f images/sec  (%s)" % (record.value, took)
    detail = record.failure or ""
    return "%s  (%s)%s%s" % (
        str(record.status).upper(),
        took,
        ("  " + detail[:160]) if detail else "",
        ("  log: %s" % record.log) if record.log else "",
    )


def finished_label(record: RunRecord, runs: int) -> str:
    """A finished run as the running line named it (run_label)."""
    return run_label(record.model, record.batch_size, record.run, runs, record.num_gpus, record.data)


class PlainDisplay:
    """One line per finished run, for logs, pipes and CI."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream or sys.stdout
        self.total = 0
        self.waiting_for: Optional[str] = None

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, total: int, header: Iterable[str]) -> None:
        self.total = total
        for line in header:
            self._write(line)

    def set_gpu_source(self, source: Callable) -> None:
        """A log has no place for a changing temperature: the run records carry the telemetry."""

    def waiting(self, text: Optional[str]) -> None:
        """One line when a wait begins (``cooling: 71 °C → 60 °C``); its updates and its end print nothing."""
        if text and self.waiting_for is None:
            self._write(text)
        self.waiting_for = text or None

    def expect(self, keys: Sequence[Tuple[str, int, Optional[int]]]) -> None:
        """A log line per run needs no estimate of the time left."""

    def pause(self, seconds: float) -> None:
        self.waiting("cooling down: %g s between runs (Ctrl-C stops)" % seconds)

    def run_started(
        self,
        index: int,
        model: str,
        batch_size: int,
        run: int,
        runs: int,
        num_batches: int,
        num_gpus: Optional[int] = None,
        data: Optional[str] = None,
    ) -> None:
        pass

    def stage(self, stage: str) -> None:
        pass

    def step(self, step: Step) -> None:
        pass

    def run_finished(self, index: int, record: RunRecord, runs: int) -> None:
        self._write("[%d/%d] %s: %s" % (index, self.total, finished_label(record, runs), result_text(record)))

    def stop(self) -> None:
        pass


def gpu_parts(tick: Optional[Mapping[Any, Mapping[str, Any]]]) -> List[str]:
    """``GPU 71 °C  1830 MHz  175 W`` per GPU (``GPU 1 ...`` when there are several) from telemetry's newest
    tick, {GPU index: sample}; [] when nvidia-smi has said nothing yet."""
    parts = []
    for index, sample in sorted((tick or {}).items()):
        figures = [
            "%.0f %s" % (sample[key], unit)
            for key, unit in (("temp_c", "°C"), ("sm_clock_mhz", "MHz"), ("power_w", "W"))
            if sample.get(key) is not None
        ]
        if figures:
            parts.append("GPU%s %s" % ("" if len(tick or {}) == 1 else " %s" % index, "  ".join(figures)))
    return parts


class TimeLeft:
    """The time a sweep has left, from the durations its runs took: per configuration (model, batch size,
    GPUs), else per model, else every run's mean; None until a run has finished (nothing measured, nothing
    to say). The running run counts for what it has left, so the figure ticks down with the clock.

    A run that outlasts its estimate has nothing left to count, but it has shown that runs take longer: its
    time so far joins the durations the other runs are estimated from. The figure then grows with the
    clock instead of freezing, and when that run ends it is already counted (its time so far is its
    duration): the figure never jumps up. A run that ends early drops it by the time it saved."""

    def __init__(self):
        self.todo: Counter = Counter()  # configuration -> runs not started yet
        self.measured = {}  # configuration -> durations of its finished runs (s)
        self.pause_s = 0.0  # the pause before each run (--cooldown), once one was asked for

    def expect(self, keys: Sequence[Tuple[str, int, Optional[int]]]) -> None:
        self.todo = Counter(keys)

    def started(self, key: Tuple[str, int, Optional[int]]) -> None:
        if self.todo[key] > 0:
            self.todo[key] -= 1

    def finished(self, key: Tuple[str, int, Optional[int]], duration_s: Optional[float]) -> None:
        if duration_s is not None:
            self.measured.setdefault(key, []).append(float(duration_s))

    def run_s(self, key: Sequence[Any], running: Optional[Tuple[Sequence[Any], float]] = None) -> Optional[float]:
        """The duration expected of a run of ``key``; ``running``: (key, seconds) of a run over its estimate,
        counted as if it had ended now."""
        # rich's refresh thread asks while the sweep's thread adds: a copy taken in one step (under the GIL)
        measured = [(k, list(durations)) for k, durations in list(self.measured.items())]
        if running is not None:
            measured.append((running[0], [running[1]]))
        for same in ((lambda k: k == key), (lambda k: k[0] == key[0]), (lambda k: True)):
            found = [d for k, durations in measured if same(k) for d in durations]
            if found:
                return sum(found) / len(found)
        return None

    def _run_s_or(
        self, key: Sequence[Any], default: float, running: Optional[Tuple[Sequence[Any], float]] = None
    ) -> float:
        found = self.run_s(key, running)
        return default if found is None else found

    def over(self, key: Optional[Sequence[Any]], elapsed_s: float) -> Optional[float]:
        """Seconds the running run of ``key`` is over the duration expected of it; None while it is not (or
        nothing was measured)."""
        expected = self.run_s(key) if key is not None else None
        return elapsed_s - expected if expected is not None and elapsed_s > expected else None

    def left(
        self,
        unstarted: int,
        current: Optional[Tuple[str, int, Optional[int]]] = None,
        current_s: float = 0.0,
        pause_left: Optional[float] = None,
    ) -> Optional[float]:
        """Seconds left: ``unstarted`` runs not begun (those ``expect`` named by configuration, the rest at
        the mean), the ``current`` configuration's remainder after ``current_s`` s, and the pauses."""
        late = (current, current_s) if current is not None and self.over(current, current_s) is not None else None
        every = self.run_s(("",), late)
        if every is None:
            return None
        # once any run is measured, every key has a figure (its own, its model's, or every run's mean)
        total = 0.0
        if current is not None and late is None:
            total = max(0.0, self._run_s_or(current, every) - current_s)
        named = 0
        for key, count in list(self.todo.items()):
            count = min(count, unstarted - named)
            if count > 0:
                total += count * self._run_s_or(key, every, late)
                named += count
        total += (unstarted - named) * every
        if pause_left is not None:
            return total + pause_left + self.pause_s * max(0, unstarted - 1)
        return total + self.pause_s * unstarted


STEP_LINE_EVERY = 10  # upstream's --display_every: a step line for step 1, then every 10th, and the last


def next_step_line(step: int, num_batches: Optional[int]) -> Optional[int]:
    """The step whose line upstream prints next after ``step`` (None after the last)."""
    following = (step // STEP_LINE_EVERY + 1) * STEP_LINE_EVERY
    if num_batches:
        if step >= num_batches:
            return None
        following = min(following, num_batches)
    return following


def stage_text(stage: Optional[str], step_no: int, num_batches: Optional[int], about: bool = False) -> str:
    """What the running run is doing: its stage, with step k/N once timed steps are printed (no stage known,
    a cluster job: the step alone); ``about``: the step is extrapolated (``~step 6/10``)."""
    of = "/%d" % num_batches if num_batches else ""
    steps = "%sstep %d%s" % ("~" if about else "", step_no, of) if step_no else ""
    if stage == STAGE_TIMED:
        return "timed " + steps if steps else "timed steps"
    return stage or steps


class LiveDisplay:
    """Sweep progress and time left, the current run's stage (step k of N and its images/sec), a pause
    counting down, the GPU's temperature, SM clock and power; at most 4 redraws a second, each line wrapped
    between its parts so it fits any terminal. Finished runs are printed above it, where they stay."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live: Optional[Live] = None
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.run_started_at: Optional[float] = None
        self.time_left = TimeLeft()
        self.current = ""
        self.current_key: Optional[Tuple[str, int, Optional[int]]] = None
        self.stage_name: Optional[str] = None
        self.step_no = 0
        self.step_at: Optional[float] = None  # when the last step line came
        self.step_rate: Optional[float] = None  # steps a second between the last two step lines
        self.images_per_step = 1
        self.num_batches: Optional[int] = None
        self.ips: Optional[float] = None
        self.gpu_source: Optional[Callable[[], Mapping[int, JsonObject]]] = None
        self.gpu_sample: Optional[Mapping[int, JsonObject]] = None
        self.gpu_read_at: Optional[float] = None
        self.waiting_for: Optional[str] = None
        self.pause_until: Optional[float] = None
        self.drawn_at: Optional[float] = None

    def _changed(self) -> None:
        """Redraw now unless the last redraw was under 1/4 s ago (the next tick shows the change then)."""
        if self.live is None:
            return
        if self.drawn_at is None or time.monotonic() - self.drawn_at >= 1.0 / MAX_REDRAWS_PER_SECOND:
            self.live.refresh()

    def set_gpu_source(self, source: Callable[[], Mapping[int, JsonObject]]) -> None:
        """``source()`` -> {GPU index: {temp_c, sm_clock_mhz, power_w}} (``Telemetry.latest``); read at a
        redraw, at most 4 times a second."""
        self.gpu_source = source
        self.gpu_sample = None
        self.gpu_read_at = None

    def expect(self, keys: Sequence[Tuple[str, int, Optional[int]]]) -> None:
        """The runs planned, as (model, batch_size, num_gpus) each: the time left is counted per model."""
        self.time_left.expect(keys)

    def waiting(self, text: Optional[str]) -> None:
        """A status line (``cooling: 71 °C → 60 °C``) until ``waiting(None)`` or the next run starts."""
        self.waiting_for = text or None
        self._changed()

    def pause(self, seconds: float) -> None:
        """The pause before the next run (--cooldown): a line counting down until it ends or the run starts."""
        self.time_left.pause_s = float(seconds)
        self.pause_until = time.monotonic() + seconds
        self._changed()

    def _read_gpu(self) -> Optional[Mapping[int, JsonObject]]:
        now = time.monotonic()
        fresh = self.gpu_read_at is not None and now - self.gpu_read_at < 1.0 / MAX_REDRAWS_PER_SECOND
        if self.gpu_source is None or fresh:
            return self.gpu_sample
        self.gpu_read_at = now
        try:
            self.gpu_sample = self.gpu_source()
        except Exception:  # noqa: BLE001 - a display never stops a sweep; the run records keep the telemetry
            self.gpu_sample = None
        return self.gpu_sample

    def _pause_left(self, now: float) -> Optional[float]:
        left = self.pause_until - now if self.pause_until is not None else None
        return left if left is not None and left > 0 else None

    def shown_step(self, now: float) -> Tuple[int, bool]:
        """(step, extrapolated): upstream prints a line every 10 steps, minutes apart on a slow device; in
        between, the step its rate says it has reached -- the rate the last two lines came at, else
        upstream's own images/sec over the images a step takes -- never the step whose line is still due."""
        due = next_step_line(self.step_no, self.num_batches) if self.step_no else None
        rate = self.step_rate
        if rate is None and self.ips:
            rate = self.ips / float(self.images_per_step)
        if due is None or not rate or self.step_at is None:
            return self.step_no, False
        guess = min(due - 1, self.step_no + int((now - self.step_at) * rate))
        return (guess, True) if guess > self.step_no else (self.step_no, False)

    def _progress_parts(self, elapsed: float, completed: float) -> List[str]:
        now = time.monotonic()
        began = self.run_started_at
        parts = ["run %d of %d" % (min(self.done + 1, self.total), self.total), "%s elapsed" % _fmt_duration(elapsed)]
        left = self.time_left.left(
            max(0, self.total - self.done - (began is not None)),
            self.current_key if began is not None else None,
            now - began if began is not None else 0.0,
            self._pause_left(now),
        )
        if left is not None:
            parts.append("~%s left" % _fmt_duration(left))
        return parts

    def _run_parts(self) -> List[str]:
        if not self.current:
            return []
        now = time.monotonic()
        step_no, about = self.shown_step(now)
        parts = [self.current, stage_text(self.stage_name, step_no, self.num_batches, about)]
        if self.ips is not None and self.step_no:
            parts.append("%.1f images/sec" % self.ips)
        if self.run_started_at is not None:
            took = now - self.run_started_at
            over = self.time_left.over(self.current_key, took)
            late = ", %s over its estimate" % _fmt_duration(over) if over else ""
            parts.append("(%s%s)" % (_fmt_duration(took), late))
        return parts

    def _pause_parts(self) -> List[Any]:
        left = self._pause_left(time.monotonic())
        return ["pause before the next run: %s left (Ctrl-C stops)" % _fmt_duration(math.ceil(left))] if left else []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.progress_bar import ProgressBar  # rich: only when something is drawn
        from rich.table import Table  # rich: only when something is drawn
        from rich.text import Text  # rich: only when something is drawn

        from tfcnnwrap.fit import wrap_parts  # fit loads rich: only when a table is drawn

        self.drawn_at = time.monotonic()
        width = options.max_width
        elapsed = time.monotonic() - self.started
        step_no = self.shown_step(time.monotonic())[0]
        fraction = min(1.0, step_no / float(self.num_batches)) if self.num_batches and step_no else 0.0
        completed = self.done + fraction
        progress = "  ".join(self._progress_parts(elapsed, completed))
        bar_width = max(10, min(30, width - len(progress) - 1))
        grid = Table.grid(padding=(0, 1))
        if bar_width + 1 + len(progress) <= width:
            grid.add_row(ProgressBar(total=max(self.total, 1), completed=completed, width=bar_width), Text(progress))
        else:  # the bar on a line of its own, then the figures wrapped between them
            grid.add_row(ProgressBar(total=max(self.total, 1), completed=completed, width=min(30, width)))
            grid.add_row(Text("\n".join(wrap_parts(self._progress_parts(elapsed, completed), width, "  "))))
        yield grid
        for parts, style in (
            (self._run_parts(), "bold"),
            (gpu_parts(self._read_gpu()), "cyan"),
            (self._pause_parts(), "yellow"),
            ([self.waiting_for], "yellow"),
        ):
            lines = wrap_parts([p for p in parts if p], width, "  ")
            if lines:
                yield Text("\n".join(lines), style=style, overflow="fold")

    def start(self, total: int, header: Iterable[str]) -> None:
        from rich.live import Live  # rich.live: only when the live view starts

        self.total = total
        for line in header:  # wrapped between words, later lines indented under the line's own text
            indent = line[: len(line) - len(line.lstrip(" "))]
            self.console.print(
                fill(line, self.console.width, indent + CONTINUATION), highlight=False, markup=False, soft_wrap=True
            )
        from tfcnnwrap.sweep.liverender import ReflowRender  # rich: only when the live view starts

        self.live = Live(
            self, console=self.console, refresh_per_second=TICKS_PER_SECOND, transient=True, redirect_stdout=False
        )
        # a terminal made narrower reflows the last frame onto more rows: erase them all (liverender.py)
        self.live._live_render = ReflowRender(self.console, self, vertical_overflow=self.live.vertical_overflow)
        self.live.start()

    def run_started(
        self,
        index: int,
        model: str,
        batch_size: int,
        run: int,
        runs: int,
        num_batches: int,
        num_gpus: Optional[int] = None,
        data: Optional[str] = None,
    ) -> None:
        self.current = run_label(model, batch_size, run, runs, num_gpus, data)
        self.current_key = (model, batch_size, num_gpus)
        self.images_per_step = batch_size * (num_gpus or 1)  # upstream's images/sec counts every tower's batch
        self.step_at = self.step_rate = None
        self.time_left.started(self.current_key)
        self.run_started_at = time.monotonic()
        self.waiting_for = self.pause_until = None  # whatever the sweep waited for is over
        self.stage_name = None
        self.step_no = 0
        self.ips = None
        self.num_batches = num_batches
        self._changed()

    def stage(self, stage: str) -> None:
        """The running run's stage (logparse.STAGES), as its log tells it."""
        self.stage_name = stage
        self._changed()

    def step(self, step: Step) -> None:
        now = time.monotonic()
        if self.step_at is not None and step.step > self.step_no and now > self.step_at:
            self.step_rate = (step.step - self.step_no) / (now - self.step_at)
        self.step_no, self.step_at = step.step, now
        self.ips = step.images_per_sec
        self._changed()

    def run_finished(self, index: int, record: RunRecord, runs: int) -> None:
        from rich.markup import escape  # rich: only when something is drawn

        key = (record.model, record.batch_size, record.num_gpus)
        if self.current_key is None:  # recorded without running (skipped after an OOM): owed no more
            self.time_left.started(key)
        self.time_left.finished(self.current_key or key, record.duration_s if self.current_key else None)
        self.done += 1
        colour = "green" if record.ok else "red"
        self.console.print(
            "[%d/%d] %s: [%s]%s[/]"
            % (index, self.total, escape(finished_label(record, runs)), colour, escape(result_text(record))),
            highlight=False,
        )
        # between runs nothing is running: the bar shows the runs done, no step of the last one
        self.current, self.current_key, self.run_started_at = "", None, None
        self.stage_name, self.step_no, self.num_batches, self.ips = None, 0, None, None
        self._changed()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def make_display(console: Console) -> Union[LiveDisplay, PlainDisplay]:
    if console.is_terminal:
        return LiveDisplay(console)
    return PlainDisplay()
