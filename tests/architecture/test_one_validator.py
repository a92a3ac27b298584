"""The ingest has one validator and one judgement. A result CSV's cells are
judged by one rule set (analysis/rules.py), applied by one reader
(campaign/results/columnar.py), whose masks also explain a refusal; a file's
rows are judged against their run by one function (campaign.results.expected
.judge). A second copy kept equal to the first by tests (a per-cell reader
beside the columnar one, a per-file judgement beside the pooled one) is how
two paths drift: found statically, a module or function of the old twins'
names, a module that applies the rules or reads CSV records beside the
reader, or a second top-level judgement in expected.py. A float cell has one
reading too, Arrow's cast (analysis/rules.py `_cast`): a regular expression
of float or nan/inf cells, or a second cast of text to float64 in the rules,
is a second definition of a valid float beside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("campaign", "analysis", "resultschema")
# The names the twins went by: the per-cell reference reader and its cell rules, the pooled pre-check
# and the per-file judgement it sent files to.
TWINS = frozenset({"parse_rows", "check_row", "scale_cell", "fast_records", "settled", "foreign",
                   "check_failure", "_judge", "_classify", "_finite_floats", "_floats_by_shape"})
RULES_USERS = {"campaign/results/columnar.py", "analysis/schema.py"}  # schema: a DataFrame handed to the analysis
CSV_READERS = {"campaign/results/columnar.py", "campaign/results/counters.py",  # counters: a profiler's own CSV
               "campaign/job/preflight.py", "campaign/cli/watch.py"}


def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(REPO)): ast.parse(p.read_text(encoding="utf-8"))
            for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))}


def test_no_twin_module_or_function_comes_back() -> None:
    assert not (REPO / "campaign/results/cells.py").exists()
    assert not (REPO / "tests/results/reference_reader.py").exists()
    found = [f"{path}:{node.lineno} {node.name}" for path, tree in _modules().items() for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in TWINS]
    assert not found, f"a function named as a removed twin of the ingest's validator or judgement: {found}"


def test_the_rules_are_applied_by_the_one_reader() -> None:
    users = {path for path, tree in _modules().items() for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module == "analysis.rules"
             or isinstance(node, ast.Import) and any(a.name == "analysis.rules" for a in node.names)}
    assert users <= RULES_USERS, f"a second module applies the result rules: {sorted(users - RULES_USERS)}"


def test_result_csv_records_are_read_by_the_one_reader() -> None:
    readers = {path for path, tree in _modules().items() for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr in ("reader", "DictReader")
               and isinstance(node.value, ast.Name) and node.value.id == "csv"}
    assert readers <= CSV_READERS, f"a second CSV reader: {sorted(readers - CSV_READERS)}"


def test_expected_has_one_judgement() -> None:
    """expected.py's public functions: `judge` only (Expected.of_spec is a constructor)."""
    tree = ast.parse((REPO / "campaign/results/expected.py").read_text(encoding="utf-8"))
    public = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert public == ["judge"], public


def _float_pattern(text: str) -> bool:
    """`text`, as a regular expression, takes float cells (or the words nan, inf) as a whole and not other words."""
    try:
        rx = re.compile(text)
        takes = all(rx.fullmatch(c) for c in ("1.5e-3", "1e5", ".5", "-2.5E+10")) or \
            any(all(rx.fullmatch(c) for c in words) for words in (("nan", "-NaN"), ("inf", "-Infinity")))
        return bool(takes) and not rx.fullmatch("x") and not rx.fullmatch("name")
    except (re.error, RecursionError, OverflowError):
        return False


def test_a_float_cell_has_one_reading() -> None:
    """No pattern of float cells anywhere (the rules once matched every cell against three beside the
    cast, kept equal to it by tests), and one cast of text to float64 in the rules, in `_cast`."""
    assert _float_pattern(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")  # (the test finds the old ones)
    assert _float_pattern(r"^[+-]?[nN][aA][nN]$") and _float_pattern(r"^[+-]?(?i:inf|infinity)$")
    patterns = [f"{path}:{node.lineno} {node.value!r}" for path, tree in _modules().items() for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and _float_pattern(node.value)]
    assert not patterns, f"a pattern of float cells beside the cast that reads them: {patterns}"
    tree = ast.parse((REPO / "analysis/rules.py").read_text(encoding="utf-8"))
    casts = [f"{fn.name}:{node.lineno}" for fn in tree.body if isinstance(fn, ast.FunctionDef)
             for node in ast.walk(fn) if isinstance(node, ast.Call) and ast.unparse(node.func) in ("pc.cast", "cast")
             and "float64" in ast.unparse(node)]
    assert [c.split(":")[0] for c in casts] == ["_cast"], f"float64 casts in analysis/rules.py: {casts}"
