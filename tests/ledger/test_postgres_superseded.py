"""A rebuilt program's runs supersede the old build's on PostgreSQL too
(campaign/results/latest.py: the identity read from the run's JSON spec, the
runs left out through a temporary table in the read session)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

A_LINE = "{1e-6 * n},{2e-6 * n},{rel_err}"


def test_report_and_compare_leave_the_old_build_out(new_pg_ledger: Callable[[], str], tmp_path: Path) -> None:
    url = new_pg_ledger()
    program = tmp_path / "kernel.py"
    source = FAKE_KERNEL.read_text()
    env = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(program)}
    for text in (source, source.replace(A_LINE, A_LINE.replace("1e-6", "3e-6"))):
        program.write_text(text)
        proc = run_cli("--ledger", url, "submit", "experiment=compare_ok", "campaign.name=pg", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("--ledger", url, "report", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["runs"] for r in data["scope"]["superseded"]] == [1]
    assert all(r["t_best"] == pytest.approx(3e-6 * r["n"]) for r in data["best_threads"])
    proc = run_cli("--ledger", url, "compare", "pg", "pg", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert points and all(p["t_new"] == pytest.approx(3e-6 * p["n"]) for p in points)
