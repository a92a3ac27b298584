"""validate_results: typed coercion, and rejection naming the first bad row."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.schema import SchemaError, group_columns, validate_results


def _frame(**overrides: object) -> pd.DataFrame:
    base: dict[str, object] = dict(cluster=["a", "b", "c"], partition="p", kernel="decode",
                                   impl="c", variant="naive", device="cpu",
                                   threads=["1", "2", "4"], n=[64, 128.0, "256"],
                                   repeat=[0, 1, 2], time_s=["0.5", 1e-3, 2])
    base.update(overrides)
    return pd.DataFrame(base)


def test_coerces_types() -> None:
    out = validate_results(_frame(d=[64, None, "32"], flops=["nan", 3, ""]))
    assert out["threads"].tolist() == [1, 2, 4]
    assert out["n"].dtype == "int64" and out["n"].tolist() == [64, 128, 256]
    assert out["time_s"].tolist() == [0.5, 1e-3, 2.0]
    assert out["d"].dtype == "Int64" and out["d"].isna().tolist() == [False, True, False]
    assert out["flops"].isna().tolist() == [True, False, True]


@pytest.mark.parametrize(("overrides", "index", "column"), [
    (dict(threads=["1", "x", "0"]), 1, "threads"),
    (dict(time_s=[1.0, 2.0, -1.0]), 2, "time_s"),
    (dict(n=[64, 1.5, 256]), 1, "n"),
    (dict(cluster=["a", " ", "c"]), 1, "cluster"),
    (dict(flops=["abc", 1, 2]), 0, "flops"),
    (dict(time_s=[1.0, "inf", 1.0]), 1, "time_s"),
    # two bad cells: the first row wins, then the first column in table order
    (dict(repeat=[0, 1, -1], device=["cpu", "cpu", None]), 2, "device"),
])
def test_rejects_first_bad_row(overrides: dict[str, object], index: int, column: str) -> None:
    with pytest.raises(SchemaError) as err:
        validate_results(_frame(**overrides))
    assert (err.value.index, err.value.column) == (index, column)
    assert f"row {index}" in str(err.value) and repr(column) in str(err.value)


def test_missing_required_column() -> None:
    with pytest.raises(ValueError, match="missing required column 'time_s'"):
        validate_results(_frame().drop(columns=["time_s"]))


def test_group_columns_follow_presence() -> None:
    assert group_columns(_frame()) == ["cluster", "partition", "kernel", "impl",
                                       "variant", "device"]
    assert group_columns(_frame(d=64, dtype="fp32"))[-2:] == ["dtype", "d"]
