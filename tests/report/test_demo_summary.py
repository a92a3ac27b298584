"""The demo's report leads with what is true: on the real demo
campaign (smoke on the local backend, timed on this shared 2-core machine),
the first finding is the largest effect among the findings free of flags,
and a superlinear speedup (efficiency above 100%, e.g. '3.78× at 2 threads
(efficiency 189%)': the 1-thread run was slowed) or a point slower than a
larger n of its configuration is a caveat with its reason, never the lead."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import caveats as caveats_mod
from analysis import metrics_json
from analysis import report as report_mod
from analysis import report_sections as sections_mod
from analysis.caveats import Finding
from analysis.limits import SUPERLINEAR
from tests.analysis.conftest import make_rows
from tests.analysis.test_findings_order import SIZES, _summary

EFFICIENCY = re.compile(r"^Largest speedup: .*\(efficiency (\d+)%\)")


def _efficiency(f: Finding) -> float | None:
    m = EFFICIENCY.match(f.text)
    return int(m.group(1)) / 100 if m else None


def test_demo_leads_with_the_largest_clean_effect(demo_report: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from campaign.commands.analyze import write_reports
    from campaign.ledger import Ledger

    seen: list[tuple[list[Finding], list[Finding]]] = []

    def keep(found: Any) -> tuple[list[Finding], list[Finding]]:
        said, flagged = caveats_mod.order(found)
        seen.append((said, flagged))
        return said, flagged
    monkeypatch.setattr(sections_mod, "order", keep)
    write_reports(Ledger(demo_report.parent.parent / "ledger.sqlite", create=False), tmp_path)
    assert len(seen) == 1
    said, flagged = seen[0]
    ranked = [f for f in said if f.effect is not None]
    md = (demo_report.parent / "local.md").read_text()  # the page the user opens says it in that order
    if not ranked and "while other processes kept its CPUs busy" in md:
        # timed while the suite's other workers kept both cores busy: every ratio rests on a
        # flagged point, so none leads; each is a caveat quoting the load (tests/truth/test_busy_machine.py)
        assert any("busy machine: other processes kept" in (f.reason or "") for f in flagged), flagged
        return
    assert ranked, said  # the demo compares memopt with naive: there is an effect to lead with
    assert said[0] is ranked[0] and said[0].effect == max(f.effect or 0.0 for f in ranked), said
    assert all(f.reason is None for f in said) and all(f.reason for f in flagged)
    for f in said:
        eff = _efficiency(f)
        assert eff is None or eff <= SUPERLINEAR, f"a superlinear speedup leads: {f}"
    for f in flagged:
        eff = _efficiency(f)
        if eff is not None and eff > SUPERLINEAR:
            assert f.reason and "above 100%" in f.reason, f
    bullets = re.findall(r"^- (.*)$", md[md.index("## Summary"):], re.M)
    assert bullets and bullets[0].replace("\\", "") == said[0].text.replace("\\", "")


@pytest.mark.parametrize("efficiency", [1.89, 1.5, 1.06])
def test_a_superlinear_speedup_is_a_caveat(efficiency: float, tmp_path: Path) -> None:
    """'3.78× at 2 threads (efficiency 189%)' on a 2-core machine: a caveat saying why."""
    rows = make_rows
    times = {(t, n): [1e-6 * n * n * (1.0 if t == 1 else 1 / (2 * efficiency)) * f
                      for f in (1.0, 1.01, 1.02, 1.03)] for t in (1, 2) for n in SIZES}
    naive = rows(times, variant="naive")
    memopt = rows({k: [x / 3.13 for x in v] for k, v in times.items()}, variant="memopt")
    md = report_mod.render_report(pd.concat([naive, memopt], ignore_index=True), None, None, tmp_path,
                                  "anvil").markdown.read_text()
    said, flagged = _summary(md)
    assert "memopt is 3.13× faster" in said[0], said
    assert not any(s.startswith("Largest speedup") for s in said), said
    superlinear = [c for c in flagged if c.startswith("Largest speedup")]
    assert superlinear and f"efficiency {round(efficiency * 100)}%" in superlinear[0], flagged
    assert "above 100%" in superlinear[0]


def test_a_point_slower_than_a_larger_n_is_a_caveat(tmp_path: Path) -> None:
    """The demo's '179× slower at 2 threads' at n = 64 rested on a point slower
    than n = 128 of the same configuration: a busy machine, not the kernel."""
    times = {(t, n): [1e-6 * n * n * (1.0 if t == 1 else 0.6) * f for f in (1.0, 1.01, 1.02, 1.03)]
             for t in (1, 2) for n in SIZES}
    times[(2, SIZES[0])] = [x * 179 for x in times[(1, SIZES[0])]]  # disturbed: 179× the 1-thread time
    naive = make_rows(times, variant="naive")
    memopt = make_rows({k: [x / 3.13 for x in v] for k, v in times.items() if k[0] == 1}, variant="memopt")
    md = report_mod.render_report(pd.concat([naive, memopt], ignore_index=True), None, None, tmp_path,
                                  "anvil").markdown.read_text()
    said, flagged = _summary(md)
    assert not any("179×" in s for s in said), said
    disturbed = [c for c in flagged if "179× slower" in c]
    assert disturbed and all("larger n" in c for c in disturbed), flagged


@pytest.mark.parametrize(("value", "label"), [(0.001, "1/1000×"), (0.01, "1/100×"), (0.05, "1/20×"), (0.5, "0.5×"),
                                              (2.0, "2×")])
def test_small_ratio_ticks_are_fractions(value: float, label: str) -> None:
    """The demo's ratio figure labelled '0.001×' and '0.01×' (zeros a reader miscounts)."""
    from analysis.display import ratio_tick

    assert ratio_tick(value) == label


def test_a_superlinear_thread_speedup_below_the_largest_is_marked_everywhere(tmp_path: Path) -> None:
    """1.15× per thread at T = 2 (115%: a cache effect or a slowed 1-thread time) while T = 4 gives
    the largest speedup at a physical 80%: the speedup table marks the 115% as the figure tables
    do, the JSON record says `superlinear`, and a caveat names it; the clean 3.2× stays the finding."""
    share = {1: 1.0, 2: 1 / (2 * 1.15), 4: 1 / (4 * 0.8)}
    times = {(t, n): [1e-6 * n * n * share[t] * f for f in (1.0, 1.01, 1.02, 1.03)] for t in share for n in SIZES}
    results = make_rows(times)
    records = {(r["threads"], r["n"]): r for r in metrics_json(results, None)["speedup"]}
    assert records[(2, 64)]["superlinear"] is True and records[(4, 64)]["superlinear"] is False
    assert records[(1, 64)]["superlinear"] is False
    md = report_mod.render_report(results, None, None, tmp_path, "anvil").markdown.read_text()
    said, flagged = _summary(md)
    assert any(s.startswith("Largest speedup: 3.20× at 4 threads") for s in said), said
    assert not any("115%" in s for s in said), said
    marked = [c for c in flagged if "115%" in c]
    assert marked and "above 105%" in marked[0] and "4 thread speedups" in marked[0], flagged
    assert "cache" in marked[0] and "baseline" in marked[0]
    table = md[md.index("**Speedup (efficiency) by thread count T"):]
    assert "(115% †)" in table and "(80%)" in table and "† efficiency above 105%" in table
