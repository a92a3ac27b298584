"""Whether a tool-driven program has a problem size at all: the one rule the
ingest (its rows get no n) and `show` (its n is "none", not the 1 it ran at)
both apply. Standard library only: `show --no-sync` reads it without the ORM."""

from __future__ import annotations

import json
from collections.abc import Sequence

from campaign.job.template import placeholders

DRIVER = "campaign.job.fom"  # the module the planner puts in a tool-driven program's place (python -m ...)
NO_SIZE = (1,)  # the one point of the size axis a program without a problem size runs at


def unsized(driver_spec: str | None) -> bool:
    """The tool driver's spec (campaign.planning.byob.tool_argv) runs a program that reads no {n}
    (its argv, environment, figure sources, script or input files): it has no problem size, and
    the n=1 it ran at (NO_SIZE, the size axis' one point) is no size."""
    try:
        spec = json.loads(driver_spec or "")
    except ValueError:
        return False
    if not isinstance(spec, dict):
        return False
    texts = [*spec.get("argv", []), *dict(spec.get("env") or {}).values(), spec.get("script") or "",
             *dict(spec.get("inputs") or {}).values(), *(f.get("source", "") for f in spec.get("figures", []))]
    return not any("n" in placeholders(str(t)) for t in texts)


def run_unsized(argv: Sequence[str], sizes: Sequence[int]) -> bool:
    """A planned run (its argv and sizes) of a program without a problem size."""
    return tuple(sizes) == NO_SIZE and len(argv) > 3 and argv[2] == DRIVER and unsized(argv[3])
