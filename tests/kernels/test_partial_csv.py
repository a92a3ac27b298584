"""Every kernel program appends each n's rows to FILE.tmp as soon as
they are measured; a kernel killed mid-sweep leaves the finished n there (and
no FILE), a finished one renames FILE.tmp to FILE."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "kernels" / "build"
SMALL = [64, 128]  # finish at once
HUGE = 8192  # naive attention: many seconds per call on a small machine
REPEATS = 2

PROGRAMS = {
    "c": [str(BUILD / "c" / "attention_forward")],
    "fortran": [str(BUILD / "fortran" / "attention_forward")],
    "torch": [sys.executable, "-m", "kernels.torch.attention_forward"],
}


def _argv(impl: str, out: Path) -> list[str]:
    return PROGRAMS[impl] + ["--n", ",".join(str(n) for n in [*SMALL, HUGE]), "--d", "64", "--threads", "1",
                             "--repeats", str(REPEATS), "--warmup", "0", "--variant", "naive", "--out", str(out)]


@pytest.mark.parametrize("impl", sorted(PROGRAMS))
def test_killed_kernel_leaves_the_finished_n_in_the_temporary_file(impl: str, tmp_path: Path) -> None:
    if impl != "torch" and not Path(PROGRAMS[impl][0]).is_file():
        if impl == "fortran" and shutil.which("gfortran") is None:
            pytest.skip("gfortran not installed")
        subprocess.run(["make", "-C", str(REPO / "kernels"), "all" if impl == "fortran" else "c"], check=True,
                       capture_output=True)
    out = tmp_path / "results.csv"
    tmp = Path(f"{out}.tmp")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(_argv(impl, out), env=env, cwd=REPO, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if tmp.is_file() and tmp.read_text().count("\n") >= 1 + len(SMALL) * REPEATS:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"{impl} ended before it could be killed: {proc.stderr.read() if proc.stderr else ''}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()  # never a file that looks complete
    with open(tmp, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({int(r["n"]) for r in rows}) == SMALL
    assert len(rows) == len(SMALL) * REPEATS and all(float(r["time_s"]) > 0 for r in rows)


@pytest.mark.parametrize("impl", ["c", "fortran"])
def test_finished_kernel_renames_the_file(impl: str, tmp_path: Path) -> None:
    if not Path(PROGRAMS[impl][0]).is_file():
        pytest.skip(f"{impl} kernels not built")
    out = tmp_path / "results.csv"
    argv = [a if a != str(HUGE) else "256" for a in _argv(impl, out)]
    argv[argv.index("--n") + 1] = "64,128,256"
    subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.is_file() and not Path(f"{out}.tmp").exists()
    with open(out, newline="") as fh:
        assert sorted({int(r["n"]) for r in csv.DictReader(fh)}) == [64, 128, 256]
