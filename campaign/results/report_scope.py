"""Which campaigns a report covers, and the header that says so.

Pooling campaigns silently mixed repeats and moved medians (0.101 s
became 0.0835 s at n=2048 when another campaign's runs were added). So a
report covers ONE campaign by default, the latest; `--campaign` names one or
several; `--all` pools every campaign on purpose, and the header says which
it covered, from which ledger, over which dates, with which provenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select

from campaign.ledger import Campaign, JobAttempt, Ledger, Provenance, ResultFile, Run
from campaign.ledger import queries as q
from campaign.plumbing.clock import display
from campaign.plumbing.errors import BadInputError


@dataclass
class Scope:
    campaigns: list[str] | None  # None: every campaign and imported rows, pooled on purpose
    how: str  # "latest", "chosen" or "all"
    covers: str = ""  # what it covers, in words (the header's first line: `Covers: ...`)
    lines: list[str] = field(default_factory=list)  # the header lines
    # runs of an older identity left out (campaign.results.latest records)
    superseded: list[dict[str, object]] = field(default_factory=list)
    superseded_runs: list[int] = field(default_factory=list)  # their run ids (the builds table leaves them out)


def resolve(led: Ledger, campaigns: Sequence[str] = (), all_campaigns: bool = False) -> Scope:
    if campaigns and all_campaigns:
        raise BadInputError("give --campaign or --all, not both")
    with led.session() as s:
        names = list(s.scalars(select(Campaign.name).order_by(Campaign.created_at, Campaign.id)))
        if all_campaigns:
            scope = Scope(None, "all")
        elif campaigns:
            for name in campaigns:
                q.require_campaign(s, name)
            scope = Scope(list(dict.fromkeys(campaigns)), "chosen")
        elif names:
            scope = Scope([names[-1]], "latest")
        else:  # imported results only
            scope = Scope(None, "all")
        scope.lines = _header(s, led, scope, names)
    return scope


def _header(s: object, led: Ledger, scope: Scope, names: list[str]) -> list[str]:
    from sqlalchemy.orm import Session

    assert isinstance(s, Session)
    covered = scope.campaigns if scope.campaigns is not None else names
    if scope.how == "latest":
        others = len(names) - 1
        what = f"campaign {covered[0]} (the latest; {others} other campaign(s) in the ledger: --campaign NAME or --all)"
    elif scope.how == "chosen":
        what = "campaign(s) " + ", ".join(covered)
    else:
        what = f"ALL campaigns pooled on purpose (--all): {', '.join(names) or 'none'}, plus imported rows"
    scope.covers = what
    lines = [f"Covers: {what}", f"Ledger: {led.path}"]
    ids = [c.id for c in s.scalars(select(Campaign).where(Campaign.name.in_(covered)))]
    if ids:
        first, last = s.execute(select(func.min(JobAttempt.submitted_at), func.max(JobAttempt.ended_at))
                                .join(Run, Run.id == JobAttempt.run_id).where(Run.campaign_id.in_(ids))).one()
        lines.append(f"Dates: {display(first) or '?'} to {display(last) or '?'}")
        said: dict[str, int] = {}  # one line per distinct provenance: each submit records one, often the same
        for prov in s.scalars(select(Provenance).where(Provenance.campaign_id.in_(ids)).order_by(Provenance.id)):
            pk = prov.packages or {}
            versions = ", ".join(f"{k} {v}" for k, v in pk.items() if v and k in ("python", "campaign", "torch"))
            commit = (prov.git_commit or "?")[:12] + (" (dirty)" if prov.git_dirty else "")
            text = f"Provenance: commit {commit}; {versions}; {prov.command}"
            said[text] = said.get(text, 0) + 1
        lines += [text + (f" ({k} submissions)" if k > 1 else "") for text, k in said.items()]
    return lines


def with_results(led: Ledger) -> list[str]:
    """The campaigns that hold result rows (their jobs' or imported into them),
    oldest first: one indexed look-up per campaign, never a scan of the rows."""
    stored = select(ResultFile.id).where(ResultFile.campaign_id == Campaign.id).exists()
    with led.session() as s:
        return list(s.scalars(select(Campaign.name).where(stored)
                              .order_by(Campaign.created_at, Campaign.id)))


def no_results(led: Ledger, campaigns: Sequence[str] | None) -> BadInputError:
    """The error of a report with nothing to show: which campaign
    was empty, and how to choose one that is not (--campaign, --all)."""
    if not campaigns:
        return BadInputError("no usable results in the ledger: run `campaign status` after jobs complete, "
                             "or `campaign import FILE.csv`")
    having = [name for name in with_results(led) if name not in campaigns]
    empty = f"no usable results for campaign {', '.join(campaigns)}"
    if not having:
        return BadInputError(f"{empty}, nor in any other campaign: run `campaign status` after its jobs complete, "
                             f"or `campaign import FILE.csv`")
    return BadInputError(f"{empty}; campaigns with results: {', '.join(having)}: choose with "
                         f"--campaign NAME (repeatable) or pool them all with --all")
