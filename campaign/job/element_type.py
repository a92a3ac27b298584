"""Whether a tool-driven program has an element type at all: a program whose
templates read no `{dtype}` (and whose cost model maps no dtype to a size)
runs the same whatever the plan's dtype, so the plan's default (fp32) names
nothing it does. The one rule every view applies: `show`, `jobs`, the run's
label, and the ingest, which stores its rows with no dtype. Standard library
only: `jobs --no-sync` and `show --no-sync` read it without the ORM.

Why only shown, not planned: the run's spec keeps its dtype, since the dtype
is part of the run's key, and a spec without it would give every run of an
existing tool-driven campaign a new key (its resubmit would plan them again).
"""

from __future__ import annotations

from collections.abc import Sequence

from campaign.job.problem_size import DRIVER, template_names


def untyped(driver_spec: str | None) -> bool:
    """The tool driver's spec (campaign.planning.byob.tool_argv) runs a program that reads no {dtype}."""
    names = template_names(driver_spec)
    return names is not None and "dtype" not in names and "element_bytes" not in names


def run_untyped(argv: Sequence[str]) -> bool:
    """A planned run (its argv) of a program without an element type."""
    return len(argv) > 3 and argv[2] == DRIVER and untyped(argv[3])


def shown_dtype(dtype: str, argv: Sequence[str]) -> str | None:
    """A run's dtype as every view shows it: None for a program without an element type."""
    return None if run_untyped(argv) else dtype
