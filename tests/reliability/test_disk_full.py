"""A full disk or a read-only filesystem is exit 1 with the path written and,
for space, what was free and what the write needed, wherever it strikes: the
SQLite ledger, a result file, a job's folder, a report (campaign.plumbing.storage);
a failed import removes what it wrote at once. For real: each test runs the
installed CLI in a private mount namespace (`unshare -rm`, no root needed)
over a small tmpfs filled with `dd` until the kernel says ENOSPC, or remounted
read-only. The namespace ends with the test: nothing stays mounted."""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import CAMPAIGN, REPO, sql_rows

HEADER = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype,note\n"
FILL = "dd if=/dev/zero of=full/fill bs=4k 2>/dev/null; true"


def _csv(path: Path, rows: int) -> Path:
    path.write_text(
        HEADER
        + "".join(
            f"alpha,cpu,gemm,c,naive,cpu,{1 + i // 12},{64 * (1 + i // 3 % 4) + 1000 * (i // 12)},{i % 3},"
            f"{(1 + i) / 1000},64,fp32,tag{i % 2}\n"
            for i in range(rows)
        )
    )
    return path


def _in_namespace(tmp_path: Path, steps: list[str | list[str]], size: str = "512k") -> list[tuple[int, str]]:
    """Each step in one private mount namespace with a tmpfs of `size` at tmp_path/full: a shell
    line, or the campaign CLI's arguments (rc and stderr kept). Returns (rc, stderr) per CLI step."""
    (tmp_path / "full").mkdir(exist_ok=True)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    lines = ["set -u", f"cd {shlex.quote(str(tmp_path))}", f"mount -t tmpfs -o size={size} tmpfs full || exit 99"]
    cli = 0
    for step in steps:
        if isinstance(step, str):
            lines.append(step)
            continue
        argv = shlex.join([str(CAMPAIGN), *step])
        lines.append(f"{argv} >out/{cli}.out 2>out/{cli}.err; echo $? >out/{cli}.rc")
        cli += 1
    proc = subprocess.run(
        ["unshare", "-rm", "bash", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        check=False,
    )
    assert proc.returncode == 0, f"the namespace or its tmpfs: {proc.returncode} {proc.stderr}"
    return [(int((out / f"{i}.rc").read_text()), (out / f"{i}.err").read_text()) for i in range(cli)]


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_full_ledger_disk_is_exit_1_naming_the_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "full" / "ledger.sqlite"
    a = _csv(tmp_path / "a.csv", 24)
    [made, full, read] = _in_namespace(
        tmp_path,
        [
            ["--ledger", str(ledger), "import", str(a)],
            FILL,
            ["--ledger", str(ledger), "submit", "experiment=smoke", f"campaign.workdir={tmp_path / 'runs'}"],
            ["--ledger", str(ledger), "results", "--format", "csv"],
        ],
    )
    assert made[0] == 0, made[1]
    line = _one_line(full[1])
    assert full[0] == 1, line  # not 2: a full disk is not bad input
    assert f"writing {ledger} (the ledger) failed: no space left (0 B free there now" in line
    assert "journal, up to the ledger's size" in line
    assert read[0] == 0, read[1]  # what the ledger holds still reads


def test_a_full_disk_under_an_import_is_exit_1_and_leaves_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "full" / "ledger.sqlite"
    folder = tmp_path / "full" / "ledger.results" / "imports" / "results"
    a, big = _csv(tmp_path / "a.csv", 24), _csv(tmp_path / "big.csv", 20_000)
    [made, full, again] = _in_namespace(
        tmp_path,
        [
            ["--ledger", str(ledger), "import", str(a)],
            f"ls -A {folder} >before",
            FILL,
            ["--ledger", str(ledger), "import", str(big)],
            f"ls -A {folder} >after",
            "rm full/fill",
            ["--ledger", str(ledger), "import", str(big)],
        ],
        size="16m",
    )
    assert made[0] == 0, made[1]
    line = _one_line(full[1])
    assert full[0] == 1 and f"writing {folder}/" in line and "no space left (0 B free there now; " in line, line
    assert " kB needed" in line
    # the failed import removed its temporary file and marker at once (not at the hourly sweep)
    assert (tmp_path / "after").read_text() == (tmp_path / "before").read_text() != ""
    assert again[0] == 0, again[1]  # with room again the same import goes through


def test_a_read_only_filesystem_is_exit_1_naming_the_path(tmp_path: Path) -> None:
    ledger = tmp_path / "full" / "ledger.sqlite"
    a = _csv(tmp_path / "a.csv", 24)
    [made, refused, report, read] = _in_namespace(
        tmp_path,
        [
            ["--ledger", str(ledger), "import", str(a)],
            "mount -o remount,ro full",
            ["--ledger", str(ledger), "import", str(a), "--campaign", "other"],
            ["--ledger", str(ledger), "report", "--out", str(tmp_path / "full" / "report")],
            ["--ledger", str(ledger), "results", "--format", "csv"],
        ],
    )
    assert made[0] == 0, made[1]
    line = _one_line(refused[1])
    assert refused[0] == 1 and f"cannot write {ledger} (the ledger): read-only file system" in line, line
    line = _one_line(report[1])
    assert report[0] == 1 and f"cannot write {tmp_path / 'full' / 'report'}" in line, line
    assert "read-only file system" in line
    assert read[0] == 0, read[1]


def test_a_full_campaign_folder_at_submit_is_exit_1_and_the_runs_not_submitted(tmp_path: Path) -> None:
    ledger, runs = tmp_path / "ledger.sqlite", tmp_path / "full" / "runs"
    [full, jobs] = _in_namespace(
        tmp_path,
        [
            FILL,
            ["--ledger", str(ledger), "submit", "experiment=smoke", f"campaign.workdir={runs}"],
            ["--ledger", str(ledger), "--format", "json", "jobs"],
        ],
    )
    line = _one_line(full[1])
    assert full[0] == 1 and f"writing {runs}/" in line and "no space left (0 B free there now)" in line, line
    assert jobs[0] == 0 and "NOT_SUBMITTED" in (tmp_path / "out" / "1.out").read_text()


def test_a_full_campaign_folder_at_ingest_is_exit_1_and_the_next_status_ingests(tmp_path: Path) -> None:
    """`status` ingesting finished jobs into a full campaign folder: exit 1 naming the result file and
    the bytes it needed, nothing left in results/; with room again the same rows go in, once."""
    ledger, runs = tmp_path / "ledger.sqlite", tmp_path / "full" / "runs"
    build = (
        f"{shlex.quote(sys.executable)} -c 'from pathlib import Path; from bench.finished_jobs import build; "
        f'build(Path("{ledger}"), Path("{runs}"), jobs=3, rows_per_job=5)\''
    )
    [full, again] = _in_namespace(
        tmp_path,
        [
            f"cd {shlex.quote(str(REPO))} && {build} && cd - >/dev/null",
            FILL,
            ["--ledger", str(ledger), "status"],
            f"ls -A {runs / 'results'} >left",
            "rm full/fill",
            ["--ledger", str(ledger), "status"],
        ],
        size="1m",
    )
    line = _one_line(full[1])
    assert full[0] == 1 and f"writing {runs}/results/" in line and "B needed" in line, line
    assert (tmp_path / "left").read_text() == ""  # its temporary file and marker went at once
    assert again[0] == 0 and "15 result row(s) ingested" in (tmp_path / "out" / "1.out").read_text(), again[1]


def test_a_full_disk_under_an_upgrade_leaves_no_half_backup(tmp_path: Path) -> None:
    """An old ledger's upgrade backs it up first: a full disk cut that copy short and left it under the
    backup's own name (`ledger.sqlite.v9.bak`, a malformed database: a restore from it failed), kept
    beside the next attempt's timestamped backup, and said "upgrade failed" as bad input (exit 2). Now
    the copy is renamed into place once whole: exit 1 naming the backup and what it needs, no file
    left; with room again the upgrade goes through and its backup is the old ledger, byte for byte."""
    old = REPO / "tests" / "fixtures" / "ledgers" / "v9.sqlite"
    ledger = tmp_path / "full" / "ledger.sqlite"
    [full, again] = _in_namespace(
        tmp_path,
        [
            f"cp {shlex.quote(str(old))} {ledger}",
            FILL,
            ["--ledger", str(ledger), "jobs"],
            f"ls -A {ledger.parent} >left",
            "rm full/fill",
            ["--ledger", str(ledger), "jobs"],
            f"cp {ledger}.v9.bak backup",
        ],
        size="1m",
    )
    line = _one_line(full[1])
    assert full[0] == 1, line
    assert line.startswith(
        f"campaign: error: writing {ledger}.v9.bak (the ledger's backup before its upgrade; "
        "the ledger is unchanged) failed: no space left ("
    ), line
    assert f"{old.stat().st_size / 1024:.1f} kB needed" in line, line
    assert (tmp_path / "left").read_text().split() == ["fill", "ledger.sqlite"]
    assert again[0] == 0, again[1]
    assert f"backup: {ledger}.v9.bak" in again[1]
    assert (tmp_path / "backup").read_bytes() == old.read_bytes()


def test_a_full_disk_under_a_report_leaves_the_earlier_report_whole(tmp_path: Path) -> None:
    """`report --out` again, with more rows, over a folder that holds a report, the disk full: each
    file was opened in place (emptied) and its larger successor could not be written whole, so the
    earlier report was lost and files cut short lay under its names. Now each file is written beside
    and renamed once whole: exit 1 naming the file, every file of the earlier report still there,
    byte for byte, nothing else left."""
    ledger, report = tmp_path / "ledger.sqlite", tmp_path / "full" / "report"
    a, more = _csv(tmp_path / "a.csv", 24), _csv(tmp_path / "more.csv", 240)
    [made, first, full] = _in_namespace(
        tmp_path,
        [
            ["--ledger", str(ledger), "import", str(a)],
            ["--ledger", str(ledger), "report", "--out", str(report)],
            f"cp -r {report} before",
            f"{shlex.join([str(CAMPAIGN), '--ledger', str(ledger), 'import', str(more), '--campaign', 'more'])} "
            ">/dev/null",
            FILL,
            ["--ledger", str(ledger), "report", "--out", str(report)],
            f"cp -r {report} after",
        ],
        size="1m",
    )
    assert made[0] == 0 and first[0] == 0, made[1] + first[1]
    before, after = tmp_path / "before", tmp_path / "after"
    assert sorted(p.name for p in after.iterdir()) == sorted(p.name for p in before.iterdir())
    assert {p.name for p in before.iterdir()} >= {"alpha.md", "alpha.html"}
    for path in before.iterdir():
        assert (after / path.name).read_bytes() == path.read_bytes(), path.name
    line = _one_line(full[1])
    assert full[0] == 1 and f"writing {report}/" in line and "(report --out) failed: no space left" in line, line


def test_a_file_size_limit_is_said_as_one_not_as_a_full_disk(tmp_path: Path) -> None:
    """`ulimit -f` (a batch system's, a login node's) makes a write past it fail with EFBIG, which was
    said as "no space left (73.1 GB free there now)": a full disk with room to spare. Now the line says
    the file size limit and how large it is."""
    ledger, report = tmp_path / "ledger.sqlite", tmp_path / "report"
    a = _csv(tmp_path / "a.csv", 24)
    assert (
        subprocess.run(
            [str(CAMPAIGN), "--ledger", str(ledger), "import", str(a)],
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        ).returncode
        == 0
    )
    limit = 8_000  # below the size of the report's figures and its HTML

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [str(CAMPAIGN), "--ledger", str(ledger), "report", "--out", str(report)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limited,
        timeout=300,
    )
    line = _one_line(proc.stderr)
    assert proc.returncode == 1, line
    assert (
        f"writing {report}/" in line
        and "(report --out) failed: file too large for this process's file "
        "size limit (7.8 kB, `ulimit -f`); raise the limit and run the command again"
        in line
    ), line


def test_a_ledger_past_the_file_size_limit_is_said_as_such(tmp_path: Path) -> None:
    """SQLite says a write past `ulimit -f` as "disk I/O error" (SQLITE_IOERR_WRITE): that line, exit 2,
    named neither the limit nor what to do. Now: the ledger, the limit and its size, exit 1; the ledger
    as it was, and the import's result file gone."""
    ledger = tmp_path / "ledger.sqlite"
    a, big = _csv(tmp_path / "a.csv", 24), _csv(tmp_path / "big.csv", 20_000)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run([str(CAMPAIGN), "--ledger", str(ledger), "import", str(a)], env=env).returncode == 0
    limit = 512 * 1024  # above the import's result file, below what its 20,000 keys add to the ledger

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [str(CAMPAIGN), "--ledger", str(ledger), "import", str(big)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=limited,
        timeout=300,
    )
    line = _one_line(proc.stderr)
    assert proc.returncode == 1, line
    assert line.startswith(
        f"campaign: error: writing {ledger} (the ledger) failed: disk I/O error, with this "
        "process's file size limit at 512.0 kB (`ulimit -f`) and the ledger at "
    ), line
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    assert sql_rows(ledger, "SELECT count(*) FROM result") == [(24,)]
    referenced = {Path(p).name for (p,) in sql_rows(ledger, "SELECT path FROM result_file")}
    assert {p.name for p in (tmp_path / "ledger.results" / "imports" / "results").iterdir()} == referenced
