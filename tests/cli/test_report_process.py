"""What the `report` process spends beside the report: no automatic full
collection, and OpenBLAS without its thread pool.

`report` runs no automatic full collection: the collector is paused for
the whole command (the ledger's opening included) and what it built is
frozen at its end, so neither the collection that follows the pause nor the
interpreter's at exit walks the imported libraries and the inputs again
(a quarter of the smoke campaign's `report --json` CPU, BENCHMARKS.md 23).
Kept by counting the collections (gc.callbacks), not by a clock: the command
runs in a fresh interpreter through the CLI's own dispatch over a real small
ledger (bench/scale_ledger's store).

OpenBLAS is loaded with one thread (its threads spin while they wait: CPU
the report never uses), unless the user chose a count, and the variable
that says so is gone after the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.scale_ledger import build
from tests.conftest import REPO

_PROBE = """
import gc, json, os, sys
from campaign.cli import _ledger, commands
from campaign.cli.parser import parse

args = parse(sys.argv[1:])
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
code = commands.dispatch(args, _ledger)
print(json.dumps({"code": code, "collections": runs, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled(),
                  "blas": os.environ.get("OPENBLAS_NUM_THREADS")}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report-gc") / "ledger.sqlite"
    build(path, campaigns=2, runs=3, rows_per_attempt=6)
    return path


def _probe(ledger: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CAMPAIGN_DEBUG", None)
    env.pop("OPENBLAS_NUM_THREADS", None)
    proc = subprocess.run([sys.executable, "-c", _PROBE, "--ledger", str(ledger), "report", *args],
                          capture_output=True, text=True, cwd=ledger.parent, env=env, timeout=300, check=False)
    result: dict[str, Any] = json.loads(proc.stderr.strip().splitlines()[-1])
    return result


def test_report_json_collects_nothing(ledger: Path) -> None:
    result = _probe(ledger, "--json", "--all")
    assert result["code"] == 0
    # at most the young collection that follows the pause, over what was made since the freeze
    assert result["collections"] in ([], [0])
    assert result["frozen"] > 0 and result["enabled"]  # the survivors frozen; the collector on again after
    assert result["blas"] is None  # set for the command only


def test_one_blas_thread_for_the_command_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from campaign.cli.report_process import one_blas_thread

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with one_blas_thread():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's choice stands
    with one_blas_thread():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_report_out_collects_only_between_clusters(ledger: Path) -> None:
    out = ledger.parent / "report"
    result = _probe(ledger, "--all", "--out", str(out))
    assert result["code"] == 0 and sorted(p.suffix for p in out.iterdir() if p.suffix in (".md", ".html"))
    clusters = len(list(out.glob("*.md")))
    # write_reports' explicit full collection before each cluster but the first (their figures), then
    # at most the young collection that follows the pause
    assert result["collections"] in ([2] * (clusters - 1), [2] * (clusters - 1) + [0])
    assert result["frozen"] > 0 and result["enabled"]
