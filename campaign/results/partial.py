"""What a job finished before it was stopped: the rows of the n it measured.

Kernels append each n's rows to `FILE.csv.tmp` as soon as they are measured
(flushed per n) and rename the file only at the end, so a TIMEOUT,
CANCELLED, OUT_OF_MEMORY or FAILED job leaves the rows of every finished n
in the temporary file and a final file never looks complete when it is not.
`status` ingests those rows and records the n still missing; `rerun` then
runs only those (docs/design.md, "Rerun"). A program that fails at its
largest n (a malloc that fails, one rank that aborts) measured the smaller
ones in full: each n's rows are flushed only once that n is done.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from campaign.plumbing.errors import ImportError_
from campaign.plumbing.states import JobState
from campaign.results.expected import JUDGED_COLUMNS, Expected, judge
from campaign.results.reader import Outcome, classify_output, parse_columns
from campaign.results.result_columns import ResultColumns
from resultschema.columns import KERNEL_COLUMNS

TMP_SUFFIX = ".tmp"
# Stopped by the scheduler or the user, possibly after the program had written everything.
_STOPPED = frozenset({JobState.TIMEOUT, JobState.CANCELLED})


def _complete_lines(path: Path) -> str | None:
    """The temporary CSV's text without a last line cut by the kill; None with no finished line. Read
    here, never copied beside it: a sync beside this one could read a copy written in place
    part-written (a last line cut to a shorter number), and a killed one left it cut short."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    if text.count("\n") < 2:  # a header at most: nothing finished
        return None
    return text


def read_partial(
    output: Path, expected: tuple[int, ...] | Expected, check: bool = False
) -> tuple[Outcome | None, list[int]]:
    """(parsed rows of the finished n, or None; the n without rows). Rows
    that are not the run's own (campaign.results.expected) are none of it:
    an Outcome without rows whose reason says why. So are rows whose check
    failed: a stopped job's finished n count in the medians (its state is
    TIMEOUT, CANCELLED, OUT_OF_MEMORY or FAILED, not CHECK_FAILED), so they are
    named in the reason and measured again by the rerun instead."""
    want = expected if isinstance(expected, Expected) else Expected(tuple(expected), check)
    expected_n = want.n
    source = output if output.is_file() else output.with_name(output.name + TMP_SUFFIX)
    try:
        text = source.read_text(encoding="utf-8") if source == output else _complete_lines(source)
    except (OSError, UnicodeDecodeError):  # unreadable: keep nothing, rerun everything
        return None, list(expected_n)
    if text is None:
        return None, list(expected_n)
    import pyarrow as pa  # (here: `status` without a stopped job never loads it)
    import pyarrow.compute as pc

    try:  # the one strict reader (campaign.results.reader), without the whole-sweep checks
        table = parse_columns(text, KERNEL_COLUMNS, source.name, JUDGED_COLUMNS)
    except ImportError_:  # unparsable: keep nothing, rerun everything
        return None, list(expected_n)
    rows = table.arrow
    if not len(table):
        return None, list(expected_n)
    [verdict] = judge(rows, [len(table)], [want])  # the one judgement: only its coordinates count here
    if verdict.foreign is not None:
        return Outcome(JobState.LOST_OUTPUT, reason=f"{verdict.foreign}; nothing of the file stored"), list(expected_n)
    rows = _finished(rows)
    rows = rows.filter(pc.is_in(rows["n"], value_set=pa.array(expected_n, pa.int64())))
    if len(rows) and want.check:
        [verdict] = judge(rows, [len(rows)], [want])
        if verdict.failed is not None:
            return Outcome(JobState.LOST_OUTPUT, reason=f"{verdict.failed}; none of its rows kept"), list(expected_n)
    done = set(pc.unique(rows["n"]).to_pylist())
    return Outcome(JobState.LOST_OUTPUT, ResultColumns(len(rows), arrow=rows)), [n for n in expected_n if n not in done]


def _finished(rows: Any) -> Any:
    """The rows without the last n where it has fewer rows than another n: the stop may have cut
    the program between that n's rows."""
    import pyarrow.compute as pc

    found = pc.value_counts(rows["n"])
    counts = dict(zip(found.field("values").to_pylist(), found.field("counts").to_pylist()))
    last = rows["n"][-1].as_py()
    if len(counts) > 1 and counts[last] < max(counts.values()):
        return rows.filter(pc.not_equal(rows["n"], last))
    return rows


def describe(expected_n: tuple[int, ...], missing: list[int]) -> str:
    done = [n for n in expected_n if n not in missing]
    return f"finished n = {done or 'none'}; missing n = {missing or 'none'}"


def complete_despite_stop(output: Path, expected: Expected, state: JobState) -> Outcome | None:
    """A TIMEOUT or CANCELLED job whose program had finished: its final file
    (renamed into place only once every n was measured) holds every n of the
    run, valid by the same reader as a COMPLETED job's. Such a job is
    COMPLETED (its reason names the stop); rerunning it would measure nothing
    new. None for anything less."""
    if state not in _STOPPED or not output.is_file():
        return None
    outcome = classify_output(output, expected)
    if outcome.state is not JobState.COMPLETED:
        return None
    outcome.reason = f"ended {state.value} after writing every n: counted complete"
    return outcome
