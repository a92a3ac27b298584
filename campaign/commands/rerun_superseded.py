"""`rerun --failed` (and `--state`) leaves out the runs a later submit superseded.

A configuration whose program was rebuilt, or whose declaration was edited
(a script, a pattern, an argument of a tool-driven benchmark), and submitted
again has new runs; the report, `compare` and `advise` read those alone
(campaign.results.latest). The old runs' failures are then history: rerun,
they would measure what no view reads, and where their old declaration is
what failed (a pattern that matched nothing) its preflight fails the
partition's chain and holds back the rerun of the new runs with it. So a
rerun by state takes the runs of each configuration's latest identity and
command only, by the rule the report reads them with (every run with an
attempt, the one a submit named last is the latest), and counts the others;
`rerun --job` still reruns the one job named.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from campaign.ledger import JobAttempt
from campaign.results.latest import find

HOW = "the report reads their configuration's later runs; `rerun --job JOB_ID` reruns one of them"


def without_superseded(s: Session, atts: list[JobAttempt]) -> tuple[list[JobAttempt], str | None]:
    """The attempts whose run is its configuration's latest, and what was left out (None: nothing)."""
    if not atts:
        return atts, None
    gone = set(find(s, sorted({a.run.campaign.name for a in atts}), False, None).runs)
    kept = [a for a in atts if a.run_id not in gone]
    left = len(atts) - len(kept)
    return kept, (
        f"{left} run(s) superseded by a later submit of their configuration (another program or declaration): {HOW}"
        if left
        else None
    )
