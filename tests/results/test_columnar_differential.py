"""The columnar reader against the per-row reference (issue 18): over the
hostile corpus and thousands of seeded random mutations of a kernel CSV, the
same state, reason and rows (values, types, NaN, -0.0 and key order alike),
and the same ledger rows and stored bytes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from campaign.plumbing.errors import ImportError_
from campaign.plumbing.states import JobState
from campaign.results import reader
from campaign.results.reader import Expected, classify_output, classify_stream, parse_rows, parse_text
from resultschema.columns import KERNEL_COLUMNS
from tests.results import reference_reader as ref
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


def _parsed(fn: Any, text: str) -> str:
    try:
        return repr(fn(text, KERNEL_COLUMNS, "f.csv"))
    except ImportError_ as exc:
        return f"ImportError_: {exc}"


def test_the_corpus_accepts_and_refuses_both_ways() -> None:
    """Not a corpus of one kind: it holds accepted files, refused ones, and
    files the whole-column checks hand to the per-cell reference."""
    results = [_parsed(parse_rows, c) for c in CORPUS if isinstance(c, str)]
    accepted = sum(not r.startswith("ImportError_") for r in results)
    assert CASES // 10 < accepted < len(results) - CASES // 10


@pytest.mark.parametrize("part", range(4))
def test_same_rows_or_same_error_as_the_per_cell_reference(part: int) -> None:
    texts = [c for c in CORPUS[part::4] if isinstance(c, str)]
    for text in texts:
        assert _parsed(parse_text, text) == _parsed(parse_rows, text), text


@pytest.mark.parametrize("part", range(4))
def test_same_state_reason_and_rows_as_the_row_reader(part: int, tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    rng = random.Random(SEED + part)
    for content in CORPUS[part::4]:
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        want = Expected(rng.choice([SWEEP, SWEEP[:2], (64,), WANT.n]), rng.random() < 0.5,
                        rng.choice(["fake", None]), rng.choice(["fp32", None]))
        new = classify_output(path, want)
        state, reason, rows = ref.classify(path, want)  # once: the reference is the slow side
        assert (new.state, new.reason, repr(new.rows)) == (state, reason, repr(rows)), content


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
