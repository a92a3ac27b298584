"""Provenance diff, references and thread advice on synthetic data."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from analysis.provenance_diff import provenance_diff
from analysis.references import check_references, outside
from analysis.thread_advice import format_thread_advice, thread_advice
from campaign.cli.compare_provenance import provenance_lines

RowMaker = Callable[..., pd.DataFrame]


def record(modules: list[str], torch: str = "2.11.0", commit: str = "abc", **env: object) -> dict[str, object]:
    return {"git_commit": commit, "git_dirty": False, "hostname": "login1", "command": "campaign submit x",
            "config_hash": commit + "h", "packages": {"torch": torch, "numpy": "2.5"},
            "environment": env,
            "config": {"cluster": {"modules": modules, "build": {"cflags": "-O3"}},
                       "campaign": {"workdir": f"/runs/{commit}"}}}


def test_only_what_differs_a_changed_module_version() -> None:
    base = [record(["gcc/11", "nvhpc/24.1"])]
    new = [record(["gcc/11", "nvhpc/24.5"])]
    diffs = provenance_diff(base, new)
    assert [(d.category, d.key) for d in diffs] == [("modules", "config.cluster.modules")]
    assert diffs[0].base == ("[gcc/11, nvhpc/24.1]",) and diffs[0].new == ("[gcc/11, nvhpc/24.5]",)
    assert provenance_lines(diffs) == ["modules: config.cluster.modules: [gcc/11, nvhpc/24.1] -> [gcc/11, nvhpc/24.5]"]


def test_categories_and_one_sided_keys() -> None:
    base = [record(["gcc/11"], torch="2.10.0", commit="abc")]
    new = [record(["gcc/11"], torch="2.11.0", commit="def",
                  compilers={"cc": "gcc 13.3.0"}, node={"gpu": "NVIDIA H200"})]
    diffs = {d.key: d for d in provenance_diff(base, new)}
    assert set(diffs) == {"git_commit", "packages.torch", "environment.compilers.cc", "environment.node.gpu"}
    assert diffs["git_commit"].category == "code" and diffs["packages.torch"].category == "libraries"
    assert diffs["environment.compilers.cc"].one_sided and diffs["environment.compilers.cc"].category == "compilers"
    lines = provenance_lines(list(diffs.values()))
    assert "compilers: 1 key(s) recorded on one side only: environment.compilers.cc" in lines


def test_several_records_on_one_side() -> None:
    base = [record(["m/1"]), record(["m/1"])]
    new = [record(["m/1"]), record(["m/2"])]  # a rerun after an upgrade
    [d] = provenance_diff(base, new)
    assert d.base == ("[m/1]",) and d.new == ("[m/1]", "[m/2]")
    assert provenance_diff(base, base) == []


def refs_frame(**cols: object) -> pd.DataFrame:
    base = dict(cluster="anvil", partition="wholenode", kernel="attention_forward", impl="c",
                variant="naive", threads=1)
    return pd.DataFrame([{**base, **cols}])


def test_references_flag_points_outside_the_tolerance(rows: RowMaker) -> None:
    df = rows({(1, 1024): [1.0, 1.0, 1.0], (1, 2048): [4.0, 4.0, 4.0], (1, 4096): [16, 16, 16]})
    refs = pd.concat([refs_frame(n=1024, time_s=1.05, tolerance=0.1),  # ok (-4.8%)
                      refs_frame(n=2048, time_s=3.0, tolerance=0.1),  # slow (+33%)
                      refs_frame(n=4096, time_s=20.0),  # fast (-20%, default tolerance 10%)
                      refs_frame(n=8192, time_s=1.0)], ignore_index=True)  # not measured
    out = check_references(df, refs).set_index("n")
    assert out["status"].to_dict() == {1024: "ok", 2048: "slow", 4096: "fast", 8192: "missing"}
    assert out.loc[2048, "deviation"] == pytest.approx(4.0 / 3.0 - 1)
    assert len(outside(check_references(df, refs))) == 3


def test_references_as_rates(rows: RowMaker) -> None:
    df = rows({(1, 1024): [2.0, 2.0, 2.0]})
    df["flops"] = 4e9
    ok = check_references(df, refs_frame(n=1024, flops_per_s=2e9, tolerance=0.05)).iloc[0]
    low = check_references(df, refs_frame(n=1024, flops_per_s=3e9, tolerance=0.05)).iloc[0]
    assert ok["status"] == "ok" and ok["measured"] == pytest.approx(2e9)
    assert low["status"] == "slow"
    with pytest.raises(ValueError, match="exactly one of"):
        check_references(df, refs_frame(n=1024))


def test_thread_advice_ranges_and_default_cost(rows: RowMaker) -> None:
    # Small n: one thread is best and 16 threads cost 8x; large n: 16 threads win.
    times = {}
    for n in (64, 128):
        times |= {(1, n): [1.0] * 3, (4, n): [2.0] * 3, (16, n): [8.0] * 3}
    for n in (1024, 2048):
        times |= {(1, n): [16.0] * 3, (4, n): [4.2] * 3, (16, n): [1.0] * 3}
    advice = thread_advice(rows(times), default_threads=16)
    assert advice.ranges[["n_lo", "n_hi", "recommended"]].values.tolist() == [[64, 128, 1], [1024, 2048, 16]]
    per_n = advice.per_n.set_index("n")
    assert per_n.loc[64, "default_cost"] == 8.0 and per_n.loc[2048, "default_cost"] == 1.0
    assert per_n["default_measured"].all()
    text = format_thread_advice(advice, "anvil/wholenode")
    assert "n = 64..128: 1 thread" in text and "n=64: 8.00x" in text


def test_thread_advice_names_each_node_and_rank_shape(rows: RowMaker) -> None:
    """Configurations that differ only in nodes and ranks get one block each, told apart by name."""
    times = {(1, 64): [2.0] * 3, (2, 64): [1.0] * 3}
    frame = pd.concat([rows(times, nodes=nodes, ranks=ranks) for nodes, ranks in ((1, 1), (2, 2), (2, 4))])
    text = format_thread_advice(thread_advice(frame), "c/p")
    heads = [line for line in text.splitlines() if line.endswith(":")]
    assert len(heads) == 3 and len(set(heads)) == 3, text
    assert heads[1].endswith("/nodes=2/ranks=2:") and heads[2].endswith("/nodes=2/ranks=4:")
    assert "nodes=" not in heads[0]  # one node, one rank: nothing to add


def test_thread_advice_prefers_fewer_threads_within_noise(rows: RowMaker) -> None:
    # 8 threads has the lowest median but its interval overlaps 4 threads': recommend 4.
    df = rows({(1, 512): [4.0, 4.1, 4.2], (4, 512): [1.0, 1.1, 1.3], (8, 512): [0.95, 1.05, 1.2]})
    per_n = thread_advice(df).per_n.iloc[0]
    assert per_n["best_threads"] == 8 and per_n["recommended"] == 4
    assert per_n["default_threads"] == 8 and not per_n["default_measured"]
    with pytest.raises(ValueError, match="n = 7"):
        thread_advice(df, n=7)


def test_thread_advice_ignores_a_wide_interval_of_a_much_slower_count(rows: RowMaker) -> None:
    # 1 thread's interval reaches down to 16 threads' but its median is twice the best: not recommended.
    df = rows({(1, 512): [0.9, 2.0, 2.1], (16, 512): [1.0, 1.0, 1.1]})
    per_n = thread_advice(df, default_threads=16).per_n.iloc[0]
    assert per_n["recommended"] == 16 and per_n["default_cost"] == 1.0
