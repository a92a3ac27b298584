"""`report --json` (api.metrics) loads no plotting and no statistics library
it does not use (of the latest campaign's 3 s, ~3 s were imports,
scipy.stats 2.1 s of them). Kept by the import graph, not by a clock: the
command runs in a fresh interpreter through the CLI's own `main` over a real
small ledger (bench/scale_ledger's store: the DuckDB points path), and the
test reads which modules it loaded (as tests/cli/test_startup_imports.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.scale_ledger import build
from tests.conftest import REPO

_PROBE = """
import json, sys
from campaign.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def report_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, set[str]]:
    work = tmp_path_factory.mktemp("report-imports")
    build(work / "ledger.sqlite", campaigns=2, runs=3, rows_per_attempt=6)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CAMPAIGN_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", _PROBE, "--ledger", str(work / "ledger.sqlite"), "report", "--json",
                           "--all"], capture_output=True, text=True, cwd=work, env=env, timeout=300, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], proc.stdout, set(report["modules"])


def test_report_json_loads_no_plotting(report_json: tuple[int, str, set[str]]) -> None:
    code, out, modules = report_json
    assert code == 0 and json.loads(out)["fits"]  # it did report: points read and summarised
    assert not {m for m in modules if m.split(".")[0] == "matplotlib"}


def test_report_json_loads_no_scipy_stats(report_json: tuple[int, str, set[str]]) -> None:
    code, _, modules = report_json
    assert code == 0 and "scipy.stats" not in modules
