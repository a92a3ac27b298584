"""An optional column absent from an imported CSV, or empty in every row,
behaves the same in every view (`report --out` once crashed on
`dtype` with "You are trying to merge on object and float64 columns").

Each optional column is left out in turn (and, separately, kept with every
cell empty); each file is imported into its own campaign of one real SQLite
ledger, and every view runs on it through the CLI's own entry point (in this
process: 28 campaigns x 7 views as subprocesses would take minutes). One real
subprocess run covers the case that crashed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from campaign.cli import main
from resultschema.columns import OPTIONAL_COLUMNS
from tests.conftest import run_cli

REQUIRED = ["cluster", "partition", "kernel", "impl", "variant", "device", "threads", "n", "repeat", "time_s"]
SIZES = (256, 512, 1024)
THREADS = (1, 2)
REPEATS = 3


def _row(threads: int, n: int, repeat: int) -> dict[str, object]:
    return {
        "cluster": "alpha",
        "partition": "cpu",
        "kernel": "attention_forward",
        "impl": "c",
        "variant": "memopt",
        "device": "cpu",
        "threads": threads,
        "n": n,
        "repeat": repeat,
        "time_s": repr(1e-9 * n * n / threads * (1 + 0.01 * repeat)),
        "d": 64,
        "dtype": "fp32",
        "job_id": f"imp-{n}",
        "gpu_model": "none",
        "flops": 4.0 * n * n * 64,
        "bytes": 8.0 * n * 64,
        "rel_err": 1e-7,
    }


def _write(path: Path, columns: list[str], blank: str | None = None) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.DictWriter(fh, columns, extrasaction="ignore")
        out.writeheader()
        for t in THREADS:
            for n in SIZES:
                for r in range(REPEATS):
                    row = _row(t, n, r)
                    if blank:
                        row[blank] = ""
                    out.writerow(row)
    return path


def _campaigns() -> list[tuple[str, list[str], str | None]]:
    full = REQUIRED + list(OPTIONAL_COLUMNS)
    out: list[tuple[str, list[str], str | None]] = [("all-optional", full, None)]
    for col in OPTIONAL_COLUMNS:
        out.append((f"no-{col.replace('_', '-')}", [c for c in full if c != col], None))
        out.append((f"empty-{col.replace('_', '-')}", full, col))
    out.append(("none-optional", REQUIRED, None))
    return out


CAMPAIGNS = _campaigns()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("optional")
    led = work / "ledger.sqlite"
    for name, columns, blank in CAMPAIGNS:
        assert (
            main(
                ["--ledger", str(led), "import", str(_write(work / f"{name}.csv", columns, blank)), "--campaign", name]
            )
            == 0
        )
    return led


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert rc == 0, f"{' '.join(args)}: {err}"
    assert "internal error" not in err
    return out


@pytest.mark.parametrize("name", [c[0] for c in CAMPAIGNS])
def test_every_view_reads_a_campaign_without_the_column(
    name: str, ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    led = ("--ledger", str(ledger))
    printed = _cli(capsys, *led, "report", "--campaign", name, "--out", str(tmp_path / "report"))
    assert "alpha.md" in printed and "alpha.html" in printed
    assert "measured points" in (tmp_path / "report" / "alpha.md").read_text()
    metrics = json.loads(_cli(capsys, *led, "report", "--campaign", name, "--json"))
    assert {r["n"] for r in metrics["best_threads"]} == set(SIZES)
    assert all(r["best_threads"] == max(THREADS) for r in metrics["best_threads"])
    compared = json.loads(_cli(capsys, *led, "compare", name, name, "--format", "json"))
    assert len(compared["points"]) == len(SIZES) * len(THREADS)
    text = _cli(capsys, *led, "compare", name, name)
    assert f"Points: {len(SIZES) * len(THREADS)} matched" in text
    # One side has the column, one not (for all-optional itself: the comparison above).
    for base, new in [pair for pair in (("all-optional", name), (name, "all-optional")) if pair != (name, name)]:
        across = json.loads(_cli(capsys, *led, "compare", base, new, "--format", "json"))
        assert len(across["points"]) == len(SIZES) * len(THREADS), (base, new)
    advice = (
        "advise",
        "threads",
        "--cluster",
        "alpha",
        "--partition",
        "cpu",
        "--kernel",
        "attention_forward",
        "--campaign",
        name,
    )
    assert f"n = {SIZES[0]}..{SIZES[-1]}: 2 threads" in _cli(capsys, *led, *advice)
    advised = json.loads(_cli(capsys, *led, "--format", "json", *advice))
    assert [r["recommended"] for r in advised["per_n"]] == [2] * len(SIZES)
    rows = json.loads(_cli(capsys, *led, "--format", "json", "results", "--campaign", name))
    assert len(rows) == len(SIZES) * len(THREADS) * REPEATS and {r["campaign"] for r in rows} == {name}


def test_report_out_without_dtype_as_a_user_runs_it(tmp_path: Path) -> None:
    """The case that crashed, as a subprocess: no dtype column, then `report --out DIR`."""
    led = tmp_path / "ledger.sqlite"
    path = _write(tmp_path / "paper.csv", [c for c in REQUIRED + list(OPTIONAL_COLUMNS) if c != "dtype"])
    assert run_cli("--ledger", str(led), "import", str(path)).returncode == 0
    proc = run_cli("--ledger", str(led), "report", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "alpha.html").is_file()
