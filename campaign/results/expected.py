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

from dataclasses import dataclass
from typing import Any, ClassVar

from resultschema.columns import SCALE_COLUMNS
from resultschema.partition import TOLERANCE

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


@dataclass(frozen=True)
class Verdict:
    """One file judged against its run: why its rows are not the run's own
    (`foreign`), its n outside the sweep (`stray`, the first five), the n of
    the sweep it lacks (`missing`), why its check failed (`failed`)."""

    foreign: str | None = None
    stray: tuple[int, ...] = ()
    missing: tuple[int, ...] = ()
    failed: str | None = None


_COORDINATES = ("kernel", "impl", "variant", "device", "dtype", "d", "threads")


def judge(table: Any, sizes: list[int], wants: list[Expected]) -> list[Verdict]:
    """Each file of a table (`table`: the rows of files one after the other,
    `sizes` rows each, as campaign.results.columnar reads them) judged
    against what its run expected (`wants`): every rule a mask over all the
    rows at once (a sync judges thousands of files together), each file's
    reason described from its first row the mask holds."""
    import numpy as np

    files = _Files(np.asarray(sizes, dtype=np.int64), table.num_rows, wants)
    foreign = _foreign(table, files) if table.num_rows else [None] * len(sizes)
    stray, missing = _sweep(table, files)
    failed = _check(table, files)
    return [Verdict(*found) for found in zip(foreign, stray, missing, failed)]


class _Files:
    """Where each file's rows are in the pooled table, its run (`runs`: the
    distinct Expected objects, a sync's files share a few; `run_of`: each
    file's, `run_of_row`: each row's), and per-file reductions of a row mask."""

    def __init__(self, sizes: Any, rows: int, wants: list[Expected]) -> None:
        import numpy as np

        self.sizes, self.rows = sizes, rows
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.of_row = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        index: dict[int, int] = {}
        self.runs: list[Expected] = []
        for want in wants:
            if index.setdefault(id(want), len(self.runs)) == len(self.runs):
                self.runs.append(want)
        self.run_of = np.array([index[id(w)] for w in wants], dtype=np.int64)
        self.run_of_row = self.run_of[self.of_row]

    def of_runs(self, values: list[Any]) -> Any:
        """A value per run as a value per file."""
        import numpy as np

        return np.array(values)[self.run_of]

    def first(self, mask: Any) -> Any:
        """Each file's first row (its index in the table) where `mask` is set, -1 where none is."""
        import numpy as np

        if not self.rows or not mask.any():  # (most masks of a sync: no row breaks the rule)
            return np.full(len(self.sizes), -1, dtype=np.int64)
        at = np.where(mask, np.arange(self.rows), self.rows)
        first = np.minimum.reduceat(at, np.minimum(self.starts, self.rows - 1))
        return np.where((first < self.starts + self.sizes) & (self.sizes > 0), first, -1)


def _foreign(table: Any, files: _Files) -> list[str | None]:
    """Why each file's rows are not its run's: the first planned coordinate
    that a row contradicts (a column empty in every row of a file is absent),
    then its ranks and nodes (one launch), then the run's extra arguments."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out: list[str | None] = [None] * len(files.sizes)
    names = set(table.column_names)
    for what in _COORDINATES:
        own = [getattr(run, what) for run in files.runs]
        if what not in names or all(v is None for v in own):
            continue
        column = table[what]
        present = np.add.reduceat(column.is_valid().to_numpy(zero_copy_only=False), files.starts) > 0 \
            if column.null_count else True
        expected = pa.array(own, column.type).take(pa.array(files.run_of_row))
        first = files.first(pc.fill_null(pc.not_equal(column, expected), True).to_numpy(zero_copy_only=False))
        planned = files.of_runs([v is not None for v in own]) & present  # (a column empty in a file: absent)
        for f in np.flatnonzero((first >= 0) & planned):
            if out[f] is None:
                out[f] = f"output is for {what} {column[int(first[f])].as_py()!r}, the run's is {own[files.run_of[f]]!r}"
    for name in SCALE_COLUMNS:  # one launch has one world: rows of several are not one run's (a blank cell is 1)
        if name in names:
            count = pc.fill_null(pc.cast(table[name], pa.int64()), 1).to_numpy()
            low, high = np.minimum.reduceat(count, files.starts), np.maximum.reduceat(count, files.starts)
            own_count = [{"ranks": run.ranks, "nodes": run.nodes}[name] for run in files.runs]
            other = files.of_runs([v is not None for v in own_count]) & (low != files.of_runs([v or 0 for v in own_count]))
            for k in np.flatnonzero((low != high) | other):
                if out[k] is None and low[k] != high[k]:
                    found = sorted(set(count[files.starts[k]:files.starts[k] + files.sizes[k]].tolist()))
                    out[k] = f"output mixes {name} {found[:4]}: one run is one launch"
                elif out[k] is None:
                    out[k] = f"output is for {name} {low[k]}, the run's is {own_count[files.run_of[k]]}"
    _arguments(table, files, out)
    return out


def _arguments(table: Any, files: _Files, out: list[str | None]) -> None:
    """The rows of a column named like one of the run's arguments (`--a 32`: a
    column `a`) hold its value, as a number where it reads as one. A list
    argument sweeps inside the program, and a column the program does not
    write is not checked. Judged per distinct cell (a column's dictionary)."""
    import numpy as np
    import pyarrow.compute as pc

    from campaign.results.result_columns import extra_columns

    extras = set(extra_columns(table.column_names))
    by_argument: dict[tuple[str, str, str], list[int]] = {}  # (column, argument, value) -> its runs
    for k, run in enumerate(files.runs):
        for name, value in run.extra_args:
            column = name if name in extras else name.replace("-", "_")
            if column in extras and "," not in value:
                by_argument.setdefault((column, name, value), []).append(k)
    for (column, name, value), runs in by_argument.items():
        encoded = pc.dictionary_encode(table[column]).combine_chunks()
        own = _number(value)
        differs = np.array([_number(v) != own for v in encoded.dictionary.to_pylist()] + [False])
        codes = pc.fill_null(encoded.indices, len(encoded.dictionary)).to_numpy()  # a blank cell: not checked
        mine = np.isin(files.run_of, runs)
        first = files.first(differs[codes] & mine[files.of_row])
        for f in np.flatnonzero(mine & (first >= 0)):
            if out[f] is None:
                out[f] = f"output is for {name} {table[column][int(first[f])].as_py()!r}, the run's is {value!r}"


def _sweep(table: Any, files: _Files) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """Each file's n outside its run's sweep (sorted, the first five) and the
    n of the sweep it lacks: each row's n looked up once among every n of
    the pool's sweeps, then in its own file's sweep (a table of sweeps x n),
    the n each file holds marked in a table of files x n."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    sweeps: dict[tuple[int, ...], int] = {}
    sweep_of = files.of_runs([sweeps.setdefault(tuple(sorted(set(run.n))), len(sweeps)) for run in files.runs])
    every = np.array(sorted({v for sweep in sweeps for v in sweep}), dtype=np.int64)
    member = np.zeros((len(sweeps), len(every) + 1), dtype=bool)  # the last column: an n of no sweep
    for sweep, k in sweeps.items():
        member[k, np.searchsorted(every, np.array(sweep, dtype=np.int64))] = True
    n = table["n"]
    code = pc.fill_null(pc.index_in(n, value_set=pa.array(every, pa.int64())), len(every)).to_numpy()
    own = member[sweep_of[files.of_row], code]
    found = np.zeros((len(files.sizes), len(every) + 1), dtype=bool)
    found[files.of_row[own], code[own]] = True
    stray: list[tuple[int, ...]] = [()] * len(files.sizes)
    for f in np.flatnonzero(files.first(~own) >= 0):
        start, size = int(files.starts[f]), int(files.sizes[f])
        outside = n.slice(start, size).filter(pa.array(~own[start:start + size]))
        stray[f] = tuple(sorted(set(outside.drop_null().to_pylist())))[:5]
    lacking = member[sweep_of, :-1] & ~found[:, :-1]
    missing: list[tuple[int, ...]] = [()] * len(files.sizes)
    for f in np.flatnonzero(lacking.any(axis=1)):
        missing[f] = tuple(every[lacking[f]].tolist())
    return stray, missing


def _check(table: Any, files: _Files) -> list[str | None]:
    """Why each file's rows fail their check (CHECK_FAILED), from its first
    row that fails: under --check every row needs a rel_err within its
    dtype's tolerance (NaN and inf are above it); with or without it, a
    negative or infinite rel_err (no valid result of any check) fails."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    err = table["rel_err"] if "rel_err" in table.column_names else pa.nulls(rows, pa.float64())
    dtype = table["dtype"] if "dtype" in table.column_names else pa.nulls(rows, pa.string())
    kinds = pc.unique(dtype)
    limits = np.array([TOLERANCE.get(k or "fp32", 1e-4) for k in kinds.to_pylist()])
    tol = limits[pc.index_in(dtype, value_set=kinds).to_numpy(zero_copy_only=False).astype(np.int64)]
    absent = err.is_null().to_numpy(zero_copy_only=False)
    value = pc.fill_null(err, 0.0).to_numpy()
    check = np.array([run.check for run in files.runs], dtype=bool)[files.run_of_row]
    with np.errstate(invalid="ignore"):
        broken = (value < 0) | ((check | np.isinf(value)) & ~(value <= tol))
    first = files.first((absent & check) | (~absent & broken))
    out: list[str | None] = [None] * len(files.sizes)
    for f in np.flatnonzero(first >= 0):
        row = int(first[f])
        n, kind = table["n"][row].as_py(), dtype[row].as_py()
        if absent[row]:
            out[f] = f"rel_err missing at n={n} although the run checks results"
        elif value[row] < 0:
            out[f] = f"rel_err {value[row]:.3g} at n={n} is negative: not an error magnitude (the check is broken)"
        else:  # NaN and inf are above every tolerance
            out[f] = f"rel_err {value[row]:.3g} > {tol[row]:g} at n={n} ({kind})"
    return out
