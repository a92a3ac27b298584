"""The one reader over a hostile corpus: seeded random mutations of a kernel
CSV (hostile cells in every field, NaN, huge ints, control characters, wrong
types, short and long rows, blank lines, repeated keys, broken headers, BOM,
CRLF, cut and empty files). A file is either read, every typed value what its
cell says and within its column's rule, or refused by a message whose line,
column and quoted cell are the file's own; a sync's pooled batch decides each
file as the file alone."""

from __future__ import annotations

import csv
import io
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from analysis.rules import shown
from campaign.plumbing.errors import ImportError_
from campaign.plumbing.states import JobState
from campaign.results import reader
from campaign.results.reader import Expected, classify_output, classify_stream, parse_columns
from resultschema.columns import CONTROL, INT64, KERNEL_COLUMNS, TEXT_MAX, column_rule
from tests.results.test_strict_reader import BAD, GOOD, WANT

SEED = 18
CASES = 3000
HEADER = ["kernel", "impl", "variant", "device", "dtype", "n", "d", "threads", "repeat", "time_s", "first_call_s",
          "rel_err"]
SWEEP = (64, 128, 256)
HOSTILE = ["1_000", "inf", "-inf", "Infinity", "nan", "NaN", "+nan", "+-nan", "0x10", "\u0661", "\u0661\u0662", "+",
           "-", ".5", "5.", ".", "1e5", "1E+05", "1e", "e5", "+3", "-0", "-0.0", "007", "9" * 19,
           str(2**63 - 1), str(2**63), str(-(2**63)), str(-(2**63) - 1), " 5", "5 ", "\u00a05", "5\u2003",
           '"a\nb"', '"a\x00b"', '"a\rb"', "", " ", "1e999", "-1e-400", "1e-400", "x" * 201, " " + "x" * 200,
           "\u00e9t\u00e9", '"a,b"', "a\x7fb", "\x1f", "abc", "0", "-5", "1.5", "2e-308", "1" * 400 + "x", "1" * 5000, "0" * 25 + "5", "-" + "0" * 30,
           '"5"', '" 5 "', "fp16", "fake", "gemm", "1e-7", "0.5", "1e-3", "64", "128", "512"]
ARGS = [(), (("sdpa-backend", "cudnn"),), (("a", "32"), ("h", "2560")), (("first-call-s", "9"),)]


def _base(rng: random.Random) -> tuple[list[str], list[list[str]]]:
    header = list(HEADER)
    if rng.random() < 0.3:
        header.insert(rng.randrange(len(header) + 1), rng.choice(["a", "backend", "params", "gpu_model", "flops",
                                                                   "cluster", "h", "l2_flush"]))
    rows = []
    for n in SWEEP:
        for r in range(rng.choice([1, 2, 3])):
            cell = {"kernel": "fake", "impl": "py", "variant": "ok", "device": "cpu", "dtype": "fp32", "n": str(n),
                    "d": "64", "threads": "1", "repeat": str(r), "time_s": f"{rng.uniform(1e-6, 1):.6g}",
                    "first_call_s": f"{rng.uniform(0, 1):.3g}", "rel_err": rng.choice(["1e-7", "0", "2.5e-8"])}
            rows.append([cell.get(h, rng.choice(["32", "x", "cudnn", "", "1.5"])) for h in header])
    return header, rows


def _mutate(rng: random.Random, header: list[str], rows: list[list[str]]) -> str:
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        what = rng.randrange(10)
        if what <= 3 and rows:  # a hostile cell
            row = rows[rng.randrange(len(rows))]
            if row:
                row[rng.randrange(len(row))] = rng.choice(HOSTILE)
        elif what == 4 and rows:  # a whole column of one value
            col = rng.randrange(len(header))
            value = rng.choice(HOSTILE)
            for row in rows:
                if col < len(row):
                    row[col] = value
        elif what == 5:
            header[rng.randrange(len(header))] = rng.choice(header + ["", " n ", "x\x01", "n"])
        elif what == 6 and rows:
            rows.insert(rng.randrange(len(rows) + 1), list(rng.choice(rows)))  # a duplicate key
        elif what == 7 and rows:
            row = rows[rng.randrange(len(rows))]
            row.append("1") if rng.random() < 0.5 else row.pop()  # a row too long or too short
        elif what == 8 and len(header) > 1:
            col = rng.randrange(len(header))
            header.pop(col)
            for row in rows:
                if col < len(row):
                    row.pop(col)
        elif rows:
            rows.insert(rng.randrange(len(rows) + 1), rng.choice([[], [""], ["  "]]))  # a blank line
    text = "".join(",".join(r) + "\n" for r in [header, *rows])
    cut = rng.randrange(12)
    if cut == 0:
        text = text[:rng.randrange(len(text) + 1)]
    elif cut == 1:
        text = text.rstrip("\n")
    elif cut == 2:
        text = "\ufeff" + text
    elif cut == 3:
        text = text.replace("\n", "\r\n")
    elif cut == 4:
        text = text + "\n\n"
    return text


def _corpus() -> list[str | bytes]:
    rng = random.Random(SEED)
    out: list[str | bytes] = [GOOD, *(content for content, _, _ in BAD.values())]
    for _ in range(CASES):
        out.append(_mutate(rng, *_base(rng)))
    return out


CORPUS = _corpus()


def _parsed(text: str) -> list[dict[str, Any]] | str:
    try:
        return parse_columns(text, KERNEL_COLUMNS, "f.csv").rows()
    except ImportError_ as exc:
        return str(exc)


Parsed = dict[str, list[dict[str, Any]] | str]


@pytest.fixture(scope="module")
def parsed() -> Parsed:
    """Each text of the corpus -> the rows the reader makes of it, or its refusal. Three tests check
    every parse (the corpus as a whole, then each quarter twice): parsed once, read only. (A module
    fixture: tests/parallel.py keeps the module on one worker, so no worker parses it again.)"""
    return {text: _parsed(text) for text in CORPUS if isinstance(text, str)}


def _texts(part: int) -> list[str]:
    return [c for c in CORPUS[part::4] if isinstance(c, str)]


def test_the_corpus_accepts_and_refuses_both_ways(parsed: Parsed) -> None:
    """Not a corpus of one kind: it holds accepted files and refused ones, refused for every kind of reason."""
    results = [parsed[c] for c in CORPUS if isinstance(c, str)]
    refusals = [r for r in results if isinstance(r, str)]
    assert CASES // 10 < len(results) - len(refusals) < len(results) - CASES // 10
    for reason in ("is not an integer", "is not a number", "is outside the 64-bit integer range", "must be positive",
                   "finite number", "is empty", "control character", f"longer than {TEXT_MAX}", "fields, the header",
                   "the same configuration", "appears twice", "empty or unprintable", "missing column",
                   "empty file", "NUL byte"):
        assert any(reason in r for r in refusals), reason


def _records(text: str) -> dict[int, list[str]]:
    """The file's records by the line each starts on (blank lines left out)."""
    out, line = {}, 1
    for cells in csv.reader(io.StringIO(text, newline="")):
        if cells and not (len(cells) == 1 and not cells[0].strip()):
            out[line] = cells
        line += 1 + sum(c.count("\n") for c in cells)
    return out


def _typed(value: Any, cell: str, name: str) -> bool:
    """A read cell's value is what the cell says, within its column's rule."""
    rule, text = column_rule(name), cell.strip()
    if text == "":
        return value is None
    if rule is None or rule.kind == "text":
        return value == text and len(text) <= TEXT_MAX and not re.search(CONTROL, text)
    if rule.kind == "int":
        return re.fullmatch(r"[+-]?[0-9]+", text) is not None and value == int(text) and \
            INT64[0] <= value <= INT64[1] and value >= (rule.minimum or 0)
    number = float(text)
    if name == "rel_err":  # judged by the run's check, not refused: any number
        return value == number or (math.isnan(value) and math.isnan(number))
    return value == number and math.isfinite(value) and (value > 0 if rule.positive else value >= 0)


@pytest.mark.parametrize("part", range(4))
def test_a_read_file_holds_what_its_cells_say(part: int, parsed: Parsed) -> None:
    for text in _texts(part):
        rows = parsed[text]
        if isinstance(rows, str):
            continue
        records = list(_records(text).values())
        header = [c.strip() for c in records[0]]
        assert len(rows) == len(records) - 1, text
        for row, cells in zip(rows, records[1:]):
            for name, cell in zip(header, cells):
                value = row[name] if name in row else (row["extra"] or {}).get(name)
                if name in ("ranks", "nodes") and value is not None:
                    value = int(value)
                assert _typed(value, cell, name), (text, name, cell, value)


@pytest.mark.parametrize("part", range(4))
def test_a_refusal_names_the_files_own_line_column_and_cell(part: int, parsed: Parsed) -> None:
    """The line, column and cell a refusal quotes are the file's: the cell named is at that line,
    in that column; a short row has the fields said; a repeated row repeats the line named."""
    for text in _texts(part):
        message = parsed[text]
        if not isinstance(message, str):
            continue
        assert message.startswith("f.csv"), message
        found = re.match(r"f\.csv line (\d+): (.*)", message, re.S)
        if found is None or found.group(1) == "1":
            continue  # the whole file, or its header
        line, what = int(found.group(1)), found.group(2)
        record = _records(text)[line]
        header = [c.strip() for c in _records(text)[1]]
        if cell := re.match(r"column (\S+) ", what):
            name = cell.group(1)
            assert name in header, message
            quoted = record[header.index(name)]
            assert what.endswith(("is empty", f"{shown(quoted)}")) and (quoted.strip() == "") == what.endswith("is empty"), \
                (message, quoted)
        elif fields := re.match(r"(\d+) fields, the header has (\d+)$", what):
            assert (len(record), len(header)) == (int(fields.group(1)), int(fields.group(2))), message
        else:
            earlier = re.fullmatch(r"the same configuration, n and repeat as line (\d+)", what)
            assert earlier is not None, message
            first = _records(text)[int(earlier.group(1))]
            keyed = [k for k, name in enumerate(header) if name not in ("time_s", "first_call_s", "rel_err")]
            assert [first[k].strip() for k in keyed] == [record[k].strip() for k in keyed] or \
                re.search(r"[+0]", ",".join(record)), message


@pytest.mark.parametrize(("part", "pool_chars"), [(0, None), (1, None), (0, 3000)])
def test_many_files_at_once_as_one_by_one(part: int, pool_chars: int | None, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync's batch (classify_stream: the rules applied to the rows of all
    its files at once) decides each file as classify_output does alone: a bad
    cell, a duplicate key or a broken header in one file never touches the
    files around it, and every accepted file keeps its own rows; so do pools
    cut short by their size (POOL_CHARS: a sync's memory stays bounded)."""
    if pool_chars is not None:
        monkeypatch.setattr(reader, "POOL_CHARS", pool_chars)
    rng = random.Random(SEED + 10 + part)
    items = []
    for k, content in enumerate(CORPUS[part::2][:800]):
        path = tmp_path / f"j{k}" / "results.csv"
        path.parent.mkdir()
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        items.append((path, Expected(rng.choice([SWEEP, SWEEP[:2], (64,), WANT.n]), rng.random() < 0.5,
                                     rng.choice(["fake", None]), rng.choice(["fp32", None]))))
    together = list(classify_stream(items))
    alone = [classify_output(path, want) for path, want in items]
    assert [(o.state, o.reason, repr(o.rows)) for o in together] == [(o.state, o.reason, repr(o.rows)) for o in alone]
    assert len({o.state for o in together}) > 1


@pytest.mark.parametrize("first", ["\ufefffake", "fake\ufeff", " fake", "fake,"])
def test_a_pool_of_files_keeps_each_cell_as_its_file_has_it(first: str, tmp_path: Path) -> None:
    """Cells the CSV reader of a pooled batch might read otherwise (a byte
    order mark at the start of the pooled rows, spaces, a stray comma) decide
    as in the file alone."""
    items = []
    for k, kernel in enumerate([first, "fake", "fake"]):
        path = tmp_path / f"j{k}" / "results.csv"
        path.parent.mkdir()
        rows = "".join(f"{kernel},py,ok,cpu,fp32,{n},64,1,0,0.5,0.1,1e-7\n" for n in SWEEP)
        path.write_text(",".join(HEADER) + "\n" + rows, encoding="utf-8")
        items.append((path, Expected(SWEEP, False, "fake", "fp32")))
    together = list(classify_stream(items))
    assert [(o.state, o.reason, repr(o.rows)) for o in together] == \
        [(o.state, o.reason, repr(o.rows)) for o in (classify_output(p, w) for p, w in items)]
    assert together[1].state is JobState.COMPLETED
