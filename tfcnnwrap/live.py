"""What a sweep shows while it runs: a rich live view on a terminal, one plain line per run otherwise.

The live view redraws at most 4 times a second from rich's own refresh thread; feeding it a step only
updates a few fields, so a chatty benchmark costs nothing extra.
"""

import sys
import time

from tfcnnwrap.records import RunRecord

REFRESH_PER_SECOND = 4


def _fmt_duration(seconds):
    seconds = int(round(seconds))
    if seconds >= 3600:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    if seconds >= 60:
        return "%dm%02ds" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def run_label(model, batch_size, run, runs):
    return "%s bs=%d run %d/%d" % (model, batch_size, run, runs)


def result_text(record):
    """One finished run for people: its images/sec, or its status, failure and log."""
    record = RunRecord.coerce(record)
    took = _fmt_duration(record.duration_s or 0.0)
    if record.value is not None:
        return "ok  %.2f images/sec  (%s)" % (record.value, took)
    detail = record.failure or ""
    return "%s  (%s)%s  log: %s" % (str(record.status).upper(), took, ("  " + detail[:160]) if detail else "",
                                     record.log)


def finished_label(record, runs):
    record = RunRecord.coerce(record)
    return run_label(record.model, record.batch_size, record.run, runs)


class PlainDisplay:
    """One line per finished run, for logs, pipes and CI."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.total = 0

    def _write(self, text):
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, total, header):
        self.total = total
        for line in header:
            self._write(line)

    def run_started(self, index, model, batch_size, run, runs, num_batches):
        pass

    def step(self, step):
        pass

    def run_finished(self, index, record, runs):
        self._write("[%d/%d] %s: %s" % (index, self.total, finished_label(record, runs), result_text(record)))

    def stop(self):
        pass


class LiveDisplay:
    """Sweep progress, current run, step k of N and its images/sec; at most 4 redraws a second."""

    def __init__(self, console):
        self.console = console
        self.live = None
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.run_started_at = None
        self.finished_durations = []
        self.current = ""
        self.step_no = 0
        self.num_batches = None
        self.ips = None

    def __rich__(self):
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        elapsed = time.monotonic() - self.started
        fraction_of_run = 0.0
        if self.num_batches and self.step_no:
            fraction_of_run = min(1.0, self.step_no / float(self.num_batches))
        completed = self.done + fraction_of_run
        left = ""
        if self.finished_durations:
            mean_run = sum(self.finished_durations) / len(self.finished_durations)
            remaining = max(0.0, (self.total - completed) * mean_run)
            left = "  ~%s left" % _fmt_duration(remaining)
        grid = Table.grid(padding=(0, 1))
        grid.add_column()
        grid.add_column()
        grid.add_row(
            ProgressBar(total=max(self.total, 1), completed=completed, width=30),
            Text("run %d of %d  %s elapsed%s" % (min(self.done + 1, self.total), self.total, _fmt_duration(elapsed), left)),
        )
        status = self.current
        if self.current:
            if self.step_no:
                of = "/%d" % self.num_batches if self.num_batches else ""
                status += "  step %d%s" % (self.step_no, of)
            if self.ips is not None:
                status += "  %.1f images/sec" % self.ips
            if self.run_started_at is not None:
                status += "  (%s)" % _fmt_duration(time.monotonic() - self.run_started_at)
        return Group(grid, Text(status, style="bold"))

    def start(self, total, header):
        from rich.live import Live

        self.total = total
        for line in header:
            self.console.print(line, highlight=False)
        self.live = Live(
            self, console=self.console, refresh_per_second=REFRESH_PER_SECOND, transient=True, redirect_stdout=False
        )
        self.live.start()

    def run_started(self, index, model, batch_size, run, runs, num_batches):
        self.current = run_label(model, batch_size, run, runs)
        self.run_started_at = time.monotonic()
        self.step_no = 0
        self.ips = None
        self.num_batches = num_batches

    def step(self, step):
        self.step_no = step.step
        self.ips = step.images_per_sec

    def run_finished(self, index, record, runs):
        from rich.markup import escape

        record = RunRecord.coerce(record)
        self.done += 1
        self.finished_durations.append(record.duration_s or 0.0)
        colour = "green" if record.ok else "red"
        self.console.print(
            "[%d/%d] %s: [%s]%s[/]"
            % (index, self.total, escape(finished_label(record, runs)), colour, escape(result_text(record))),
            highlight=False,
        )
        self.current = ""

    def stop(self):
        if self.live is not None:
            self.live.stop()
            self.live = None


def make_display(console):
    if console.is_terminal:
        return LiveDisplay(console)
    return PlainDisplay()
