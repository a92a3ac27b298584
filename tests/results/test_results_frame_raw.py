"""results_frame reads the driver's rows without SQLAlchemy Rows (issue 18):
the frame must be the one the Row-by-Row read gave, column for column, dtype
for dtype, value for value, on a ledger with job rows, imported rows (with
and without a campaign), JSON extras (also JSON null), NULLs and attempts in
usable, partial-usable and unusable states."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow
from campaign.plumbing.states import JobState
from campaign.results import query
from campaign.results.export import RowFilter, results_frame
from tests.fixtures.ledger_rows import add_attempt, spec_with
from tests.ledger import conftest as pg

postgres_server, new_pg_ledger = pg.postgres_server, pg.new_pg_ledger  # tests/ledger's server fixtures


def _row_by_row(s: Any, stmt: Any) -> tuple[list[str], Callable[[int], list[tuple[Any, ...]]]]:
    """The read before issue 18: an ORM session's Rows, one tuple each."""
    result = s.execute(stmt)
    return list(result.keys()), lambda size: [tuple(r) for r in result.fetchmany(size)]


def _result(attempt: int | None, n: int, repeat: int, **fields: Any) -> ResultRow:
    base: dict[str, Any] = dict(attempt_id=attempt, source="job" if attempt else "old.csv", cluster="local",
                                partition="local", kernel="attention_forward", impl="c", variant="naive",
                                device="cpu", dtype="fp32", threads=2, n=n, d=16, repeat=repeat,
                                time_s=1e-6 * n * (1 + repeat / 7), job_id="101" if attempt else None)
    return ResultRow(**{**base, **fields})


def _fill(led: Ledger, tmp_path: Path) -> None:
    done = add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="a")
    cut = add_attempt(led, tmp_path, state=JobState.TIMEOUT, campaign="a", spec=spec_with(threads=4))
    bad = add_attempt(led, tmp_path, state=JobState.CHECK_FAILED, campaign="b", spec=spec_with(variant="memopt"))
    other = add_attempt(led, tmp_path, state=JobState.PROFILE_FAILED, campaign="b", spec=spec_with(dtype="fp64"))
    with led.session.begin() as s:
        s.get(JobAttempt, cut).alloc_cpus = 4  # type: ignore[union-attr]
        s.get(JobAttempt, other).overlap = "101"  # type: ignore[union-attr]
        imported = Campaign(name="imp", cluster="anvil", experiment="import", backend="import",
                            cluster_yaml="name: anvil\n", python="python3",
                            created_at=s.get(Campaign, 1).created_at, workdir=str(tmp_path))  # type: ignore[union-attr]
        s.add(imported)
        s.flush()
        s.add_all([
            _result(done, 64, 0, extra={"params": "tag=1", "first_call_s": 0.5}, flops=1e9, bytes=2e9, rel_err=1e-7),
            _result(done, 64, 1, extra={"params": "tag=1", "first_call_s": 0.25}, flops=1e9, bytes=2e9),
            _result(done, 128, 0, extra=None, gpu_model="H100"),
            _result(cut, 64, 0, threads=4, extra={"note": "cut"}, dtype=None, d=None),
            _result(bad, 64, 0, variant="memopt", extra={"params": "x=2"}),
            _result(other, 256, 0, dtype="fp64", extra={"params": None, "warm": True}),
            _result(None, 64, 0, cluster="anvil", partition="wholenode", campaign_id=imported.id,
                    extra={"params": "p=3", "first_call_s": 1.0}, rel_err=2e-7),
            _result(None, 128, 1, cluster="anvil", partition="wholenode", extra=None, threads=8),
        ])
        s.flush()
        # JSON null (not SQL NULL) in `extra`, as older importers wrote it
        s.execute(ResultRow.__table__.update().where(ResultRow.n == 128, ResultRow.repeat == 1)  # type: ignore[attr-defined]
                  .values(extra=None).execution_options(synchronize_session=False))


CASES: list[dict[str, Any]] = [
    {}, {"all_extras": False}, {"usable_only": True}, {"usable_only": True, "all_extras": False},
    {"campaign": "a"}, {"campaign": ["a", "imp"], "all_extras": False}, {"cluster": "anvil"},
    {"where": RowFilter(commit="0")}, {"campaign": "nothing"},
]


@pytest.mark.parametrize("kwargs", CASES, ids=[repr(c) for c in CASES])
def test_frame_is_the_row_by_row_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any]) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    _fill(led, tmp_path)
    new = results_frame(led, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(query, "fetch_rows", _row_by_row)
        old = results_frame(led, **kwargs)
    assert list(new.columns) == list(old.columns)
    assert list(new.dtypes) == list(old.dtypes)
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    led.close()


@pytest.mark.postgres
def test_frame_is_the_row_by_row_frame_on_postgres(new_pg_ledger: Callable[[], str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg's rows: the driver path where SQLAlchemy leaves them as they
    are, Row by Row where it would not; the frame is the same either way."""
    led = Ledger(new_pg_ledger())
    _fill(led, tmp_path)
    for kwargs in CASES:
        with monkeypatch.context() as m:
            m.setattr(query, "fetch_rows", _row_by_row)
            old = results_frame(led, **kwargs)
        new = results_frame(led, **kwargs)
        assert list(new.dtypes) == list(old.dtypes), kwargs
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    led.close()
