"""Tables and lines written to a pipe without rich are byte for byte what rich writes there (plaintable), and
the verbs that print them on a pipe do not load rich at all (issue 39: `list` and `references` start-up)."""

import io
import random
import string

import pytest

from tfcnnwrap import plaintable, render
from tfcnnwrap.render import Col

WORDS = ["resnet50", "vgg16", "fp32", "1,2,4", "$1,499", "250 W", "GeForce", "RTX", "2080 Ti", "·", "(512)", "a", ""]


def rich_text(renderable, width, **options):
    """What rich writes of ``renderable`` on a pipe ``width`` columns wide (render.console's settings)."""
    buffer = io.StringIO()
    render.console(file=buffer, width=width).print(renderable, **options)
    return buffer.getvalue()


def random_cell(rng):
    if rng.random() < 0.3:
        return rng.choice([rng.randint(0, 5000), round(rng.uniform(0, 9999), 3), None])
    words = [
        rng.choice(WORDS) if rng.random() < 0.7 else "".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 14)))
        for _ in range(rng.randint(0, 6))
    ]
    return rng.choice([" ", "  ", " · ", ", "]).join(words)


def random_table(rng):
    columns = [
        Col(
            "c%d" % i,
            rng.choice(["id", "GPU", "GPU counts", "date (UTC)", "models", "ok", "state", "img/s"]),
            rng.randint(0, 5),
            rng.random() < 0.5,
        )
        for i in range(rng.randint(1, 8))
    ]
    rows = [{c.key: random_cell(rng) for c in columns} for _ in range(rng.randint(1, 6))]
    title = rng.choice(
        [None, "Reference GPUs (tf_cnn_benchmarks)", ["sweep x", "GeForce RTX 2070 (eGPU)", "TF 1.12.0", "fp32"]]
    )
    caption = rng.choice([None, "3 log(s), 2 ok, 1 failed", ["first note", "", "second note"]])
    return rows, columns, title, caption


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def test_a_table_on_a_pipe_is_what_rich_writes_there_at_every_width():
    rng = random.Random(39)
    drawn = 0
    for _ in range(400):
        rows, columns, title, caption = random_table(rng)
        width = rng.randint(20, 170)
        parts = render._table_parts(rows, columns, title, 2, caption)
        plain = plaintable.table_text(*parts, hint=plaintable.HIDDEN_HINT, width=width)
        if plain is not None:
            drawn += 1
            assert plain == rich_text(render.make_table(rows, columns, title, 2, caption), width), (rows, width)
    assert drawn > 200  # most tables are plain: the comparison is not an empty one


def test_what_only_rich_can_draw_is_left_to_rich():
    columns = [Col("a", "a", 0, False), Col("b", "b", 0, True)]
    wide = [{"a": "x" * 30, "b": "y"}]
    assert plaintable.table_text(*render._table_parts(wide, columns, None, 2, None), hint="", width=20) is None
    emoji = [{"a": "\u6f22\u5b57", "b": "y"}]  # two cells wide each
    assert plaintable.table_text(*render._table_parts(emoji, columns, None, 2, None), hint="", width=80) is None
    assert plaintable.table_text(*render._table_parts([], columns, None, 2, None), hint="", width=80) is None


LINES = {  # a line, and whether it is plain at 160 columns (else rich prints it)
    "2651 figures on 41 GPUs. launch: the maker's announced price; power: board power; '-': not verified yet.": True,
    "Compare: tfcnnwrap compare SWEEP_DIR --against NAME[,NAME...]": True,
    "  python -m tfcnnwrap sweep --resume results/20261130-101500": True,
    "resume 20261130-101500:": True,
    "update: ps = parameter_server, repl = replicated; images/sec in total over the GPUs. Rows under identical "
    "conditions are grouped (conditions on the first), spread: how far apart.  Two  spaces  kept.   ": True,
    "a:smile: b": False,  # rich's emoji code
    "x" * 200: False,  # rich folds a word wider than the line
    "tab\there": False,
}


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("whole", [False, True])
def test_a_line_on_a_pipe_is_what_rich_writes_there(line, whole):
    for width in (20, 40, 80, 160):
        plain = plaintable.line_text(line, width, whole)
        if plain is not None:
            assert plain == rich_text(line, width, markup=False, soft_wrap=whole)
    assert (plaintable.line_text(line, 160, whole) is not None) == (LINES[line] or (whole and line == "x" * 200))


def test_the_width_of_a_pipe_is_render_consoles(monkeypatch):
    assert plaintable.pipe_width(io.StringIO()) is None  # no encoding: rich's own decision
    pipe = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    assert plaintable.pipe_width(pipe) == plaintable.PIPE_WIDTH
    monkeypatch.setenv("COLUMNS", "90")
    assert plaintable.pipe_width(pipe) == 90
    monkeypatch.setenv("COLUMNS", " 90")  # prose reads 90, rich its own default: only rich knows
    assert plaintable.pipe_width(pipe) is None
    monkeypatch.setenv("COLUMNS", "5")  # no width: render.console sets PIPE_WIDTH
    assert plaintable.pipe_width(pipe) == plaintable.PIPE_WIDTH
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich writes styles to a pipe
    assert plaintable.pipe_width(pipe) is None
    monkeypatch.delenv("FORCE_COLOR")
    assert plaintable.pipe_width(io.TextIOWrapper(io.BytesIO(), encoding="cp1252")) is None
