"""Fixtures of the CLI tests: one small finished campaign on the local backend
(the fake kernel: one COMPLETED, one FAILED, one CHECK_FAILED job), shared by
the tests that only read it; and a two-job ledger written directly (no job
ran), whose second job's state each test module picks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from tests.conftest import run_cli
from tests.fixtures import CLI_CONF, FAKE_CONF, FAKE_KERNEL, SLOW_KERNEL
from tests.fixtures.ledger_rows import add_attempt

FAKE_ENV = {
    "CAMPAIGN_CONFIG_PATH": f"{FAKE_CONF}:{CLI_CONF}",
    "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
    "CAMPAIGN_SLOW_KERNEL": str(SLOW_KERNEL),
}


@dataclass(frozen=True)
class Finished:
    work: Path
    ledger: Path
    name: str

    def cli(self, *args: str) -> tuple[int, str, str]:
        proc = run_cli(*args, cwd=self.work, env=FAKE_ENV)
        return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    work = tmp_path_factory.mktemp("formats")
    ledger = work / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=failures",
                   "experiment.sweeps.0.variants=ok,exit3,badcheck", cwd=work, env=FAKE_ENV)
    assert proc.returncode in (0, 3), proc.stderr  # 3: waited-for jobs failed (on purpose)
    return Finished(work, ledger, "failures-local")


SmallLedger = Callable[[JobState], Path]


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory: pytest.TempPathFactory) -> SmallLedger:
    """`small_ledger(state)`: the path of a ledger holding job 7301 FAILED in
    campaign forward-delta and job 7302 in `state` in campaign smoke-local
    (local backend, no job folder behind them), made on the first ask for
    that state in the module and shared by its tests, which only read it."""
    made: dict[JobState, Path] = {}

    def make(second: JobState) -> Path:
        if second not in made:
            work = tmp_path_factory.mktemp(f"small-ledger-{second.value.lower()}")
            led = Ledger(work / "ledger.sqlite")
            add_attempt(led, work / "runs", state=JobState.FAILED, job_id="7301", campaign="forward-delta")
            add_attempt(led, work / "runs", state=second, job_id="7302", campaign="smoke-local")
            led.close()
            made[second] = led.path
        return made[second]

    return make
