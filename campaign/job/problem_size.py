"""Whether a tool-driven program has a problem size at all: the one rule the
ingest (its rows get no n), `show` (its n is "none", not the 1 it ran at), the
driver (its reasons name no n) and the submit (campaign.planning.byob.sizes_of:
an n sweep for it is refused, a sweep without n for a program that reads {n}
too) all apply. Standard library only: `show --no-sync` reads it without the ORM.
campaign.job.element_type is the same kind of rule for `{dtype}`; both read
the program's templates through `reads`."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from campaign.job.template import placeholders

DRIVER = "campaign.job.fom"  # the module the planner puts in a tool-driven program's place (python -m ...)
NO_SIZE = (1,)  # the one point of the size axis a program without a problem size runs at


@functools.lru_cache(maxsize=1024)
def template_names(driver_spec: str | None) -> frozenset[str] | None:
    """The placeholders the tool driver's spec (campaign.planning.byob.tool_argv) reads anywhere
    (`reads`). None: not a driver's spec. Cached: a listing or an ingest asks once per run, and a
    campaign's runs share a few specs."""
    try:
        spec = json.loads(driver_spec or "")
    except ValueError:
        return None
    return reads(spec) if isinstance(spec, dict) else None


def reads(spec: Mapping[str, Any]) -> frozenset[str]:
    """The placeholders a driver's spec (campaign.planning.byob.driver_spec) reads: its argv,
    environment, figure sources, script and input files; plus `element_bytes` where it maps dtypes
    to sizes (its cost model reads the dtype). A cost expression is no template: `flops: 2*n` is
    what the program costs at n, not something it reads. The submit's rule (byob.sizes_of: an n
    sweep for a program without {n} is refused, one that reads {n} needs one) reads this too."""
    texts = [*spec.get("argv", []), *dict(spec.get("env") or {}).values(), spec.get("script") or "",
             *dict(spec.get("inputs") or {}).values(), *(f.get("source", "") for f in spec.get("figures", []))]
    names = {name for t in texts for name in placeholders(str(t))}
    return frozenset(names | ({"element_bytes"} if spec.get("element_bytes") else set()))


def unsized(driver_spec: str | None) -> bool:
    """The tool driver's spec runs a program that reads no {n}: it has no problem size, and
    the n=1 it ran at (NO_SIZE, the size axis' one point) is no size."""
    names = template_names(driver_spec)
    return names is not None and "n" not in names


def run_unsized(argv: Sequence[str], sizes: Sequence[int]) -> bool:
    """A planned run (its argv and sizes) of a program without a problem size."""
    return tuple(sizes) == NO_SIZE and len(argv) > 3 and argv[2] == DRIVER and unsized(argv[3])
