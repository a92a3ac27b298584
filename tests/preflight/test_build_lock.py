"""Two build jobs of one key at the same moment (two campaigns submitted together): the programs
are built once, the folder is never written by two makes at once, and both jobs succeed with the
same record (campaign/job/build.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from campaign.job.build import BuildTask, is_built

REPO = Path(__file__).resolve().parents[2]
# a make that takes long enough for the second build to arrive while the first runs, and counts its runs
MAKEFILE = textwrap.dedent("""\
    $(BUILD)/c/prog:
    \tmkdir -p $(BUILD)/c
    \techo start >> $(BUILD)/makes.log
    \tsleep 1.5
    \techo end >> $(BUILD)/makes.log
    \ttouch $@
    """)
DRIVER = ("import json, sys; from campaign.job.build import BuildTask, run_build; "
          "print(json.dumps(run_build(BuildTask(**json.loads(sys.argv[1])))['key']))")


def _task(src: Path, folder: Path) -> BuildTask:
    return BuildTask("k1", str(src), str(folder), ("c/prog",), "cc", "gfortran", "-O2", "-O2", ())


def test_two_builds_of_one_key_at_once_build_once_and_both_succeed(tmp_path: Path) -> None:
    src = tmp_path / "kernels"
    src.mkdir()
    (src / "Makefile").write_text(MAKEFILE)
    folder = tmp_path / "builds" / "k1"
    task = _task(src, folder)
    arg = json.dumps({**task.__dict__, "programs": list(task.programs), "modules": []})
    procs = [subprocess.Popen([sys.executable, "-c", DRIVER, arg], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [json.loads(o) for o, _ in outs] == ["k1", "k1"]
    # one make ran, start to end, never two interleaved
    assert (folder / "makes.log").read_text().split() == ["start", "end"]
    assert is_built(folder, "k1", ("c/prog",))


def test_a_build_after_a_failed_one_builds_again(tmp_path: Path) -> None:
    src = tmp_path / "kernels"
    src.mkdir()
    (src / "Makefile").write_text("$(BUILD)/c/prog:\n\tfalse\n")
    folder = tmp_path / "builds" / "k1"
    task = _task(src, folder)
    arg = json.dumps({**task.__dict__, "programs": list(task.programs), "modules": []})
    failed = subprocess.run([sys.executable, "-c", DRIVER, arg], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert failed.returncode != 0 and "make exited with" in failed.stderr
    (src / "Makefile").write_text(MAKEFILE)  # the sources fixed: the lock does not keep the failure
    again = subprocess.run([sys.executable, "-c", DRIVER, arg], cwd=REPO, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0, again.stderr
    assert is_built(folder, "k1", ("c/prog",))
