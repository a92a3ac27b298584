"""`advise threads` reads one campaign (the latest by default, as `report`),
prints only measured comparisons, and honours `--format json`.
Real imported campaigns on a real SQLite ledger, through the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "threads", "n", "repeat", "time_s",
           "d", "dtype"]
SIZES = (256, 512, 1024)
REPEATS = 5
TWO_THREADS_AT = (256,)  # the latest campaign ran 2 threads at this size only


def _time(n: int, threads: int, factor: float, repeat: int) -> float:
    return factor * n * n * 1e-9 / (1.5 if threads == 2 else 1.0) * (1 + 0.001 * repeat)


def _write(path: Path, factor: float, two_threads_at: tuple[int, ...]) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for n in SIZES:
            for threads in (1, 2) if n in two_threads_at else (1,):
                for r in range(REPEATS):
                    out.writerow(["anvil", "shared", "attention_forward", "c", "memopt", "cpu", threads, n, r,
                                  repr(_time(n, threads, factor, r)), 64, "fp32"])
    return path


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`older`: 10x slower, 2 threads at every n; then `latest`: 2 threads at n=256 only."""
    work = tmp_path_factory.mktemp("advise")
    led = work / "ledger.sqlite"
    for name, factor, two in (("older", 10.0, SIZES), ("latest", 1.0, TWO_THREADS_AT)):
        proc = run_cli("--ledger", str(led), "import", str(_write(work / f"{name}.csv", factor, two)),
                       "--campaign", name)
        assert proc.returncode == 0, proc.stderr
    return led


ARGS = ("advise", "threads", "--cluster", "anvil", "--partition", "shared", "--kernel", "attention_forward")


def _median(n: int, threads: int, factor: float) -> float:
    return _time(n, threads, factor, REPEATS // 2)


def test_the_latest_campaign_by_default_and_no_invented_cost(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), *ARGS)
    assert proc.returncode == 0, proc.stderr
    assert "Covers: campaign latest (the latest" in proc.stdout
    # anvil/shared has 128 cores, never measured: the default is the most threads measured (2), and only
    # n=256 ran it; elsewhere the cost is not measured, never 1.00x of a 1-thread run against itself
    cost = next(line for line in proc.stdout.splitlines() if "cost of" in line)
    assert cost.strip().startswith("cost of 2 threads (most threads measured)")
    assert "n=256: 1.00x" in cost  # 2 threads, the default, is also the recommendation there
    assert "n=512: not measured" in cost and "n=1024: not measured" in cost


def test_json_is_honoured_with_the_latest_numbers(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "--format", "json", *ARGS)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    per_n = {r["n"]: r for r in data["per_n"]}
    assert sorted(per_n) == list(SIZES)
    assert per_n[256]["recommended"] == 2
    assert per_n[256]["t_recommended"] == pytest.approx(_median(256, 2, 1.0))
    assert per_n[256]["default_cost"] == pytest.approx(1.0)
    for n in SIZES[1:]:
        assert per_n[n]["default_threads"] == 2 and per_n[n]["t_default"] is None and per_n[n]["default_cost"] is None
        assert per_n[n]["t_recommended"] == pytest.approx(_median(n, 1, 1.0))  # not pooled with `older`
    assert data["scope"]["campaigns"] == ["latest"]


def test_campaign_option_chooses_and_all_pools_on_purpose(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "--format", "json", *ARGS, "--campaign", "older")
    assert proc.returncode == 0, proc.stderr
    per_n = {r["n"]: r for r in json.loads(proc.stdout)["per_n"]}
    for n in SIZES:  # older ran 2 threads everywhere: every cost measured, at older's times
        assert per_n[n]["t_default"] == pytest.approx(_median(n, 2, 10.0))
    unknown = run_cli("--ledger", str(ledger), *ARGS, "--campaign", "nope")
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    both = run_cli("--ledger", str(ledger), *ARGS, "--all")
    assert both.returncode == 0 and "ALL campaigns pooled on purpose" in both.stdout, both.stderr
    csv_format = run_cli("--ledger", str(ledger), "--format", "csv", *ARGS)
    assert csv_format.returncode == 2 and "table or json" in csv_format.stderr


def test_one_size_keeps_the_configurations_default(ledger: Path) -> None:
    """`--n 512`: only 1 thread ran there, but the default is still 2 threads: not measured, not 1.00x."""
    proc = run_cli("--ledger", str(ledger), *ARGS, "--n", "512")
    assert proc.returncode == 0, proc.stderr
    assert "cost of 2 threads (most threads measured) vs recommended: n=512: not measured" in proc.stdout
    missing = run_cli("--ledger", str(ledger), *ARGS, "--n", "7")
    assert missing.returncode == 2 and "no measurements at n = 7" in missing.stderr


def test_advise_shape_honours_json_too(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "none.sqlite"), "--format", "json", "advise", "shape", "--h", "2560",
                   "--a", "32", "--vocab", "50257", "--gpu", "a100")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["h"] == 2560
    assert any(c["rule"] == "vocab multiple of 64" and not c["ok"] for c in data["checks"])
    assert any(p["kind"] == "vocab" and p["value"] == 50304 for p in data["proposals"])


def test_a_kernel_missing_from_the_latest_campaign_names_the_campaign_read(tmp_path: Path) -> None:
    """A kernel measured in an older campaign but not in the latest: the refusal said `no results for
    kernel 'attention_forward' on anvil; measured: decode`, though it was measured on anvil (in the
    older campaign): it names the campaign it read and how to read another, as the cluster's does."""
    led = tmp_path / "ledger.sqlite"
    older = _write(tmp_path / "older.csv", 1.0, SIZES)
    newer = tmp_path / "newer.csv"
    newer.write_text(older.read_text().replace("attention_forward", "decode"))
    for name, path in (("older", older), ("newer", newer)):
        proc = run_cli("--ledger", str(led), "import", str(path), "--campaign", name)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("--ledger", str(led), *ARGS)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "no results for kernel 'attention_forward' on anvil in campaign newer (the latest" in proc.stderr
    assert "--campaign NAME or --all" in proc.stderr and "measured there: decode" in proc.stderr, proc.stderr
    assert run_cli("--ledger", str(led), *ARGS, "--campaign", "older").returncode == 0
