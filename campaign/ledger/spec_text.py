"""A run's spec entry as JSON text, one SQL expression that both the index
`ix_run_configuration` (campaign.ledger.models.Run) and the statement that
groups runs by their configuration and identity (campaign.results.latest)
render. SQLite uses an index on an expression only where the statement holds
the same expression (a bound path parameter is not the same as a literal
one), and then reads the entries' values from the index in its order: the
GROUP BY of 200,000 runs then neither parses their specs nor sorts.

PostgreSQL has no such index (its planner hashes the groups) and reads the
entry as SQLAlchemy's JSON path renders it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Text, cast, column, table
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

# the spec entries a configuration and its identity are grouped by (campaign.results.latest), in index order
CONFIGURATION_ENTRIES = ("d", "extra_args", "identity")
_RUN = table("run", column("spec", JSON()))  # (not the model: campaign.ledger.models builds its index from here)


class SpecText(ColumnElement[str]):
    """`run.spec`'s entry `name` as JSON text (where the spec has none: 'null' on SQLite, NULL on
    PostgreSQL, as the cast of SQLAlchemy's JSON path gives it)."""

    inherit_cache = True
    _traverse_internals = [("name", InternalTraversal.dp_string)]  # (the name is part of the cached SQL)
    type = Text()

    def __init__(self, name: str) -> None:
        self.name = name


def _sqlite(element: SpecText, compiler: Any, **kw: Any) -> str:
    # unqualified: an index's expression names no table, and SQLite matches a statement's `run.spec` to it
    return f"json_quote(json_extract(spec, '$.\"{element.name}\"'))"


def _other(element: SpecText, compiler: Any, **kw: Any) -> str:
    # the path as a literal: the select list and the GROUP BY then hold one text (two bound parameters would
    # be two expressions to PostgreSQL)
    return str(compiler.process(cast(_RUN.c.spec[element.name], Text), **{**kw, "literal_binds": True}))


compiles(SpecText, "sqlite")(_sqlite)
compiles(SpecText)(_other)
