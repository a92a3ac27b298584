"""Imported campaigns in `results` and `compare`, and `report --out` where it
cannot write: real SQLite ledgers, the installed CLI."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, run_cli

COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "threads", "n", "repeat", "time_s"]


def _write(path: Path, kernel: str, sizes: tuple[int, ...], repeats: int = 5) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for n in sizes:
            for r in range(repeats):
                out.writerow(
                    ["alpha", "cpu", kernel, "c", "memopt", "cpu", 1, n, r, repr(1e-9 * n * n * (1 + r / 100))]
                )
    return path


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("imported")
    led = work / "ledger.sqlite"
    for name, kernel, sizes in (
        ("paper", "attention_forward", (256, 512)),
        ("other", "attention_backward", (1024, 2048, 4096)),
    ):
        proc = run_cli(
            "--ledger", str(led), "import", str(_write(work / f"{name}.csv", kernel, sizes)), "--campaign", name
        )
        assert proc.returncode == 0, proc.stderr
    return led


def test_results_of_an_imported_campaign_has_its_rows(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "results", "--campaign", "paper")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(proc.stdout.splitlines()))
    assert len(rows) == 2 * 5 and {r["campaign"] for r in rows} == {"paper"}
    assert {r["kernel"] for r in rows} == {"attention_forward"}


def test_a_gate_that_compared_nothing_does_not_pass(ledger: Path) -> None:
    plain = run_cli("--ledger", str(ledger), "compare", "paper", "other")
    assert plain.returncode == 0 and "Points: 0 matched" in plain.stdout, plain.stderr
    gate = run_cli("--ledger", str(ledger), "compare", "paper", "other", "--fail-on", "slower")
    assert gate.returncode == 2
    [line] = gate.stderr.strip().splitlines()
    assert "no point in common" in line and "2 only in BASE, 3 only in NEW" in line


def test_report_out_in_a_folder_that_cannot_be_made_is_bad_input(ledger: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = run_cli("--ledger", str(ledger), "report", "--campaign", "paper", "--out", str(blocker / "report"))
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "Not a directory" in line and "internal error" not in line


def _mount_tiny(folder: Path) -> bool:
    """A 12 KiB tmpfs at `folder` (root only); False where it cannot be mounted."""
    if os.geteuid() != 0:
        return False
    folder.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(folder)], capture_output=True, check=False
    )
    return proc.returncode == 0


def test_report_out_on_a_full_filesystem_is_one_line_exit_1(ledger: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    if not _mount_tiny(full):
        pytest.skip("a tiny tmpfs needs root and mount")
    try:
        proc = run_cli("--ledger", str(ledger), "report", "--campaign", "paper", "--out", str(full / "report"))
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "no space left" in line and f"writing {full}" in line and "internal error" not in line, line


def test_a_gate_with_too_few_repeats_to_judge_does_not_pass(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    for name in ("one", "two"):  # 2 repeats per point: below the 4 a verdict needs
        path = _write(tmp_path / f"{name}.csv", "attention_forward", (256, 512), repeats=2)
        assert run_cli("--ledger", str(led), "import", str(path), "--campaign", name).returncode == 0
    plain = run_cli("--ledger", str(led), "compare", "one", "two")
    assert plain.returncode == 0 and "2 insufficient-repeats" in plain.stdout, plain.stderr
    gate = run_cli("--ledger", str(led), "compare", "one", "two", "--fail-on", "slower")
    assert gate.returncode == 2
    [line] = gate.stderr.strip().splitlines()
    assert "none of the 2 matched point(s)" in line


def test_report_json_into_a_full_device_is_one_line_exit_1(ledger: Path) -> None:
    """`report --json > file` on a full disk (/dev/full: every write is ENOSPC)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    env = {k: v for k, v in os.environ.items() if k != "CAMPAIGN_DEBUG"}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(CAMPAIGN), "--ledger", str(ledger), "report", "--campaign", "paper", "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "No space left on device" in line and "internal error" not in line


def test_clusters_whose_names_share_a_file_name_each_get_their_own_report(tmp_path: Path) -> None:
    """A name's characters outside [A-Za-z0-9_.-] become '_' in its file name: clusters 'a/b', 'a b'
    and 'a_b' (an import takes any name) were all written to the one file of 'a_b', each over the one before."""
    names = ["a/b", "a b", "a_b", "café"]
    source = tmp_path / "sites.csv"
    with source.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for name in names:
            for n in (256, 512):
                for r in range(3):
                    out.writerow([name, "cpu", "stream", "c", "plain", "cpu", 1, n, r, repr(1e-6 * n * (1 + r / 100))])
    led = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(led), "import", str(source), "--campaign", "sites").returncode == 0
    proc = run_cli("--ledger", str(led), "report", "--campaign", "sites", "--out", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    written = [Path(line.split("report: ", 1)[1]) for line in proc.stdout.splitlines() if line.endswith(".md")]
    assert len(written) == len(set(written)) == len(names), proc.stdout
    headings = {path.read_text(encoding="utf-8").splitlines()[0] for path in written}
    assert headings == {f"# Benchmark report: {name}" for name in names}, headings
    assert (tmp_path / "report" / "a_b").with_suffix(".md") in written  # a name that is a file name stays as it is
