"""Commands that do not sync answer at once (goal: <= 0.3 s on the 2-core
dev machine): the heavy libraries load only when a command needs them.

Kept by the import graph, not by a clock (a loaded CI machine must not fail
the suite): each command runs in a fresh interpreter through the CLI's own
`main`, and the test reads which modules it loaded. The time itself is
measured by bench/bench_cli_startup.py (BENCHMARKS.md section 6).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from tests.conftest import REPO
from tests.fixtures.ledger_rows import add_attempt

# Loaded by no command that does not sync, compose or analyse.
HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "torch", "hydra", "omegaconf", "submitit", "alembic")
# ...and not even by the ones that never open the ledger or print a rich table.
LEDGER_AND_TABLES = ("sqlalchemy", "rich", "yaml")

_PROBE = """
import json, sys
from campaign.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
tops = sorted({m.split('.')[0] for m in sys.modules})
print(json.dumps({"code": code, "modules": tops}), file=sys.stderr)
"""


def loaded(*argv: str, cwd: Path) -> tuple[int, set[str]]:
    """Run `campaign ARGV` in a fresh interpreter; its exit code and the top-level packages it imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CAMPAIGN_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120, check=False)
    last = proc.stderr.strip().splitlines()[-1]
    report = json.loads(last)
    return report["code"], set(report["modules"])


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("startup")
    led = Ledger(work / "ledger.sqlite")
    add_attempt(led, work / "runs", state=JobState.FAILED, job_id="4242")
    return led.path


@pytest.mark.parametrize("argv", [
    ["--help"], ["--version"], ["submit", "--help"], ["advise", "--help"], ["sumbit"], ["jobs", "--no-sinc"],
    ["compare", "a", "b", "--threshold", "abc"], ["submit", "experiment=smok"], ["submit", "cluster=nosuch", "--dry-run"],
])
def test_answers_without_the_ledger_or_heavy_libraries(argv: list[str], tmp_path: Path) -> None:
    code, modules = loaded(*argv, cwd=tmp_path)
    assert code in (0, 2)
    assert not modules & {*HEAVY, *LEDGER_AND_TABLES}, sorted(modules & {*HEAVY, *LEDGER_AND_TABLES})


@pytest.mark.parametrize("argv", [["jobs", "--no-sync"], ["jobs", "--no-sync", "--format", "json"],
                                  ["jobs", "--no-sync", "--state", "failed", "--all-attempts", "--format", "csv"],
                                  ["jobs", "--no-sync", "--campaign", "unit"], ["show", "4242", "--no-sync"],
                                  ["show", "4242", "--no-sync", "--format", "json"],
                                  ["show", "4242", "--no-sync", "--format", "csv"]])
def test_no_sync_reads_sqlite_without_sqlalchemy(argv: list[str], ledger: Path, tmp_path: Path) -> None:
    code, modules = loaded("--ledger", str(ledger), *argv, cwd=tmp_path)
    assert code == 0
    assert "sqlite3" in modules  # the probe really read the ledger (campaign/ledger/sqlite_read.py)
    assert not modules & {*HEAVY, *LEDGER_AND_TABLES}, sorted(modules & {*HEAVY, *LEDGER_AND_TABLES})


@pytest.mark.parametrize("argv", [["show", "404", "--no-sync"], ["jobs", "--no-sync", "--campaign", "nosuch"]])
def test_errors_of_ledger_reads_load_sqlalchemy_only(argv: list[str], ledger: Path, tmp_path: Path) -> None:
    code, modules = loaded("--ledger", str(ledger), *argv, cwd=tmp_path)
    assert code == 2  # the ORM path names what is unknown (and what is close)
    assert "sqlalchemy" in modules  # the probe really read the ledger
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_api_names_resolve_lazily() -> None:
    """Every name api promises resolves (the lazy table has no typo), and the
    table and __all__ agree."""
    assert sorted(api._WHERE) == sorted(api.__all__)
    for name in api.__all__:
        assert getattr(api, name) is not None, name


def test_schema_missing_is_omegaconfs() -> None:
    from omegaconf import MISSING

    from campaign.config import schema

    assert schema.MISSING == MISSING
