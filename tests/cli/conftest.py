"""Fixtures of the CLI tests: one small finished campaign on the local backend
(the fake kernel: one COMPLETED, one FAILED, one CHECK_FAILED job), shared by
the tests that only read it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import CLI_CONF, FAKE_CONF, FAKE_KERNEL, SLOW_KERNEL

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
