"""`campaign jobs` tells apart runs that differ only in their shape (nodes,
ranks per node, GPUs per rank, cores), a grid value or a replicate, through
the real CLI on both readers (`--no-sync`: the standard library's, else the
ORM's after a sync): csv and json give the typed columns, the table the run's
label as RunSpec.label spells it. A tool-driven program that reads no
{dtype} has no dtype there."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from campaign.cli import views
from campaign.cli.jobs_table import TABLE_COLUMNS
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.ledger.layout import JOB_COLUMNS
from campaign.planning.run_spec import RunSpec
from tests.analysis.test_jobs_frame import _fill
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("runs_apart")
    led = Ledger(work / "ledger.sqlite")
    _fill(led, work)
    led.close()
    return work / "ledger.sqlite"


def _specs(ledger: Path) -> list[RunSpec]:
    """Campaign a's runs, in attempt order (what the listing lists)."""
    led = Ledger(ledger, create=False)
    with led.session() as s:
        stmt = (select(Run.spec).join(JobAttempt, JobAttempt.run_id == Run.id).join(Campaign)
                .where(Campaign.name == "a").order_by(JobAttempt.id))
        specs = [RunSpec.from_json(spec) for spec in s.scalars(stmt)]
    led.close()
    return specs


def _expected(spec: RunSpec) -> dict[str, Any]:
    untyped = spec.kernel == "tool" and "{dtype}" not in spec.argv[3]
    return {"kernel": spec.kernel, "threads": spec.threads, "dtype": None if untyped else spec.dtype,
            "cpus": spec.alloc_cpus, "gpus": spec.gpus, "nodes": spec.nodes, "ranks": spec.ranks,
            "gpus_per_rank": spec.gpus_per_rank, "params": ",".join(f"{k}={v}" for k, v in spec.extra_args),
            "replicate": spec.replicate}


def _jobs(ledger: Path, *args: str) -> str:
    proc = run_cli("--ledger", str(ledger), "jobs", "--campaign", "a", *args, cwd=ledger.parent)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("sync", [(), ("--no-sync",)])
def test_csv_and_json_give_each_run_its_shape_and_grid(ledger: Path, sync: tuple[str, ...]) -> None:
    specs = _specs(ledger)
    assert len({spec.label for spec in specs}) == len(specs) == 6  # runs that read apart, by their labels
    rows = json.loads(_jobs(ledger, *sync, "--format", "json"))
    assert [list(r) for r in rows] == [JOB_COLUMNS] * len(specs)
    assert [{k: r[k] for k in _expected(specs[0])} for r in rows] == [_expected(spec) for spec in specs]
    assert {r["dtype"] for r in rows} == {"fp32", None}  # the tool program that reads no {dtype} has none
    table = list(csv.reader(io.StringIO(_jobs(ledger, *sync, "--format", "csv"))))
    assert table[0] == JOB_COLUMNS
    as_text: Callable[[Any], str] = lambda v: "" if v is None else str(v)  # noqa: E731
    assert table[1:] == [[as_text(r[c]) for c in JOB_COLUMNS] for r in rows]


@pytest.mark.parametrize("sync", [(), ("--no-sync",)])
def test_the_table_names_each_run_by_its_label(ledger: Path, sync: tuple[str, ...]) -> None:
    lines = _jobs(ledger, *sync).splitlines()  # into a pipe: plain columns, two spaces apart or more
    assert re.split(r"\s{2,}", lines[0]) == TABLE_COLUMNS
    labels = [re.split(r"\s{2,}", line)[TABLE_COLUMNS.index("run")] for line in lines[1:]]
    assert labels == [spec.label for spec in _specs(ledger)]
    assert "tool/sh/naive local 2t" in labels and "tool/sh/naive fp32 local 2t" in labels
    assert any(label.endswith("2n x 4r x 2t replicate=1") for label in labels)


def test_both_readers_give_the_same_rows(ledger: Path) -> None:
    fast = json.loads(_jobs(ledger, "--no-sync", "--format", "json"))
    synced = json.loads(_jobs(ledger, "--format", "json"))
    assert fast == synced
    whole = views.job_rows(Ledger(ledger, create=False), None, None, all_attempts=True)
    assert len(whole) == 7 and all(len(r) == len(JOB_COLUMNS) for r in whole)
    # a spec written before cpus and extra_args: their neutral values
    older = [dict(zip(JOB_COLUMNS, r)) for r in whole if r[1] == "b"]
    assert [(r["cpus"], r["params"], r["nodes"], r["ranks"]) for r in older] == [(2, "", 1, 1)]
