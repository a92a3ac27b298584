"""One definition of the result columns (resultschema.columns
RESULT_SCHEMA). The Arrow schema, the kernel CSV contract, the import
columns, `campaign results`' columns and the docs' tables are derived from
it, and no module of campaign/ or analysis/ writes a second list of result
column names by hand."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pytest

from campaign.ledger.result_schema import arrow_schema
from campaign.results.table import RESULT_COLUMNS
from resultschema import columns as schema
from resultschema.doc_tables import doc_tables

REPO = Path(__file__).resolve().parents[2]
NAMES = frozenset(c.name for c in schema.RESULT_SCHEMA)
# The roles the definition derives: a literal naming the same set by hand is a second list.
ROLES = [frozenset(v) for k, v in vars(schema).items() if k.isupper() and isinstance(v, tuple)
         and v and all(isinstance(x, str) for x in v) and set(v) <= NAMES]
# Migrations record the schema of their day and must never follow the definition.
FROZEN = ("campaign/ledger/migrations/",)


def hand_lists(source: str) -> list[tuple[int, list[str]]]:
    """Literal tuples/lists/sets of result column names that re-list the
    schema: eight or more names, or a set the definition derives (a role)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or len(node.elts) < 3:
            continue
        names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(names) != len(node.elts) or not set(names) <= NAMES:
            continue
        if len(names) >= 8 or frozenset(names) in ROLES:
            found.append((node.lineno, names))
    return found


def test_no_second_list_of_result_column_names() -> None:
    offenders = []
    for pkg in ("campaign", "analysis"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == "resultschema/columns.py" or rel.startswith(FROZEN) or "build" in path.parts:
                continue
            offenders += [f"{rel}:{line}: {names}" for line, names in hand_lists(path.read_text())]
    assert not offenders, "result column names listed outside resultschema/columns.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize("source", [
    'KEYS = ("cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads")',
    'MEASURED = ["time_s", "flops", "bytes", "rel_err"]',
    'def f():\n    return {"kernel", "impl", "variant", "device", "dtype", "threads", "n", "repeat", "time_s"}',
])
def test_the_grep_finds_a_hand_written_list(source: str) -> None:
    assert hand_lists(source)


def test_a_view_choosing_a_few_columns_is_not_a_schema_list() -> None:
    assert not hand_lists('SHOWN = ("impl", "variant", "dtype")\nOTHER = ("n", "time_s", "speedup")')


def test_the_arrow_schema_is_the_definition() -> None:
    kinds = {"int": pa.int64(), "float": pa.float64(), "text": pa.string(), "object": pa.string(),
             "bool": pa.bool_(), "map": pa.map_(pa.string(), pa.string())}
    want = [(c.name, kinds[c.kind]) for c in schema.RESULT_SCHEMA if c.where == "file"]
    assert [(f.name, f.type) for f in arrow_schema()] == want


def test_the_csv_contracts_and_export_are_the_definition() -> None:
    rows = schema.RESULT_SCHEMA
    assert schema.KERNEL_COLUMNS == tuple(c.name for c in rows if c.kernel == schema.REQUIRED)
    assert schema.REQUIRED_COLUMNS == tuple(c.name for c in rows if c.imported == schema.REQUIRED)
    assert [name for name, _, _ in RESULT_COLUMNS] == [c.name for c in rows if c.json]
    # every column a CSV may carry has a rule the readers apply; every stored one an Arrow type
    assert all(c.kind in ("int", "float", "text") for c in rows if c.kernel or c.imported)


@pytest.mark.parametrize("doc", sorted(doc_tables()))
def test_the_docs_tables_are_the_definition(doc: str) -> None:
    assert doc_tables()[doc] in (REPO / doc).read_text(), f"regenerate {doc}'s table from resultschema.columns"


def test_the_import_columns_in_the_docs_are_the_definition() -> None:
    """docs/results.md names an imported CSV's required and optional columns as the definition
    has them (it once pointed at the kernel CSV's table: dtype required, no cluster or partition)."""
    text = (REPO / "docs/results.md").read_text()
    start = text.index("- An imported CSV carries")
    bullet = " ".join(text[start:text.index("\n\n", start)].split())
    required = bullet[:bullet.index("each cell filled")]
    optional = bullet[bullet.index("`dtype` is optional"):bullet.index("any other column")]
    named = re.compile(r"`([a-z_]+)`")
    assert f"carries {len(schema.REQUIRED_COLUMNS)} columns" in bullet.replace("ten", "10")
    assert named.findall(required) == list(schema.REQUIRED_COLUMNS)
    assert named.findall(optional) == list(schema.OPTIONAL_COLUMNS)


def test_an_optional_column_empty_in_every_row_is_absent(tmp_path: Path) -> None:
    """A job's CSV whose `d` column is blank in every row reads as one
    without the column (the run's planned d is not contradicted), and so does
    an analysis input whose optional columns hold nothing."""
    from analysis.schema import validate_results
    from campaign.plumbing.states import JobState
    from campaign.results.reader import Expected, classify_output, classify_stream

    want = Expected((64, 128), False, "fake", "fp32", d=64, threads=1)
    outcomes = []
    for name, header, cell in (("with", "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s", ", ,"),
                               ("without", "kernel,impl,variant,device,dtype,n,threads,repeat,time_s", ",")):
        path = tmp_path / name / "results.csv"
        path.parent.mkdir()
        path.write_text(header + "\n" + "".join(f"fake,py,ok,cpu,fp32,{n}{cell}1,0,0.5\n" for n in (64, 128)))
        outcomes.append(classify_output(path, want))
        outcomes.append(next(classify_stream([(path, want)])))
    assert [o.state for o in outcomes] == [JobState.COMPLETED] * 4, [o.reason for o in outcomes]
    import pandas as pd

    frame = pd.DataFrame({"cluster": ["a"], "partition": ["p"], "kernel": ["k"], "impl": ["c"], "variant": ["v"],
                          "device": ["cpu"], "threads": [1], "n": [64], "repeat": [0], "time_s": [0.5],
                          "d": [None], "flops": [""], "note": [""]})
    out = validate_results(frame)
    assert "d" not in out and "flops" not in out and "note" in out
