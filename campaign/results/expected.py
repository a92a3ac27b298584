"""What a run's output must be, and the two judgements made on it: are the
rows the run's own, and did its check pass (docs/contracts.md#kernel-csv-columns).

Why a module: the analysis groups rows by every coordinate they carry
(kernel, impl, variant, device, dtype, d, threads, the run's extra
arguments), so a row that disagrees with the run that produced it would be
counted as a measurement of a configuration that never ran (a
1-thread run whose file also held 2-thread rows was COMPLETED with both
stored). Every planned coordinate the rows carry is compared; a mismatch
is LOST_OUTPUT with the reason and none of the file is stored, the same
rule as for a stray n. Finished and stopped (partial) jobs are held to the
same rule.

rel_err: a job's rel_err cell is read as any number, so
that a bad check is never mistaken for a bad file (which dropped its rows as
LOST_OUTPUT). It is then judged: NaN and infinity are above every tolerance,
a negative value is no error magnitude (a broken check), a blank cell under
`--check` is a missing check; each is CHECK_FAILED with its rows kept (the
views leave CHECK_FAILED rows out of every median). Imports stay strict.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

from campaign.results.columnar import ResultColumns
from resultschema.columns import SCALE_COLUMNS, TOLERANCE

# A planned variant that names no single variant: the program sweeps shapes of
# its own (gemm_shapes) and writes each row's variant (the GEMM's name) and d
# (h/a, the head dimension of its shape), so neither is a planned coordinate.
ANY_VARIANT = "all"
# The job columns whose float values are judged here, not refused by the reader.
JUDGED_COLUMNS: frozenset[str] = frozenset({"rel_err"})


@dataclass(frozen=True)
class Expected:
    """What one run's output must be: its own coordinates and its n-sweep.
    A coordinate left None is not checked (tests, older callers)."""

    n: tuple[int, ...]
    check: bool
    kernel: str | None = None
    dtype: str | None = None
    impl: str | None = None
    variant: str | None = None
    device: str | None = None
    d: int | None = None
    threads: int | None = None
    extra_args: tuple[tuple[str, str], ...] = ()
    ranks: int | None = None  # total ranks (nodes x ranks_per_node) where the spec plans them
    nodes: int | None = None  # the nodes the spec asks Slurm for (--nodes: exactly that many)
    # Every field of a run's spec that of_spec reads, the n-sweep among them: the one list. A sync extracts
    # exactly these from the stored JSON (campaign.commands.sync_specs), so a field read and not listed would
    # turn None at sync only. Checked on of_spec's source, not per call (it runs for every spec of every sync):
    # tests/sync/test_sync_reads_once.py fails on a read of any other field, or on one it cannot name.
    SPEC_FIELDS: ClassVar[tuple[str, ...]] = ("n", "check", "extra_args", "kernel", "dtype", "impl", "variant",
                                              "device", "d", "threads", "nodes", "ranks_per_node")

    @classmethod
    def of_spec(cls, spec: dict[str, Any], n: tuple[int, ...] | None = None) -> Expected:
        """From a run's stored spec (`run.spec`, run_spec.RunSpec as JSON), read
        through SPEC_FIELDS only: a sync hands it just those fields."""
        own_shapes = spec.get("variant") == ANY_VARIANT
        ranks = _planned_ranks(spec)
        return cls(tuple(n or spec["n"]), bool(spec.get("check")), spec.get("kernel"), spec.get("dtype"),
                   spec.get("impl"), None if own_shapes else spec.get("variant"), spec.get("device"),
                   None if own_shapes else _int(spec.get("d")), _int(spec.get("threads")),
                   tuple((str(k), str(v)) for k, v in spec.get("extra_args") or []), ranks,
                   _int(spec.get("nodes")) if ranks is not None else None)


def _planned_ranks(spec: dict[str, Any]) -> int | None:
    """nodes x ranks_per_node of a spec that plans ranks, else None (not checked)."""
    nodes, per_node = _int(spec.get("nodes")), _int(spec.get("ranks_per_node"))
    return nodes * per_node if nodes is not None and per_node is not None else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text.strip()


def foreign(table: ResultColumns, want: Expected) -> str | None:
    """Why these rows are not the run's own (the first coordinate that
    differs, with the file's and the run's values), or None."""
    cols = table.columns
    planned: tuple[tuple[str, Any], ...] = (
        ("kernel", want.kernel), ("impl", want.impl), ("variant", want.variant), ("device", want.device),
        ("dtype", want.dtype), ("d", want.d), ("threads", want.threads))
    for what, own in planned:
        if own is None:
            continue
        if what not in cols or cols[what].count(None) == len(cols[what]):  # (empty in every row: absent)
            if what in ("kernel", "dtype"):
                raise KeyError(what)  # a required column of a kernel's CSV; classify_output reports it
            continue
        values = cols[what]
        if values.count(own) != len(values):
            other = next(v for v in values if v != own)
            return f"output is for {what} {other!r}, the run's is {own!r}"
    extras = _extra_columns(table)
    for name in SCALE_COLUMNS:  # one launch has one world: rows of several are not one run's (a blank cell is 1)
        found = {int(v) if v is not None else 1 for v in extras.get(name, ())}
        if len(found) > 1:
            return f"output mixes {name} {sorted(found)[:4]}: one run is one launch"
        own_count = {"ranks": want.ranks, "nodes": want.nodes}[name]
        if found and own_count is not None and found != {own_count}:
            return f"output is for {name} {found.pop()}, the run's is {own_count}"
    for name, value in want.extra_args:
        column = extras.get(name, extras.get(name.replace("-", "_")))
        if column is None or "," in value:
            continue  # a list argument sweeps inside the program; a column it does not write is not checked
        own_value = _number(value)
        bad = next((v for v in column if v is not None and _number(v) != own_value), None)
        if bad is not None:
            return f"output is for {name} {bad!r}, the run's is {value!r}"
    return None


def _extra_columns(table: ResultColumns) -> dict[str, list[str | None]]:
    if table.extras is not None:
        return table.extras
    rows = table.extra_rows or []
    names = {k for row in rows if row for k in row}
    return {k: [(row or {}).get(k) for row in rows] for k in names}


def check_failure(table: ResultColumns, want: Expected) -> str | None:
    """Why the rows fail their check (CHECK_FAILED), or None. Under --check
    every row needs a rel_err within its dtype's tolerance (NaN and inf are
    above it); with or without it, a negative or infinite rel_err (no valid
    result of any check) fails."""
    cols = table.columns
    ns = cols["n"]
    errs = cols.get("rel_err") or [None] * len(table)
    dtypes = cols.get("dtype") or [None] * len(table)
    kinds = set(dtypes)
    if len(kinds) == 1:  # every row within its limit (a NaN or an infinity is not): none fails
        limit = TOLERANCE.get(kinds.pop() or "fp32", 1e-4) if want.check else sys.float_info.max
        if all(0 <= e <= limit if e is not None else not want.check for e in errs):
            return None
    for i, (err, dtype) in enumerate(zip(errs, dtypes)):
        if err is None:
            if want.check:
                return f"rel_err missing at n={ns[i]} although the run checks results"
            continue
        tol = TOLERANCE.get(dtype or "fp32", 1e-4)
        if err < 0:
            return f"rel_err {err:.3g} at n={ns[i]} is negative: not an error magnitude (the check is broken)"
        if (want.check or math.isinf(err)) and not err <= tol:  # NaN and inf are above every tolerance
            return f"rel_err {err:.3g} > {tol:g} at n={ns[i]} ({dtype})"
    return None


def settled(table: Any, sizes: list[int], wants: list[Expected]) -> list[bool]:
    """The files of a pooled table (`table`: their rows one after the other,
    `sizes` rows each; campaign.results.columnar.Pool) whose rows are surely
    their run's own, all of its n and within its check: what `foreign`,
    the n-sweep and `check_failure` would accept, decided over the whole
    table at once. False is "judge it alone" (those functions then name
    the reason), never a verdict."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    files = len(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    of_row = np.repeat(np.arange(files, dtype=np.int64), sizes)
    names = set(table.column_names)
    flagged = np.zeros(files, dtype=bool)
    suspect = np.zeros(len(of_row), dtype=bool)
    for what in ("kernel", "impl", "variant", "device", "dtype", "d", "threads"):
        own = [getattr(w, what) for w in wants]
        planned = np.array([v is not None for v in own])
        if not planned.any():
            continue
        if what not in names:
            flagged |= planned
            continue
        try:
            expected = pa.array(own, table[what].type).take(pa.array(of_row))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return [False] * files
        differs = pc.and_(pc.is_valid(expected), pc.fill_null(pc.not_equal(table[what], expected), True))
        suspect |= differs.to_numpy(zero_copy_only=False)
    for name in SCALE_COLUMNS:  # one launch, one world: every row the same count, the planned one
        if name in names:
            count = pc.fill_null(pc.cast(table[name], pa.int64()), 1).to_numpy()
            low, high = np.minimum.reduceat(count, starts), np.maximum.reduceat(count, starts)
            own = [{"ranks": w.ranks, "nodes": w.nodes}[name] for w in wants]
            planned = np.array([v is not None for v in own])
            flagged |= (low != high) | (planned & (low != np.array([v or 0 for v in own])))
    for f, want in enumerate(wants):  # a column named like a run's argument: compared alone
        flagged[f] |= any("," not in value and (name in names or name.replace("-", "_") in names)
                          for name, value in want.extra_args)
    _sweep_flags(table, files, of_row, wants, flagged, suspect)
    suspect |= _check_flags(table, of_row, wants)
    flagged |= np.logical_or.reduceat(suspect, starts)
    return (~flagged).tolist()


def _sweep_flags(table: Any, files: int, of_row: Any, wants: list[Expected], flagged: Any, suspect: Any) -> None:
    """Files with an n outside the run's sweep, or lacking one of it: per
    sweep (the files of a pool share a few), each row's n looked up in it
    and each file's found n kept as bits of one integer."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table["n"]
    starts = np.concatenate([[0], np.cumsum(np.bincount(of_row, minlength=files))[:-1]])
    sweeps: dict[tuple[int, ...], list[int]] = {}
    for f, want in enumerate(wants):
        sweeps.setdefault(tuple(sorted(set(want.n))), []).append(f)
    for sweep, members in sweeps.items():
        if len(sweep) > 62 or len(sweeps) > 64:
            flagged[members] = True  # judged alone
            continue
        mine = np.zeros(files, dtype=bool)
        mine[members] = True
        at = pc.index_in(n, value_set=pa.array(sweep, pa.int64())).to_numpy(zero_copy_only=False)
        stray = np.isnan(at) & mine[of_row]
        bits = np.where(np.isnan(at), 0, np.left_shift(1, np.nan_to_num(at).astype(np.int64)))
        found = np.bitwise_or.reduceat(bits, starts)
        suspect |= stray
        flagged |= mine & (found != (1 << len(sweep)) - 1)


def _check_flags(table: Any, of_row: Any, wants: list[Expected]) -> Any:
    """Rows `check_failure` would name: rel_err missing under --check,
    negative, or (under --check, or infinite) not within its dtype's tolerance."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = len(of_row)
    err = table["rel_err"] if "rel_err" in table.column_names else pa.nulls(rows, pa.float64())
    dtype = table["dtype"] if "dtype" in table.column_names else pa.nulls(rows, pa.string())
    kinds = pc.unique(dtype)
    limits = np.array([TOLERANCE.get(k or "fp32", 1e-4) for k in kinds.to_pylist()])
    tol = limits[pc.index_in(dtype, value_set=kinds).to_numpy(zero_copy_only=False).astype(np.int64)]
    missing = err.is_null().to_numpy(zero_copy_only=False)
    value = pc.fill_null(err, 0.0).to_numpy()
    check = np.array([w.check for w in wants], dtype=bool)[of_row]
    with np.errstate(invalid="ignore"):
        broken = (value < 0) | ((check | np.isinf(value)) & ~(value <= tol))
    return (missing & check) | (~missing & broken)
