"""Result rows into the ledger: rows of an imported file, and the rows of a
finished job's CSV (read by campaign.results.reader, stored here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from campaign.clock import now
from campaign.config.clusters import cluster_yaml
from campaign.config.schema import ClusterSpec
from campaign.errors import BadInputError
from campaign.ledger import Campaign, Ledger, ResultRow
from campaign.results.export import EXPORT_COLUMNS

IMPORT_BACKEND = "import"  # Campaign.backend of a campaign made by `import --campaign`


def store_import(led: Ledger, path: Path, rows: list[dict[str, Any]], campaign: str | None = None) -> int:
    """One transaction: all rows or none. With `campaign`, the rows belong to
    that named campaign (created, backend "import", if new); importing the
    same file into it again replaces its rows from that file."""
    source = f"import:{path.resolve()}"
    records = [{"attempt_id": None, "source": source, **{k: r.get(k) for k in EXPORT_COLUMNS}, "extra": r.get("extra")}
               for r in rows]
    with led.session.begin() as s:
        if campaign is not None:
            camp = _import_campaign(s, campaign, sorted({str(r["cluster"]) for r in rows}))
            s.execute(delete(ResultRow).where(ResultRow.campaign_id == camp.id, ResultRow.source == source))
            for rec in records:
                rec["campaign_id"] = camp.id
        s.execute(insert(ResultRow), records)
    return len(records)


def _import_campaign(s: Session, name: str, clusters: list[str]) -> Campaign:
    """The named campaign that imported rows go to; a submitted campaign of
    that name is refused (its rows come from its jobs)."""
    camp = s.scalar(select(Campaign).where(Campaign.name == name))
    if camp is not None:
        if camp.backend != IMPORT_BACKEND:
            raise BadInputError(f"campaign {name!r} holds submitted jobs ({camp.backend} backend); "
                                f"import into a new name with --campaign")
        return camp
    camp = Campaign(name=name, cluster=",".join(clusters)[:100], experiment=IMPORT_BACKEND,
                    backend=IMPORT_BACKEND, cluster_yaml=cluster_yaml(ClusterSpec(name=clusters[0])),
                    python="", created_at=now(), workdir="")
    s.add(camp)
    s.flush()
    return camp


def params_text(extra_args: tuple[tuple[str, str], ...], row: dict[str, Any]) -> str:
    """A configuration's extra arguments, as this row ran them: an argument
    given as a list (one process sweeping it, e.g. `--a 20,32,40`) takes the
    row's own value from its column of that name."""
    parts = []
    for key, value in extra_args:
        column = key.replace("-", "_")
        own = row.get(key, row.get(column))
        parts.append(f"{key}={own if own not in (None, '') else value}")
    return ",".join(parts)


def job_rows(attempt_id: int, job_id: str, cluster: str, partition: str,
             extra_args: tuple[tuple[str, str], ...], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ledger rows for the parsed CSV rows of one attempt (cluster and
    partition come from the run, never from the file)."""
    out = []
    for r in rows:
        extra = dict(r.get("extra") or {})
        params = params_text(extra_args, extra)
        if params:
            extra["params"] = params
        out.append({
            "attempt_id": attempt_id, "source": "job", "cluster": cluster,
            "partition": partition, "kernel": r["kernel"], "impl": r["impl"],
            "variant": r["variant"], "device": r["device"], "dtype": r.get("dtype"),
            "threads": r["threads"], "n": r["n"], "d": r.get("d"), "repeat": r["repeat"],
            "time_s": r["time_s"], "job_id": job_id, "gpu_model": r.get("gpu_model"),
            "flops": r.get("flops"), "bytes": r.get("bytes"), "rel_err": r.get("rel_err"),
            "extra": extra or None,
        })
    return out
