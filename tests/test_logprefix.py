"""Logs whose every line carries a launcher's or runner's prefix (issue 27): the same model, batch size, GPU
count and total as the bare log, from both engines and the ``parse`` verb; interleaved ranks report rank 0
(or the first) and say how many ranks printed.

The logs are built from a real tf_cnn_benchmarks run (tests/data/prefix/tf2.21_cpu_trivial.log: TF 2.21 on
CPU, master, ``--model=trivial --num_batches=10 --batch_size=8``, stdout and stderr together), the other
real samples of tests/test_logparse.py, with each prefix put in front of every line the way the tool adds it.
"""

import json
from pathlib import Path

import pytest

from tfcnnwrap.run.logparse import LogParser, parse_file, parse_lines

REAL = (Path(__file__).parent / "data" / "prefix" / "tf2.21_cpu_trivial.log").read_text(encoding="utf-8")
BARE = ("trivial", 8, ["/cpu:0"], 546.96)
ESC = "\x1b"


def shape(log):
    return (log.model, log.batch_size, log.devices, log.total_images_per_sec)


def prefixed(text, make):
    """``text`` with ``make(i)`` in front of its i-th line."""
    return "".join(make(i) + line + "\n" for i, line in enumerate(text.splitlines()))


def launcher(i):
    return "INFO|2019-02-13T23:%02d:%02d|/opt/launcher.py|27| " % (2 + i // 60, i % 60)


def peer(port):
    return lambda i: "%s[1;32m127.0.0.1.%d%s[m::stdout] " % (ESC, port, ESC)


def srun_label(rank, width=1):
    return lambda i: "%*d: " % (width, rank)


def mpirun(rank):
    return lambda i: "[1,%d]<stdout>:" % rank


def absl(i):
    return "I1130 10:15:%02d.%06d 140 tf_cnn_benchmarks.py:%d] " % (i % 60, i * 1000, 60 + i % 3)


def coloured(text):
    """ANSI colour codes inside lines, as a colouring pager or runner leaves them."""
    out = []
    for line in text.splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            line = "%s[1m%s%s[0m:%s[32m%s%s[0m" % (ESC, key, ESC, ESC, value, ESC)
        out.append(line + ESC + "[K")
    return "\n".join(out) + "\n"


SHAPES = {
    "launcher": lambda t: prefixed(t, launcher),
    "peer_tag_ansi": lambda t: prefixed(t, peer(10000)),
    "srun_label": lambda t: prefixed(t, srun_label(0)),
    "srun_label_wide": lambda t: prefixed(t, srun_label(0, 2)),
    "mpirun": lambda t: prefixed(t, mpirun(0)),
    "absl": lambda t: prefixed(t, absl),
    "ansi_anywhere": coloured,
    "launcher_then_ansi": lambda t: prefixed(coloured(t), launcher),
}


def engines(text, tmp_path):
    """The ParsedLog of ``text`` from the streaming engine (lines, and bytes in odd chunks) and from the
    whole-file scanner (whole and in chunks); all must agree."""
    fed = parse_lines(text.splitlines(True))
    data = text.encode("utf-8")
    path = tmp_path / "run.log"
    path.write_bytes(data)
    for size in (1 << 20, 97, 7):
        assert repr(parse_file(path, chunk_size=size)) == repr(fed), "parse_file, chunk size %d" % size
        live = LogParser()
        for i in range(0, len(data), size):
            live.feed_bytes(data[i : i + size])
        live.feed_bytes(b"", final=True)
        assert repr(live.result()) == repr(fed), "feed_bytes in chunks of %d" % size
    return fed


def test_the_bare_real_log(tmp_path):
    log = engines(REAL, tmp_path)
    assert shape(log) == BARE and log.ranks == 1 and log.tf_version == "2.21"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_line_prefixed_reads_like_the_bare_log(tmp_path, name):
    log = engines(SHAPES[name](REAL), tmp_path)
    assert shape(log) == BARE, name
    assert (log.tf_version, log.num_batches, log.steps_seen, log.ranks) == ("2.21", 10, 2, 1)
    assert log.failure_kind is None


def interleave(*texts):
    """Lines of several ranks' logs, taken in turn (one from each while they last)."""
    parts = [t.splitlines(True) for t in texts]
    out = []
    for i in range(max(len(p) for p in parts)):
        out += [p[i] for p in parts if i < len(p)]
    return "".join(out)


def other_rank(text):
    """The same run as another rank saw it: another total and batch size, so which one is reported shows."""
    return text.replace("total images/sec: 546.96", "total images/sec: 500.00").replace("8 per device", "16 per device")


@pytest.mark.parametrize("tag", [srun_label, mpirun, peer], ids=["srun", "mpirun", "peer"])
def test_interleaved_ranks_report_rank_zero_and_count_the_ranks(tmp_path, tag):
    base = 10000 if tag is peer else 0
    rank1 = prefixed(other_rank(REAL), tag(base + 1))
    rank0 = prefixed(REAL, tag(base))
    log = engines(interleave(rank1, rank0), tmp_path)  # rank 1 speaks first
    assert (log.ranks, shape(log)) == (2, BARE)  # the lowest tag: rank 0, or the peer with the lowest port


def test_four_ranks_with_srun_padding(tmp_path):
    texts = [prefixed(REAL if r == 0 else other_rank(REAL), srun_label(r, 2)) for r in (3, 10, 0, 1)]
    log = engines(interleave(*texts), tmp_path)
    assert (log.ranks, shape(log)) == (4, BARE)


def test_ranks_one_after_another_still_report_rank_zero(tmp_path):
    text = prefixed(other_rank(REAL), mpirun(1)) + prefixed(REAL, mpirun(0))
    log = engines(text, tmp_path)
    assert (log.ranks, shape(log)) == (2, BARE)


def test_a_rank_that_failed_is_named_when_rank_zero_has_no_total(tmp_path):
    dead = (
        "TensorFlow:  2.21\nModel:       trivial\n==========\n"
        "ResourceExhaustedError: OOM when allocating tensor with shape[8,3]\n"
    )
    unfinished = REAL.split("total images/sec")[0]
    log = engines(interleave(prefixed(unfinished, srun_label(0)), prefixed(dead, srun_label(1))), tmp_path)
    assert log.total_images_per_sec is None and log.failure_kind == "oom" and log.ranks == 2


def test_sequential_runs_under_a_timestamped_launcher_still_give_the_last_run(tmp_path):
    text = prefixed(other_rank(REAL) + REAL, launcher)
    log = engines(text, tmp_path)
    assert (log.ranks, shape(log)) == (1, BARE)


def test_a_prefix_is_learned_not_listed(tmp_path):
    """A prefix shape no list holds: a job scheduler's ``[node-07 task 3 | stdout] ``."""
    log = engines(prefixed(REAL, lambda i: "[node-07 task 3 | stdout] "), tmp_path)
    assert (shape(log), log.ranks) == (BARE, 1)


def test_a_tf_cpp_total_after_a_learned_prefix_is_still_not_believed(tmp_path):
    text = prefixed(
        REAL.replace(
            "total images/sec: 546.96", "2026-11-30 10:00:00.000000: I tensorflow/x.cc:1] total images/sec: 999.00"
        ),
        srun_label(0),
    )
    log = engines(text, tmp_path)
    assert log.total_images_per_sec is None


def test_noise_that_looks_like_a_header_teaches_nothing(tmp_path):
    text = "the TensorFlow: version is not known\nprinted TensorFlow:  2.21 once\n" + REAL
    log = engines(text, tmp_path)
    assert (shape(log), log.ranks) == (BARE, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_parse_verb_reads_each_shape(tmp_path, cli, name):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "job.out").write_text(SHAPES[name](REAL), encoding="utf-8")
    result = cli("parse", str(tmp_path / "logs"), "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)
    assert (row["status"], row["model"], row["batch_size"], row["devices"], row["images_per_sec"]) == (
        "ok",
        "trivial",
        8,
        ["/cpu:0"],
        546.96,
    )
    assert row["ranks"] == 1


@pytest.mark.slow
def test_parse_verb_counts_ranks(tmp_path, cli):
    log = tmp_path / "job.out"
    log.write_text(
        interleave(prefixed(other_rank(REAL), srun_label(1)), prefixed(REAL, srun_label(0))), encoding="utf-8"
    )
    row = json.loads(cli("parse", str(log), "--format", "jsonl").stdout)
    assert (row["status"], row["images_per_sec"], row["batch_size"], row["ranks"]) == ("ok", 546.96, 8, 2)


@pytest.mark.parametrize(
    "noise",
    [
        "note: TensorFlow:  2.21 found\n",
        "Model: TensorFlow:  2.21\n",
        "== TensorFlow:  2.21\n",
        "Step\tTensorFlow:  2.21\n",
    ],
)
def test_a_prefix_that_would_eat_tf_cnn_benchmarks_own_text_is_not_learned(tmp_path, noise):
    log = engines(noise + REAL, tmp_path)
    assert (shape(log), log.ranks) == (BARE, 1)


def test_ranks_are_bounded(tmp_path, monkeypatch):
    """A hostile log whose every line names another rank: memory stays bounded, the first ranks count."""
    from tfcnnwrap.run import logparse

    monkeypatch.setattr(logparse, "MAX_RANKS", 8)
    text = "".join(prefixed(REAL, srun_label(r)) for r in range(20))
    log = engines(text, tmp_path)
    assert log.ranks == 8 and shape(log) == BARE


def test_after_a_bare_header_nothing_is_learned(tmp_path):
    """The first header line decides: a bare one means the log's lines carry no prefix, so a later prefixed
    header (a second log appended) is read as the existing parser reads it, by both engines alike."""
    text = REAL + prefixed(other_rank(REAL), srun_label(0))
    log = engines(text, tmp_path)
    assert log.ranks == 1 and log.total_images_per_sec == 546.96


@pytest.mark.parametrize("dirt", ["\x1b", "\x1b[", "\x1b]0;title\x07", "\x1b[38;5;196m", "\x1b(B"])
def test_escapes_whole_cut_or_alone_leave_no_trace(tmp_path, dirt):
    log = engines("".join(line + dirt + "\n" for line in REAL.splitlines()), tmp_path)
    assert shape(log) == BARE and "\x1b" not in repr(log)
