"""The GPU clocks and throttle reasons a selection's jobs ran at, as
provenance records for `campaign compare`.

The torch kernel programs write them into every CUDA row (kernels/torch/
gpu_state.py: `gpu_sm_mhz`, `gpu_mem_mhz`, `gpu_throttle`, sampled per n by
the process that timed it); the ledger keeps them in the row's JSON `extra`.
They are read here as the distinct (SM clock, memory clock, reasons) of each
job of the selection, one record per distinct combination, shaped like the
other provenance records (`{"gpu": {...}}`), so that
analysis.provenance_diff files a change under "gpu clocks": a NEW side that
ran power-capped at 1410 MHz shows as `gpu.sm_clock_mhz: 1980 -> 1410` and
`gpu.throttle_reasons: none -> sw_power_cap` beside its slower points.

Rows without them (CPU jobs, imports, programs older than this, a node
without NVML or nvidia-smi) add nothing: the diff then says "recorded on one
side only" rather than inventing a change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.ledger import Campaign
from campaign.results import scan
from campaign.results.query import RowFilter

# extra column of the kernel CSV -> key under "gpu" in the provenance record
KEYS: tuple[tuple[str, str], ...] = (
    ("gpu_sm_mhz", "sm_clock_mhz"), ("gpu_mem_mhz", "mem_clock_mhz"), ("gpu_throttle", "throttle_reasons"),
)


def gpu_state_records(s: Session, campaign_ids: Sequence[int], root: Path | None,
                      where: RowFilter | None = None) -> list[dict[str, Any]]:
    """One `{"gpu": {...}}` record per distinct combination of the selection's
    jobs' GPU state (none when no row recorded any), from the result files
    (campaign.results.scan; `root` = Ledger.results_root, where a campaign
    whose folder is not here keeps them)."""
    if not campaign_ids:
        return []
    ids = list(campaign_ids)
    names = list(s.scalars(select(Campaign.name).where(Campaign.id.in_(ids))))
    rows = scan.frame(s, names, None, False, True, where, root)  # (a date or commit leaves imported rows out)
    extras = [json.loads(x) if isinstance(x, str) else x for x in rows["_extra"].drop_duplicates()]
    seen: set[tuple[str, ...]] = set()
    for extra in extras:
        if isinstance(extra, dict):
            seen.add(tuple("" if extra.get(c) is None else str(extra.get(c)) for c, _ in KEYS))
    records = []
    for values in seen:
        state = {key: value for (_, key), value in zip(KEYS, values) if value}
        if state:
            records.append({"gpu": state})
    return sorted(records, key=lambda r: sorted(r["gpu"].items()))
