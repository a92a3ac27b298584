"""`campaign compare BASE NEW`: two selections of the ledger(s), matched
point by point (analysis.compare), with the provenance that differs
(analysis.provenance_diff) and, on request, the NEW side's points outside
their configured references (analysis.references).

A selection is a campaign name, or `key=value` pairs joined by commas:
`campaign=NAME`, `cluster=C`, `since=DATE`, `until=DATE` (ISO dates or
times by the job's start; a naive one is local time, like the job times the
views print, and one with an offset is that instant; until is exclusive),
`commit=PREFIX` (jobs submitted from that git commit), `ledger=PATH`
(another ledger file; default: the command's ledger) and `axis.NAME=VALUE`
(only the rows whose grid argument NAME had VALUE, with NAME then left out of
the match: two builds swept as one axis of one campaign, whose replicates ran
interleaved round by round, compared as `campaign=C,axis.build=old` against
`campaign=C,axis.build=new`; BENCHMARKS.md §11 measured why that design has
the power that two campaigns run apart do not). A ledger
named by `ledger=` is only read: when its schema is older, a temporary copy
is upgraded, never the file itself (a committed benchmark ledger stays
byte-identical).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from campaign.config import load_config
from campaign.config.clusters import cluster_from_yaml
from campaign.ledger import Campaign, Ledger, Provenance
from campaign.ledger import queries as q
from campaign.ledger.db import check_ledger_file, file_schema_version, results_root
from campaign.ledger.migrate import sqlite_copy
from campaign.ledger.models import SCHEMA_VERSION
from campaign.plumbing.clock import as_utc
from campaign.plumbing.errors import BadInputError, ConfigError, LedgerError
from campaign.plumbing.lookalike import seen_as
from campaign.results import grid
from campaign.results.export import RowFilter, Superseded, latest_frame
from campaign.results.gpu_state import gpu_state_records
from campaign.results.store import IMPORT_BACKEND

SELECTION_KEYS = ("campaign", "cluster", "since", "until", "commit", "ledger", "axis.NAME")
AXIS = "axis."


@dataclass(frozen=True)
class Selection:
    """Which result rows one side of a comparison takes."""

    text: str
    campaign: str | None = None
    cluster: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    commit: str | None = None
    ledger: Path | None = None
    axes: tuple[tuple[str, str], ...] = ()  # (grid argument, value) pairs the rows must have


@dataclass
class CompareReport:
    """What `compare` found, for the CLI's table/json/md views."""

    base: Selection
    new: Selection
    comparison: Any  # analysis.compare.Comparison
    provenance: list[Any]  # analysis.provenance_diff.Difference
    references: Any | None = None  # DataFrame of analysis.references.check_references, when asked
    notes: list[str] = field(default_factory=list)
    # per side, the runs of an older identity left out (campaign.results.latest records)
    superseded: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _date(key: str, value: str, text: str) -> datetime:
    """An ISO date or time as aware UTC; a naive one is local time (campaign.plumbing.clock), as the
    job times `show` and `jobs` print."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise BadInputError(f"selection {text!r}: {key}={value!r} is not an ISO date (e.g. 2026-11-30)") from None
    try:
        return as_utc(when)  # type: ignore[return-value]
    except (ValueError, OverflowError, OSError):  # 0001-01-01 in a zone east of UTC: before year 1
        raise BadInputError(
            f"selection {text!r}: {key}={value!r} is outside the dates this machine can convert to UTC"
        ) from None


def parse_selection(text: str) -> Selection:
    """`NAME` or `key=value,...` (SELECTION_KEYS); see the module doc."""
    if "=" not in text:
        if not text.strip():
            raise BadInputError("empty selection: give a campaign name or campaign=NAME,cluster=C,...")
        return Selection(text, campaign=text.strip())
    values: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        axis = key.startswith(AXIS) and len(key) > len(AXIS)
        if not sep or (key not in SELECTION_KEYS and not axis) or not value:
            raise BadInputError(
                f"selection {text!r}: {part!r} is not key=value with key one of {', '.join(SELECTION_KEYS)}"
            )
        if key in values:  # the last one silently won: campaign=A,campaign=B compared B
            raise BadInputError(f"selection {text!r}: {key} is given twice; give each key once")
        values[key] = value
    if "campaign" not in values and "cluster" not in values:
        raise BadInputError(f"selection {text!r}: name a campaign or a cluster")
    return Selection(
        text,
        campaign=values.get("campaign"),
        cluster=values.get("cluster"),
        since=_date("since", values["since"], text) if "since" in values else None,
        until=_date("until", values["until"], text) if "until" in values else None,
        commit=values.get("commit"),
        ledger=Path(values["ledger"]) if "ledger" in values else None,
        axes=tuple((k[len(AXIS) :], v) for k, v in values.items() if k.startswith(AXIS)),
    )


def select_axes(frame: Any, sel: Selection) -> Any:
    """The rows of `frame` whose params have every (NAME, VALUE) of `sel.axes`, with those
    arguments taken out of `params` (so the other side's value matches); one clear line
    when none does."""
    if not sel.axes or frame.empty:
        return frame
    pairs = frame["params"].map(grid.pairs) if "params" in frame else None
    if pairs is None:
        raise BadInputError(f"selection {sel.text!r}: the results have no grid arguments (params)")
    names = {name for name, _ in sel.axes}
    keep = pairs.map(lambda ps: all((n, v) in ps for n, v in sel.axes)).to_numpy(bool)
    if not keep.any():
        seen = sorted({f"{k}={v}" for ps in pairs for k, v in ps if k in names})
        asked = {seen_as(f"{n}={v}") for n, v in sel.axes}
        alike = [ascii(s) for s in seen if seen_as(s) in asked]  # printed alike: say how they differ
        hint = f"; {', '.join(alike)} only looks the same (another Unicode form): give it as stored" if alike else ""
        raise BadInputError(
            f"selection {sel.text!r} has no results with "
            f"{', '.join(f'{n}={v}' for n, v in sel.axes)} (seen: {', '.join(seen) or 'none'}){hint}"
        )
    out = frame[keep].copy()
    out["params"] = [",".join(f"{k}={v}" for k, v in ps if k not in names) for ps in pairs[keep]]
    return out


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # (another filesystem)
        shutil.copy2(source, target)


def open_for_reading(path: Path, tmp: Path) -> Ledger:
    """A ledger file opened without changing it (see the module doc): read-only at this schema
    version; an older one is copied (SQLite's backup, from a read-only connection, so a WAL
    ledger's committed pages come too) and the copy upgraded."""
    check_ledger_file(path)
    version = file_schema_version(path)
    if version < SCHEMA_VERSION:
        copy = sqlite_copy(path, tmp / f"{len(list(tmp.iterdir()))}-ledger.sqlite")
        beside = results_root(path)
        if beside.is_dir():  # its result files travel with it (linked: they are immutable; the upgrade adds files)
            shutil.copytree(beside, results_root(copy), copy_function=_link_or_copy)
        return Ledger(copy, create=False)
    return Ledger(path, create=False, read_only=True)


def _side(led: Ledger, sel: Selection) -> tuple[Any, list[dict[str, Any]], list[Campaign], Superseded]:
    """Result rows (the latest identity of each configuration), provenance
    records, campaigns of one selection, and the runs left out."""
    import yaml  # lazy: only compare reads stored configs

    with led.session() as s:
        if sel.campaign is not None:
            camps = [q.require_campaign(s, sel.campaign)]
        else:
            camps = list(s.scalars(select(Campaign).where(Campaign.cluster == sel.cluster)))
        which = select(Provenance).where(Provenance.campaign_id.in_([c.id for c in camps]))
        if sel.commit is not None:
            which = which.where(Provenance.git_commit.startswith(sel.commit, autoescape=True))
        provs = list(s.scalars(which.order_by(Provenance.id)))
        where = RowFilter(since=sel.since, until=sel.until, commit=sel.commit)
        gpu_records = gpu_state_records(s, [c.id for c in camps], led.results_root, where)  # clocks the jobs ran at
    frame, left = latest_frame(
        led, campaign=sel.campaign, cluster=sel.cluster, usable_only=True, all_extras=False, where=where
    )
    if "params" in frame.columns and frame["params"].str.contains("metric=", regex=False).any():
        # figures of merit (docs/byob.md): compared on their value and direction, extra columns
        frame, left = latest_frame(
            led, campaign=sel.campaign, cluster=sel.cluster, usable_only=True, all_extras=True, where=where
        )
    frame = select_axes(frame, sel)
    if frame.empty:
        raise BadInputError(f"selection {sel.text!r} has no usable results")
    gpus = {str(g) for g in frame["gpu_model"].dropna().unique() if str(g)} if "gpu_model" in frame else set()
    records = []
    for p in provs:
        try:
            config = yaml.safe_load(p.config_yaml) if p.config_yaml else {}
        except yaml.YAMLError:
            config = {}
        records.append(
            {
                "git_commit": p.git_commit,
                "git_dirty": p.git_dirty,
                "hostname": p.hostname,
                "packages": p.packages,
                "environment": p.environment or {},
                "config": config if isinstance(config, dict) else {},
                "gpu_model": sorted(gpus) or None,
            }
        )
    return frame, records + gpu_records, camps, left


def references_frame(camps: list[Campaign]) -> Any:
    """References of the campaigns' partitions, from the cluster as submitted,
    else the shipped config of that cluster's name, as the DataFrame that
    analysis.references.check_references takes (the report can use it too)."""
    import pandas as pd  # lazy: pandas

    rows = []
    for camp in camps:
        spec = None if camp.backend == IMPORT_BACKEND else cluster_from_yaml(camp.cluster_yaml)
        if spec is None or not any(p.references for p in spec.partitions.values()):
            try:
                spec = load_config([f"cluster={camp.cluster}"]).cluster
            except ConfigError:
                continue
        for pname, part in spec.partitions.items():
            for ref in part.references:
                rows.append(
                    {
                        "cluster": spec.name,
                        "partition": pname,
                        "kernel": ref.kernel,
                        "impl": ref.impl,
                        "variant": ref.variant,
                        "threads": ref.threads,
                        "n": ref.n,
                        "dtype": ref.dtype,
                        "params": ref.params,
                        "time_s": ref.time_s,
                        "flops_per_s": ref.flops_per_s,
                        "tolerance": ref.tolerance,
                    }
                )
    return pd.DataFrame(rows)


def compare(
    led_for: Any,
    base: str,
    new: str,
    *,
    by: str | None = None,
    threshold: float = 0.05,
    reference: bool = False,
    min_replicates: int = 1,
) -> CompareReport:
    """Compare two selections. `led_for()` opens the command's own ledger
    (called only when a selection has no `ledger=`)."""
    from analysis.compare import compare as compare_frames  # lazy: pandas, scipy
    from analysis.provenance_diff import provenance_diff
    from analysis.references import check_references

    sb, sn = parse_selection(base), parse_selection(new)
    with tempfile.TemporaryDirectory(prefix="campaign-compare-") as tmp:
        opened: dict[Path | None, Ledger] = {}

        def ledger(sel: Selection) -> Ledger:
            if sel.ledger not in opened:
                opened[sel.ledger] = led_for() if sel.ledger is None else open_for_reading(sel.ledger, Path(tmp))
            return opened[sel.ledger]

        try:
            fb, pb, _, left_base = _side(ledger(sb), sb)
            fn, pn, camps_new, left_new = _side(ledger(sn), sn)
        except LedgerError as exc:
            raise BadInputError(str(exc)) from None
        finally:
            for led in opened.values():
                led.close()
    try:
        result = compare_frames(fb, fn, by=by, threshold=threshold, min_replicates=min_replicates)
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    report = CompareReport(
        sb, sn, result, provenance_diff(pb, pn), superseded={"base": left_base.records, "new": left_new.records}
    )
    report.notes += [f"BASE {line}" for line in left_base.lines()] + [f"NEW {line}" for line in left_new.lines()]
    if reference:
        refs = references_frame(camps_new)
        if refs.empty:
            report.notes.append(f"no references configured for the partitions of {sn.text!r}")
        else:
            try:
                report.references = check_references(fn, refs)
            except ValueError as exc:
                raise BadInputError(str(exc)) from None
    return report
