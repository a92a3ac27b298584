"""analysis/dist.py: the t quantile and the sign-test rank give scipy.stats'
numbers, and no `campaign report` pays for importing scipy.stats (~0.5
CPU s per CLI run)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
from scipy import stats

from analysis.dist import sign_test_rank, t_quantile
from analysis.summary import rank_and_coverage
from tests.conftest import run_cli

KNOWN = Path(__file__).resolve().parents[1] / "fixtures" / "known_results.csv"


def _scipy_rank(m: int) -> tuple[int, float]:
    """The sign-test rank as analysis/summary.py computed it with scipy.stats.binom."""
    best = 1
    for r in range(1, m // 2 + 1):
        if 2.0 * stats.binom.cdf(r - 1, m, 0.5) <= 0.05:
            best = r
    return best, max(1.0 - 2.0 * float(stats.binom.cdf(best - 1, m, 0.5)), 0.0)


def test_t_quantile_is_scipy_t_ppf() -> None:
    df = np.array([-3.0, 0.0, 0.25, 1.0, 2.0, 3.0, 7.5, 29.0, 1e3, 1e9, np.inf, np.nan])
    for q in (0.5, 0.6, 0.975, 0.995):
        np.testing.assert_array_equal(t_quantile(q, df), stats.t.ppf(q, df))
        for one in (1, 4, 30.0):
            assert float(t_quantile(q, one)) == float(stats.t.ppf(q, one))


def test_sign_test_rank_is_scipy_binomial() -> None:
    for m in [*range(0, 130), 199, 200, 201, 512, 1000, 1001, 2500]:
        best, coverage = rank_and_coverage(m)
        old_best, old_coverage = _scipy_rank(m)
        assert best == old_best, m
        assert math.isclose(coverage, old_coverage, rel_tol=1e-12, abs_tol=1e-15), m


def test_sign_test_rank_edges() -> None:
    assert sign_test_rank(1) == (1, 0.0)  # one repeat: [t, t], coverage 0
    assert sign_test_rank(5) == (1, 1 - 2 / 2**5)  # [min, max]: 93.75%, below 95% and said so
    assert sign_test_rank(6)[0] == 1 and sign_test_rank(6)[1] >= 0.95
    # a looser alpha never gives a narrower rank
    assert all(sign_test_rank(m, 0.2)[0] >= sign_test_rank(m, 0.05)[0] for m in range(1, 80))


def test_report_never_imports_scipy_stats(tmp_path: Path) -> None:
    """The whole report (tables, fits with intervals, plots) through the real CLI,
    its imports logged by Python itself (PYTHONPROFILEIMPORTTIME)."""
    ledger = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(ledger), "import", str(KNOWN)).returncode == 0
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "report"),
                   env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", proc.stderr, re.MULTILINE))
    assert {"analysis.report", "analysis.scaling", "analysis.summary", "matplotlib.figure"} <= imported
    assert "matplotlib.pyplot" not in imported  # figures on the Agg canvas: no pyplot (analysis/plot_margins.py)
    assert (tmp_path / "report").is_dir() and any((tmp_path / "report").iterdir())
    assert not {m for m in imported if m == "scipy.stats" or m.startswith("scipy.stats.")}
