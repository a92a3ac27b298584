"""SIGKILL, SIGTERM or SIGINT at seeded random moments of the commands that write files
outside the ledger's results: `results --out`, `report --out` and the upgrade of an older
ledger (with its backup). After each stop: the ledger passes SQLite's integrity check, every
file under its final name is whole (the bytes of an unstopped run's, a report's but for its
time of rendering), and once the command ran again to its end nothing it or a stopped run
wrote under a temporary name is left. The submit, rerun, status and import kills are
test_crash_kills.py's and test_ingest_kills.py's."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

from campaign.ledger.files import SWEEP_AGE_S
from campaign.ledger.layout import SCHEMA_VERSION
from tests.conftest import run_cli, signal_after, sql_rows
from tests.fixtures import KNOWN_CSV, LEDGER_V1

SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "7"))
ROWS = 20_000
STOPS = 6  # stops that found the command running, per command
SIGNALS = (signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
RENDERED = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC")  # a report's time of rendering


def _stop_at_random(
    argv: list[str], rng: random.Random, took: float, after_each: Callable[[], None], folder: Path
) -> int:
    """Stop the command STOPS times, every other time at a random moment of its unstopped duration
    `took` by a random signal, else by SIGKILL (what no handler sees) a random moment soon after
    its first temporary file appeared in `folder` (the write itself: a small share of the
    command's time), calling `after_each()` after every run;
    returns the stops that found it running."""
    stops = 0
    for i in range(4 * STOPS):
        sig = rng.choice(SIGNALS)
        if i % 2:
            ran = signal_after(argv, {}, rng.uniform(0.0, took), sig)
        else:
            left = _temporary(folder)  # (a file an earlier stop left is no sign of this run's write)
            ran = signal_after(
                argv,
                {},
                rng.uniform(0.0, 0.002),
                signal.SIGKILL,
                when=lambda left=left: bool(_temporary(folder) - left),
            )
        after_each()
        stops += ran is None
        if stops == STOPS:
            break
    return stops


def _temporary(folder: Path) -> set[str]:
    try:
        return {name for name in os.listdir(folder) if name.endswith(".tmp")}
    except OSError:
        return set()


def _timed(argv: list[str]) -> float:
    started = time.monotonic()
    proc = run_cli(*argv)
    assert proc.returncode == 0, proc.stderr
    return time.monotonic() - started


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _ledger_with_rows(tmp: Path, rows: int = 0) -> Path:
    """A ledger of the known rows and `rows` more (an export long enough to be stopped in its write)."""
    ledger, csv = tmp / "ledger.sqlite", tmp / "many.csv"
    csv.write_text(
        "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s\n"
        + "".join(
            f"alpha,cpu,gemm,c,v{i // 2000},cpu,1,{64 * (1 + i // 5 % 400)},{i % 5},{(1 + i) / 1e4}\n"
            for i in range(rows)
        )
    )
    for source in (KNOWN_CSV, csv)[: 1 + bool(rows)]:
        proc = run_cli("--ledger", str(ledger), "import", str(source))
        assert proc.returncode == 0, proc.stderr
    return ledger


def test_a_stopped_results_export_leaves_the_old_file_or_the_whole_new_one(tmp_path: Path) -> None:
    ledger = _ledger_with_rows(tmp_path, ROWS)
    out = tmp_path / "out"
    out.mkdir()
    rng = random.Random(SEED)
    for name in ("rows.csv", "rows.json", "rows.parquet"):
        fmt = name.split(".")[1]
        argv = ["--ledger", str(ledger), "results", "--format", fmt, "--out", str(out / name)]
        took = _timed(argv)
        whole = (out / name).read_bytes()
        (out / name).unlink()

        def check(name: str = name, whole: bytes = whole) -> None:
            assert not (out / name).exists() or (out / name).read_bytes() == whole  # nothing cut short
            assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]

        assert _stop_at_random(argv, rng, took, check, out) == STOPS
        assert run_cli(*argv).returncode == 0
        assert (out / name).read_bytes() == whole
    # what the stopped exports wrote under temporary names went with the next export
    assert _hidden(out) == []


def _report(folder: Path) -> dict[str, bytes]:
    return {p.name: RENDERED.sub(b"<time>", p.read_bytes()) for p in folder.iterdir() if not p.name.startswith(".")}


def test_a_stopped_report_leaves_whole_files_and_the_next_one_the_same_report(tmp_path: Path) -> None:
    ledger = _ledger_with_rows(tmp_path)
    model, out = tmp_path / "model", tmp_path / "report"
    took = _timed(["--ledger", str(ledger), "report", "--all", "--out", str(model)])
    whole = _report(model)
    assert {"alpha.md", "alpha.html", "beta.md"} <= set(whole)
    rng = random.Random(SEED)

    def check() -> None:
        if out.is_dir():
            for name, data in _report(out).items():
                assert data == whole[name], f"{name} was left cut short"

    argv = ["--ledger", str(ledger), "report", "--all", "--out", str(out)]
    assert _stop_at_random(argv, rng, took, check, out) == STOPS
    assert run_cli(*argv).returncode == 0
    assert _report(out) == whole
    assert _hidden(out) == []


def test_a_stopped_upgrade_leaves_the_old_ledger_or_the_new_one_and_a_whole_backup(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    shutil.copyfile(LEDGER_V1, model / "ledger.sqlite")
    export = ["results", "--format", "csv", "--out"]
    took = _timed(["--ledger", str(model / "ledger.sqlite"), *export, str(model / "rows.csv")])
    rows = (model / "rows.csv").read_bytes()
    rng = random.Random(SEED)
    stops = 0
    for attempt in range(4 * STOPS):
        work = tmp_path / f"copy{attempt}"  # a fresh copy of the old ledger for each stop
        work.mkdir()
        ledger, backup = work / "ledger.sqlite", work / "ledger.sqlite.v1.bak"
        shutil.copyfile(LEDGER_V1, ledger)
        argv = ["--ledger", str(ledger), *export, str(work / "rows.csv")]
        if signal_after(argv, {}, rng.uniform(0.0, took), rng.choice(SIGNALS)) is not None:
            continue  # it finished first
        stops += 1
        assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
        version = sql_rows(ledger, "SELECT value FROM meta WHERE key = 'schema_version'")
        assert version in ([("1",)], [(str(SCHEMA_VERSION),)])  # never half upgraded
        assert not backup.exists() or backup.read_bytes() == LEDGER_V1.read_bytes()
        assert run_cli(*argv).returncode == 0
        assert (work / "rows.csv").read_bytes() == rows  # the same rows as an upgrade never stopped
        assert backup.read_bytes() == LEDGER_V1.read_bytes()
        assert _hidden(work) == []  # no backup's temporary copy left beside the ledger
        # the result files a stopped upgrade wrote under temporary names go with the sweep, once old
        old = time.time() - SWEEP_AGE_S - 10
        for path in (work / "ledger.results").rglob("*"):
            os.utime(path, (old, old))
        assert run_cli("--ledger", str(ledger), "status").returncode == 0
        assert [p.name for p in (work / "ledger.results").rglob(".tmp-*")] == []
        if stops == STOPS:
            break
    assert stops == STOPS
