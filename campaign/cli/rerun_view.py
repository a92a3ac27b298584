"""What `campaign rerun` prints: each resubmitted run with what changed, and
why runs that look failed were not taken."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def rerun_lines(rep: Any) -> list[str]:
    """`rep`: a campaign.commands.rerun.RerunReport (Any: the CLI layer imports it lazily)."""
    changes = rep.changed or [""] * len(rep.submitted)
    out = [
        f"rerun: {old} -> {new}" + (f" ({changed})" if changed else "")
        for (new, old), changed in zip(rep.submitted, changes, strict=False)
    ]
    out.append(f"{len(rep.submitted)} run(s) resubmitted")
    if rep.not_taken:
        counts = ", ".join(f"{n} {state}" for state, n in rep.not_taken.items())
        flags = " ".join(f"--state {state}" for state in rep.not_taken)
        out.append(f"not rerun: {counts} (to rerun them too: {flags})")
    if rep.changed_program:
        out.append(f"not rerun: {rep.changed_program}")
    if rep.superseded:
        out.append(f"not rerun: {rep.superseded}")
    return out


def print_rerun(rep: Any, say: Callable[[str], None] = print) -> None:
    for line in rerun_lines(rep):
        say(line)
