"""No code of ours reads a private attribute of a standard-library module:
a name with a leading underscore is the module's own and
changes or goes in any Python release without notice, so a tool, or the
tests' CLI server (tests/cli_server.py), that leans on one breaks on an
upgrade with nothing in the changelog. Found statically: every attribute
read through a name bound by `import` / `from ... import` of a stdlib
module (`multiprocessing.forkserver._forkserver`, `context._default_context`
after `from multiprocessing import context`), and every import of a private
module or name (`from multiprocessing.forkserver import _forkserver`).

The few reads with no public route are listed in ALLOWED, each with why;
multiprocessing is never among them. Attributes of objects (a parser's
`_actions`) cannot be told from our own without types, and are not judged.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("campaign", "analysis", "kernels", "tests", "bench")
# Underscored names the standard library documents as public.
DOCUMENTED = frozenset({"os._exit", "sys._getframe", "sys._current_frames", "sys._current_exceptions",
                        "sys._xoptions", "sys._clear_type_cache", "sys._debugmallocstats", "sys._is_gil_enabled"})
# Private reads with no public route: name -> why.
ALLOWED = {
    "argparse._SubParsersAction": "the action add_subparsers() makes has no public type: the parser's "
                                  "did-you-mean and the completion find the subcommands by it",
    "threading._shutdown": "tests/cli_server.py: a forked CLI run leaves through os._exit, so it does the "
                           "interpreter's exit itself: non-daemon threads joined (after threading's own exit "
                           "hooks, concurrent.futures'), before atexit; no public call does that",
    "atexit._run_exitfuncs": "tests/cli_server.py: the same exit's atexit handlers; atexit has no public call "
                             "that runs them",
}


def _is_private(part: str) -> bool:
    """`_name`, not a dunder (`__file__`) nor an enum-style sunder (`_missing_`)."""
    return part.startswith("_") and not part.endswith("_")


def _stdlib(dotted: str) -> bool:
    return dotted.split(".", 1)[0] in sys.stdlib_module_names


def private_reads(source: str) -> list[tuple[int, str]]:
    """(line, dotted name up to its private part) of every private stdlib
    name the source imports or reads through an imported name."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> the stdlib dotted name it stands for
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _stdlib(alias.name):
                    bound[alias.asname or alias.name.split(".", 1)[0]] = (
                        alias.name if alias.asname else alias.name.split(".", 1)[0])
                    found |= {(node.lineno, n) for n in _private_prefixes(alias.name)}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and _stdlib(node.module):
            found |= {(node.lineno, n) for n in _private_prefixes(node.module)}
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = dotted
                found |= {(node.lineno, n) for n in _private_prefixes(dotted)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in bound:
            dotted = ".".join([bound[base.id], *reversed(parts)])
            found |= {(node.lineno, n) for n in _private_prefixes(dotted)}
    return sorted(found)


def _private_prefixes(dotted: str) -> list[str]:
    """The dotted name cut after its first private part (none if it has none
    or it is documented): `a._b.c` -> `a._b`."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            name = ".".join(parts[:i + 1])
            return [] if name in DOCUMENTED else [name]
    return []


def _sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py") if "build" not in p.relative_to(REPO).parts)


@pytest.fixture(scope="module")
def reads() -> dict[str, list[str]]:
    """name -> where it is read ("path:line"), over every source of ours."""
    out: dict[str, list[str]] = {}
    for path in _sources():
        for line, name in private_reads(path.read_text()):
            out.setdefault(name, []).append(f"{path.relative_to(REPO)}:{line}")
    return out


def test_no_private_attribute_of_the_standard_library_is_read(reads: dict[str, list[str]]) -> None:
    bad = {name: where for name, where in reads.items() if name not in ALLOWED}
    assert not bad, f"private standard-library names read (use a public route, or say in ALLOWED why not): {bad}"


def test_every_allowed_private_read_is_still_made_and_none_is_multiprocessing(reads: dict[str, list[str]]) -> None:
    assert not [name for name in ALLOWED if name.split(".", 1)[0] == "multiprocessing"]
    assert sorted(name for name in ALLOWED if name not in reads) == []  # a stale entry would excuse a new read


@pytest.mark.parametrize(("source", "names"), [
    ("from multiprocessing import forkserver\npid = forkserver._forkserver._forkserver_pid\n",
     ["multiprocessing.forkserver._forkserver"]),
    ("import multiprocessing.forkserver\nmultiprocessing.forkserver._forkserver.ensure_running()\n",
     ["multiprocessing.forkserver._forkserver"]),
    ("import multiprocessing.context as mpc\nmpc._default_context._actual_context = None\n",
     ["multiprocessing.context._default_context"]),
    ("from multiprocessing.forkserver import _forkserver as fs\n", ["multiprocessing.forkserver._forkserver"]),
    ("from concurrent.futures._base import Future\nimport _thread\n", ["_thread", "concurrent.futures._base"]),
    ("def f():\n    import threading\n    threading._shutdown()\n", ["threading._shutdown"]),
    # public, documented, or not the standard library's: nothing
    ("import os, sys, enum\nos._exit(0)\nsys._getframe()\nsys.__stdout__\nenum.Enum._missing_\n", []),
    ("import numpy\nnumpy._private\nparser = object()\nparser._actions\n", []),
    ("from .sibling import _helper\nfrom campaign.results import _x\n", []),
])
def test_planted_private_reads_are_found(source: str, names: list[str]) -> None:
    assert sorted({name for _, name in private_reads(source)}) == names
