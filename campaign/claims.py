"""One process at a time submits or reruns a campaign (issue 11: the same
`submit` started twice ran every job twice).

A claim is a row in `campaign_claim`, taken in one short BEGIN IMMEDIATE
transaction (or under PostgreSQL's ledger lock) and deleted when the command
ends; no transaction stays open while the claim is held. A second process
waits and says so. A claim whose process is gone (campaign.owner: host + PID +
start time) is taken over, so a SIGKILLed submit never blocks the next one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import delete, select

from campaign import owner
from campaign.clock import now
from campaign.ledger import Campaign, CampaignClaim, Ledger

Notice = Callable[[str], None]
POLL_S = 0.25


def _try(ledger: Ledger, ids: Sequence[int], command: str) -> str | None:
    """Take every claim or none; returns who holds one when they are taken."""
    me = owner.me()
    with ledger.session.begin() as s:
        held = list(s.scalars(select(CampaignClaim).where(CampaignClaim.campaign_id.in_(ids))))
        for claim in held:
            if (claim.host, claim.pid, claim.start) == (me.host, me.pid, me.start):
                continue
            if owner.alive(claim.host, claim.pid, claim.start) is False:
                s.delete(claim)  # its process is gone: a crashed command's leftover
                continue
            name = s.scalar(select(Campaign.name).where(Campaign.id == claim.campaign_id))
            return (f"campaign {name}: waiting for `{claim.command}` (pid {claim.pid} on {claim.host}, "
                    f"since {claim.taken_at:%Y-%m-%d %H:%M:%S}) to finish")
        s.flush()
        mine = {c.campaign_id for c in held if c.pid == me.pid and c.host == me.host and c.start == me.start}
        for cid in ids:
            if cid not in mine:
                s.add(CampaignClaim(campaign_id=cid, host=me.host, pid=me.pid, start=me.start,
                                    command=command[:40], taken_at=now()))
    return None


def release(ledger: Ledger, ids: Sequence[int]) -> None:
    me = owner.me()
    with ledger.session.begin() as s:
        s.execute(delete(CampaignClaim).where(CampaignClaim.campaign_id.in_(ids), CampaignClaim.host == me.host,
                                              CampaignClaim.pid == me.pid, CampaignClaim.start == me.start))


def notice(text: str) -> None:
    """Waiting is said on stderr, once per holder, in the CLI's one-line style."""
    print(f"campaign: {text}", file=sys.stderr, flush=True)


@contextmanager
def claimed(ledger: Ledger, campaign_ids: Sequence[int], command: str,
            notice: Notice | None = None) -> Iterator[None]:
    """Hold the claims of these campaigns for the body; waits for other holders."""
    ids = sorted(set(campaign_ids))
    said = None
    while ids:
        holder = _try(ledger, ids, command)
        if holder is None:
            break
        if notice is not None and holder != said:
            notice(holder)
            said = holder
        time.sleep(POLL_S)
    try:
        yield
    finally:
        if ids:
            release(ledger, ids)
