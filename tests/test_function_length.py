"""Every function of the package is short enough to read at once: at most 60 lines from its ``def`` to its
last line, docstring and signature included (issue 21). Decorators are not counted."""

import ast
from pathlib import Path

import tfcnnwrap

LIMIT = 60
PACKAGE = Path(tfcnnwrap.__file__).parent


def long_functions(root: Path = PACKAGE, limit: int = LIMIT) -> list:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(
                        "%s:%d %s (%d lines)" % (path.relative_to(root.parent), node.lineno, node.name, length)
                    )
    return found


def test_no_function_is_longer_than_60_lines():
    assert long_functions() == []


def test_the_count_runs_from_def_to_last_line(tmp_path):
    (tmp_path / "m.py").write_text("def f(\n    a,\n):\n    '''doc'''\n" + "    a += 1\n" * 56 + "    return a\n")
    assert long_functions(tmp_path, 60) == ["%s/m.py:1 f (61 lines)" % tmp_path.name]
    assert long_functions(tmp_path, 61) == []
