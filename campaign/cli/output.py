"""How the CLI prints: tables, counts and progress through rich, and the
machine-readable formats (`--format table|csv|json`).

Into a terminal a table is a rich table; into a pipe or a file it is plain
text (columns separated by two spaces, "-" for an empty cell, no box
characters), so `campaign jobs | awk '{print $1}'` gives job IDs. JSON keeps
numbers as numbers; CSV is RFC 4180 with a header.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def console() -> Console:
    from rich.console import Console  # lazy: a plain table into a pipe never loads rich (start-up time)

    con = Console(highlight=False, soft_wrap=True)
    if not con.is_terminal:  # piped: do not squeeze columns to 80
        con = Console(highlight=False, soft_wrap=True, width=200)
    return con


def is_terminal() -> bool:
    return sys.stdout.isatty()


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned columns for pipes: no box characters, never an empty field."""
    cells = [list(columns)] + [[_cell(v) or "-" for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    if not is_terminal():
        if title:
            print(title)
        print(plain_table(columns, rows))
        return
    from rich.table import Table  # lazy, as in console()

    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*(_cell(v) for v in r))
    console().print(t)


def write_json(value: Any) -> None:
    json.dump(value, sys.stdout, allow_nan=False, default=str)
    sys.stdout.write("\n")


def write_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(columns)
    for r in rows:
        out.writerow([_cell(v) for v in r])


def emit_rows(fmt: str | None, title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    """Rows in the chosen format (table by default)."""
    if fmt == "json":
        write_json([dict(zip(columns, r)) for r in rows])
    elif fmt == "csv":
        write_csv(columns, rows)
    else:
        table(title, columns, rows)


def progress_printer(quiet: bool = False) -> Callable[[int, int, str], None]:
    con = console()

    def show(done: int, total: int, label: str) -> None:
        if quiet:
            return
        width = 30
        filled = width * done // max(1, total)
        bar = "#" * filled + "." * (width - filled)
        con.print(f"[{bar}] {done}/{total} {label}", markup=False)

    return show


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no jobs"


def print_counts(counts: dict[str, int]) -> None:
    console().print(f"  runs by state: {counts_text(counts)}")
