"""The bad-input corpus's parts (tests/reliability/test_bad_input.py): a case, and
the files and ledgers a case sets up before its command runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures import KNOWN_CSV

GOOD_LINES = KNOWN_CSV.read_text().splitlines()
HEADER = GOOD_LINES[0].split(",")


@dataclass(frozen=True)
class Case:
    """One bad input: CLI arguments (placeholders filled per test), the
    fragment the error line must contain, and an optional setup step that
    writes files the arguments name."""

    args: tuple[str, ...]
    fragment: str
    setup: Callable[[Path], None] | None = None
    env: tuple[tuple[str, str], ...] = ()
    ledger: str = "good"  # good | notdb | newer | dir | zero-length file: which --ledger to pass


# ---------------------------------------------------------------- file makers


def bad_csv(name: str, lines: list[str] | bytes) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        path = tmp / name
        if isinstance(lines, bytes):
            path.write_bytes(lines)
        else:
            path.write_text("\n".join(lines) + ("\n" if lines else ""))

    return make


def replace_cell(column: str, value: str, row: int = 3) -> list[str]:
    """known_results.csv with one cell of file line `row` (1 = header) replaced."""
    lines = list(GOOD_LINES)
    cells = lines[row - 1].split(",")
    cells[HEADER.index(column)] = value
    lines[row - 1] = ",".join(cells)
    return lines


def drop_column(column: str) -> list[str]:
    i = HEADER.index(column)
    return [",".join(c for j, c in enumerate(line.split(",")) if j != i) for line in GOOD_LINES]


def broken_experiment(tmp: Path) -> None:
    folder = tmp / "userconf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "broken.yaml").write_text("name: broken\nsweeps:\n  - kernel: decode\n    impls: [torch\n  n: {\n")


def bad_type_experiment(tmp: Path) -> None:
    folder = tmp / "userconf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "badtype.yaml").write_text(
        "name: badtype\nrepeats: many\nsweeps:\n  - kernel: decode\n    impls: [torch]\n"
        "    variants: [naive]\n    n: [64]\n")


def empty_bin(tmp: Path) -> None:
    (tmp / "emptybin").mkdir()


def a_file(tmp: Path) -> None:
    (tmp / "afile").write_text("not a folder")


def a_fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "afifo")


def evil_env_cluster(name: str) -> Callable[[Path], None]:
    """A user cluster config (copy of cluster=local) whose env has the variable `name`."""
    def make(tmp: Path) -> None:
        folder = tmp / "userconf" / "cluster"
        folder.mkdir(parents=True)
        text = (Path(__file__).resolve().parents[2] / "conf" / "cluster" / "local.yaml").read_text()
        (folder / "evil.yaml").write_text(text.replace("name: local", "name: evil") + f"env: {{'{name}': '1'}}\n")

    return make


def with_header_twice(column: str) -> list[str]:
    lines = list(GOOD_LINES)
    i = HEADER.index(column)
    return [line + "," + line.split(",")[i] for line in lines]


def user_file(name: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / name).write_text("not a folder\n")

    return make
