"""The suite's green means what it ran (tests/skips.py): a planted unexpected skip
fails a pytest session run with CAMPAIGN_REQUIRE_ALL=1, in one process and under
pytest-xdist as `make test` runs it; a skip of a `cuda` test does not; without the
variable a skip stays a skip. Each session is a real pytest in a subprocess over a
planted test file, with the guard registered as tests/conftest.py registers it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLANTED = '''
import pytest

def test_runs():
    assert True

def test_planted_skip():
    pytest.skip("planted: a required tool is missing")

@pytest.mark.cuda
def test_needs_a_gpu():
    pytest.skip("no CUDA device")
'''
CONFTEST = '''
from tests import skips

def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a GPU")
    skips.register(config)
'''


def _session(tmp_path: Path, require: str | None, *args: str,
             cuda_only: bool = False) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    text = PLANTED.replace("def test_planted_skip", "def _not_a_test") if cuda_only else PLANTED
    (tmp_path / "test_planted.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("CAMPAIGN_REQUIRE_ALL", "PYTEST_XDIST_WORKER")}
    env["PYTHONPATH"] = str(REPO)
    if require is not None:
        env["CAMPAIGN_REQUIRE_ALL"] = require
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           *args, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300, check=False)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_planted_skip_fails_the_required_session(tmp_path: Path, workers: list[str]) -> None:
    proc = _session(tmp_path, "1", *workers)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "skipped, not allowed (CAMPAIGN_REQUIRE_ALL=1)" in proc.stdout
    assert "test_planted_skip: planted: a required tool is missing" in proc.stdout
    assert "test_needs_a_gpu" not in proc.stdout.split("not allowed")[1]  # the CUDA skip is allowed


def test_cuda_skips_alone_and_unrequired_skips_stay_green(tmp_path: Path) -> None:
    assert _session(tmp_path / "cuda", "1", cuda_only=True).returncode == 0
    free = _session(tmp_path / "free", None)
    assert free.returncode == 0 and "not allowed" not in free.stdout, free.stdout[-2000:]
