"""A figure's median is one point of every dimension of its run: an fp32 and
an fp64 run of one program, or a 1-node and a 2-node run, are never one
median; `report --json`'s figures_of_merit records name those dimensions as
fields, not only inside a label."""

from __future__ import annotations

import pandas as pd

from analysis.merit import bandwidth, medians, merit_tables
from analysis.merit_json import figures_json


def _rows(points: dict[tuple[str, int], float]) -> pd.DataFrame:
    rows = []
    for (dtype, nodes), value in points.items():
        for repeat in range(3):
            rows.append({"cluster": "c", "partition": "p", "kernel": "gemm", "impl": "blas", "variant": "v",
                         "device": "cpu", "dtype": dtype, "d": None, "params": "opt=a=b,metric=rate",
                         "threads": 1, "ranks": nodes, "nodes": nodes, "n": 10, "repeat": repeat,
                         "time_s": 1.0 / value, "metric": "rate", "value": value + repeat, "unit": "GFLOP/s",
                         "higher_is_better": True, "bytes": 8e9})
    return pd.DataFrame(rows)


def test_dtypes_and_node_counts_are_separate_points() -> None:
    med = medians(_rows({("fp32", 1): 100.0, ("fp64", 1): 50.0, ("fp32", 2): 180.0}))
    got = {(r.dtype, r.nodes): (r.value, r.repeats) for r in med.itertuples()}
    assert got == {("fp32", 1): (101.0, 3), ("fp64", 1): (51.0, 3), ("fp32", 2): (181.0, 3)}
    assert set(med["label"]) == {"gemm/blas/v fp32 p [opt=a=b]", "gemm/blas/v fp64 p [opt=a=b]"}
    assert len(bandwidth(med)) == 3  # one bandwidth per point, the 2-node one too


def test_the_bandwidth_table_tells_node_counts_apart() -> None:
    """A 1-node and a 2-node point of one configuration, threads and n: two rows, each with its nodes and
    ranks (one row each before looked like the same point twice)."""
    [table] = [t for t in merit_tables(_rows({("fp32", 1): 100.0, ("fp32", 2): 180.0}), None, "c")
               if t.caption.startswith("Bandwidth")]
    got = table.frame[["configuration", "nodes", "ranks", "threads", "n"]].values.tolist()
    assert got == [["gemm/blas/v fp32 p [opt=a=b]", "1", "1", "1", "10"],
                   ["gemm/blas/v fp32 p [opt=a=b]", "2", "2", "1", "10"]]
    [single] = [t for t in merit_tables(_rows({("fp32", 1): 100.0}), None, "c") if t.caption.startswith("Bandwidth")]
    assert "nodes" not in single.frame.columns  # one shape: no column that says nothing


def test_json_records_carry_the_dimensions() -> None:
    [record] = figures_json(_rows({("fp64", 1): 50.0}), None)
    assert (record["kernel"], record["impl"], record["dtype"], record["params"], record["nodes"]) == \
        ("gemm", "blas", "fp64", "opt=a=b", 1)
    assert record["d"] is None and record["value"] == 51.0


def test_a_figure_near_the_largest_double_keeps_its_median() -> None:
    """Two middle values of 1.5e308 and 1.7e308 have the finite median 1.6e308: the table, the scaling
    and report --json give it, not inf or null (pandas' 0.5 * (a + b) overflows)."""
    rows = _rows({("fp32", 1): 1.0}).iloc[:2].assign(value=[1.5e308, 1.7e308])
    assert medians(rows)["value"].tolist() == [1.6e308]
    [record] = figures_json(rows, None)
    assert record["value"] == 1.6e308
    rows = pd.concat([rows, rows.assign(value=[float("inf"), 1.0], repeat=[2, 3])], ignore_index=True)
    assert medians(rows)["value"].tolist() == [1.6e308]  # (1.0, 1.5e308, 1.7e308, inf): the same middle two


def test_a_figure_table_names_its_sizes_as_integers_beside_a_program_without_n() -> None:
    """A program with sizes beside one without (NULL n) in one report: the figure's value table had the
    column `1000.0` (n turned float by the other program's NULLs); its sizes read as the time tables
    write them (`1000`, `1M`), the NULL n as `–`."""
    sized = _rows({("fp32", 1): 100.0})
    sized = pd.concat([sized.assign(n=1000), sized.assign(n=1 << 20)], ignore_index=True)
    sizeless = _rows({("fp32", 1): 7.0}).assign(kernel="spin", n=None, metric="ops", params="metric=ops")
    tables = merit_tables(pd.concat([sized, sizeless], ignore_index=True), None, "c")
    heads = {t.caption.split(" [")[0]: list(t.frame.columns) for t in tables if t.caption.startswith("Median")}
    assert heads == {"Median rate": ["configuration", "threads", "1000", "1M"],
                     "Median ops": ["configuration", "threads", "–"]}
