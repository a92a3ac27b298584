"""A module imports on its own, whatever was imported before it: a cycle
between packages (planning -> backends -> planning) stays hidden while the
CLI happens to import them in a working order, and breaks the first script
or test that starts elsewhere (bench/scale_ledger.py did)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

# modules a script or a test may reasonably import first, each in a fresh interpreter
FIRST = ("campaign.results.frames", "campaign.planning.ranks", "campaign.backends.base", "campaign.planning.plan")


@pytest.mark.parametrize("module", FIRST)
def test_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
