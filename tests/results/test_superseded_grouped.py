"""The superseded-identity lookup (campaign.results.latest.find) groups the
runs in the database: one row per configuration and identity text reaches
Python, not one per run (200,000 runs cost ~1.5 s row by row), and
the runs it names are still exactly the older builds' (identity texts that
differ only in OMP_NUM_THREADS are one build; interleaved run ids; several
configurations). Real SQLite ledger."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from campaign.results import latest, query
from tests.fixtures.ledger_rows import SPEC, add_attempt

A = (("env.OMP_NUM_THREADS", "1"), ("program.x", "sha256:a"))
B = (("env.OMP_NUM_THREADS", "8"), ("program.x", "sha256:b"))
REPLICATES = 6


def _ledger(tmp_path: Path) -> tuple[Ledger, list[int], list[int]]:
    """Configuration X: build A at threads 1 and 2 (each REPLICATES runs; the OMP entry follows the threads),
    then build B at 8 threads; configuration Y (d=32) only build A, interleaved. Returns the ledger, X's A runs
    (to be left out) and every run id."""
    led = Ledger(tmp_path / "ledger.sqlite")
    old, every = [], []
    for rep in range(REPLICATES):
        for threads in (1, 2):
            ident = ((A[0][0], str(threads)), A[1])
            add_attempt(led, tmp_path, state=JobState.COMPLETED,
                        spec=replace(SPEC, threads=threads, identity=ident, replicate=rep))
            old.append(len(every) + 1)
            every.append(len(every) + 1)
            add_attempt(led, tmp_path, state=JobState.COMPLETED,
                        spec=replace(SPEC, d=32, threads=threads, identity=ident, replicate=rep))
            every.append(len(every) + 1)
    for rep in range(REPLICATES):
        add_attempt(led, tmp_path, state=JobState.COMPLETED, spec=replace(SPEC, threads=8, identity=B, replicate=rep))
        every.append(len(every) + 1)
    return led, old, every


def test_find_reads_one_row_per_configuration_and_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led, old, every = _ledger(tmp_path)
    fetched: list[int] = []
    real = query.fetch_rows

    def counting(s: Any, stmt: Any) -> Any:
        keys, fetch = real(s, stmt)

        def counted(size: int) -> Any:
            batch = fetch(size)
            fetched.append(len(batch))
            return batch
        return keys, counted

    monkeypatch.setattr(query, "fetch_rows", counting)
    with led.session() as s:
        found = latest.find(s, None, True, None)
    assert found.runs == old  # X's build A, every thread count and replicate; Y's build A is its latest
    [record] = found.records
    assert record["runs"] == len(old) and record["run_ids"] == old
    assert "'sha256:a' -> 'sha256:b'" in record["change"] and "OMP_NUM_THREADS" not in record["change"]
    # X: A with OMP 1, A with OMP 2, B; Y: A with OMP 1, A with OMP 2; then the two A texts again, with their ids
    assert sum(fetched) == 5 + 4 < len(every)


def test_find_without_superseded_runs_reads_groups_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    for rep in range(REPLICATES):
        add_attempt(led, tmp_path, state=JobState.COMPLETED, spec=replace(SPEC, identity=A, replicate=rep))
    add_attempt(led, tmp_path, state=JobState.FAILED, spec=replace(SPEC, identity=B, replicate=REPLICATES))
    with led.session() as s:  # a newer build whose only job failed supersedes nothing
        assert latest.find(s, None, True, None).runs == []
        assert latest.find(s, None, False, None).runs == list(range(1, REPLICATES + 1))


def test_a_program_without_a_dtype_or_d_is_named_without_them(tmp_path: Path) -> None:
    """A tool-driven program that reads no {dtype} (its spec keeps the plan's fp32) and has no d: the
    superseded configuration is named as every other view names it, without `fp32` or `d=None`."""
    driver = json.dumps({"kernel": "mybench", "impl": "sh", "argv": ["mybench", "{n}"], "figures": []})
    tool = replace(SPEC, kernel="mybench", impl="sh", variant="plain", d=None,
                   argv=("python3", "-m", "campaign.job.fom", driver))
    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path, state=JobState.COMPLETED, spec=replace(tool, identity=A))
    add_attempt(led, tmp_path, state=JobState.COMPLETED, spec=replace(tool, identity=B))
    with led.session() as s:
        [record] = latest.find(s, None, True, None).records
    assert record["configuration"] == "mybench/sh/plain cpu on local/local", record


def test_one_configuration_in_two_campaigns_of_a_cluster_is_one_group(tmp_path: Path) -> None:
    """The runs are grouped by campaign first (the index's order): a configuration that two campaigns of
    one cluster share is still one configuration, its latest build the newer campaign's."""
    led = Ledger(tmp_path / "ledger.sqlite")
    old = [add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="first",
                       spec=replace(SPEC, identity=A, replicate=rep)) for rep in range(REPLICATES)]
    for rep in range(REPLICATES):
        add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="second", spec=replace(SPEC, identity=B, replicate=rep))
    add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="first", spec=replace(SPEC, d=32, identity=A))
    with led.session() as s:
        found = latest.find(s, None, True, None)
        alone = latest.find(s, "first", True, None)
    assert found.runs == old  # (one attempt per run: the run ids are the attempt ids)
    [record] = found.records
    assert record["runs"] == REPLICATES and "'sha256:a' -> 'sha256:b'" in record["change"]
    assert alone.runs == []  # within its own campaign the first build is the latest
