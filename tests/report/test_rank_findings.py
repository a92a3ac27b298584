"""The summary states what a campaign over ranks and nodes was run for: the
largest strong-scaling speedup and the weak-scaling efficiency at the largest
scale, each against its base point; a superlinear or flagged one is a caveat."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.report import render_report


def _rows(times: dict[tuple[str, int, int], float], overlap: str = "") -> pd.DataFrame:
    rows = []
    for (variant, nodes, ranks), t in times.items():
        for repeat in range(5):
            rows.append({"cluster": "c", "partition": "multi", "kernel": "ring", "impl": "mpi", "variant": variant,
                         "device": "cpu", "dtype": "fp32", "params": "", "threads": 1, "ranks": ranks,
                         "nodes": nodes, "n": 4096, "repeat": repeat, "time_s": t * (1 + 0.001 * repeat),
                         "overlap": overlap if (nodes, ranks) == (1, 1) else ""})
    return pd.DataFrame(rows)


def _summary(tmp_path: Path, results: pd.DataFrame) -> tuple[list[str], list[str]]:
    md = render_report(results, None, None, tmp_path, "c").markdown.read_text()
    part = md[md.index("## Summary"):]
    part = part[:part.index("\n## ", 3)]
    lead, _, caveats = part.partition("### Caveats")
    return ([ln for ln in lead.splitlines() if ln.startswith("- ")],
            [ln for ln in caveats.splitlines() if ln.startswith("- ")])


TIMES = {("strong", 1, 1): 8.0, ("strong", 1, 2): 4.4, ("strong", 2, 4): 2.5,
         ("weak", 1, 1): 1.0, ("weak", 2, 2): 1.1, ("weak", 2, 4): 1.25}


def test_strong_speedup_and_weak_efficiency_are_findings(tmp_path: Path) -> None:
    said, caveats = _summary(tmp_path, _rows(TIMES))
    assert ("- Strong scaling: 3.20× at 4 ranks on 2 nodes against 1 rank on 1 node for "
            "ring/mpi/strong fp32 multi at n = 4096, T = 1 (efficiency 80%, per node 160%).") in said
    assert ("- Weak scaling (n per rank): efficiency 80% at 4 ranks on 2 nodes against 1 rank on 1 node for "
            "ring/mpi/weak fp32 multi at n = 4096, T = 1 (scaled speedup 3.20×).") in said
    assert not [c for c in caveats if "scaling" in c.lower() and "ranks" in c]


def test_a_superlinear_or_busy_base_makes_it_a_caveat(tmp_path: Path) -> None:
    times = {**TIMES, ("strong", 1, 2): 2.0}  # 4x at 2 ranks: efficiency 200%, the largest speedup
    said, caveats = _summary(tmp_path, _rows(times))
    assert any(c.startswith("- Strong scaling: 4.00× at 2 ranks on 1 node") and "efficiency 200% is above 105%"
               in c for c in caveats), caveats
    assert any(s.startswith("- Strong scaling: 3.20× at 4 ranks on 2 nodes") for s in said), said
    said, caveats = _summary(tmp_path, _rows(TIMES, overlap="busy machine: load 3"))
    assert not [s for s in said if "scaling" in s.lower()], said  # every finding rests on the busy base point
    assert any(c.startswith("- Strong scaling: 3.20×") and "busy machine: load 3" in c for c in caveats), caveats
