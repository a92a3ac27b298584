"""The one definition of a result row's columns: name,
type, where the value lives, whether a kernel's CSV and an imported CSV must
carry it, its unit, meaning and value rule.

Everything else is derived from `RESULT_SCHEMA`: the Arrow schema of the
result files (campaign.ledger.result_schema), the kernel CSV contract and the
import columns (analysis.rules checks both), the natural key
(campaign.results.keys), `campaign results`' fixed columns and the tables of
README.md, docs/results.md and docs/contracts.md (resultschema.doc_tables makes them; tests check them).
Adding a result column is one `Column(...)` line here. Kept free of pandas
and pyarrow: `status` and the job side read it without their import cost.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUIRED, OPTIONAL = "required", "optional"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "int", "float", "text" (Arrow int64 / float64 / string), "object" (JSON text), "map" (of text)
    # or "bool" (Arrow bool)
    meaning: str
    json: str = ""  # its type in `campaign results` ("" = not one of its columns)
    where: str = "file"  # "file": a column of the result file; "extra": a key of the row's extra object;
    # "ledger": from the ledger's own tables (the attempt, its campaign, ...)
    kernel: str = ""  # in a kernel program's CSV: REQUIRED, OPTIONAL or "" (not the program's to write)
    imported: str = ""  # in a CSV given to `campaign import`
    unit: str = ""
    minimum: int | None = None  # ints: the smallest allowed value
    positive: bool = False  # floats: > 0 (else >= 0)
    span: tuple[float, float] | None = None  # floats: the closed range a value must lie in (TIME_SPAN_S)
    allow_nan: bool = False  # floats: a blank cell or "nan" is a missing value
    key: bool = False  # part of a row's natural key (configuration, n, repeat)
    tool: bool = False  # a column the tool driver (campaign.job.fom) writes into a tool-driven program's CSV
    # A file column that a program's CSV gives as one of its extra columns (text, or checked as a number
    # and kept as text by the reader): typed into its own column when the rows are stored
    # (campaign.ledger.result_schema), read out of the extra object of a file of an older schema.
    lifted: bool = False
    shape: bool = False  # the run's shape (nodes, ranks, gpus): filled from its spec where the row does not say
    carries: str = ""  # the exported ledger column whose imported value this file column holds (CARRIED)
    # Positions, where an order is older than this table and must not change:
    measured: int = 0  # in an imported row's natural key (a hash: reordering would change every key)
    group: int = 0  # among the columns identifying a configuration (1-6 always, more when present)

    @property
    def rule(self) -> bool:
        """A CSV cell of this column is typed and checked (else it is kept as text in `extra`)."""
        return bool(self.kernel or self.imported)


_TXT, _INT, _NUM = "string", "integer", "number"
# What a repeat's time can be: a picosecond is below any timer's resolution and a billion seconds (31 years)
# beyond any walltime. Times outside span no real run; inside, any two differ by at most 1e21, so every
# ratio, speedup and exponent between them is a finite number (1e-320 beside 1e300 made them inf or 0).
TIME_SPAN_S = (1e-12, 1e9)
RESULT_SCHEMA: tuple[Column, ...] = (
    Column("attempt_id", "int", "the ledger's attempt that produced the row (NULL for imported rows)"),
    Column("campaign_id", "int", "the campaign an imported row was imported into (`import --campaign`)"),
    Column("campaign", "text", "the campaign of the attempt, or the one the rows were imported into "
           "(`import --campaign`); null for other imported rows", json=f"{_TXT} or null", where="ledger"),
    Column("cluster", "text", "cluster name (a job's: its run's, never the file's)", _TXT, imported=REQUIRED,
           key=True, group=1),
    Column("partition", "text", "partition name (a job's: its run's)", _TXT, imported=REQUIRED, key=True, group=2),
    Column("kernel", "text", "kernel family", _TXT, kernel=REQUIRED, imported=REQUIRED, key=True, group=3, tool=True),
    Column("impl", "text", "implementation (c, fortran, torch, ...)", _TXT, kernel=REQUIRED, imported=REQUIRED,
           key=True, group=4, tool=True),
    Column("variant", "text", "kernel variant (naive, memopt, ...)", _TXT, kernel=REQUIRED, imported=REQUIRED,
           key=True, group=5, tool=True),
    Column("device", "text", "cpu or cuda", _TXT, kernel=REQUIRED, imported=REQUIRED, key=True, group=6, tool=True),
    Column("dtype", "text", "fp32, bf16, fp16", f"{_TXT} or null", kernel=REQUIRED, imported=OPTIONAL, key=True,
           group=7, tool=True),
    Column("params", "text", "the run's extra program arguments, e.g. a=32,h=2560 (\"\" = none)", _TXT, group=9),
    Column("threads", "int", "OpenMP/torch threads", _INT, kernel=REQUIRED, imported=REQUIRED, minimum=1, key=True, tool=True),
    Column("ranks", "int", "MPI/torch ranks of the run in all: the row's, else its run's planned ranks, else 1",
           _INT, kernel=OPTIONAL, imported=OPTIONAL, minimum=1, group=10, lifted=True, shape=True),
    Column("nodes", "int", "distinct hosts the ranks ran on: the row's, else its run's planned nodes, else 1", _INT,
           kernel=OPTIONAL, imported=OPTIONAL, minimum=1, group=11, lifted=True, shape=True),
    Column("gpus", "int", "GPUs per node the run asked for (its `gpus`; 0 on a CPU run); an imported row's own "
           "value where its file gives one (an export's 0 stays 0), null where it does not and for rows stored before "
           "the column", f"{_INT} or null", minimum=0, lifted=True, shape=True),
    Column("n", "int", "problem size (sequence length); null for a program without one", f"{_INT} or null",
           kernel=REQUIRED, imported=REQUIRED, minimum=1,
           key=True, tool=True),
    Column("d", "int", "head dimension", f"{_INT} or null", kernel=OPTIONAL, imported=OPTIONAL, minimum=1, key=True,
           group=8, tool=True),
    Column("repeat", "int", "timed repeat, from 0", _INT, kernel=REQUIRED, imported=REQUIRED, minimum=0, key=True, tool=True),
    Column("time_s", "float", "seconds of this repeat", _NUM, kernel=REQUIRED, imported=REQUIRED, unit="s",
           positive=True, span=TIME_SPAN_S, measured=1, tool=True),
    Column("first_call_s", "float", "seconds of the first call (context creation, JIT), kept apart from the repeats",
           f"{_NUM} or null", where="extra", unit="s"),
    Column("metric", "text", "the figure of merit the row measures, for a program that reports one "
           "(docs/byob.md: one row per figure and repeat); null on rows of time alone", f"{_TXT} or null",
           tool=True, lifted=True),
    Column("value", "float", "the figure's value, in `unit`", f"{_NUM} or null", tool=True, lifted=True),
    Column("unit", "text", "the figure's unit, as the program's YAML names it", f"{_TXT} or null", tool=True,
           lifted=True),
    Column("higher_is_better", "bool", "the figure's direction: true for a rate, false for a time",
           "boolean or null", tool=True, lifted=True),
    Column("rel_err", "float", "relative error against the float64 reference (with --check)", f"{_NUM} or null",
           kernel=OPTIONAL, imported=OPTIONAL, allow_nan=True, measured=4),
    Column("flops", "float", "floating-point operations, when the row gives them", f"{_NUM} or null",
           kernel=OPTIONAL, imported=OPTIONAL, unit="FLOP", allow_nan=True, measured=2, tool=True),
    Column("bytes", "float", "bytes moved, when the row gives them", f"{_NUM} or null", kernel=OPTIONAL,
           imported=OPTIONAL, unit="B", allow_nan=True, measured=3, tool=True),
    Column("gpu_model", "text", "GPU name on cuda rows", f"{_TXT} or null", kernel=OPTIONAL, imported=OPTIONAL),
    Column("job_id", "text", "scheduler job ID that produced the row", f"{_TXT} or null", kernel=OPTIONAL,
           imported=OPTIONAL, key=True),
    Column("attempt", "int", "attempt number of the run (1, 2, ... after reruns)", f"{_INT} or null", where="ledger"),
    Column("replicate", "int", "which independent job of its configuration (experiment.replicates: 0, 1, ...); "
           "an imported row's as its CSV gave it", f"{_INT} or null", where="ledger"),
    Column("state", "text", "the attempt's state (COMPLETED, CHECK_FAILED, ...)", f"{_TXT} or null", where="ledger"),
    Column("overlap", "text", "set when the row was timed while another timed job ran on the same machine, while "
           "other processes kept the job's CPUs busy (the note names the CPUs they took and the load average), or "
           "on a Slurm node with more busy CPUs than it has (the note names the peak, the node's CPUs and the jobs); "
           "`report --json` lists such points under `overlap_points`, the report warns with the list, `compare` "
           "marks them", f"{_TXT} or null", where="ledger"),
    # an imported row's own ledger columns as its CSV gave them (`carries`); null on job rows, whose are the ledger's
    Column("imported_attempt", "int", "an imported row's `attempt` (null on job rows)", minimum=1, carries="attempt"),
    Column("imported_replicate", "int", "an imported row's `replicate` (null on job rows)", carries="replicate"),
    Column("imported_state", "text", "an imported row's `state` (null on job rows); a row of a state whose job rows "
           "count in no median (CHECK_FAILED, ...) counts in none", carries="state"),
    Column("imported_overlap", "text", "an imported row's `overlap` note (null on job rows)", carries="overlap"),
    Column("source", "text", "\"job\" or the imported file", _TXT),
    Column("extra", "object", "every other column of the row, as one JSON object (params included; numbers "
           "typed in `campaign results`)", "object"),
    Column("extras", "map", "in a result file (schema 2 on): the extra object of a row whose values are all text, "
           "as a map of text (read as `extra`, which then holds only the other rows' objects)"),
)
BY_NAME: dict[str, Column] = {c.name: c for c in RESULT_SCHEMA}
# The limits of a cell's value (analysis.rules applies them): text, integers.
TEXT_MAX, NOTE_MAX = 200, 2000  # a carried text (an exported overlap: a job's notes joined) may be longer
# no text cell holds one; nor an invisible character that reorders or hides what a table shows around it
# (bidi embeddings, overrides and isolates, zero-width space, BOM): 'alpha' + U+202E showed its row reversed
CONTROL = "[\x00-\x1f\x7f\u200b\u202a-\u202e\u2066-\u2069\ufeff]"
INT64 = (-(2**63), 2**63 - 1)
# A bool cell (a figure's direction) as text: these words, any case, else a number (true where not 0, as
# campaign.job.fom writes 1/0); `results --format csv` writes True/False, JSON true/false.
TRUE_WORDS = ("true", "yes")
FALSE_WORDS = ("false", "no")


def column_rule(name: str) -> Column | None:
    """The rule of a CSV column: its schema column's, None for an extra column (kept as text)."""
    col = BY_NAME.get(name)
    return col if col is not None and col.rule else None


def _names(keep: object) -> tuple[str, ...]:
    return tuple(c.name for c in RESULT_SCHEMA if keep(c))  # type: ignore[operator]


REQUIRED_COLUMNS = _names(lambda c: c.imported == REQUIRED)  # what an imported CSV must carry
# a column a CSV must carry whose cells may yet be empty: its value may be null (n of a program without a
# problem size, as `results` exports it), so an empty cell is that null, not a missing value
NULLABLE_COLUMNS = frozenset(_names(lambda c: c.json.endswith(" or null")))
OPTIONAL_COLUMNS = _names(lambda c: c.imported == OPTIONAL and c.where == "file")
KERNEL_COLUMNS = _names(lambda c: c.kernel == REQUIRED)  # what a kernel program's CSV must carry
RULE_COLUMNS = _names(lambda c: c.rule)  # a CSV cell typed and checked (the rest is kept as text in `extra`)
SCALE_COLUMNS = _names(lambda c: c.rule and c.shape)  # ranks, nodes: checked in the CSV, one world per launch
# a figure's value and direction, a run's GPU count: text in a job's CSV (the write types them, a bad cell NULL),
# checked as their kind in an imported one (analysis.rules: import is all rows or none)
IMPORT_LIFTED_COLUMNS = _names(lambda c: c.lifted and not c.rule and c.kind in ("float", "bool", "int"))
SCALE_DEFAULT = 1  # ranks and nodes of a row that does not say, of no run that does (imported rows)
LIFTED_COLUMNS = _names(lambda c: c.lifted)  # file columns a CSV gives among its extra columns
# Exported ledger columns an imported CSV may carry, by CSV name: checked as their file column's kind, kept in
# the row's extra object (its natural key), stored typed in that column (campaign.results.carried)
CARRIED: dict[str, Column] = {c.carries: c for c in RESULT_SCHEMA if c.carries}
STORED_COLUMNS = _names(lambda c: c.where == "file")  # a result file's columns, in file order
EXPORT_COLUMNS = _names(lambda c: bool(c.json))  # `campaign results`, in this order
KEY_COLUMNS = _names(lambda c: c.key)
# a run's dimensions (every one tells points apart: analysis.metric_frame), in the order a point is named
DIMENSIONS = ("cluster", "partition", "kernel", "impl", "variant", "dtype", "device", "d", "params", "nodes", "ranks",
              "gpus", "threads", "n")
MEASURED_COLUMNS = tuple(c.name for c in sorted((c for c in RESULT_SCHEMA if c.measured), key=lambda c: c.measured))
_GROUPS = tuple(c.name for c in sorted((c for c in RESULT_SCHEMA if c.group), key=lambda c: c.group))
BASE_GROUP_COLUMNS = _GROUPS[:6]  # one measured configuration; `threads` and `n` are its swept axes
OPTIONAL_GROUP_COLUMNS = _GROUPS[6:]  # join the group when the table has them (ranks/nodes: rows of other
# rank counts are other points, never one median)


KERNEL_CSV = _names(lambda c: bool(c.kernel))  # the kernel CSV contract's own columns
TOOL_COLUMNS = _names(lambda c: c.tool)  # what the tool driver writes, in schema order
