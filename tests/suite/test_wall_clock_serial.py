"""Wall-clock assertions run only in the serial phase of `make test` (tests/parallel.py):
in the parallel phase four workers share two cores, and a bound on elapsed time
there measures the neighbours. Every test function whose assert compares an
elapsed time (a difference of time.perf_counter(), time.monotonic() or time.time())
with a bound must be marked `serial`; a deadline loop (`monotonic() < deadline`)
is a wait, not a measurement, and is left alone."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = frozenset({"perf_counter", "monotonic", "time"})
ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _clock_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCKS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "time")


def _elapsed(node: ast.AST, names: set[str]) -> bool:
    """`clock() - t0` or a name bound to one."""
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _clock_call(node.left)


def _serial(decorators: list[ast.expr]) -> bool:
    return any("serial" in ast.unparse(d) for d in decorators)


def _timed_asserts(fn: ast.FunctionDef) -> list[int]:
    names = {t.id for node in ast.walk(fn) if isinstance(node, ast.Assign) and _elapsed(node.value, set())
             for t in node.targets if isinstance(t, ast.Name)}
    lines = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            if any(isinstance(op, ORDER) for op in node.test.ops) and any(_elapsed(s, names) for s in sides):
                lines.append(node.lineno)
    return lines


def violations(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    module_serial = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                         for t in n.targets) and "serial" in ast.unparse(n.value)
                        for n in tree.body)
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test") and not (module_serial or _serial(
                fn.decorator_list)):
            out += [f"{where}:{line} {fn.name}" for line in _timed_asserts(fn)]
    return out


def test_no_wall_clock_assertion_outside_the_serial_phase() -> None:
    found = [v for path in sorted(TESTS.rglob("test_*.py"))
             for v in violations(path.read_text(), str(path.relative_to(TESTS)))]
    assert found == [], "mark these tests serial (or assert no elapsed time): " + "; ".join(found)


def test_the_check_finds_a_planted_timing_and_spares_a_deadline_and_a_serial_test() -> None:
    planted = '''
import time, pytest

def test_timed():
    t0 = time.perf_counter()
    elapsed = time.perf_counter() - t0
    assert elapsed < 10

def test_inline():
    t0 = time.monotonic()
    assert time.monotonic() - t0 <= 2

def test_waits():
    deadline = time.monotonic() + 30
    assert time.monotonic() < deadline

@pytest.mark.serial
def test_alone():
    t0 = time.perf_counter()
    assert time.perf_counter() - t0 < 1
'''
    assert violations(planted, "planted.py") == ["planted.py:7 test_timed", "planted.py:11 test_inline"]
