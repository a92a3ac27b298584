"""The three third-party benchmarks declared in YAML alone (conf/kernel/
likwid_stream.yaml, mbw.yaml, sysbench_cpu.yaml), swept on the real test
Slurm: submitted together (their waits overlap), one test each reads its
campaign's rows from the ledger: every figure of merit with its unit and
direction, the cost model's bytes, the job IDs Slurm gave."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from campaign.ledger import Ledger
from tests.slurm.helpers import completed_rows, submitted_together
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]
BENCHMARKS = {"byob_likwid": "likwid-bench", "byob_mbw": "mbw", "byob_sysbench": "sysbench"}


@pytest.fixture(scope="module")
def campaigns(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[Ledger, dict[str, str]]]:
    wanted = {experiment: (experiment.removeprefix("byob_"), (f"experiment={experiment}",))
              for experiment, program in BENCHMARKS.items() if shutil.which(program) is not None}
    with submitted_together(tmp_path_factory.mktemp("byob"), wanted) as made:
        yield made


def _rows(campaigns: tuple[Ledger, dict[str, str]], experiment: str) -> list[dict]:
    ledger, names = campaigns
    if experiment not in names:
        pytest.skip(f"{BENCHMARKS[experiment]} not installed (make test installs it)")
    rows = completed_rows(ledger, names[experiment])
    assert rows and all(r["job_id"] and r["partition"] == "cpu" for r in rows)
    return rows


def _figures(rows: list[dict]) -> dict[str, tuple[str, int]]:
    return {r["metric"]: (r["unit"], r["higher_is_better"]) for r in rows}


def test_likwid_bench_on_slurm(campaigns: tuple[Ledger, dict[str, str]]) -> None:
    rows = _rows(campaigns, "byob_likwid")
    assert _figures(rows) == {"bandwidth": ("MB/s", 1), "mflops": ("MFLOP/s", 1), "time": ("s", 0)}
    assert {(r["variant"], r["threads"], r["n"]) for r in rows} == {
        (v, t, n) for v in ("stream", "triad") for t in (1, 2) for n in (64, 256)}
    assert all(r["bytes"] == 200 * r["n"] * 1000 and r["value"] > 0 for r in rows)


def test_mbw_on_slurm(campaigns: tuple[Ledger, dict[str, str]]) -> None:
    rows = _rows(campaigns, "byob_mbw")
    assert _figures(rows) == {"bandwidth": ("MiB/s", 1), "time": ("s", 0)}
    assert {r["n"] for r in rows} == {1, 4} and all(r["value"] > 0 for r in rows)


def test_sysbench_cpu_on_slurm(campaigns: tuple[Ledger, dict[str, str]]) -> None:
    rows = _rows(campaigns, "byob_sysbench")
    assert _figures(rows) == {"events_per_s": ("events/s", 1), "time": ("s", 0)}
    assert {(r["threads"], r["n"]) for r in rows} == {(t, n) for t in (1, 2) for n in (200, 400)}
    assert all(r["params"].startswith("max_prime=2000,metric=") for r in rows)
