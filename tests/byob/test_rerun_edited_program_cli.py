"""`rerun` never runs an edited program under the old run's identity.
Through the CLI on this machine (the local backend): a tool-driven program
that fails above n = 1000 is submitted (the FAILED job keeps n = 100 and
1000), edited (its bytes change), and `rerun --failed` is refused (exit 2,
one line naming the program, its old and new hash and the fix) with the
ledger's attempts as they were; restored to the bytes it had, the same rerun
runs the missing n. Before, the rerun ran the new program for n = 2000 under
the old run's key, and one run's rows came from two programs."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.byob.declared import declare
from tests.byob.test_failed_partial_cli import EXPERIMENT, KERNEL, PROGRAM
from tests.conftest import run_cli, sql_rows

# the failing program, kernel and sweep of the partial-failure test (exit 4 above n = 1000)


def test_a_rerun_of_an_edited_program_is_refused(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "big"
    env = declare(tmp_path, {"big": KERNEL}, {"big_sweep": EXPERIMENT}, {"big": PROGRAM})
    led = tmp_path / "ledger.sqlite"

    def cli(*args: str, code: int) -> tuple[str, str]:
        proc = run_cli("--ledger", str(led), *args, cwd=tmp_path, env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout, proc.stderr

    cli("submit", "experiment=big_sweep", "campaign.name=ed", code=3)  # n = 2000 failed
    attempts = "SELECT id, run_id, attempt, job_id, state FROM job_attempt ORDER BY id"
    before = sql_rows(led, attempts)
    assert [a[4] for a in before] == ["FAILED"], before  # n = 2000 failed; 100 and 1000 kept

    program.write_text(PROGRAM.replace("-gt 1000", "-gt 100000"))  # edited: would run n = 2000 now
    out, err = cli("rerun", "ed", "--failed", code=2)
    [line] = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert "rerun refused: 1 run(s) ran program big as sha256:" in line, line
    assert "the file is now sha256:" in line, line
    assert (
        "its bytes changed since submit: `submit` the sweep again for new runs of the new program, "
        "or restore it to rerun these; nothing was rerun" in line
    ), line
    assert sql_rows(led, attempts) == before  # the ledger untouched: no new attempt
    assert {n for (n,) in sql_rows(led, "SELECT DISTINCT n FROM result")} == {100, 1000}

    program.write_text(PROGRAM)  # restored: the same bytes, the same program
    out, _ = cli("rerun", "ed", "--failed", code=3)  # n = 2000 fails again, as the program does
    assert "only the missing n 2000" in out, out
    assert len(sql_rows(led, attempts)) == 2


def test_only_the_runs_of_the_edited_program_are_left_out(tmp_path: Path) -> None:
    """Two programs' failed runs, one program edited: the other's run is rerun, the edited one's is
    left with its reason (a campaign resubmitted for the new program is not stuck on its old runs)."""
    other = KERNEL.replace("name: big", "name: big2").replace('["big", "{n}"]', '["big2", "{n}"]')
    two = EXPERIMENT + "  - {kernel: big2, impls: [sh], variants: [plain], threads: [1], n: [100, 1000, 2000]}\n"
    env = declare(tmp_path, {"big": KERNEL, "big2": other}, {"big_sweep": two}, {"big": PROGRAM, "big2": PROGRAM})
    led = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(led), "submit", "experiment=big_sweep", "campaign.name=two", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # both fail at n = 2000
    (tmp_path / "bin" / "big").write_text(PROGRAM.replace("-gt 1000", "-gt 100000"))
    proc = run_cli("--ledger", str(led), "rerun", "two", "--failed", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # big2 reran (and failed again at 2000)
    assert "1 run(s) resubmitted" in proc.stdout, proc.stdout
    assert "not rerun: 1 run(s) ran program big as sha256:" in proc.stdout, proc.stdout
    kernels = sql_rows(
        led,
        "SELECT r.kernel, count(*) FROM job_attempt a JOIN run r ON r.id = a.run_id "
        "GROUP BY r.kernel ORDER BY r.kernel",
    )
    assert kernels == [("big", 1), ("big2", 2)]


def _failed_tool_run(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A tool-driven campaign whose one run failed (its program fails at n = 2000)."""
    env = declare(tmp_path, {"big": KERNEL}, {"big_sweep": EXPERIMENT}, {"big": PROGRAM})
    led = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(led), "submit", "experiment=big_sweep", "campaign.name=up", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    return led, env


def _rewrite_identity(led: Path, change: Callable[[list[list[str]]], list[list[str]]]) -> list[str]:
    """The one run's identity entries as `change` makes them (as an older campaign recorded them); the
    entries before."""
    with sqlite3.connect(led) as db:
        [(run_id, text)] = db.execute("SELECT id, spec FROM run").fetchall()
        spec = json.loads(text)
        before = [e[0] for e in spec["identity"]]
        spec["identity"] = change(spec["identity"])
        db.execute("UPDATE run SET spec = ? WHERE id = ?", (json.dumps(spec), run_id))
    return before


def test_a_campaign_upgrade_keeps_tool_driven_runs_rerunnable(tmp_path: Path) -> None:
    """A tool-driven run's identity named our driver by its code (`program.campaign.job`, the whole
    package, and the interpreter's python and torch versions): any edit of campaign, or a torch upgrade,
    made every run of an unchanged program new at the next submit and refused its rerun. The driver is
    identified by its measurement protocol now; a run recorded the old way is rerun, as the file the
    user's program is has not changed."""
    led, env = _failed_tool_run(tmp_path)
    entries = _rewrite_identity(
        led,
        lambda items: (
            [it for it in items if it[0] != "program.driver"]
            + [
                ["program.interpreter", "python 3.0.0 torch none"],
                ["program.campaign.job.fom", "python code sha256:0"],
                ["program.campaign.job", "python code sha256:1"],
            ]
        ),
    )
    assert "program.driver" in entries and "user.big" in entries, entries
    assert not any(e.startswith(("program.campaign", "program.interpreter")) for e in entries), entries
    proc = run_cli("--ledger", str(led), "rerun", "up", "--failed", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # rerun, and failed at n = 2000 again
    assert "1 run(s) resubmitted" in proc.stdout and "not rerun" not in proc.stdout, proc.stdout


def test_a_rerun_after_the_drivers_protocol_changed_names_the_driver(tmp_path: Path) -> None:
    """A run measured by an older protocol of our driver is not rerun by this one (its rows would be
    pooled with the old ones); the line says that campaign's driver changed, not a file of the user's
    to restore."""
    led, env = _failed_tool_run(tmp_path)
    _rewrite_identity(
        led, lambda items: [[k, "campaign.job.fom protocol 0" if k == "program.driver" else v] for k, v in items]
    )
    proc = run_cli("--ledger", str(led), "rerun", "up", "--failed", cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "were measured by campaign.job.fom protocol 0, now campaign.job.fom protocol 1" in proc.stderr, proc.stderr
    assert "restore it" not in proc.stderr, proc.stderr


def test_a_declaration_edited_since_leaves_its_old_runs_out_of_a_failed_rerun(tmp_path: Path) -> None:
    """A declaration edited and submitted again is new runs, and the report reads them alone; `rerun
    --failed` reran the old declaration's failed runs too (seen: the old runs' broken pattern failed the
    partition's preflight, which then held back the new runs' rerun as PREFLIGHT_FAILED). The superseded
    runs are left out, counted with how to rerun one; the new declaration's run is rerun."""
    env = declare(tmp_path, {"big": KERNEL}, {"big_sweep": EXPERIMENT}, {"big": PROGRAM})
    led = tmp_path / "ledger.sqlite"

    def cli(*args: str, code: int) -> str:
        proc = run_cli("--ledger", str(led), *args, cwd=tmp_path, env=env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    cli("submit", "experiment=big_sweep", "campaign.name=dec", code=3)  # n = 2000 failed
    kernel = tmp_path / "conf" / "kernel" / "big.yaml"
    kernel.write_text(KERNEL.replace("'time: ([0-9.]+) s'", "'time:\\s*([0-9.]+) s'"))  # another pattern
    assert "1 new run(s): argv[3]" in cli("submit", "experiment=big_sweep", "campaign.name=dec", code=3)
    runs = "SELECT r.id, a.attempt FROM job_attempt a JOIN run r ON r.id = a.run_id ORDER BY a.id"
    (old, _), (new, _) = sql_rows(led, runs)
    out = cli("rerun", "dec", "--failed", code=3)  # n = 2000 fails again, as the program does
    assert "1 run(s) resubmitted" in out and "not rerun: 1 run(s) superseded by a later submit" in out, out
    assert sql_rows(led, runs)[2:] == [(new, 2)]  # the new declaration's run alone, its second attempt
    assert old != new
