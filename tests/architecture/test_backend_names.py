"""Backends are asked for capabilities, never compared by name outside
campaign/backends/ (campaign/backends/capabilities.py): a `== "local"` in a
use case goes stale the day a third backend arrives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from campaign.backends.capabilities import BACKENDS, capabilities, names_where
from campaign.plumbing.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _constants(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def name_comparisons(source: str) -> list[str]:
    """Each comparison, or SQL `in_(...)`, of something called *backend* with a backend's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "in_", "not_in", "notin_"):
            sides = [node.func.value, *node.args]
        else:
            continue
        named = any(_constants(side) & set(BACKENDS) for side in sides)
        asked = any("backend" in ast.unparse(side).lower() for side in sides if not _constants(side))
        if named and asked:
            found.append(ast.unparse(node))
    return found


def test_no_backend_name_is_compared_outside_backends() -> None:
    offenders = []
    for pkg in ("campaign", "analysis"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            if path.is_relative_to(REPO / "campaign" / "backends"):
                continue
            offenders += [f"{path.relative_to(REPO)}: {c}" for c in name_comparisons(path.read_text())]
    assert not offenders, "ask campaign.backends.capabilities instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize("planted", [
    'if cfg.cluster.backend == "local": pass',
    'x = backend != "slurm"',
    'ok = camp.backend in ("local", "slurm")',
    'q = select(A).where(JobAttempt.backend.in_(["local"]))',
    'q = select(A).where(JobAttempt.backend.not_in(["slurm"]))',
])
def test_the_scan_finds_a_planted_comparison(planted: str) -> None:
    assert len(name_comparisons(planted)) == 1


def test_the_scan_leaves_other_words_alone() -> None:
    assert name_comparisons('if where == "local": pass\nx = kind.local == True') == []


def test_an_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown backend 'pbs'; known: local, slurm"):
        capabilities("pbs")


def test_names_where_selects_by_fact() -> None:
    assert names_where(local=True) == ["local"]
    assert names_where(has_accounting=True) == ["slurm"]
    assert names_where() == sorted(BACKENDS)
