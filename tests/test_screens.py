"""What a person sees at 60, 80 and 120 columns: every table fits, and no number, model or GPU name splits.

Each screen comes from a real pseudo-terminal (``ptyscreen``): rich sizes its output from the terminal, so
this is the only honest way to see what a user sees. The figures checked are the JSON output's, formatted as
the table shows them: a number split over two lines ("176." / "93") is not a token of the screen.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, make_fake_tf_env, make_vendor
from sweepdata import seed_runs, write_sweep

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

WIDTHS = [60, 80, 120]
README = Path(__file__).resolve().parent.parent / "README.md"
FAKE_SMI = Path(__file__).resolve().parent / "fake" / "nvidia-smi"
SEED_REFERENCES = "1080-Ti,2080,2080-Ti,Vega 64,V100"
REPORT_NUMBERS = [
    "runs_ok",
    "runs_failed",
    "mean",
    "std",
    "cv_pct",
    "min",
    "max",
    "median",
    "ci95_pct",
    "throttled_runs",
    "max_temp_c",
    "num_gpus",
]
HEADERS = {
    "runs_ok": "ok",
    "runs_failed": "failed",
    "mean": "mean img/s",
    "std": "std",
    "cv_pct": "CV %",
    "min": "min",
    "max": "max",
    "median": "median",
    "ci95_pct": "CI95 ±%",
    "throttled_runs": "throttled",
    "max_temp_c": "max °C",
    "num_gpus": "GPUs",
}


def screen(args, columns, **kw):
    from ptyscreen import run_in_pty

    return run_in_pty(args, columns=columns, **kw)


def shown(value, key=None):
    """A JSON value as the table shows it: floats to 2 decimals (temperatures whole), whole numbers as they
    are."""
    if isinstance(value, float):
        return "%.0f" % value if key == "max_temp_c" else "%.2f" % value
    return str(value)


def blocks(lines, starts):
    """{label: the lines of its row}: a row starts with its label and goes on over indented lines."""
    out = {}
    for i, line in enumerate(lines):
        for label in starts:
            if label not in out and re.match(re.escape(label) + r"(\s|$)", line):
                block = [line]
                for more in lines[i + 1 :]:
                    if not more.startswith(" ") or any(re.match(re.escape(s) + r"(\s|$)", more) for s in starts):
                        break
                    block.append(more)
                out[label] = block
    return out


def tokens(block):
    return " ".join(block).split()


def hidden_note(text):
    match = re.search(r"(.*) hidden to fit \d+ columns", " ".join(text.split()))  # the note may wrap, indented
    return match.group(1) if match else ""


def assert_fits(scr):
    assert scr.widest() <= scr.columns, scr
    assert "…" not in scr.text, scr  # nothing cut short with an ellipsis either


def assert_report_rows_on_screen(scr, rows):
    """Every number of every JSON row is a whole token of its row on screen, or its column is named as hidden
    (a GPU count the same for every row is in the title)."""
    text = scr.text
    found = blocks(scr.lines, [r["model"] for r in rows])
    hidden = hidden_note(text)
    for row in rows:
        assert row["model"] in found, (row["model"], scr)
        words = tokens(found[row["model"]])
        for key in REPORT_NUMBERS:
            value = row.get(key)
            if value is None or shown(value, key) in words:
                continue
            if key == "num_gpus" and len({r["num_gpus"] for r in rows}) == 1:
                assert "%d GPU" % value in text, scr
                continue
            assert HEADERS[key] in hidden, (
                "%s=%s of %s is neither on screen nor named hidden" % (key, shown(value, key), row["model"]),
                scr,
            )


# -- report -----------------------------------------------------------------------------------------------


def _add_to_records(path, **by_model):
    """Give runs.jsonl records extra fields: by_model={model: {field: value}}."""
    runs = path / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    for record in records:
        record.update(by_model.get(record["model"], {}))
    runs.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture(scope="module")
def report_sweep(tmp_path_factory):
    """Awkward figures: a failed run, a model name longer than the seed's, a GPU with a long name."""
    path = tmp_path_factory.mktemp("report") / "20261130-101500"
    write_sweep(
        path,
        {
            ("resnet50", 64): [176.5, 177.32, 176.97],
            ("inception3", 64): [113.01, 113.4, 113.31],
            ("resnet50_v1.5", 128): [171.37, 170.02, "oom"],
            ("alexnet", 512): [2251.87, 2266.6, 2258.35],
        },
        gpus=["NVIDIA GeForce RTX 2080 Ti"],
    )
    _add_to_records(
        path,
        alexnet={"telemetry": {"max_temp_c": 83.0, "throttled": True}},
        resnet50={"telemetry": {"max_temp_c": 71.0, "throttled": False}},
    )
    return path


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_report_fits_and_shows_every_number_whole(cli, report_sweep, columns):
    rows = cli("report", report_sweep, "--format", "json").rows()
    scr = screen(["report", report_sweep], columns)
    assert scr.returncode == 0, scr
    assert_fits(scr)
    assert_report_rows_on_screen(scr, rows)
    assert "NVIDIA GeForce RTX 2080 Ti" in scr.text  # the GPU's name, whole, in the title
    for condition in ("fp32", "no XLA", "1 GPU", "parameter_server", "synthetic data"):
        assert condition in scr.text, scr
    if columns == 120:
        assert not hidden_note(scr.text), scr  # room for every column
    else:
        assert "--format csv/json" in " ".join(scr.text.split()), scr


@pytest.mark.slow
def test_report_shows_temperature_only_when_runs_have_it(cli, tmp_path, report_sweep):
    with_telemetry = screen(["report", report_sweep], 200)
    assert "max °C" in with_telemetry.text and "throttled" in with_telemetry.text
    plain = write_sweep(tmp_path / "plain", seed_runs())
    without = screen(["report", plain], 120)
    assert "°C" not in without.text and "throttled" not in without.text and "GPUs" not in without.text
    assert "failures" not in without.text  # no failed run, no column for them


@pytest.mark.slow
def test_a_sweep_of_several_gpu_counts_gets_a_gpu_column(cli, tmp_path):
    path = write_sweep(tmp_path / "scaling", {("resnet50", 64): [176.93, 177.1]}, gpu_counts=[1, 2])
    runs = path / "runs.jsonl"
    ones = runs.read_text(encoding="utf-8").splitlines()
    twos = [json.dumps(dict(json.loads(line), num_gpus=2, images_per_sec=340.25)) for line in ones]
    runs.write_text(
        "\n".join([json.dumps(dict(json.loads(line), num_gpus=1)) for line in ones] + twos) + "\n", encoding="utf-8"
    )
    rows = cli("report", path, "--format", "json").rows()
    assert [r["num_gpus"] for r in rows] == [1, 2]
    for columns in WIDTHS:
        scr = screen(["report", path], columns)
        assert_fits(scr)
        assert "GPUs" in scr.text and "1, 2 GPUs" in scr.text, scr
        summary = scr.text.split("Scaling (batch size per GPU)")[0].splitlines()  # the scaling view follows
        lines = [line for line in summary if line.startswith("resnet50")]
        assert len(lines) == 2 and "340.25" in lines[1], scr


@pytest.mark.slow
def test_report_json_and_csv_carry_no_float_noise(cli, tmp_path):
    path = write_sweep(tmp_path / "seed", seed_runs())
    text = cli("report", path, "--format", "json").stdout + cli("report", path, "--format", "csv").stdout
    assert not re.search(r"\d\.\d{10,}", text), text  # 176.92999999999998 would be float arithmetic's noise
    row = cli("report", path, "--format", "json").rows()[0]
    assert row["mean"] == 176.93 and row["std"] == 0.0 and row["cv_pct"] == 0.0


# -- compare ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ab_sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("ab")
    base = write_sweep(
        root / "base",
        {k: [v[0], v[0] * 1.004, v[0] * 0.997] for k, v in seed_runs().items()},
        gpus=["GeForce RTX 2070"],
    )
    cand = write_sweep(
        root / "cand",
        {k: [v[0] * 1.05, v[0] * 1.04, v[0] * 1.06] for k, v in seed_runs().items()},
        gpus=["GeForce RTX 2070"],
    )
    return base, cand


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_against_references_shows_every_figure_whole(cli, ab_sweeps, columns):
    base, _ = ab_sweeps
    args = ["compare", base, "--against", SEED_REFERENCES]
    rows = cli(*args, "--format", "json").rows()
    scr = screen(args, columns)
    assert scr.returncode == 0, scr
    assert_fits(scr)
    found = blocks(scr.lines, [r["model"] for r in rows])
    for row in rows:
        words = tokens(found[row["model"]])
        if row["measured"] is not None:
            assert shown(row["measured"]) in words, (row, scr)
        for ref in row["references"]:
            for part in ref["cell"].split():  # "203.99 (86.7%)": the published figure and the ratio
                assert part in words, (part, row["model"], scr)


_ESCAPES = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_a_source_url_longer_than_the_terminal_is_never_broken_by_a_newline(cli, ab_sweeps, columns):
    base, _ = ab_sweeps
    args = ["compare", base, "--against", SEED_REFERENCES]
    urls = set(re.findall(r"https?://\S+", cli(*args).stdout))
    long_urls = [u for u in urls if len(u) > columns]
    assert long_urls or columns == 120, urls  # the Lambda Labs URL is 98 characters
    scr = screen(args, columns)
    assert scr.returncode == 0, scr
    plain = _ESCAPES.sub(b"", scr.raw).decode()
    for url in urls:
        assert url in plain, (url, plain)  # whole: the terminal folds it, no newline splits it
    for url in long_urls:
        assert "\x1b]8;" in scr.raw.decode() and url.encode() in scr.raw  # an OSC 8 link as well
        first = next(line for line in scr.lines if line and url.startswith(line))
        assert len(first) == columns, (first, scr)  # on a line of its own from the first column


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_a_b_shows_every_figure_whole(cli, ab_sweeps, columns):
    base, cand = ab_sweeps
    rows = cli("compare", base, cand, "--format", "json").rows()
    scr = screen(["compare", base, cand], columns)
    assert scr.returncode == 0, scr
    assert_fits(scr)
    found = blocks(scr.lines, [r["model"] for r in rows])
    for row in rows:
        words = tokens(found[row["model"]])
        for key in ("baseline", "candidate"):
            if row[key] is not None:
                assert shown(row[key]) in words, (key, row, scr)
        if row["change_pct"] is not None:
            assert "%+.1f%%" % row["change_pct"] in words, (row, scr)


# -- the sweep, live and at its end -------------------------------------------------------------------------


class PtySession:
    """A CLI run on a pseudo-terminal, read as it goes: ``read_until`` feeds the terminal emulator until
    the screen shows a text (the pty's own pace, no sleeps)."""

    def __init__(self, args, columns, cwd, env, rows=60):
        import pyte
        from ptyscreen import _set_size

        full_env = cli_env(env)
        for name in ("COLUMNS", "LINES", "NO_COLOR"):
            full_env.pop(name, None)
        full_env["TERM"] = "xterm-256color"
        self.master, slave = os.openpty()
        _set_size(slave, columns, rows)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tfcnnwrap", *map(str, args)],
                stdin=subprocess.DEVNULL,
                stdout=slave,
                stderr=slave,
                cwd=str(cwd),
                env=full_env,
                start_new_session=True,
            )
        finally:
            os.close(slave)
        self.columns = columns
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)

    def lines(self):
        return [line.rstrip() for line in self.screen.display]

    def _feed(self, timeout):
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            raise TimeoutError("no output for %s s" % timeout)
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.stream.feed(data)
        return bool(data)

    def read_until(self, *needles, timeout=60):
        """The screen once it shows every one of ``needles``, within ``timeout`` seconds in all (a live view
        that keeps redrawing never goes quiet, so a wait per read alone would never end)."""
        import time

        deadline = time.monotonic() + timeout
        while not all(n in "\n".join(self.lines()) for n in needles):
            left = deadline - time.monotonic()
            try:
                fed = left > 0 and self._feed(left)
            except TimeoutError:
                fed = False
            if not fed:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its benchmark's supervisor then ends the rest
                raise AssertionError("%r not on screen:\n%s" % (needles, "\n".join(self.lines())))
        return self.lines()

    def finish(self, timeout=60):
        try:
            while self._feed(timeout):
                pass
        finally:
            os.close(self.master)
        return self.proc.wait(timeout=timeout)


@pytest.fixture(scope="module")
def tf112(tmp_path_factory):
    return make_fake_tf_env(tmp_path_factory.mktemp("tf") / "tf-1.12", "1.12.0", dist="tensorflow-gpu")


IPS = {"resnet50": [176.5, 177.32], "alexnet": [2251.87, 2266.6]}


def sweep_env(state, **extra):
    env = {
        "FAKE_TFCNN_IPS": ",".join("%s=%s" % (m, "/".join(map(str, v))) for m, v in IPS.items()),
        "FAKE_TFCNN_STATE": state,
        "TFCNNWRAP_NVIDIA_SMI": "none",
    }
    env.update(extra)
    return env


def pty_sweep(tmp_path, tf112, columns, model, runs, *more, **env):
    """A stand-in GPU sweep of ``model`` on a pseudo-terminal ``columns`` wide: its PtySession (``env``: more of
    the stand-in's settings, e.g. FAKE_TFCNN_STEP_DELAY)."""
    vendor = make_vendor(tmp_path / "vendor")
    state = tmp_path / "state"
    state.mkdir()
    args = ["sweep", "--vendor-dir", vendor, "--python", tf112, "--device", "gpu", "--out", tmp_path / "out"]
    args += ["--models", model, "--runs", str(runs), *more]
    return PtySession(args, columns, tmp_path, sweep_env(state, **env))


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_live_sweep_view_fits_and_its_summary_shows_every_number(cli, tmp_path, tf112, columns):
    vendor = make_vendor(tmp_path / "vendor")
    out, state = tmp_path / "out", tmp_path / "state"
    state.mkdir()
    args = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--out",
        out,
        "--models",
        "resnet50,alexnet",
        "--runs",
        "2",
    ]
    # The last run stops after its steps (mode slow): the live view is caught mid-run, then Ctrl-C.
    session = PtySession(args, columns, tmp_path, sweep_env(state, FAKE_TFCNN_FAULTS="alexnet#2=slow"))
    live = session.read_until("run 4 of 4", "alexnet bs=512 run 2/2", "step 100/100")
    frame = "\n".join(live)
    assert "run 4 of 4" in frame and "2266.6 images/sec" in frame, frame
    assert "alexnet bs=512 run 2/2" in frame, frame
    assert max(len(line) for line in live) <= columns
    os.killpg(session.proc.pid, signal.SIGINT)
    assert session.finish() == 130
    final = session.lines()
    assert max(len(line) for line in final) <= columns

    rows = cli("report", out, "--format", "json").rows()
    from ptyscreen import Screen

    scr = Screen([line for line in final if line], b"", 130, columns)
    assert_report_rows_on_screen(scr, rows)
    for record in (json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()):
        if record["images_per_sec"] is not None:
            assert "%.2f" % record["images_per_sec"] in tokens(final), (record, final)


@pytest.mark.slow
@pytest.mark.parametrize("columns", WIDTHS)
def test_live_sweep_shows_the_running_gpu_from_nvidia_smi(tmp_path, tf112, columns):
    """The whole path: nvidia-smi's samples file, Telemetry.latest, the live view's GPU line, mid-run."""
    vendor = make_vendor(tmp_path / "vendor")
    state = tmp_path / "state"
    state.mkdir()
    args = [
        "sweep",
        "--vendor-dir",
        vendor,
        "--python",
        tf112,
        "--device",
        "gpu",
        "--out",
        tmp_path / "out",
        "--models",
        "alexnet",
        "--runs",
        "1",
    ]
    env = sweep_env(
        state, FAKE_TFCNN_FAULTS="alexnet#1=slow", TFCNNWRAP_NVIDIA_SMI=str(FAKE_SMI), FAKE_NVSMI_SAMPLES="71,1830,98"
    )
    session = PtySession(args, columns, tmp_path, env)
    live = session.read_until("step 100/100", "GPU 71 °C  1830 MHz", timeout=30)
    assert max(len(line) for line in live) <= columns, live
    os.killpg(session.proc.pid, signal.SIGINT)
    assert session.finish() == 130


@pytest.mark.slow
def test_live_view_shows_the_gpu_and_what_it_waits_for_within_the_width(monkeypatch):
    from rich.console import Console

    from tfcnnwrap.sweep.live import LiveDisplay

    clock = [100.0]
    monkeypatch.setattr("tfcnnwrap.sweep.live.time.monotonic", lambda: clock[0])
    reads = []

    def source():  # what Telemetry.latest gives: the samples file's newest tick, {GPU index: sample}
        from tfcnnwrap.run.gpusamples import LEGACY_FIELDS, latest_with_fields

        reads.append(clock[0])
        return latest_with_fields(["2026/11/30 10:00:00.000, 0, 71.4, 1830, 175.2, 97, 7000"], LEGACY_FIELDS)

    for width in WIDTHS:
        console = Console(width=width, record=True, force_terminal=False, color_system=None)
        display = LiveDisplay(console)
        display.total = 15
        display.run_started(3, "inception3", 64, 3, 3, 100)
        display.step(type("Step", (), {"step": 40, "images_per_sec": 113.24})())
        display.set_gpu_source(source)
        display.waiting("cooling: 71 °C → 60 °C")
        console.print(display)
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width, text
        for needle in (
            "run 1 of 15",
            "inception3 bs=64 run 3/3",
            "step 40/100",
            "113.2 images/sec",
            "71 °C",
            "1830 MHz",
            "175 W",
            "cooling: 71 °C → 60 °C",
        ):
            assert needle in text, (needle, text)
        display.waiting(None)
        console.print(display)  # a redraw in the same instant reads no new sample
        assert "cooling" not in console.export_text()
    assert len(reads) == len(WIDTHS)  # once per view: never faster than the refresh


@pytest.mark.slow
def test_live_view_redraws_when_its_figures_change_and_never_over_4_times_a_second(monkeypatch):
    """Each redraw costs the CPU a busy benchmark runs on: once a second by itself (the clock and nvidia-smi
    change no faster), at once on a step, never twice within 1/4 s however chatty the benchmark."""
    import io
    import threading

    from rich.console import Console

    from tfcnnwrap.sweep import live

    clock = [100.0]
    monkeypatch.setattr("tfcnnwrap.sweep.live.time.monotonic", lambda: clock[0])
    console = Console(file=io.StringIO(), width=80, force_terminal=True)
    display = live.LiveDisplay(console)
    draws = []

    def progress_parts(*args):
        if threading.current_thread() is threading.main_thread():  # not the 1 s tick of rich's thread
            draws.append(clock[0])
        return ["run 1 of 1"]

    monkeypatch.setattr(display, "_progress_parts", progress_parts)
    display.start(1, [])
    try:
        assert display.live.refresh_per_second == 1  # the tick of rich's own refresh thread
        display.run_started(1, "resnet50", 64, 1, 1, 100)
        drawn = len(draws)
        assert drawn >= 1
        for k in range(1, 101):  # 100 step lines within the same instant: no redraw after the first
            display.step(type("Step", (), {"step": k, "images_per_sec": 170.0})())
        assert len(draws) == drawn
        clock[0] += 0.25
        display.step(type("Step", (), {"step": 101, "images_per_sec": 171.0})())
        assert len(draws) == drawn + 1  # a quarter second later, the change shows at once
        clock[0] += 0.1
        display.waiting("cooling: 71 °C → 60 °C")
        assert len(draws) == drawn + 1
    finally:
        display.stop()


@pytest.mark.slow
def test_live_view_names_each_gpu_of_a_multi_gpu_tick_and_a_stopped_sampler_shows_none(tmp_path):
    from tfcnnwrap.run import telemetry
    from tfcnnwrap.run.gpusamples import LEGACY_FIELDS, latest_with_fields
    from tfcnnwrap.sweep.live import gpu_parts

    tick = latest_with_fields(["t, 0, 71, 1830, 175.2, 97, 7000", "t, 1, 84, 1500, 180, 99, 7000"], LEGACY_FIELDS)
    assert gpu_parts(tick) == ["GPU 0 71 °C  1830 MHz  175 W", "GPU 1 84 °C  1500 MHz  180 W"]

    class Feed:  # the sweep's sampling nvidia-smi, as far as a run's live figures read it
        def tail(self, since):
            return ["t, 0, 71, 1830, 175.2, 97, 7000"]

    sampler = telemetry.RunSamples.__new__(telemetry.RunSamples)  # a run's share of the feed, no nvidia-smi
    sampler.feed, sampler.start, sampler.fields, sampler._summary = Feed(), 0, tuple(LEGACY_FIELDS), None
    tele = telemetry.Telemetry.__new__(telemetry.Telemetry)
    tele.current = sampler
    assert gpu_parts(tele.latest()) == ["GPU 71 °C  1830 MHz  175 W"]
    sampler._summary = {"samples": 1}  # stopped: between runs its last reading is stale
    assert tele.latest() == {}


def test_a_gpu_source_that_fails_or_says_nothing_shows_no_gpu_line():
    from rich.console import Console

    from tfcnnwrap.sweep.live import LiveDisplay

    def broken():
        raise OSError("nvidia-smi went away")

    for source in (broken, lambda: None, lambda: {}):
        console = Console(width=80, record=True, color_system=None)
        display = LiveDisplay(console)
        display.total = 2
        display.set_gpu_source(source)
        console.print(display)
        assert "GPU" not in console.export_text()


def test_plain_display_says_a_wait_once():
    import io

    from tfcnnwrap.sweep.live import PlainDisplay

    stream = io.StringIO()
    display = PlainDisplay(stream)
    display.set_gpu_source(lambda: {"temp_c": 80})
    display.waiting("cooling: 71 °C → 60 °C")
    display.waiting("cooling: 68 °C → 60 °C")
    display.waiting(None)
    display.waiting("cooling: 75 °C → 60 °C")
    assert stream.getvalue() == "cooling: 71 °C → 60 °C\ncooling: 75 °C → 60 °C\n"


# -- doctor, parse, references ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80])
def test_doctor_is_a_screen_with_its_verdict_last(tmp_path, tf112, columns):
    scr = screen(["doctor", "--python", tf112], columns, env={"TFCNNWRAP_NVIDIA_SMI": "none"}, cwd=tmp_path)
    assert scr.returncode == 0, scr
    assert_fits(scr)
    assert len(scr.lines) <= 40, scr
    assert scr.lines[-1] == "not ready: vendor checkout", scr
    checks = [line for line in scr.lines if line and line[0] in "✓!✗–"]
    # 11: Python, TensorFlow, GPUs, CUDA, tf-keras, branch, checkout, git, nvidia-smi, matmul, machine quiet
    assert len(checks) == 11 and all(len(line.split()) >= 2 for line in checks), scr


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80])
def test_parse_and_references_fit(tmp_path, columns):
    log = tmp_path / "resnet50.log"
    log.write_text(
        "Model:       resnet50\nBatch size:  64 global\n             64 per device\ntotal images/sec: 176.93\n",
        encoding="utf-8",
    )
    parsed = screen(["parse", log], columns)
    assert_fits(parsed)
    assert "176.93" in tokens(parsed.lines), parsed
    refs = screen(["references"], columns)
    assert_fits(refs)
    assert "rtx2080ti" in tokens(refs.lines), refs


# -- README ------------------------------------------------------------------------------------------------


def readme_summary(tmp_path):
    """The README's summary sample: `report` at 80 columns of a sweep holding the seed's figures."""
    sweep = write_sweep(tmp_path / "results" / "20261130-101500", seed_runs(), gpus=["NVIDIA GeForce RTX 2070"])
    meta = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    meta["tensorflow_version"] = "1.12.0"
    (sweep / "sweep.json").write_text(json.dumps(meta), encoding="utf-8")
    return screen(["report", "results/20261130-101500"], 80, cwd=tmp_path)


@pytest.mark.slow
def test_readme_summary_is_what_80_columns_show(tmp_path):
    scr = readme_summary(tmp_path)
    assert scr.returncode == 0
    sample = README.read_text(encoding="utf-8").split("$ tfcnnwrap report results/20261130-101500\n", 1)
    assert len(sample) == 2, "README lost its report sample"
    assert sample[1].split("```", 1)[0].rstrip("\n").splitlines() == scr.lines


@pytest.mark.slow
def test_readme_exit_codes_say_what_report_does(cli, tmp_path):
    failed = write_sweep(tmp_path / "failed", {("resnet50", 64): [176.93, "oom"]})
    assert cli("report", failed).returncode == 0  # failed runs are results too: report itself succeeded
    readme = README.read_text(encoding="utf-8")
    assert "`report` exits 0 whenever it can read the sweep" in readme


if __name__ == "__main__":  # print the README's sample: python tests/test_screens.py
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory() as tmp:
        print("\n".join(readme_summary(Path(tmp)).lines))
