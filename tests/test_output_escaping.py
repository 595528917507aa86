"""Text from other people (a bundle's model or GPU name, a condition, a reference CSV) is shown, never obeyed,
in every output (issue 33.7 and 33.8). A newline in a model name forged lines of its own (`verify`'s findings,
a row of `library`), U+202E reversed what followed it, and `"><img src=x onerror=alert(1)>` or `<script>`
reached Markdown as HTML. One escape (prose.safe_text) for every format, and one Markdown escape
(render.md_text) for every Markdown cell, header, title and note; property-based over any string."""

import csv
import io
import re

import pytest
from bundledata import build, logged_sweep, write_bundles
from hypothesis import given, settings
from hypothesis import strategies as st

from tfcnnwrap import prose, render
from tfcnnwrap.share import bundle as bundles

# What must never leave tfcnnwrap as it came: C0 and C1 controls (newline, tab, CR, ESC included), DEL, the
# line and paragraph separators and every bidi mark, embedding, override and isolate.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
FORGED = "resnet50\nFAKE ROW 99999"
HOSTILE_GPU = '"><img src=x onerror=alert(1)>'
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    [
        FORGED,
        HOSTILE_GPU,
        "<script>alert(1)</script>",
        "a\u202eb",
        "[x](javascript:alert(1))",
        "`a|b`",
        "x\r\ny",
        "*a* _b_ ~~c~~",
        "&lt;img&gt;",
        "\\",
        "![i](http://x/i.png)",
        "[r]: http://x",
        "<http://x>",
        "<!-- c -->",
    ]
)


def markdown_html(text):
    """What a renderer that passes inline HTML makes of ``text`` (GitHub's tables and strikethrough)."""
    from markdown_it import MarkdownIt  # rich's own dependency

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(text)


def shown(html):
    """A cell's text as a reader sees it: tags gone, entities read, blanks collapsed."""
    import html as htmllib

    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", html)).split())


# -- the renderers, over any string ---------------------------------------------------------------------------


@pytest.mark.slow  # a property-based search
@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_safe_text_is_one_line_with_nothing_a_terminal_obeys(text):
    out = prose.safe_text(text)
    assert not UNSAFE.search(out)
    assert prose.safe_text(out) == out  # shown once: escaping again changes nothing
    assert render.safe_text is prose.safe_text


@pytest.mark.slow  # a property-based search
@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_a_markdown_cell_is_one_cell_of_text_and_no_markup(text):
    md = render.to_markdown([{"gpu": text, "runs": 3}], [("gpu", "GPU"), ("runs", "runs")])
    assert md.count("\n") == 3 and not UNSAFE.search(md.replace("\n", ""))
    html = markdown_html(md)
    assert html.count("<tr>") == 2 and html.count("<td") == 2, (md, html)
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", html))
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td"}, (md, html)
    cell = re.search(r"<td[^>]*>(.*?)</td>", html, re.S).group(1)
    assert shown(cell) == " ".join(prose.safe_text(text).split()), (md, html)


@pytest.mark.slow  # a property-based search
@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_markdown_title_and_caption_are_text_and_no_markup(text):
    out = io.StringIO()
    render.emit(
        [{"model": text}], "markdown", title=["sweep", text], caption=render.paragraphs([text, "x"]), stream=out
    )
    md = out.getvalue()
    assert md.count("\n") == 9, md  # title, blank, 3 table lines, blank, note, blank, note
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", markdown_html(md)))
    assert tags <= {"h3", "p", "table", "thead", "tbody", "tr", "th", "td", "code"}, md


@pytest.mark.slow  # a property-based search
@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_csv_is_one_line_per_row_whatever_a_cell_holds(first, second):
    text = render.to_csv([{"gpu": first, "model": second}])
    assert text.count("\n") == 2 and not UNSAFE.search(text.replace("\n", ""))
    assert len(list(csv.reader(io.StringIO(text)))) == 2


@pytest.mark.slow  # a property-based search
@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_a_table_row_is_one_line_whatever_its_cells_hold(text):
    from rich.console import Console

    console = Console(file=io.StringIO(), width=1000, color_system=None, legacy_windows=False)
    console.print(
        render.make_table(
            [{"gpu": text, "n": 1}], [("gpu", "GPU"), ("n", "n")], title=["t:", text], caption="c: " + text
        )
    )
    lines = console.file.getvalue().splitlines()
    assert len(lines) == 5, lines  # title, header, rule, the row, the caption
    assert not any(UNSAFE.search(line) for line in lines)


@pytest.mark.slow  # a property-based search
@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_message_and_a_printed_line_are_one_line(text):
    out = io.StringIO()
    prose.write("tfcnnwrap x: error: %s" % text, out)
    assert out.getvalue().count("\n") == 1 and not UNSAFE.search(out.getvalue()[:-1])
    console = render.console(file=io.StringIO(), width=1000)
    console.print("note: %s" % text, markup=False)
    printed = console.file.getvalue()
    assert printed.count("\n") == 1 and not UNSAFE.search(printed[:-1])
    wrapped = prose.fill("warning: %s" % text, 40)
    assert not any(UNSAFE.search(line) for line in wrapped.split("\n"))


@pytest.mark.slow  # a property-based search
@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_page_shows_every_value_escaped(text):
    from tfcnnwrap.pages.reportpage import environment

    page = (
        environment()
        .from_string("<td>{{ name }}</td><td>{{ names | join(', ') }}</td>")
        .render(name=text, names=[text, "b"])
    )
    assert not UNSAFE.search(page) and "<img" not in page and "<script" not in page


def test_the_seeds_own_cells_print_as_they_are():
    for text in (
        "cnn_tf_v1.12_compatible",
        "parameter_server",
        "<0.001",
        "203.99 (86.7%)",
        "$699",
        "1.09x",
        "2026-11-30T10:15:00Z",
        "['--use_fp16']",
        "GeForce RTX 2070 eGPU (Thunderbolt 3)",
        "n/a",
        "+5.6%",
    ):
        assert render.md_text(text, cell=True) == text


# -- through the CLI, as a stranger's bundle reaches a user ----------------------------------------------------


def _forged(tmp_path, logs, **where):
    """A bundle from ``logged_sweep`` whose runs and rows name ``where['model']`` and whose conditions hold the
    rest; without logs it is imported unverified."""
    base = build(
        logged_sweep(tmp_path / "s", values={"resnet50": 176.93}, gpus=(where.pop("gpu", "GeForce RTX 2070"),))
    )
    content = {k: v for k, v in base.items() if k != "id" and (logs or k != "logs")}
    model = where.pop("model", None)
    if model:
        content["runs"] = [dict(r, model=model) for r in content["runs"]]
        content["summary"] = [dict(r, model=model) for r in content["summary"]]
        plan = content.get("plan")
        if plan:  # the plan names the model too: a forger renames it everywhere (else verify says so)
            content["plan"] = dict(plan, configurations=[dict(c, model=model) for c in plan["configurations"]])
    content["conditions"] = dict(content["conditions"], **where)
    return bundles.with_id(content)


def _not_forged(text, where):
    assert not UNSAFE.search(text.replace("\n", "")), where
    assert not any(line.startswith("FAKE ROW") for line in text.splitlines()), (where, text)


@pytest.mark.slow
def test_verify_shows_a_newline_in_a_model_name_and_forges_no_line(cli, tmp_path):
    path = tmp_path / "evil.tfcw.json.gz"
    path.write_bytes(bundles.to_bytes(_forged(tmp_path, True, model=FORGED + "\u202e")))
    result = cli("verify", path, cwd=tmp_path)
    assert result.returncode == 1, result
    _not_forged(result.stdout + result.stderr, "verify")
    assert "resnet50\\x0aFAKE ROW 99999\\u202e" in result.stdout, result
    assert all(line.startswith(str(path)) for line in result.stdout.splitlines()), result


@pytest.mark.slow
def test_library_shows_an_unverified_bundles_forged_row_as_one_row(cli, tmp_path):
    data = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    # a model name is one tf_cnn_benchmarks has (verify refuses others), so the forger's line rides in a condition
    bundle = _forged(tmp_path, False, precision="fp32\r\n" + FORGED)
    assert cli("import", write_bundles(tmp_path / "in", [bundle]), env=data).returncode == 0
    for fmt in ("table", "markdown", "csv"):
        result = cli("library", "--format", fmt, env=data)
        assert result.returncode == 0, result
        _not_forged(result.stdout + result.stderr, fmt)
        assert sum("FAKE ROW" in line for line in result.stdout.splitlines()) == 1, result


@pytest.mark.slow
def test_a_forged_model_or_gpu_name_is_refused_in_one_escaped_line(cli, tmp_path):
    data = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    named = _forged(tmp_path / "m", False, model=FORGED)
    hostile = _forged(tmp_path / "g", True)
    hostile = bundles.with_id(
        dict({k: v for k, v in hostile.items() if k != "id"}, conditions=dict(hostile["conditions"], gpu=HOSTILE_GPU))
    )
    result = cli("import", write_bundles(tmp_path / "in", [named, hostile]), env=data)
    assert result.returncode == 1 and "2 refused" in result.stderr, result
    _not_forged(result.stdout + result.stderr, "import")
    assert len([line for line in result.stderr.splitlines() if line.startswith("refused: ")]) == 2, result


@pytest.mark.slow
def test_markdown_escapes_html_in_a_gpu_name_and_a_model_name(cli, tmp_path):
    data = {"TFCNNWRAP_DATA": str(tmp_path / "data")}
    # GPU and model names are plain or refused (verify); a condition of an unverified bundle carries the HTML
    unverified = _forged(tmp_path / "u", False, precision=HOSTILE_GPU)
    assert cli("import", write_bundles(tmp_path / "in", [unverified]), env=data).returncode == 0
    result = cli("library", "--format", "markdown", env=data)
    assert result.returncode == 0, result
    html = markdown_html(result.stdout)
    assert "<img" not in html and "<script" not in html, result.stdout
    assert not re.search(r"(?<!\\)<(img|script)", result.stdout), result.stdout
    assert "onerror=alert(1)" in result.stdout  # shown, as text


def test_a_wrapped_warning_shows_a_newline_of_a_name():
    lines = prose.fill("warning: sweep %s ran hot" % FORGED, 30).split("\n")
    assert not any(line.lstrip().startswith("FAKE ROW") for line in lines), lines
    assert "resnet50\\x0aFAKE" in " ".join(lines)
