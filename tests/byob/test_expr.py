"""Cost expressions (campaign.job.expr): arithmetic of the swept parameters,
evaluated from a whitelisted syntax tree, never by eval."""

from __future__ import annotations

import pytest

from campaign.job import expr


def test_arithmetic_of_parameters() -> None:
    assert expr.evaluate("3*8*n", {"n": 1000}) == 24000
    assert expr.evaluate("2*m*n*k + max(n, 4) // 3", {"m": 2, "n": 5, "k": 7}) == 2 * 2 * 5 * 7 + 5 // 3
    assert expr.evaluate("ceil(n/64)*64 + sqrt(d) - log2(8) + abs(-1) + floor(2.5) + min(1, 2) % 2",
                         {"n": 100, "d": 16}) == 128 + 4 - 3 + 1 + 2 + 1
    assert expr.evaluate("-n ** 2", {"n": 3}) == -9
    assert expr.names("2*n*d + max(threads, 1)") == {"n", "d", "threads"}


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "n.__class__", "(lambda: 1)()", "open('/etc/passwd')", "n if n else 1",
    "[n]", "'a' * 3", "n < 3", "n and 1", "True + n", "f(n)", "min(*n)", "n; n", "n[0]", "{n}", "n @ n",
    "max(n, key=abs)", "",
])
def test_anything_outside_the_whitelist_is_refused(text: str) -> None:
    with pytest.raises(expr.ExprError):
        expr.evaluate(text, {"n": 3})


@pytest.mark.parametrize("text,why", [
    ("9**9**9", "exponent"), ("10.0**60 * 10.0**60 * 10.0**60 * 10.0**60 * 10.0**60 * 10.0**60", "cannot evaluate|not finite"), ("n/0", "cannot evaluate"),
    ("block*n", "unknown parameter 'block'"), ("sqrt(-n)", "cannot evaluate"), ("n" * 500, "characters long"),
])
def test_errors_are_one_clear_error_not_a_hang(text: str, why: str) -> None:
    with pytest.raises(expr.ExprError, match=why):
        expr.evaluate(text, {"n": 3})


def test_a_name_parameter_is_no_number() -> None:
    with pytest.raises(expr.ExprError, match="dtype='fp32' is not a number"):
        expr.evaluate("dtype*2", {"dtype": "fp32"})
