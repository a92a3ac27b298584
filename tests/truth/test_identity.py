"""A run's identity includes the rendered environment and the
program's content (a Python program's code: not its comments and docstrings);
changing either submits new runs, and submit says why."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from campaign.planning.identity import CODE_NOTE
from tests.conftest import run_cli
from tests.fixtures import FAKE_KERNEL
from tests.truth.helpers import FAKE_ENV, db


def _submit(ledger: Path, tmp_path: Path, *extra: str, env: dict[str, str] = FAKE_ENV) -> str:
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=failures", f"campaign.workdir={tmp_path / 'runs'}",
                   "experiment.sweeps.0.variants=[ok]", *extra, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_environment_and_program_changes_submit_new_runs_and_say_why(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    kernel = tmp_path / "kernel.py"
    shutil.copyfile(FAKE_KERNEL, kernel)
    env = {**FAKE_ENV, "CAMPAIGN_FAKE_KERNEL": str(kernel)}
    first = _submit(ledger, tmp_path, "cluster.omp_proc_bind=sptead", env=env)
    assert "1 runs planned, 0 already in the ledger, 1 submitted" in first
    same = _submit(ledger, tmp_path, "cluster.omp_proc_bind=sptead", env=env)
    assert "1 already in the ledger, 0 submitted" in same and "new run" not in same

    fixed = _submit(ledger, tmp_path, "cluster.omp_proc_bind=spread", env=env)
    assert "0 already in the ledger, 1 submitted" in fixed
    assert "1 new run(s): env.OMP_PROC_BIND 'sptead' -> 'spread'" in fixed

    # a Python program is its code: a reworded comment or docstring is the same program
    source = kernel.read_text()
    reworded = re.sub(r"(?m)^(\s*)# ", r"\1# reworded: ", source.replace('"""A ', '"""Reworded. A ', 1))
    assert reworded.count("# reworded: ") > 3 and "Reworded. A " in reworded
    kernel.write_text(reworded + "\n# a note\n")
    same_code = _submit(ledger, tmp_path, "cluster.omp_proc_bind=spread", env=env)
    assert "1 already in the ledger, 0 submitted" in same_code and "new run" not in same_code, same_code

    kernel.write_text(kernel.read_text() + "\nREBUILT = True\n")
    rebuilt = _submit(ledger, tmp_path, "cluster.omp_proc_bind=spread", env=env)
    assert "1 submitted" in rebuilt and "1 new run(s): program.kernel.py 'python code sha256:" in rebuilt, rebuilt
    assert CODE_NOTE not in rebuilt  # that note is for a ledger's byte hashes of before

    modules = _submit(ledger, tmp_path, "cluster.omp_proc_bind=spread", "+cluster.env.FOO=bar", env=env)
    assert "1 new run(s): env.FOO (none) -> 'bar'" in modules
    keys = db(ledger, "SELECT count(DISTINCT key) FROM run")
    assert keys == [(4,)]

    moved = tmp_path / "moved.py"
    shutil.copyfile(kernel, moved)
    more = _submit(ledger, tmp_path, "cluster.omp_proc_bind=spread", "+cluster.env.FOO=bar",
                   env={**env, "CAMPAIGN_FAKE_KERNEL": str(moved)})
    (line,) = [ln for ln in more.splitlines() if "new run(s):" in ln]
    # the argv element that changed, never the whole command twice (the interpreter is in both)
    # (of values over 80 characters the part around their first difference: the temporary folder's
    # path may be that long, and it is the same in both)
    assert "argv[1] " in line and "kernel.py' -> " in line and "moved.py'" in line and "['" not in line, line
