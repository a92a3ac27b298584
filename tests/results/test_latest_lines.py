"""The superseded runs' lines: every configuration up to SHOWN_RECORDS, then one count (a
rebuild of a thousand configurations must not bury the report's header)."""

from __future__ import annotations

from campaign.results.latest import SHOWN_JOBS, SHOWN_RECORDS, Superseded


def _record(i: int, jobs: int) -> dict[str, object]:
    return {"configuration": f"k/c/v{i} fp32 d=64 cpu on x/p", "runs": 2, "run_ids": [2 * i, 2 * i + 1],
            "rows": 8, "job_ids": [f"{i}.{j}" for j in range(jobs)], "change": "program 'sha256:a' -> 'sha256:b'"}


def test_lines_name_each_configuration_then_count_the_rest() -> None:
    found = Superseded(runs=[], records=[_record(i, SHOWN_JOBS + 2) for i in range(SHOWN_RECORDS + 3)])
    lines = found.lines()
    assert len(lines) == SHOWN_RECORDS + 1
    assert lines[0].startswith("Superseded: 2 run(s) of k/c/v0 fp32") and "and 2 more" in lines[0]
    assert "program 'sha256:a' -> 'sha256:b'" in lines[0]
    assert lines[-1].startswith("Superseded: 6 run(s) of 3 more configuration(s)")


def test_no_superseded_runs_no_lines() -> None:
    assert Superseded().lines() == []
    assert "none with rows" in Superseded(records=[_record(0, 0)]).lines()[0]
