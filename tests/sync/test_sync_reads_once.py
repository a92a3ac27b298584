"""A sync's per-job costs: each finished job's
files are opened once per sync, and the run specs are judged from the few
fields the database extracts, with the same Expected as the whole spec gives."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.finished_jobs import build
from campaign import api
from campaign.commands.sync_specs import expected_for
from campaign.ledger import JobAttempt, Ledger, Run
from campaign.plumbing.states import JobState
from campaign.results import expected as expected_module
from campaign.results.expected import ANY_VARIANT, Expected
from tests.conftest import REPO
from tests.fixtures.ledger_rows import add_attempt, spec_with

# Counts every open of a file under the jobs folder (builtins.open and os.open
# both raise the "open" audit event) while api.sync runs, in its own interpreter.
_PROBE = """
import json, sys
from collections import Counter
from campaign import api
from campaign.ledger import JobAttempt, Ledger, Run
from campaign.plumbing.states import JobState
jobs = sys.argv[2]
opened = Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(jobs):
        opened[args[0]] += 1
sys.addaudithook(hook)
report = api.sync(Ledger(sys.argv[1]))
print(json.dumps({"rows": report.ingested_rows, "opened": opened}))
"""


def test_each_job_file_is_opened_once_per_sync(tmp_path: Path) -> None:
    built = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=12, rows_per_job=10)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "ledger.sqlite"), str(tmp_path / "jobs")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=True)
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["rows"] == built["rows"]
    opened = Counter(found["opened"])
    for j in range(1, built["jobs"] + 1):
        folder = tmp_path / "jobs" / f"j{j}"
        assert opened[str(folder / "exit.json")] == 1  # the local backend's query read it; sync used that
        assert opened[str(folder / "results.csv")] == 1
    own = {p: k for p, k in opened.items() if Path(p).parent.name.startswith("j")}  # the jobs' (not the store's)
    assert len(own) >= 2 * built["jobs"] and set(own.values()) == {1}, own


def test_spec_fields_give_the_whole_specs_expected(tmp_path: Path) -> None:
    check_spec_fields(Ledger(tmp_path / "ledger.sqlite"), tmp_path)


def check_spec_fields(led: Ledger, tmp_path: Path) -> None:
    """Hostile, partial and old specs: the database's extract of the fields
    gives what Expected.of_spec gives from the whole decoded spec (also run
    on PostgreSQL: tests/ledger/test_postgres.py)."""
    specs = [spec_with(), spec_with(variant=ANY_VARIANT, d=None), spec_with(check=True, n=(7, 8, 2**40)),
             spec_with(extra_args=(("mode", 'x"y\\z'), ("ünï", '[1, {"a": null}]'))),
             spec_with(nodes=3, ranks_per_node=4, kernel="k'; DROP TABLE run; --", dtype="fp\u202e16"),
             spec_with(threads=9), spec_with(threads=10)]
    aids = [add_attempt(led, tmp_path / "runs", spec=spec, job_id=str(100 + i)) for i, spec in enumerate(specs)]
    old = {"n": [64, 128], "check": 1, "kernel": "old", "threads": True, "d": 2.5}  # an older, sparser spec
    with led.session.begin() as s:
        runs = {aid: s.get_one(JobAttempt, aid).run_id for aid in aids}
        s.get_one(Run, runs[aids[-1]]).spec = old
        s.get_one(JobAttempt, aids[0]).n = [99]  # an attempt that reruns part of the n
    wholes = [json.loads(json.dumps(spec.to_json())) for spec in specs[:-1]] + [old]
    with led.session() as s:
        got = expected_for(s, [(aid, runs[aid]) for aid in aids + aids[:2]])
    for aid, whole in zip(aids, wholes, strict=True):
        assert got[aid] == Expected.of_spec(whole, (99,) if aid == aids[0] else tuple(whole["n"]))
    assert got[aids[0]].n == (99,) and got[aids[1]].n == tuple(specs[1].n)


EXPECTED_SOURCE = Path(expected_module.__file__ or "").read_text()


def spec_reads(source: str) -> tuple[set[str], list[str]]:
    """What `Expected.of_spec` in `source` (expected.py's text) reads of its
    spec: the fields named by a literal (`spec["n"]`, `spec.get("d")`),
    followed into the module's own functions the spec is handed to; and each
    use that names no field (a computed key, a loop, `**spec`, a method other
    than get, a hand-off elsewhere), which could read any."""
    tree = ast.parse(source)
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    expected = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "Expected")
    of_spec = next(f for f in expected.body if isinstance(f, ast.FunctionDef) and f.name == "of_spec")
    fields: set[str] = set()
    unknown: list[str] = []
    todo, seen = [(of_spec, of_spec.args.args[1].arg)], set()
    while todo:
        func, name = todo.pop()
        if (func.name, name) in seen:
            continue
        seen.add((func.name, name))
        for node in ast.walk(func):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            up, where = parent[node], f"{func.name} line {node.lineno}"
            call = parent.get(up)
            if isinstance(up, ast.Subscript) and up.value is node and isinstance(node.ctx, ast.Load):
                key = up.slice
            elif (isinstance(up, ast.Attribute) and up.attr == "get" and isinstance(call, ast.Call)
                  and call.func is up and call.args):
                key = call.args[0]
            elif isinstance(up, ast.Call) and node in up.args and isinstance(up.func, ast.Name) \
                    and up.func.id in helpers:
                todo.append((helpers[up.func.id], helpers[up.func.id].args.args[up.args.index(node)].arg))
                continue
            else:
                unknown.append(f"{where}: {ast.unparse(up)}")
                continue
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                fields.add(key.value)
            else:
                unknown.append(f"{where}: {ast.unparse(up)}")
    return fields, unknown


def test_of_spec_reads_only_the_fields_a_sync_extracts() -> None:
    """Expected.SPEC_FIELDS is the one list of what of_spec reads and what a
    sync extracts (a field read and not listed would be None at sync only):
    checked here on of_spec's source, never per call. Each is a field of a
    planned run's spec, and of_spec reads each."""
    whole = json.loads(json.dumps(spec_with(nodes=2, ranks_per_node=3, check=True).to_json()))
    assert set(Expected.SPEC_FIELDS) <= set(whole)
    full = Expected.of_spec(whole)
    assert full.threads is not None and full.ranks == 6 and full.nodes == 2
    fields, unknown = spec_reads(EXPECTED_SOURCE)
    assert unknown == [] and fields == set(Expected.SPEC_FIELDS), (unknown, fields)


@pytest.mark.parametrize(("old", "new", "found"), [
    ('spec.get("kernel")', 'spec.get("partition")', "partition"),  # a field the list leaves out
    ('spec.get("ranks_per_node")', 'spec.get("gpus_per_rank")', "gpus_per_rank"),  # in a helper
    ('spec["n"]', 'spec[FIELD]', "spec[FIELD]"),  # a key that names no field
    ("own_shapes = ", "dict(spec)\n        own_shapes = ", "dict(spec)"),  # handed elsewhere
    ("own_shapes = ", "spec.items()\n        own_shapes = ", "spec.items"),
    ("own_shapes = ", "[k for k in spec]\n        own_shapes = ", "for k in spec"),
    ("own_shapes = ", "Fields(spec)\n        own_shapes = ", "Fields(spec)"),  # not one of the module's functions
])
def test_a_planted_read_outside_spec_fields_is_found(old: str, new: str, found: str) -> None:
    assert EXPECTED_SOURCE.count(old) == 1
    fields, unknown = spec_reads(EXPECTED_SOURCE.replace(old, new))
    assert found in fields - set(Expected.SPEC_FIELDS) or any(found in u for u in unknown), (fields, unknown)


def test_planted_exit_codes_never_stop_a_sync(tmp_path: Path) -> None:
    """The local backend's exit record is the only one a sync reads now: a
    code the ledger cannot hold is an unreadable record, never a crash."""
    built = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=4, rows_per_job=10)
    planted = {1: {"exit_code": 10**20}, 2: {"exit_code": -(10**30), "cancelled": True},
               3: {"exit_code": "3", "cancelled": True}}
    for j, record in planted.items():
        (tmp_path / "jobs" / f"j{j}" / "exit.json").write_text(json.dumps(record))
    led = Ledger(tmp_path / "ledger.sqlite")
    report = api.sync(led)
    with led.session() as s:
        got = {a.id: (a.state, a.exit_code, a.reason) for a in s.query(JobAttempt)}
    assert got[1][0] is JobState.LOST_OUTPUT and "out of range" in (got[1][2] or "")
    # cancelled, but their programs had written every n (the fixture's files are whole): counted complete
    assert got[2][:2] == (JobState.COMPLETED, None) and got[3][:2] == (JobState.COMPLETED, None)
    assert got[2][2] == got[3][2] == "ended CANCELLED after writing every n: counted complete"
    assert got[4][:2] == (JobState.COMPLETED, 0) and report.ingested_rows == built["rows"] // 4 * 3  # (a cancelled job's finished rows are kept)
