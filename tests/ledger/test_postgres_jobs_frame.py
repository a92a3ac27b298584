"""jobs_frame on PostgreSQL: the JSON path operators and the cast of
`extra_args` to text must give the frame built from whole ORM objects there
too (tests/analysis/test_jobs_frame.py holds it on SQLite); and the `jobs`
listing's statement, written per dialect (campaign.ledger.layout), the rows
it gives on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from campaign.cli import views
from campaign.ledger import Ledger
from campaign.results.frames import jobs_frame
from tests.analysis.test_jobs_frame import _fill, _whole_objects

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("campaign", [None, "a"])
def test_frame_is_the_whole_object_frame(new_pg_ledger: Callable[[], str], tmp_path: Path,
                                         campaign: str | None) -> None:
    led = Ledger(new_pg_ledger())
    _fill(led, tmp_path)
    new, old = jobs_frame(led, campaign), _whole_objects(led, campaign)
    assert list(new.dtypes) == list(old.dtypes)
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert any("/8c tag=1 m=x y" in label for label in new["run"])
    led.close()


def test_listing_is_the_sqlite_listing(new_pg_ledger: Callable[[], str], tmp_path: Path) -> None:
    pg, lite = Ledger(new_pg_ledger()), Ledger(tmp_path / "ledger.sqlite")
    for led in (pg, lite):
        _fill(led, tmp_path)
    for all_attempts in (False, True):
        rows = views.job_rows(pg, None, None, all_attempts=all_attempts)
        assert rows == views.job_rows(lite, None, None, all_attempts=all_attempts)
    assert {(r[7], r[10], r[11], r[13]) for r in rows} >= {(None, 1, 1, ""), ("fp32", 2, 8, ""),
                                                            ("fp32", 1, 1, "tag=1,m=x y")}
    pg.close()
    lite.close()
