"""Ledger -> advice: the co-design rules for a model's shapes and the thread
counts per n range of one kernel on one partition, each ranked by what the
ledger measured (the `advise` command)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from campaign.commands.analyze import cluster_specs, scope_json
from campaign.ledger import Ledger
from campaign.plumbing.errors import BadInputError
from campaign.results.export import latest_frame, results_frame
from campaign.results.report_scope import resolve


def measured_shapes(led: Ledger | None) -> Any:
    """gemm_shapes rows from the ledger, or None when it has none (or there is no ledger)."""
    if led is None:
        return None
    frame, _ = latest_frame(led, usable_only=True, all_extras=True)
    if frame.empty or "kernel" not in frame:
        return None
    rows = frame[frame["kernel"] == "gemm_shapes"]
    return rows if len(rows) else None


def shape_advice(h: int, a: int, vocab: int, *, gpu: str, seq: int, batch: int, tp: int,
                 led: Ledger | None, as_json: bool = False) -> Any:
    """The co-design paper's rules, ranked by measurement from the ledger when
    it covers the candidates, else by the wave model: text, or (`as_json`)
    one object of the checks, the current shape and the ranked proposals."""
    import dataclasses

    from analysis.advise import advise_shape, format_advice  # lazy: pandas

    try:
        advice = advise_shape(h, a, vocab, seq=seq, batch=batch, tp=tp, gpu=gpu, measured=measured_shapes(led))
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    return _finite({**dataclasses.asdict(advice), "ok": advice.ok}) if as_json else format_advice(advice)


def _finite(value: Any) -> Any:
    """NaN and infinities as null: the JSON stays valid (write_json refuses them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def thread_advice(led: Ledger, *, cluster: str, partition: str, kernel: str, n: int | None = None,
                  campaign: Sequence[str] = (), all_campaigns: bool = False, as_json: bool = False) -> Any:
    """Recommended thread counts per n range for one kernel on one partition,
    with the cost of the all-cores default (the partition's core count), as
    text or (`as_json`) one object. One campaign, the latest by default, as
    `report` (report_scope: pooling campaigns moved medians), and of each
    configuration only its latest identity (campaign.results.latest)."""
    from analysis.metrics import to_records
    from analysis.thread_advice import advice_rows, format_thread_advice
    from analysis.thread_advice import thread_advice as advise  # lazy: pandas

    scope = resolve(led, list(campaign), all_campaigns)
    results, left = latest_frame(led, campaign=scope.campaigns, cluster=cluster, usable_only=True, all_extras=False)
    scope.lines += left.lines()
    if results.empty:
        every = results_frame(led, campaign=scope.campaigns, usable_only=True, all_extras=False)
        known = ", ".join(sorted(set(every["cluster"].astype(str)))) or "none"
        raise BadInputError(f"no usable results for cluster {cluster!r} in {scope.covers}; "
                            f"clusters with results there: {known}")
    for col, value in (("partition", partition), ("kernel", kernel)):
        present = sorted(set(results[col].astype(str)))
        if value not in present:  # named with what was read: the latest campaign alone, by default
            raise BadInputError(f"no results for {col} {value!r} on {cluster} in {scope.covers}; "
                                f"measured there: {', '.join(present)}")
        results = results[results[col] == value]
    judged = None
    if "params" in results.columns and results["params"].str.contains("metric=", regex=False).any():
        # figures of merit (docs/byob.md): a fixed-duration program is advised on its figure, not its time
        rich, _ = latest_frame(led, campaign=scope.campaigns, cluster=cluster, usable_only=True, all_extras=True)
        rich = rich[(rich["partition"] == partition) & (rich["kernel"] == kernel)]
        results, judged = advice_rows(rich)
    spec = cluster_specs(led, {cluster}).get(cluster)
    part = spec.partitions.get(partition) if spec is not None else None
    cores = part.cores if part is not None else None
    try:
        advice = advise(results, default_threads=cores, n=n)
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    title = f"{kernel} on {cluster}/{partition} ({cores if cores else 'unknown'} cores)"
    if judged is not None:
        title += (f", judged on {judged['metric']} [{judged['unit']}] "
                  f"({'higher' if judged['higher_is_better'] else 'lower'} is better; its set time says nothing)")
    if as_json:
        return {"title": title, "cluster": cluster, "partition": partition, "kernel": kernel, "cores": cores,
                "per_n": to_records(advice.per_n), "ranges": to_records(advice.ranges), "judged_on": judged,
                "scope": scope_json(scope) | {"superseded": left.records}}
    text = format_thread_advice(advice, title).split("\n")
    return "\n".join([text[0], *(f"- {line}" for line in scope.lines), *text[1:]])
