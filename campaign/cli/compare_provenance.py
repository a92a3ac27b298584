"""The provenance two compared campaigns differ in, as `compare` prints it:
per category the first keys with both values, the rest counted by where
they live (two clusters differ in hundreds of config keys: the one that
matters must not drown), and how to see them all."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.provenance_diff import Difference

PROVENANCE_PER_CATEGORY = 4  # differing keys listed per category; the rest counted by prefix
MAX_VALUE = 80  # characters of one provenance value (a whole composed config does not fit a line)


def _value(values: Sequence[str]) -> str:
    text = " | ".join(values)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def _prefix(key: str) -> str:
    """Where a key lives, for counting: `config.cluster.partitions.cpu`, `environment.node`."""
    parts = key.split(".")
    return ".".join(parts[:4] if parts[:3] == ["config", "cluster", "partitions"] else parts[:2])


def _where(diffs: Sequence[Difference]) -> str:
    """Keys counted by where they live, the most first: `config.cluster.partitions.cpu.* (40), ...`."""
    where: dict[str, int] = {}
    for d in diffs:
        where[_prefix(d.key)] = where.get(_prefix(d.key), 0) + 1
    top = sorted(where.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k}.* ({n})" for k, n in top[:3]) + (", ..." if len(top) > 3 else "")


def provenance_lines(diffs: Sequence[Difference]) -> list[str]:
    """The differing provenance, summarised: per category the first keys with
    their values, the rest counted by where they live, keys recorded on one
    side only counted; and, when anything was left out, how to see it all
    (two clusters differ in 100s of config keys: the one that matters must
    not drown)."""
    by_cat: dict[str, list[Difference]] = {}
    for d in diffs:
        by_cat.setdefault(d.category, []).append(d)
    lines: list[str] = []
    capped = False
    for cat, found in by_cat.items():
        both = [d for d in found if not d.one_sided]
        for d in both[:PROVENANCE_PER_CATEGORY]:
            lines.append(f"{cat}: {d.key}: {_value(d.base)} -> {_value(d.new)}")
        rest = both[PROVENANCE_PER_CATEGORY:]
        if rest:
            lines.append(f"{cat}: and {len(rest)} more key(s) differ: {_where(rest)}")
            capped = True
        one = [d for d in found if d.one_sided]
        if one:
            names = ", ".join(d.key for d in one) if len(one) <= 2 else _where(one)
            lines.append(f"{cat}: {len(one)} key(s) recorded on one side only: {names}")
            capped = capped or len(one) > 2
        capped = capped or any(len(" | ".join(side)) > MAX_VALUE for d in both[:PROVENANCE_PER_CATEGORY]
                               for side in (d.base, d.new))
    if capped:
        lines.append(f"({len(diffs)} differing key(s) in all; `--format json` lists every one under \"provenance\")")
    return lines
