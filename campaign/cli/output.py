"""How the CLI prints: tables, counts and progress through rich."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table


def console() -> Console:
    con = Console(highlight=False, soft_wrap=True)
    if not con.is_terminal:  # piped: do not squeeze columns to 80
        con = Console(highlight=False, soft_wrap=True, width=200)
    return con


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    console().print(t)


def progress_printer() -> Callable[[int, int, str], None]:
    con = console()

    def show(done: int, total: int, label: str) -> None:
        width = 30
        filled = width * done // max(1, total)
        bar = "#" * filled + "." * (width - filled)
        con.print(f"[{bar}] {done}/{total} {label}", markup=False)

    return show


def print_counts(counts: dict[str, int]) -> None:
    text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no jobs"
    console().print(f"  runs by state: {text}")
