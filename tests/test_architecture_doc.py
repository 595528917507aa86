"""docs/architecture.md names every module of the package once, in its package's table, and no module that is gone.

Pure: reads files only. A module added, moved or removed without its row makes this fail, so the map stays true.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tfcnnwrap"
DOC = ROOT / "docs" / "architecture.md"
DOCS_WITH_PATHS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

ROW = re.compile(r"^\| `([A-Za-z0-9_/]+\.py)`", re.M)
SECTION = re.compile(r"^### (\S+)", re.M)
# a module named in prose: `cli.py`, `results/store.py`, `tfcnnwrap/run/procs.py`
NAMED = re.compile(r"`(?:tfcnnwrap/)?((?:[a-z_]+/)?_?[a-z_]+\.py)`")
FLAT_PATH = re.compile(r"tfcnnwrap/[a-z_/]+\.py")
# tensorflow/benchmarks' own files, which the doc names when it says what tfcnnwrap reads of them
UPSTREAM = {"benchmark_cnn.py", "tf_cnn_benchmarks.py"}


def modules():
    """Every module of the package as the doc spells it: `cli.py` at the root, `results/store.py` in a package."""
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


def module_rows(text):
    """(section, module) for every table row under '## Modules', section being 'root' or the package's name."""
    start = text.index("## Modules")
    end = text.index("\n## ", start + 1)
    part = text[start:end]
    rows = []
    heads = [(m.start(), m.group(1).rstrip("/").rstrip(":")) for m in SECTION.finditer(part)]
    for match in ROW.finditer(part):
        section = [name for at, name in heads if at < match.start()][-1]
        rows.append((section, match.group(1)))
    return rows


@pytest.mark.slow
def test_every_module_has_exactly_one_row():
    rows = [module for _, module in module_rows(DOC.read_text(encoding="utf-8"))]
    missing = sorted(set(modules()) - set(rows))
    assert not missing, "modules without a row in docs/architecture.md: %s" % missing
    twice = sorted({m for m in rows if rows.count(m) > 1})
    assert not twice, "modules with more than one row: %s" % twice


@pytest.mark.slow
def test_every_row_names_a_module_that_exists():
    rows = [module for _, module in module_rows(DOC.read_text(encoding="utf-8"))]
    gone = sorted(set(rows) - set(modules()))
    assert not gone, "rows in docs/architecture.md for modules that do not exist: %s" % gone


@pytest.mark.slow
def test_each_row_is_in_its_package_table():
    for section, module in module_rows(DOC.read_text(encoding="utf-8")):
        package = module.split("/")[0] if "/" in module else "root"
        assert section == package, "%s is in the %s table, not %s's" % (module, section, package)


def test_every_module_named_in_the_doc_exists():
    existing = set(modules())
    basenames = {m.rsplit("/", 1)[-1] for m in existing}
    text = DOC.read_text(encoding="utf-8")
    for name in sorted(set(NAMED.findall(text)) - UPSTREAM):
        known = name in existing if "/" in name else name in basenames
        assert known, "docs/architecture.md names %s, which is not a module of tfcnnwrap" % name


def test_paths_into_the_package_in_the_docs_exist():
    for doc in DOCS_WITH_PATHS:
        for path in sorted(set(FLAT_PATH.findall(doc.read_text(encoding="utf-8")))):
            assert (ROOT / path).is_file(), "%s names %s, which does not exist" % (doc.name, path)


WORD = re.compile(r"\S*[A-Za-z0-9]\S*")  # a word holds a letter or a digit: a table's "|" and "---" are not words


@pytest.mark.slow
def test_the_map_stays_a_map_of_at_most_2500_words():
    words = len(WORD.findall(DOC.read_text(encoding="utf-8")))
    assert words <= 2500, "docs/architecture.md has %d words; it is a map of the packages, not their story" % words
