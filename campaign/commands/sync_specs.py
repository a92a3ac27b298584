"""What a sync needs of each finished attempt's run to judge its output
(campaign.results.expected.Expected): a few fields of the run's stored spec,
read by the database out of the JSON, so a sync of 10,000 finished jobs
decodes one short array per run instead of each whole spec (its identity
alone can be kilobytes), and runs whose fields are the same (replicates)
share one decoded Expected."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, type_coerce
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from campaign.ledger import JobAttempt, Run
from campaign.results.expected import Expected

CHUNK = 10_000  # ids per IN (...) list


def _fields(s: Session) -> Any:
    """One column holding the fields Expected.of_spec reads (Expected.SPEC_FIELDS) of each run's spec as a
    JSON array (a missing field is null)."""
    if s.get_bind().dialect.name == "postgresql":
        return type_coerce(func.json_build_array(*(Run.spec[k] for k in Expected.SPEC_FIELDS)), NullType())
    return type_coerce(func.json_extract(Run.spec, *(f"$.{k}" for k in Expected.SPEC_FIELDS)), NullType())


def expected_for(s: Session, attempts: Sequence[tuple[int, int]]) -> dict[int, Expected]:
    """Each (attempt id, run id)'s Expected: its run's coordinates and n-sweep,
    or the part of the n an attempt runs alone (a rerun of what was missing)."""
    ids = sorted({run_id for _, run_id in attempts})
    fields = _fields(s)
    specs: dict[int, Any] = {}
    for i in range(0, len(ids), CHUNK):
        specs.update((run_id, raw) for run_id, raw in s.execute(select(Run.id, fields).where(Run.id.in_(ids[i:i + CHUNK]))))
    only: dict[int, tuple[int, ...]] = {}
    aids = [aid for aid, _ in attempts]
    for i in range(0, len(aids), CHUNK):
        stmt = select(JobAttempt.id, JobAttempt.n).where(JobAttempt.id.in_(aids[i:i + CHUNK]), JobAttempt.n.is_not(None))
        only.update({aid: tuple(n) for aid, n in s.execute(stmt) if n})
    decoded: dict[tuple[str, tuple[int, ...] | None], Expected] = {}
    out = {}
    for aid, run_id in attempts:
        raw, n = specs[run_id], only.get(aid)
        text = raw if isinstance(raw, str) else json.dumps(raw)  # (a driver may hand the array back decoded)
        want = decoded.get((text, n))
        if want is None:
            spec = dict(zip(Expected.SPEC_FIELDS, json.loads(text), strict=True))
            want = decoded[text, n] = Expected.of_spec(spec, tuple(n or spec["n"]))
        out[aid] = want
    return out
