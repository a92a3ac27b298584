"""One process at a time submits or reruns a campaign (the same
`submit` started twice ran every job twice).

A claim is a row in `campaign_claim`, taken in one short BEGIN IMMEDIATE
transaction (or under PostgreSQL's ledger lock) and deleted when the command
ends; no transaction stays open while the claim is held. A second process
waits and says so. A claim whose process is gone (campaign.plumbing.owner: host + PID +
start time) is taken over, so a SIGKILLed submit never blocks the next one.

A holder on another host (two login nodes, one ledger on the shared file
system) cannot be probed by PID from here, so the holder beats: a thread
refreshes `beat_at` every BEAT_S while the claim is held. A claim from
another host that has not beaten for STALE_S (many beats missed, far above
clock skew between nodes) is judged gone and taken over, and that is said.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy import delete, select, update

from campaign.ledger import Campaign, CampaignClaim, Ledger
from campaign.plumbing import owner
from campaign.plumbing.clock import display, now

Notice = Callable[[str], None]
POLL_S = 0.25
BEAT_S = 20.0  # how often a holder refreshes its claim
STALE_S = 300.0  # a claim from another host this long without a beat is a gone process's


def _gone(claim: CampaignClaim) -> bool:
    """Its holder is gone for certain (this host: by PID and start time), or it
    ran on another host and stopped beating STALE_S ago."""
    found = owner.alive(claim.host, claim.pid, claim.start)
    if found is not None:
        return not found
    last = claim.beat_at or claim.taken_at
    return now() - last > timedelta(seconds=STALE_S)


def _try(ledger: Ledger, ids: Sequence[int], command: str, notice: Notice | None = None) -> str | None:
    """Take every claim or none; returns who holds one when they are taken."""
    me = owner.me()
    with ledger.session.begin() as s:
        held = list(s.scalars(select(CampaignClaim).where(CampaignClaim.campaign_id.in_(ids))))
        for claim in held:
            if (claim.host, claim.pid, claim.start) == (me.host, me.pid, me.start):
                continue
            name = s.scalar(select(Campaign.name).where(Campaign.id == claim.campaign_id))
            if _gone(claim):
                if claim.host != me.host and notice is not None:
                    notice(f"campaign {name}: taking over the claim of `{claim.command}` (pid {claim.pid} on "
                           f"{claim.host}): no heartbeat since {display(claim.beat_at or claim.taken_at)}")
                s.delete(claim)  # its process is gone: a crashed command's leftover
                continue
            return (f"campaign {name}: waiting for `{claim.command}` (pid {claim.pid} on {claim.host}, "
                    f"since {display(claim.taken_at)}) to finish")
        s.flush()
        mine = {c.campaign_id for c in held if c.pid == me.pid and c.host == me.host and c.start == me.start}
        stamp = now()
        for cid in ids:
            if cid not in mine:
                s.add(CampaignClaim(campaign_id=cid, host=me.host, pid=me.pid, start=me.start,
                                    command=command[:40], taken_at=stamp, beat_at=stamp))
    return None


def _beat(ledger: Ledger, ids: Sequence[int], stop: threading.Event) -> None:
    """Refresh this process's claims until told to stop. A beat that fails (the
    ledger busy for longer than its timeout) is simply tried again next time:
    one missed beat is far from STALE_S."""
    me = owner.me()
    while not stop.wait(BEAT_S):
        try:
            with ledger.session.begin() as s:
                s.execute(update(CampaignClaim).where(
                    CampaignClaim.campaign_id.in_(ids), CampaignClaim.host == me.host, CampaignClaim.pid == me.pid,
                    CampaignClaim.start == me.start).values(beat_at=now()))
        except Exception:  # noqa: BLE001 - a heartbeat must never kill the command it serves
            continue


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
        holder = _try(ledger, ids, command, notice)
        if holder is None:
            break
        if notice is not None and holder != said:
            notice(holder)
            said = holder
        time.sleep(POLL_S)
    stop = threading.Event()
    beater = threading.Thread(target=_beat, args=(ledger, ids, stop), name="campaign-claim-beat", daemon=True)
    if ids:
        beater.start()
    try:
        yield
    finally:
        stop.set()
        if beater.is_alive():
            beater.join()
        if ids:
            release(ledger, ids)
