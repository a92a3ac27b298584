"""What changed underneath two campaigns: only the provenance that differs.

A regression after a compiler-module upgrade (the validation paper lost runs
to a Delta nvhpc upgrade) is explained by the one line that says
`nvhpc/24.1 -> nvhpc/24.5`, not by two full provenance dumps. Each side is a
list of provenance records (one per `submit`/`rerun`) as nested dicts, e.g.
`{"git_commit": ..., "git_dirty": ..., "packages": {"torch": ...},
"environment": {"compilers": {...}, "binaries": {...}, "node": {...}},
"config": <the composed cluster + experiment config>}`. They are flattened to
dotted keys; a key whose set of values differs between the sides is a
difference, filed under the first category whose pattern matches it. Keys
recorded on one side only (an older ledger that did not record them) are kept
apart, so "not recorded" is never mistaken for "changed".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

# (category, key patterns), first match wins; order = display order.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("code", ("git_commit", "git_dirty")),
    ("modules", ("config.cluster.modules", "config.cluster.module_reset",
                 "config.cluster.partitions.*.modules", "environment.modules*")),
    ("compilers", ("environment.compilers.*",)),
    ("build flags", ("config.cluster.build.*", "environment.build.*")),
    ("binaries", ("environment.binaries.*", "environment.programs.*")),  # the user's programs: campaign/planning/programs.py
    ("libraries", ("packages.*", "environment.libraries.*")),
    ("node", ("hostname", "environment.node.*", "gpu_model", "config.cluster.partitions.*.gpu_model")),
    ("driver", ("environment.driver*", "environment.node.driver*")),
    # what the jobs' GPUs ran at (campaign.results.gpu_state, from the rows' gpu_* columns)
    ("gpu clocks", ("gpu.*",)),
    # the container image (digest), its runtime's version, the Spack environment (spack.lock hash)
    ("run environment", ("environment.run_env.*", "config.experiment.container.*", "config.experiment.spack.*",
                         "config.cluster.partitions.*.container.*", "config.cluster.partitions.*.spack.*")),
    ("job environment", ("config.cluster.env.*", "config.cluster.partitions.*.env.*",
                         "config.cluster.omp_*", "config.cluster.stack_unlimited")),
    ("config", ("config.*",)),
    ("other", ("*",)),
)
# Facts that differ on every submit or restate another key: a kernel's argv
# holds the checkout's path (the program itself is `environment.binaries.*`,
# its hash); a partition's `name` is filled from its key.
IGNORED: tuple[str, ...] = ("id", "campaign_id", "created_at", "command", "config_hash", "config_yaml",
                            "config.campaign.*", "config.cluster.description", "config.kernels.*.argv",
                            "config.cluster.partitions.*.name")


@dataclass(frozen=True)
class Difference:
    """One provenance key whose values differ. `base`/`new` list the values
    seen on that side (several when the side's records disagree)."""

    category: str
    key: str
    base: tuple[str, ...]
    new: tuple[str, ...]

    @property
    def one_sided(self) -> bool:
        return not self.base or not self.new


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested dicts -> {dotted key: text}; lists stay one value (order matters
    for `module load` lines)."""
    out: dict[str, str] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if value:
                out.update(flatten(value, name + "."))
            continue
        out[name] = _text(value)
    return out


def category(key: str) -> str:
    """The first category whose pattern matches `key`."""
    for name, patterns in CATEGORIES:
        if any(fnmatchcase(key, p) for p in patterns):
            return name
    return "other"


def _values(records: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for rec in records:
        for key, text in flatten(rec).items():
            if any(fnmatchcase(key, p) for p in IGNORED):
                continue
            seen.setdefault(key, set()).add(text)
    return seen


def provenance_diff(base: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> list[Difference]:
    """Every key whose values differ, sorted by category (CATEGORIES order)
    then key; keys recorded on one side only come last within their category."""
    vb, vn = _values(base), _values(new)
    order = {name: i for i, (name, _) in enumerate(CATEGORIES)}
    diffs = []
    for key in sorted(set(vb) | set(vn)):
        b, n = vb.get(key, set()), vn.get(key, set())
        if b == n:
            continue
        diffs.append(Difference(category(key), key, tuple(sorted(b)), tuple(sorted(n))))
    return sorted(diffs, key=lambda d: (order[d.category], d.one_sided, d.key))
