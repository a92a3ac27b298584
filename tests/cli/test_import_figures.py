"""Figures of merit imported from a CSV written as docs/results.md describes it:
the four figure columns (`metric`, `value`, `unit`, `higher_is_better`) and no
`params` column. Each figure is its own series in `report --json`, checked
against medians and ratios computed here with numpy; a job's rows carry the
figure in their params (`metric=NAME`), an imported row must too, or its
figures are pooled as repeats of one time point and the figure keys are empty.
Real SQLite ledger filled by `import`, the CLI as a user runs it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from tests.conftest import run_cli

COLUMNS = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,metric,value,unit,higher_is_better"
CONFIG = ["alpha", "cpu", "copybench", "c", "memcpy", "cpu"]
FIGURES = (("bandwidth", "MiB/s", "true"), ("latency", "us", "false"))
THREADS = (1, 2, 4)
SIZES = (10, 30)
REPEATS = 5


def _values(threads: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A bandwidth (MiB/s, higher is better) and a latency (us, lower is better) per repeat."""
    spread = 1 + np.arange(REPEATS) / 997
    bandwidth = 1000.0 * threads / (0.25 * threads + 0.75) * n**0.1 * spread[::-1]
    return bandwidth, 5000.0 / bandwidth


def _write(path: Path) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS.split(","))
        for threads in THREADS:
            for n in SIZES:
                bandwidth, latency = _values(threads, n)
                for r in range(REPEATS):
                    time_s = repr(float(2.0 * n / bandwidth[r]))
                    for (metric, unit, better), value in zip(FIGURES, (bandwidth[r], latency[r]), strict=True):
                        out.writerow([*CONFIG, threads, n, r, time_s, metric, repr(float(value)), unit, better])
    return path


def test_imported_figures_are_series_of_their_own(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(led), "import", str(_write(tmp_path / "figs.csv")), "--campaign", "figs")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("--ledger", str(led), "report", "--campaign", "figs", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)

    medians = {(r["metric"], r["threads"], r["n"]): r for r in report["figures_of_merit"]}
    assert len(medians) == 2 * len(THREADS) * len(SIZES)
    for threads in THREADS:
        for n in SIZES:
            for metric, values in zip(("bandwidth", "latency"), _values(threads, n), strict=True):
                record = medians[metric, threads, n]
                assert record["repeats"] == REPEATS
                assert record["value"] == float(np.median(values))
                assert record["params"] == ""

    scaling = {(r["metric"], r["threads"], r["n"]): r for r in report["figure_scaling"] if r["axis"] == "threads"}
    for n in SIZES:
        base_bw, base_lat = (float(np.median(v)) for v in _values(1, n))
        for threads in THREADS:
            bw, lat = (float(np.median(v)) for v in _values(threads, n))
            assert np.isclose(scaling["bandwidth", threads, n]["speedup"], bw / base_bw, rtol=1e-12)
            assert np.isclose(scaling["latency", threads, n]["speedup"], base_lat / lat, rtol=1e-12)
            assert np.isclose(scaling["bandwidth", threads, n]["efficiency"], bw / base_bw / threads, rtol=1e-12)

    # the time keys read one figure per run: the program's time once per repeat, not once per figure
    times = {(r["threads"], r["n"]): r["median_s"] for r in report["speedup"]}
    assert sorted(times) == sorted((t, n) for t in THREADS for n in SIZES)
    for (threads, n), median_s in times.items():
        assert np.isclose(median_s, float(np.median(2.0 * n / _values(threads, n)[0])), rtol=1e-12)
    assert all(r["params"] == "" for r in report["speedup"])
