"""A profiled attempt's counters CSV into the ledger, and out again into the
report's "Measured vs predicted" section and `report --json`.

The counters CSV is the real one a job of the H200 campaign left
(tests/fixtures/ncu/); its timings are that campaign's committed results.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from analysis import cost_model
from analysis.counters import measured_vs_predicted
from analysis.counters_report import counters_json, counters_tables
from campaign.backends.base import JobStatus
from campaign.commands.sync import _apply, _profile
from campaign.commands.sync_pending import collect, load_specs
from campaign.job.files import counters_path
from campaign.ledger import CounterRow, JobAttempt, Ledger
from campaign.plumbing.states import JobState
from campaign.results.counters import read_counters
from campaign.results.export import results_frame
from campaign.results.frames import counters_frame
from campaign.results.reader import classify_output
from kernels.torch import ncu
from kernels.torch.profile import COUNTER_COLUMNS, counter_rows
from tests.fixtures.ledger_rows import add_attempt, spec_with

REPO = Path(__file__).resolve().parents[2]
COUNTERS = REPO / "tests" / "fixtures" / "ncu" / "attention_fwdbwd_fused.counters.csv"
RAW_NCU = REPO / "tests" / "fixtures" / "ncu" / "attention_fwdbwd_fused_n2048.ncu.csv"
RESULTS = REPO / "bench" / "results" / "h200" / "counters" / "results.csv"
# Columns `results --format csv` adds to what the kernel program wrote.
LEDGER_ONLY = ("campaign", "cluster", "partition", "job_id", "flops", "bytes", "source", "params", "attempt",
               "state", "extra")


def fixture_rows() -> list[dict[str, str]]:
    with COUNTERS.open(newline="") as fh:
        return list(csv.DictReader(fh))


def sizes() -> tuple[int, ...]:
    return tuple(sorted({int(r["n"]) for r in fixture_rows()}))


def write_job_output(folder: Path, counters: list[dict[str, str]], ns: tuple[int, ...]) -> Path:
    """The job folder as the kernel program leaves it: its results CSV (the
    campaign's own rows of this kernel) and the counters CSV beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    with RESULTS.open(newline="") as fh:
        reader = csv.DictReader(fh)
        timed = [r for r in reader if r["kernel"] == "attention_fwdbwd" and int(r["n"]) in ns]
        columns = [c for c in reader.fieldnames or [] if c not in LEDGER_ONLY]
    out = folder / "results.csv"
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(timed)
    with counters_path(out).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COUNTER_COLUMNS))
        writer.writeheader()
        writer.writerows(counters)
    return out


def sync_one(led: Ledger, tmp_path: Path, counters: list[dict[str, str]],
             ns: tuple[int, ...] | None = None) -> int:
    ns = ns or sizes()
    spec = spec_with(kernel="attention_fwdbwd", impl="torch", variant="fused", device="cuda", dtype="bf16",
                     n=ns, d=128, gpus=1, extra_args=(("profile", "ncu"),))
    aid = add_attempt(led, tmp_path / "runs", spec=spec, job_id="7")
    with led.session() as s:
        _, pending, camps = collect(s, "unit")
        (p,) = [x for x in pending if x.attempt_id == aid]
        load_specs(s, [p])
    write_job_output(Path(p.ref.workdir), counters, ns)
    assert p.profiled
    outcomes = {aid: classify_output(p.output, p.expected_n, p.check)}
    found = {aid: _profile(p, outcomes)}
    with led.session.begin() as s:
        _apply(s, [p], {aid: JobStatus(JobState.COMPLETED, exit_code=0)}, outcomes, camps, found)
    return aid


def test_counters_are_ingested_with_the_timings(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = sync_one(led, tmp_path, fixture_rows())
    with led.session() as s:
        att = s.get(JobAttempt, aid)
        assert att is not None and att.state is JobState.COMPLETED
        stored = s.scalar(select(func.count()).select_from(CounterRow).where(CounterRow.attempt_id == aid))
    assert stored == len([r for r in fixture_rows() if r["metric"]])
    frame = counters_frame(led, "unit")
    assert set(frame["n"]) == set(sizes()) and (frame["error"] == "").all()
    assert set(frame["params"]) == {"profile=ncu"}


def test_report_section_and_json_from_the_ledger(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    sync_one(led, tmp_path, fixture_rows())
    counters = counters_frame(led, "unit")
    results = results_frame(led, campaign="unit", usable_only=True)
    mvp = measured_vs_predicted(counters, results)
    read = {int(r["n"]): float(r["value"]) for r in fixture_rows() if r["metric"] == "dram__bytes_read.sum"}
    for _, row in mvp.iterrows():
        n = int(row["n"])
        predicted = cost_model.min_bytes("attention_fwdbwd", n, 128, "bf16") - cost_model.min_write_bytes(
            "attention_fwdbwd", n, 128, "bf16")
        assert row["dram_read_bytes"] == pytest.approx(read[n])
        assert row["read_ratio"] == pytest.approx(read[n] / predicted)
        assert row["atomics"] > 0 and row["median_time_s"] > 0
    tables = dict(counters_tables(counters, results))
    assert set(tables["DRAM bytes: measured vs cost model"]["kernel"]) == {"attention_fwdbwd/fused bf16 [profile=ncu]"}
    doc = counters_json(counters, results)
    assert {r["n"] for r in doc["measured_vs_predicted"]} == set(sizes()) and doc["failures"] == []


def test_a_failed_profile_is_profile_failed_and_the_timings_count(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    last = max(sizes())
    reason = "ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    rows = [r for r in fixture_rows() if int(r["n"]) != last]
    rows.append(dict(rows[0], n=str(last), metric="", value="", unit="", kernels="", error=reason))
    aid = sync_one(led, tmp_path, rows)
    with led.session() as s:
        att = s.get(JobAttempt, aid)
        assert att is not None and att.state is JobState.PROFILE_FAILED
        assert att.reason is not None and "ERR_NVGPUCTRPERM" in att.reason and f"n={last}" in att.reason
    usable = results_frame(led, campaign="unit", usable_only=True)
    assert set(usable["n"]) == set(sizes())  # the timings of every n still count
    counters = counters_frame(led, "unit")
    assert (counters["error"].str.contains("ERR_NVGPUCTRPERM")).sum() == 1
    assert any(title.startswith("Not profiled") for title, _ in counters_tables(counters, usable))


def test_reader_names_a_missing_or_partial_file(tmp_path: Path) -> None:
    missing = read_counters(tmp_path / "results.counters.csv")
    assert missing.rows == [] and "no counters file" in (missing.reason(sizes()) or "")
    partial = tmp_path / "partial.counters.csv"
    shutil.copyfile(COUNTERS, partial)
    found = read_counters(partial)
    assert found.reason(sizes()) is None
    more = sizes() + (max(sizes()) * 2,)
    assert f"{[more[-1]]}" in (found.reason(more) or "")


def test_a_raw_ncu_csv_reaches_the_ledger_and_the_section(tmp_path: Path) -> None:
    """ncu's own CSV -> the program's counters rows -> `status` -> ledger -> report."""
    n = int(RAW_NCU.name.split("_n")[1].split(".")[0])
    base = {"kernel": "attention_fwdbwd", "impl": "torch", "variant": "fused", "dtype": "bf16",
            "d": "128", "n": str(n)}
    parsed = ncu.parse(RAW_NCU.read_text())
    rows = counter_rows(parsed, base)
    led = Ledger(tmp_path / "ledger.sqlite")
    sync_one(led, tmp_path, rows, (n,))
    counters = counters_frame(led, "unit")
    assert len(counters) == len(rows) and set(counters["metric"]) == {r["metric"] for r in rows}
    tables = counters_tables(counters, results_frame(led, campaign="unit", usable_only=True))
    section = "\n".join(table.to_string() for _, table in tables)
    assert all(k.name in section for k in parsed.kernels)
