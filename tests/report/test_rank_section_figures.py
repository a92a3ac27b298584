"""A multi-rank program with several figures of merit: every figure of a run
shares its time, so the report's "Scaling over ranks and nodes" tables take
one time row per invocation (as `report --json`'s strong_scaling does), never
one per figure; and the busy-machine warning names each point with its shape."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.merit import timing_rows
from analysis.rank_scaling import strong_scaling
from analysis.report import render_report


def _rows(overlap: str = "") -> pd.DataFrame:
    rows = []
    for nodes, t in ((1, 4.0), (2, 2.5)):
        for repeat in range(3):
            time = t + 0.1 * repeat
            for metric, value, unit, higher in (("rate", 100 / time, "MB/s", True), ("seconds", time, "s", False)):
                rows.append({"cluster": "c", "partition": "multi", "kernel": "ring", "impl": "mpi",
                             "variant": "plain", "device": "cpu", "dtype": "fp32",
                             "params": f"msg=64,metric={metric}", "threads": 1, "ranks": nodes, "nodes": nodes,
                             "n": None, "repeat": repeat, "time_s": time, "metric": metric, "value": value,
                             "unit": unit, "higher_is_better": higher, "overlap": overlap})
    return pd.DataFrame(rows).astype({"n": "Int64"})  # no problem size: NULL, as the typed result columns give it


def _table(markdown: str, caption: str) -> list[str]:
    """The body rows of the table under `caption`."""
    lines = markdown.splitlines()
    out = []
    for line in lines[lines.index(f"**{caption}**") + 4:]:  # caption, blank, header, rule
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def test_strong_scaling_table_has_one_row_per_point_not_per_figure(tmp_path: Path) -> None:
    results = _rows()
    made = render_report(results, None, None, tmp_path, "c")
    text = made.markdown.read_text()
    rows = _table(text, "Strong scaling over total ranks and nodes")
    expected = strong_scaling(timing_rows(results))
    assert len(expected) == 2 and len(rows) == len(expected)
    assert not any("metric=" in row for row in rows)
    assert all(row.startswith("| ring/mpi/plain fp32 multi [msg=64] | 1 | – |") for row in rows)
    assert "| 2 | 2 | 2.60 s |" in rows[1]  # the 2-node point's median time


def test_busy_warning_names_each_point_with_its_ranks_and_nodes(tmp_path: Path) -> None:
    text = render_report(_rows("busy machine: load 3"), None, None, tmp_path, "c").markdown.read_text()
    items = [line for line in text.splitlines() if line.startswith("- ring/")]
    assert items == [f"- ring/mpi/plain fp32 multi [msg=64] ×{shape} threads 1 n –: "
                     "6 of 6 rows; busy machine: load 3" for shape in ("1 rank on 1 node", "2 ranks on 2 nodes")]


def test_node_scaling_of_a_figure_names_the_ranks_per_node_it_holds(tmp_path: Path) -> None:
    """Over nodes the total ranks grow with the nodes; what a series holds is
    its ranks per node, so two rows of one series never read as different
    fixed rank counts, and the 2-ranks-per-node series is told from the 1."""
    rows = []
    for per_node in (1, 2):
        for nodes, rate in ((1, 100.0), (2, 180.0)):
            for repeat in range(3):
                rows.append({"cluster": "c", "partition": "multi", "kernel": "hyb", "impl": "mpi",
                             "variant": "plain", "device": "cpu", "dtype": "fp32", "params": "metric=rate",
                             "threads": 1, "ranks": nodes * per_node, "nodes": nodes, "n": 1000,
                             "repeat": repeat, "time_s": 1.0, "metric": "rate", "value": rate * per_node + repeat,
                             "unit": "MB/s", "higher_is_better": True, "overlap": ""})
    text = render_report(pd.DataFrame(rows), None, None, tmp_path, "c").markdown.read_text()
    body = _table(text, "Scaling of rate over nodes")
    assert [row.split(" | ")[2] for row in body] == ["T=1 R/node=1"] * 2 + ["T=1 R/node=2"] * 2


def test_superlinear_points_are_flagged_and_named_with_their_shape_and_n(tmp_path: Path) -> None:
    """Two series over nodes (1 and 2 ranks per node) at two sizes: the time
    table marks an efficiency above 105%, and each summary flag names the
    series it belongs to and its n, so two flags "at 2 nodes" read apart; the
    largest speedup claimed is a clean one."""
    rows = []
    for per_node in (1, 2):
        for n in (1000, 2000):
            for nodes, rate in ((1, 100.0), (2, 150.0 if per_node == 1 else 300.0)):
                for repeat in range(3):
                    value = rate * (n / 1000) + repeat
                    rows.append({"cluster": "c", "partition": "multi", "kernel": "hyb", "impl": "mpi",
                                 "variant": "plain", "device": "cpu", "dtype": "fp32", "params": "metric=rate",
                                 "threads": 1, "ranks": nodes * per_node, "nodes": nodes, "n": n,
                                 "repeat": repeat, "time_s": 1000.0 / value, "metric": "rate", "value": value,
                                 "unit": "MB/s", "higher_is_better": True, "overlap": ""})
    text = render_report(pd.DataFrame(rows), None, None, tmp_path, "c").markdown.read_text()
    flags = [line for line in text.splitlines() if line.startswith("- Flagged: rate efficiency")]
    assert len(flags) == 2 and all("at 2 nodes against 1" in line for line in flags)
    assert any("(T=1 R/node=2, n = 1000)" in line for line in flags)
    assert any("(T=1 R/node=2, n = 2000)" in line for line in flags)
    assert "largest speedup over nodes 1.50× at 2 nodes against 1 (efficiency 75%)" in text
    strong = _table(text, "Strong scaling over total ranks and nodes")
    marked = [row for row in strong if "† |" in row]
    assert marked and all("| 2 | 2 |" in row or "| 4 | 2 |" in row for row in marked)
    assert not any("†" in row for row in strong if "| 1 | 1 |" in row)
