"""analysis/arrow_values.py builds Arrow values from their bytes so that ingest never imports pandas
(pyarrow's pa.array / pa.scalar ask its pandas shim first): each builder gives what pyarrow's own
constructor gives, on edge values; and a whole sync in a fresh interpreter leaves pandas unloaded."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from analysis.arrow_values import from_list, from_numpy, lit, to_numpy
from bench.finished_jobs import build
from tests.conftest import REPO

_CASES: list[tuple[list[Any], pa.DataType]] = [
    (["a", None, "", "é—\U0001f600", "x" * 1000], pa.string()),
    ([], pa.string()),
    ([None, None], pa.string()),
    ([0, -1, 2**63 - 1, -2**63, None], pa.int64()),
    ([2**31 - 1, -2**31, None], pa.int32()),
    ([0.5, -0.0, float("inf"), 1e308, None, 3], pa.float64()),
    ([True, False, None, True, True, False, False, True, True], pa.bool_()),
]


@pytest.mark.parametrize(("values", "kind"), _CASES)
def test_from_list_is_pa_array(values: list[Any], kind: pa.DataType) -> None:
    built = from_list(values, kind)
    built.validate(full=True)
    assert built.equals(pa.array(values, kind)) and built.type == kind


@pytest.mark.parametrize(("values", "kind"), [([1, "a"], pa.string()), (["1"], pa.int64()), ([2**63], pa.int64()),
                                              ([True], pa.int64()), ([2**31], pa.int32())])
def test_values_of_another_type_go_to_pyarrow_and_fail_or_convert_as_there(values: list[Any], kind: pa.DataType) -> None:
    try:
        expected = pa.array(values, kind)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            from_list(values, kind)
    else:
        assert from_list(values, kind).equals(expected)


def test_nan_stays_a_value_as_in_pa_array() -> None:
    built = from_list([float("nan"), None], pa.float64())
    assert built.null_count == 1 and np.isnan(built[0].as_py())


@pytest.mark.parametrize("value", [True, False, 0, -7, 2**40, 0.0, -2.5, "", "+", None])
def test_lit_is_pa_scalar(value: Any) -> None:
    kind = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}.get(type(value), pa.string())
    assert lit(value, kind).equals(pa.scalar(value, kind))
    assert lit(1, pa.int64()).type == pa.int64() and lit(True, pa.bool_()).type == pa.bool_()  # (cache keyed by type)


def test_numpy_both_ways_with_offsets_and_masks() -> None:
    rng = random.Random(26)
    for dtype in (np.int64, np.int32, np.float64, np.bool_):
        values = np.array([rng.randint(-50, 50) for _ in range(37)]).astype(dtype)
        valid = np.array([rng.random() < 0.8 for _ in range(37)])
        assert from_numpy(values).equals(pa.array(values))
        assert from_numpy(values, valid).equals(pa.array(values, mask=~valid))
        whole = pa.array(values)
        for start in (0, 1, 3, 8, 13):
            part = whole.slice(start, 20)
            assert np.array_equal(to_numpy(part), part.to_numpy(zero_copy_only=False))
        chunked = pa.chunked_array([whole.slice(0, 5), whole.slice(5)])
        assert np.array_equal(to_numpy(chunked), values)
    held = pa.array([1, None, 3])
    assert np.array_equal(to_numpy(held), held.to_numpy(zero_copy_only=False), equal_nan=True)
    assert to_numpy(pa.array([], pa.bool_())).shape == (0,)


_PROBE = """
import json, sys
from campaign import api
from campaign.ledger import Ledger
before = "pandas" in sys.modules
report = api.sync(Ledger(sys.argv[1]))
print(json.dumps({"before": before, "after": "pandas" in sys.modules, "rows": report.ingested_rows}))
"""


def test_a_sync_ingests_without_loading_pandas(tmp_path: Path) -> None:
    """~0.14 s of every sync that ingests anything (BENCHMARKS.md §13i): the rows go CSV -> Arrow ->
    Parquet, and no step of that needs pandas. Enough rows that the rules judge columns by their
    few distinct cells, as a big sync does."""
    facts = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=60, rows_per_job=100)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "ledger.sqlite")], capture_output=True,
                          text=True, cwd=REPO, env={**env, "PYTHONPATH": str(REPO)}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"before": False, "after": False, "rows": facts["rows"]}
