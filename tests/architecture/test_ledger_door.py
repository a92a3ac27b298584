"""One door to the ledger: campaign/ledger/ owns every read and write of it.
The standard library's sqlite3 (a second way into the file, beside the ORM)
is imported nowhere in campaign/ outside campaign/ledger/; its light read
path for start-up speed (campaign/ledger/sqlite_read.py) lives there too.

Imports inside functions count (a lazy import still opens the door)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LEDGER = REPO / "campaign" / "ledger"


def _sqlite3_imports(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            lines += [node.lineno for alias in node.names if alias.name.split(".")[0] == "sqlite3"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "sqlite3":
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "__import__", "import_module") and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).split(".")[0] == "sqlite3":
            lines.append(node.lineno)
    return lines


def offenders(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if LEDGER in path.parents or "build" in path.parts:
            continue
        for line in _sqlite3_imports(ast.parse(path.read_text(), str(path))):
            found.append(f"{path.relative_to(REPO)}:{line}")
    return found


def test_no_sqlite3_outside_the_ledger_package() -> None:
    assert offenders(REPO / "campaign") == [], "stdlib sqlite3 outside campaign/ledger/: read through campaign.ledger"


def test_the_check_sees_each_way_of_importing(tmp_path: Path) -> None:
    """The detector itself: plain, from, dotted and dynamic imports, also inside a function."""
    for i, text in enumerate(("import sqlite3\n", "from sqlite3 import connect\n", "import sqlite3.dbapi2 as d\n",
                              "def f():\n    import sqlite3\n", "x = __import__('sqlite3')\n",
                              "import importlib\nm = importlib.import_module('sqlite3')\n")):
        (tmp_path / f"m{i}.py").write_text(text)
    (tmp_path / "fine.py").write_text("import sqlalchemy\nfrom campaign.ledger import sqlite_read\n")
    assert [p.split(":")[0] for p in offenders_in(tmp_path)] == [f"m{i}.py" for i in range(6)]


def offenders_in(root: Path) -> list[str]:
    return [f"{path.name}:{line}" for path in sorted(root.rglob("*.py"))
            for line in _sqlite3_imports(ast.parse(path.read_text()))]
