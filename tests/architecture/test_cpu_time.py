"""tests/cpu_time.py, the per-test CPU recorder: a test's own CPU
and its children's land on that test, in a real pytest run, and so does the
CPU of CLI runs forked from tests/cli_server.py's server (no children of
pytest); sacct's TotalCPU formats parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.cpu_time import parse_cpu, rank

BUSY = """
import subprocess, sys, time

def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

def test_own():
    _burn(0.3)

def test_child():
    subprocess.run([sys.executable, "-c", "import time\\ns = time.process_time()\\n"
                    "while time.process_time() - s < 0.3: pass"], check=True)

def test_idle():
    pass

def test_forked_cli():
    import os
    from tests import cli_server, cpu_time
    for args in (["0.3"], ["0.3"], ["0.3", "kill"]):  # a run killed by a signal is counted too
        with cpu_time.cli_call() as charge:
            proc = cli_server.run(args, cwd=None, env=dict(os.environ), timeout=300,
                                  entry="tests.fixtures.cli_entries:burn", on_cpu=charge)
        assert proc.returncode == (-9 if args[1:] else 0), proc.stderr
"""


def test_cpu_of_a_test_and_of_its_children_is_its_own(tmp_path: Path) -> None:
    (tmp_path / "test_busy.py").write_text(BUSY)
    out = tmp_path / "cpu.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAMPAIGN_TEST_CPU": str(out)}
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.cpu_time", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_busy.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tests = json.loads(out.read_text())["tests"]
    by_name = {node.rsplit("::", 1)[1]: rec for node, rec in tests.items()}
    assert set(by_name) == {"test_own", "test_child", "test_idle", "test_forked_cli"}
    assert by_name["test_own"]["self_s"] >= 0.3 and by_name["test_own"]["children_s"] < 0.3
    assert by_name["test_child"]["children_s"] >= 0.3 and by_name["test_child"]["self_s"] < 0.3
    assert by_name["test_idle"]["self_s"] < 0.3 and by_name["test_idle"]["children_s"] < 0.3
    # CLI runs forked from tests/cli_server.py's server are no children of pytest: they report their CPU
    forked = by_name["test_forked_cli"]
    assert forked["cli_calls"] == 3 and forked["cli_s"] >= 0.9 and forked["children_s"] >= forked["cli_s"], forked
    table = rank([out], top=3).splitlines()
    rows = [line for line in table if line.startswith("| ") and "::" in line]
    assert len(rows) == 3 and not any("test_idle" in r for r in rows)  # the three busy tests rank first


def test_sacct_cpu_formats() -> None:
    assert parse_cpu("") == 0.0
    assert parse_cpu("00:00:00") == 0.0
    assert parse_cpu("00:03.030") == 3.03
    assert parse_cpu("01:02:03") == 3723.0
    assert parse_cpu("2-01:00:00") == 2 * 86400 + 3600.0
    assert abs(parse_cpu("12:34.5") - 754.5) < 1e-9
