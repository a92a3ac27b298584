"""How the CLI prints: tables, counts and progress through rich, and the
machine-readable formats (`--format table|csv|json`).

Into a terminal a table is a rich table; into a pipe or a file it is plain
text (columns separated by two spaces, "-" for an empty cell, no box
characters), so `campaign jobs | awk '{print $1}'` gives job IDs. JSON keeps
numbers as numbers; CSV is RFC 4180 with a header.

Rows come as batches (an iterator of lists of rows) and are printed as they
come: `campaign jobs | head` shows its first lines before the ledger's last
row is read. A plain table's columns are as wide as the widest cell seen so
far, so a later, wider cell widens the lines from its batch on, never the
ones already printed (fields stay separated by two spaces or more).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
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


def _plain_lines(columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]]) -> Iterable[str]:
    """Aligned columns for pipes (no box characters, never an empty field), a batch at a time,
    widths growing with the widest cell seen."""
    widths = [len(c) for c in columns]
    header: list[str] | None = list(columns)
    for batch in batches:
        cells = [[_cell(v) or "-" for v in r] for r in batch]
        for r in cells:
            widths = [max(w, len(c)) for w, c in zip(widths, r)]
        if header is not None:
            cells.insert(0, header)
            header = None
        for r in cells:
            yield "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    if header is not None:
        yield "  ".join(header).rstrip()


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    stream_table(title, columns, [rows])


def stream_table(title: str | None, columns: list[str], batches: Iterable[Sequence[Sequence[Any]]]) -> None:
    """A table of rows given a batch at a time: into a pipe, each batch printed as it comes."""
    if not is_terminal():
        if title:
            print(title)
        out = sys.stdout
        for line in _plain_lines(columns, batches):
            out.write(line + "\n")
        return
    from rich.table import Table  # lazy, as in console()

    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c)
    for batch in batches:
        for r in batch:
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


def emit_rows(fmt: str | None, title: str | None, columns: list[str],
              batches: Iterable[Sequence[Sequence[Any]]]) -> None:
    """Rows, given a batch at a time, in the chosen format (table by default), each batch written as it comes."""
    if fmt == "json":
        out = sys.stdout
        out.write("[")
        sep = ""
        for batch in batches:
            for r in batch:
                out.write(sep + json.dumps(dict(zip(columns, r)), allow_nan=False, default=str))
                sep = ", "
        out.write("]\n")
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for batch in batches:
            writer.writerows([_cell(v) for v in r] for r in batch)
    else:
        stream_table(title, columns, batches)


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


def print_preflight(lines: list[str]) -> None:
    for line in lines:  # failed build/preflight chains, with the log tail (plain print: no markup)
        print(line)
