"""The two distribution functions the analysis needs, without `scipy.stats`.

`from scipy import stats` costs ~0.5 CPU s per process (it loads most of
scipy: sparse, linalg, optimize, spatial), paid by every `campaign report`,
`compare` and `advise` run, while the analysis uses exactly two functions of
it: Student's t quantile and the Binomial(m, 1/2) CDF. The t quantile is
`scipy.special.stdtrit`, the very function `stats.t.ppf` calls (same numbers,
a fraction of the import); the binomial CDF at p = 1/2 is an exact sum of
binomial coefficients (exact rational arithmetic, so at least as accurate as
scipy's).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike


def t_quantile(q: float, df: ArrayLike) -> np.ndarray:
    """Student's t quantile `q` for `df` degrees of freedom (as `scipy.stats.t.ppf(q, df)`
    for 0 < q < 1: NaN where df <= 0 or is NaN)."""
    from scipy.special import stdtrit  # lazy: only a fit or an interval pays for scipy

    return np.asarray(stdtrit(df, q), dtype=float)


def sign_test_rank(m: int, alpha: float = 0.05) -> tuple[int, float]:
    """The largest r in 1..m//2 with 2 * P(Binomial(m, 1/2) <= r - 1) <= alpha (1 when
    none), and 1 - 2 * P(Binomial(m, 1/2) <= r - 1), the interval's coverage.

    Exact integer arithmetic: the CDF is a running sum of binomial coefficients
    over 2^m, compared as integers and rounded to a float once, at the end; the
    CDF only grows with r, so the scan stops at the first r past alpha."""
    if m < 1:
        return 1, 0.0
    limit = Fraction(alpha)  # the float's exact value, as a float comparison would use
    whole = 2**m
    best, best_total = 1, 1  # r = 1: P(X <= 0) = 1 / 2^m
    coef, total = 1, 0  # C(m, k) and sum_{i <= k} C(m, i)
    for k in range(m // 2):  # k = r - 1 for r = 1..m//2
        total += coef
        if 2 * total * limit.denominator > limit.numerator * whole:
            break
        best, best_total = k + 1, total
        coef = coef * (m - k) // (k + 1)
    return best, float(1 - Fraction(2 * best_total, whole))
