"""A contract program of the user's (docs/design.md, Kernel program contract), named in
a kernel YAML by its bare name and found on PATH as the job finds it, is identified
by its file, as a tool-driven program is. Through the CLI on this machine (the local
backend): rebuilt, it makes new runs (it was hashed as `absent` before, so a submit
of the new binary sent nothing and the report pooled the two); edited after a
failure, `rerun` refuses to run it under the old run's key."""

from __future__ import annotations

from pathlib import Path

from tests.byob.declared import declare
from tests.conftest import run_cli, sql_rows

# writes the contract CSV (FILE.tmp, renamed at the end); fails above LIMIT after flushing the smaller n
PROGRAM = """#!/usr/bin/env python3
import argparse, os, sys
LIMIT = 1000
p = argparse.ArgumentParser()
p.add_argument("--n"); p.add_argument("--threads", default="1"); p.add_argument("--repeats", default="1")
p.add_argument("--out")
a, _ = p.parse_known_args()
with open(a.out + ".tmp", "w") as f:
    f.write("kernel,impl,variant,device,dtype,n,threads,repeat,time_s,rel_err\\n")
    for n in (int(float(v)) for v in a.n.split(",")):
        if n > LIMIT:
            print(f"mykern: n={n} too large", file=sys.stderr)
            sys.exit(4)
        for r in range(int(a.repeats)):
            f.write(f"mykern,c,plain,cpu,fp32,{n},{a.threads},{r},{1e-6 * n},\\n")
        f.flush()
os.replace(a.out + ".tmp", a.out)
"""
KERNEL = "name: mykern\nimpls:\n  c: {argv: [mykern], variants: [plain]}\n"
EXPERIMENT = """name: mykern_sweep
check: false
repeats: 2
sweeps:
  - {kernel: mykern, impls: [c], variants: [plain], threads: [1], n: [100, 1000, 2000]}
"""
ATTEMPTS = "SELECT id, run_id, attempt, job_id, state FROM job_attempt ORDER BY id"


def _project(root: Path) -> tuple[dict[str, str], Path]:
    env = declare(root, {"mykern": KERNEL}, {"mykern_sweep": EXPERIMENT}, {"mykern": PROGRAM})
    return env, root / "bin" / "mykern"


def test_a_rebuilt_contract_program_is_new_runs(tmp_path: Path) -> None:
    env, program = _project(tmp_path)
    led = tmp_path / "ledger.sqlite"

    def submit(code: int) -> str:
        proc = run_cli("--ledger", str(led), "submit", "experiment=mykern_sweep", "campaign.name=k", cwd=tmp_path,
                       env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout

    assert "1 submitted" in submit(3)  # n = 2000 fails
    program.write_text(PROGRAM.replace("LIMIT = 1000", "LIMIT = 100000"))  # rebuilt: another file
    again = submit(0)
    assert "0 already in the ledger, 1 submitted" in again, again
    [line] = [ln for ln in again.splitlines() if "new run(s):" in ln]
    assert "1 new run(s): program 'sha256:" in line and "-> 'sha256:" in line, line


def test_a_rerun_of_an_edited_contract_program_is_refused(tmp_path: Path) -> None:
    env, program = _project(tmp_path)
    led = tmp_path / "ledger.sqlite"

    def cli(*args: str, code: int) -> str:
        proc = run_cli("--ledger", str(led), *args, cwd=tmp_path, env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    cli("submit", "experiment=mykern_sweep", "campaign.name=k", code=3)
    before = sql_rows(led, ATTEMPTS)
    assert [a[4] for a in before] == ["FAILED"], before
    program.write_text(PROGRAM.replace("LIMIT = 1000", "LIMIT = 100000"))
    [line] = [ln for ln in cli("rerun", "k", "--failed", code=2).splitlines() if ln.strip()]
    assert "rerun refused: 1 run(s) ran program mykern as sha256:" in line and "the file is now sha256:" in line, line
    assert sql_rows(led, ATTEMPTS) == before  # nothing recorded
    program.write_text(PROGRAM)  # restored
    assert "only the missing n 2000" in cli("rerun", "k", "--failed", code=3)
    assert len(sql_rows(led, ATTEMPTS)) == 2
