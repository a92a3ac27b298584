"""compare() of a program's figures where a point was measured on one side
only: each such point says which figure it is and its direction, as the
matched points do (a rate and a time of one configuration otherwise read as
the same point listed twice)."""

from __future__ import annotations

import pandas as pd

from analysis.compare import compare
from campaign.cli.compare_view import as_text
from campaign.commands.compare import CompareReport, Selection


def _rows(sizes: tuple[int, ...]) -> pd.DataFrame:
    rows = []
    for n in sizes:
        for repeat in range(4):
            time = n / 1000 + 0.01 * repeat
            for metric, value, unit, higher in (("rate", 100 / time, "MB/s", True), ("seconds", time, "s", False)):
                rows.append({"cluster": "c", "partition": "multi", "kernel": "ring", "impl": "mpi",
                             "variant": "plain", "device": "cpu", "dtype": "fp32",
                             "params": f"metric={metric}", "threads": 1, "ranks": 2, "nodes": 2,
                             "n": n, "repeat": repeat, "time_s": time, "metric": metric, "value": value,
                             "unit": unit, "higher_is_better": higher})
    return pd.DataFrame(rows)


def test_points_on_one_side_name_their_figure_and_direction() -> None:
    c = compare(_rows((1000, 2000)), _rows((1000,)))
    assert len(c.points) == 2 and c.new_only.empty
    only = c.base_only.sort_values("metric").reset_index(drop=True)
    assert only[["metric", "higher_is_better"]].values.tolist() == [["rate", True], ["seconds", False]]
    assert (only["n"] == 2000).all()


def test_the_text_lists_each_one_sided_figure_once_by_name() -> None:
    c = compare(_rows((1000, 2000)), _rows((1000,)))
    rep = CompareReport(Selection("a"), Selection("b"), c, [])
    lines = [line.strip() for line in as_text(rep).splitlines() if "n=2000" in line]
    assert sorted(lines) == ["ring mpi/plain/fp32/nodes=2/ranks=2 threads=1 n=2000 metric=rate",
                             "ring mpi/plain/fp32/nodes=2/ranks=2 threads=1 n=2000 metric=seconds"]
