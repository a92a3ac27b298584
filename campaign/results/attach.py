"""`campaign results`: each streamed batch of a result file's rows given its
attempt's ledger columns and its grid columns, in Arrow, in the file's order.

The file's rows stream in their order from a plain scan; what each row
takes from the ledger comes from the one join of the ledger's columns to
result rows (campaign.results.ledger_join, which says why not in SQL), the
report's read's (campaign.results.scan.frame) too. Rows of attempts not
selected are left out, as an inner join leaves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from campaign.results import scan
from campaign.results.ledger_join import LedgerJoin
from resultschema.columns import BY_NAME, SCALE_COLUMNS, SCALE_DEFAULT

KEY = "__key"  # the row's key among the ledger's (scan.row_keys: its attempt, else -1 - its file's place)
_ARROW = {"int": "int64", "float": "float64", "text": "string", "bool": "bool_"}


@dataclass
class Attach:
    """The selected attempts' ledger columns (`join`) and the grid's columns
    by params text; `fields`, the Arrow fields of what is attached."""

    join: LedgerJoin  # scan.LEDGER's columns by key
    texts: Any  # the grid's params texts (Arrow), its columns in `grid`
    grid: Any  # an Arrow table: one row per text

    @staticmethod
    def make(ids: list[int], values: dict[str, list[Any]], grid: Any) -> Attach:
        """From scan.pointers' keys and ledger values and the Grid's table."""
        return Attach(LedgerJoin.of(ids, {name: values[name] for name in scan.LEDGER}), grid["params"],
                      grid.drop_columns(["params"]))

    def fields(self, ledger_columns: list[str]) -> list[Any]:
        import pyarrow as pa

        return [pa.field(c, getattr(pa, _ARROW[BY_NAME[c].kind])()) for c in ledger_columns]

    def batch(self, rows: Any, schema: Any) -> Any:
        """The batch of a file's rows (its own columns, KEY and `params`) as `schema`'s batch:
        in its order, the ledger's columns where the rows have none, then the grid's."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows, ledger = self.join.join(rows, rows.column(KEY))
        attempt = ledger["attempt"]  # (an imported row has none: its replicate is its file's, if any)
        rows, ledger = scan.own_facts(rows, ledger)
        out = []
        for field in schema:
            name = field.name
            if name in rows.schema.names and name not in SCALE_COLUMNS:
                value = rows.column(name)
            elif name in SCALE_COLUMNS:  # scan.shape's rule: the row's (every row of schema 3), else planned, else 1
                nodes, per_node = (pc.cast(ledger[p], pa.int64()) for p in scan.PLANNED_SCALE)
                planned = nodes if name == "nodes" else pc.multiply(nodes, per_node)
                value = pc.coalesce(rows.column(name), planned, pa.scalar(SCALE_DEFAULT, pa.int64()))
            elif name == "replicate":  # replicate 0 is every row of an unreplicated run; an imported row's is its own
                value = pc.if_else(pc.is_valid(attempt), pc.coalesce(pc.cast(ledger["replicate"], pa.int64()),
                                                                     pa.scalar(0, pa.int64())),
                                   pc.cast(ledger["replicate"], pa.int64()))
            elif name in ledger:
                value = ledger[name]
            else:  # a grid column: the row's params text's value
                value = self.grid.column(name).take(pc.index_in(rows.column("params"), value_set=self.texts))
            out.append(value.cast(field.type) if value.type != field.type else value)
        return pa.RecordBatch.from_arrays([a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in out],
                                          schema=schema)
