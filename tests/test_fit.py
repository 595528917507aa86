"""render.make_table's fitting rules (fit.py), on rich consoles of a given width: columns of one priority drop
together, the highest first; cells never fold; rows stack when even the fixed columns do not fit."""

import pytest

from tfcnnwrap.fit import title_words, wrap_parts
from tfcnnwrap.render import Col, make_table

ROWS = [
    {
        "model": "resnet50_v1.5",
        "batch_size": 128,
        "mean": 176.93,
        "std": 0.41,
        "min": 176.5,
        "max": 177.32,
        "median": 176.97,
        "note": "oom:1 crashed:2",
    }
]
COLUMNS = [
    Col("model", "model"),
    Col("batch_size", "batch"),
    Col("mean", "mean img/s"),
    Col("std", "std", 2),
    Col("min", "min", 3),
    Col("max", "max", 3),
    Col("median", "median", 4),
    Col("note", "failures", 1, True),
]


def rendered(table, width):
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text().splitlines()


def test_everything_fits_a_wide_terminal_with_no_note():
    lines = rendered(make_table(ROWS, COLUMNS), 120)
    assert lines[0].split() == ["model", "batch", "mean", "img/s", "std", "min", "max", "median", "failures"]
    assert lines[2].split() == [
        "resnet50_v1.5",
        "128",
        "176.93",
        "0.41",
        "176.50",
        "177.32",
        "176.97",
        "oom:1",
        "crashed:2",
    ]
    assert not any("hidden" in line for line in lines)


@pytest.mark.parametrize("width, hidden", [(62, "median"), (50, "min, max, median"), (40, "std, min, max, median")])
def test_columns_drop_by_priority_level_and_a_line_names_them(width, hidden):
    lines = rendered(make_table(ROWS, COLUMNS), width)
    assert max(len(line.rstrip()) for line in lines) <= width
    words = " ".join(lines).split()
    assert all(w in words for w in ("resnet50_v1.5", "128", "176.93")), lines
    assert (hidden + " hidden to fit %d columns" % width) in " ".join(words), lines
    if "min" in hidden:
        assert "176.50" not in words and "177.32" not in words  # min and max go together


def test_text_that_may_wrap_wraps_between_words_never_inside_one():
    lines = rendered(make_table(ROWS, COLUMNS[:3] + COLUMNS[-1:]), 40)
    assert "oom:1" in " ".join(lines).split() and "crashed:2" in " ".join(lines).split()


def test_rows_stack_when_even_the_fixed_columns_do_not_fit():
    fixed = [Col(c.key, c.header) for c in COLUMNS]
    lines = rendered(make_table(ROWS, fixed), 30)
    assert lines[0] == "resnet50_v1.5"
    assert all(line.startswith("  ") and len(line.rstrip()) <= 30 for line in lines[1:])
    items = " ".join(lines[1:]).split()
    for figure in ("128", "176.93", "0.41", "176.50", "177.32", "176.97"):
        assert figure in items


def test_a_title_in_parts_wraps_between_them():
    parts = ["results/20261130-101500", "NVIDIA GeForce RTX 2080 Ti", "fp32", "no XLA", "1 GPU"]
    lines = rendered(make_table(ROWS, COLUMNS[:3], title=parts), 40)
    assert lines[0] == "results/20261130-101500"
    assert lines[1] == "NVIDIA GeForce RTX 2080 Ti · fp32"
    assert wrap_parts(["a" * 50], 10) == ["a" * 50]  # a part wider than the line stays one (folded by rich)


def test_text_titles_keep_parentheses_whole():
    assert title_words("candidate b (GeForce RTX 2070) vs a") == ["candidate", "b", "(GeForce RTX 2070)", "vs", "a"]


def test_two_tuple_columns_still_work():
    lines = rendered(make_table([{"a": 1.5, "b": "x"}], [("a", "A"), "b"]), 40)
    assert lines[0].split() == ["A", "b"] and lines[2].split() == ["1.50", "x"]


def test_rows_added_after_make_table_are_laid_out_too():
    table = make_table(ROWS, COLUMNS[:3])
    table.add_row("vgg16", "64", "110.23")
    lines = rendered(table, 40)
    assert lines[-1].split() == ["vgg16", "64", "110.23"]
