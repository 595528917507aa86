"""A module's private name (``_name``) is its own: no module of the package imports another module's private
name or reaches one through a module it imported (issue 34: a name another module needs is public, or the code
moves). A private module (``environment/_probe.py``, a script run in the target's Python) is imported whole."""

import ast
from pathlib import Path
from typing import List, Set

import tfcnnwrap

PACKAGE = Path(tfcnnwrap.__file__).parent


NAMEDTUPLE_API = {"_make", "_replace", "_asdict", "_fields", "_field_defaults"}  # public, underscored by design


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def private_uses(path: Path) -> List[str]:
    """``from tfcnnwrap.x import _name`` and ``module._name`` (a module of the package) in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: List[str] = []
    modules: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfcnnwrap"):
            for alias in node.names:
                if _private(alias.name):
                    found.append("%s:%d from %s import %s" % (path.name, node.lineno, node.module, alias.name))
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("tfcnnwrap"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                found.append("%s:%d %s.%s" % (path.name, node.lineno, node.value.id, node.attr))
    return found


def private_imports(root: Path = PACKAGE) -> List[str]:
    return [use for path in sorted(root.rglob("*.py")) for use in private_uses(path)]


def test_no_module_uses_another_modules_private_name():
    assert private_imports() == []


def test_the_check_sees_both_forms(tmp_path):
    (tmp_path / "present").mkdir()
    (tmp_path / "present" / "a.py").write_text(
        "from tfcnnwrap.present.ranktext import _WHAT, placement\n"
        "from tfcnnwrap.present import ranktext\n"
        "print(ranktext._pct(1.0), ranktext.placement, _WHAT)\n"
    )
    assert private_uses(tmp_path / "present" / "a.py") == [
        "a.py:1 from tfcnnwrap.present.ranktext import _WHAT",
        "a.py:3 ranktext._pct",
    ]
