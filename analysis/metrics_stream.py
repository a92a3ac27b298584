"""`campaign report --json`, written as it is made.

Over a big ledger the metrics object is hundreds of MB of JSON: building it
as one dict of record lists and then one string held it in memory three
times. Here each metric's table is converted a chunk of rows at a time and
written to the stream at once, so memory holds the metric tables and one
chunk; the bytes are the same as `json.dump(metrics_json(...))`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

import pandas as pd

from analysis.metrics import METRIC_KEYS, all_metrics, filter_cluster, to_records

CHUNK_ROWS = 20_000  # records converted and written at once


def check_keys(keys: Iterable[str] | None, also: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The keys asked for (METRIC_KEYS, then `also`), in the schema's order;
    ValueError names an unknown one."""
    known = METRIC_KEYS + also
    if keys is None:
        return known
    wanted = set(keys)
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"unknown metric key(s) {', '.join(unknown)}; keys: {', '.join(known)}")
    return tuple(k for k in known if k in wanted)


def record_chunks(frame: pd.DataFrame, chunk: int | None = None) -> Iterator[list[dict[str, object]]]:
    """A metric table's JSON records, `chunk` (default CHUNK_ROWS) rows at a time."""
    step = chunk or CHUNK_ROWS
    for start in range(0, len(frame), step):
        yield to_records(frame.iloc[start:start + step])


def write_metrics_json(results: pd.DataFrame, partitions: pd.DataFrame | None, out: TextIO, *,
                       cluster: str | None = None, keys: Iterable[str] | None = None,
                       tail: dict[str, Callable[[], object]] | None = None) -> None:
    """Write {metric key: [record, ...]} for `keys` (default: all) to `out`,
    computing only those metrics. `tail`: further (small) keys made by the
    caller, e.g. `counters`, written after the metrics when asked for."""
    more = tail or {}
    chosen = check_keys(keys, tuple(more))
    frames = all_metrics(results, partitions, keys=tuple(k for k in chosen if k in METRIC_KEYS))
    if cluster is not None:
        frames = filter_cluster(frames, cluster)
    out.write("{")
    for i, key in enumerate(chosen):
        if key in more:
            out.write(f"{', ' if i else ''}{json.dumps(key)}: {json.dumps(more[key]())}")
            continue
        out.write(f"{', ' if i else ''}{json.dumps(key)}: [")
        first = True
        for records in record_chunks(frames[key]):
            if not records:
                continue
            # one dumps of the chunk's list (its "[...]" dropped): the same bytes as a dumps per record, in C
            out.write(("" if first else ", ") + json.dumps(records)[1:-1])
            first = False
        out.write("]")
    out.write("}")
