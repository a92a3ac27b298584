"""Figures of merit and sanity patterns read from what a tool-driven program
printed (campaign.job.fom runs it): each figure by regex or JSON key, from
stdout, stderr or a file of the job's folder, per repeat, of the result rank
or reduced over every rank.

A figure that cannot be read is `Lost` (LOST_OUTPUT, its reason quoting the
output's last lines); a sanity rule that fails names the line that broke it.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from campaign.job.error_line import exit_words
from campaign.job.fom_launch import RankEnd, reduce
from campaign.job.template import render

TAIL_LINES = 5
HEAD_LINES = 3  # a failing rank's first lines: its own message, then its MPI's
RANK = "rank"  # the placeholder of a file source's rank: `file:out.{rank}`
_SAYS = re.compile(r"[A-Za-z0-9]")  # a line with a letter or digit in it
_ABSENT = object()  # a JSON object without the figure's key
MAX_OUTPUT = 64 * 2**20  # bytes of a program's stdout/stderr the patterns read (its last ones)
# ECMA-48 escape sequences: CSI (colours, cursor moves: ESC [ ... final), OSC (ESC ] ... BEL or ESC \\),
# and the two-character ones (ESC followed by one of @-_)
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_])")
_DECIMAL = frozenset("0123456789+-.eE")  # the characters of a decimal number: no grouping, no words
# An MPI library's own statement that a rank called MPI_Abort (Open MPI; MPICH and Intel MPI), with its
# error code. The aborting rank is then killed with its shim by the launcher, often before the shim could
# record its exit, while a peer may exit by itself on the connection it broke: the statement names it.
_MPI_ABORT = (
    re.compile(r"MPI_ABORT was invoked on rank (?P<rank>\d+)\b.*?errorcode (?P<code>-?\d+)", re.S),
    re.compile(r"MPI_Abort\(\w+, (?P<code>-?\d+)\) - process (?P<rank>\d+)"),
)


class Lost(Exception):
    """A figure whose pattern matched nothing: the reason for LOST_OUTPUT."""


@dataclass(frozen=True)
class Output:
    """What one invocation printed: its process's streams (launched: the
    launcher's merged ones) and, launched, each rank's own (stdout, stderr)."""

    stdout: str
    stderr: str
    ranks: tuple[tuple[str, str], ...] = ()
    ends: tuple[RankEnd, ...] = ()  # launched: how each rank ended, from its record
    cut: tuple[tuple[str, int], ...] = ()  # (stream, bytes printed) of each read only in its last MAX_OUTPUT

    def stream(self, source: str, rank: int) -> str:
        # every run has the result rank (checked at compose time); the preflight's one-node launch
        # may have fewer ranks, and checks the last one's output then
        out, err = self.ranks[min(rank, len(self.ranks) - 1)] if self.ranks else (self.stdout, self.stderr)
        return out if source == "stdout" else err

    def where(self, source: str, rank: int) -> str:
        """How a reason names a stream: `stdout`, or launched `rank 0's stdout` (a figure only rank 1
        printed is then plainly not where it was looked for), with what of it was read."""
        name = f"rank {min(rank, len(self.ranks) - 1)}'s {source}" if self.ranks else source
        printed = dict(self.cut).get(name)
        return name if printed is None else f"the last {_size(MAX_OUTPUT)} of {name} (of {_size(printed)} printed)"

    @cached_property
    def aborted(self) -> tuple[int, int] | None:
        """(rank, error code) of the rank the MPI library says called MPI_Abort, from the ranks' own
        stderr or the launcher's; None when none says so (or it names a rank this launch has not)."""
        for text in (*(err for _, err in self.ranks), self.stderr):
            for pattern in _MPI_ABORT:
                found = pattern.search(text)
                if found and int(found["rank"]) < len(self.ranks):
                    return int(found["rank"]), int(found["code"])
        return None

    def failed_rank(self) -> int | None:
        """The rank whose own failure ended a launch: the one its MPI says
        called MPI_Abort; else the first to exit non-zero by itself, else the
        first killed one (128+N), else the first that printed to stderr. First
        in time: a rank that fails brings its peers down after it, killed by
        the launcher or, some of them, exiting by themselves on the broken
        connection it leaves."""
        if self.aborted is not None:
            return self.aborted[0]
        failed = [
            (end.code >= 128, math.inf if end.ended is None else end.ended, r)
            for r, end in enumerate(self.ends)
            if end.code is not None and end.code != 0
        ]
        if failed:
            return min(failed)[2]
        return next((r for r, (_, err) in enumerate(self.ranks) if err.strip()), None)

    def exit_code(self, launcher: int) -> int:
        """The code a failed invocation ends with: launched, the failing rank's own (a segfault of
        rank 1 is 139, though srun returns the 143 of the peers it then stopped), else the launcher's."""
        rank = self.failed_rank()
        own = self.ends[rank].code if rank is not None and rank < len(self.ends) else None
        return own if own else launcher

    def failure(self) -> str:
        """What a reason quotes of a failed invocation, on one line. Launched:
        the first lines of the failing rank's own stderr (where the program
        says what went wrong; the launcher's lines and the other ranks' are the
        noise of being killed), named by rank, or the launcher's first lines
        where it started no rank; else the stderr's last lines."""
        started = any(end.started or end.code is not None for end in self.ends) or any(map(any, self.ranks))
        if self.ends and not started:
            # the launcher refused before starting one rank (mpirun as root, an unknown --mpi plugin):
            # its own first lines say why; the last ones are its advice, or a rule of dashes
            return f"no rank started; the launcher said: {head(self.stderr)}"
        rank = self.failed_rank()
        if rank is None or not self.ranks[rank][1].strip():
            return tail(self.stderr)
        code = self.ends[rank].code if rank < len(self.ends) else None
        aborted = self.aborted
        said = (
            exit_words(code)
            if code is not None
            else f"MPI_Abort with {aborted[1]}"
            if aborted is not None and aborted[0] == rank
            else "no exit record"
        )
        return f"rank {rank} of {len(self.ranks)} ({said}): {head(self.ranks[rank][1])}"


def _size(count: int) -> str:
    return f"{count / 2**20:.0f} MiB" if count >= 2**20 else f"{count} bytes"


def read_capped(path: str | Path) -> tuple[str, int]:
    """A program's output as text, at most its last MAX_OUTPUT bytes (a program
    printing gigabytes must not take the node's memory; figures come last),
    and how much it holds. Line ends are read as a file source's are
    (universal newlines): a CRLF program's lines end where a pattern's `$`
    expects, and each lone CR of a progress display ends a line, so "the last
    match" is the last one shown. Colour codes are taken out (plain text).
    The second value is the bytes the file holds where that is more than was read, else 0."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - MAX_OUTPUT))
            text = plain(f.read().decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n"))
            return text, size if size > MAX_OUTPUT else 0
    except OSError:
        return "", 0


def plain(text: str) -> str:
    """Text as a terminal shows it: without the escape sequences of colours and cursor moves, which
    a program may print around a number (`\x1b[32m12.5\x1b[0m GB/s` is `12.5 GB/s`), nor the byte
    order mark a Windows-born program starts its output with (`^rate:` matches its first line)."""
    text = text.replace("\ufeff", "")
    return _ESCAPE.sub("", text) if "\x1b" in text else text


def source_text(source: str, output: Output, values: dict[str, str], cwd: Path, rank: int) -> str:
    """The text a figure or rule reads: a stream of the invocation, or a file inside the job folder ("" if
    absent), `{rank}` in its name the rank's number."""
    return _source(source, output, values, cwd, rank)[0]


def _source(source: str, output: Output, values: dict[str, str], cwd: Path, rank: int) -> tuple[str, str]:
    """source_text and how a reason names what was read: which rank's stream, or why a file gave nothing."""
    if source in ("stdout", "stderr"):
        return output.stream(source, rank), output.where(source, rank)
    path = source_file(source, values, cwd, rank)
    if path is None:
        return "", f"{source} (outside the job folder: never read)"
    name = f"file:{path.relative_to(cwd.resolve())}"
    if not path.exists():
        return "", f"{name} (no such file in the job folder {cwd}: the program wrote none there)"
    try:
        return plain(path.read_text(errors="replace")), name
    except OSError as exc:
        return "", f"{name} ({exc.strerror or exc})"


def source_file(source: str, values: dict[str, str], cwd: Path, rank: int) -> Path | None:
    """The file a `file:` source names for this invocation and rank, inside the job folder; None for a
    stream, or a path that leaves the folder (a figure is read from the job's own folder only)."""
    if not source.startswith("file:"):
        return None
    path = (cwd / render(source.removeprefix("file:"), {**values, RANK: str(rank)})).resolve()
    return path if path.is_relative_to(cwd.resolve()) else None


def tail(text: str) -> str:
    """The last lines of an output, on one line: what a reason quotes."""
    return " | ".join(text.strip().splitlines()[-TAIL_LINES:]) or "(empty)"


def head(text: str) -> str:
    """The first lines of an output that say something (a rule of dashes or
    stars says nothing), on one line: a program's error comes first."""
    lines = [line.strip() for line in text.splitlines() if _SAYS.search(line)]
    return " | ".join(lines[:HEAD_LINES]) or "(empty)"


def as_written(text: str) -> str:
    """A pattern or key of the YAML quoted as the user wrote it: repr doubled each backslash, a pattern
    the user never wrote (pasted back into the YAML it matches a backslash); only what does not print is
    escaped."""
    return "'" + "".join(c if c.isprintable() else repr(c)[1:-1] for c in text) + "'"


def _matches(fig: dict[str, Any], text: str) -> list[str]:
    if fig.get("regex"):
        return [
            m.group("value") if "value" in m.re.groupindex else (m.group(1) if m.re.groups else m.group(0))
            for m in re.finditer(fig["regex"], text, re.MULTILINE)
        ]
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            # numbers as printed: an integer of 5,000 digits is no error, 1e400 is quoted as such; a line
            # nested deeper than the parser's recursion goes (objects 10,000 deep) is skipped as no JSON
            try:
                obj = json.loads(line, parse_int=str, parse_float=str, parse_constant=str)
                value = _member(obj, fig["json"])  # a key twice in one object: the last, as json.loads keeps it
                if value is not _ABSENT:
                    found.append(value if isinstance(value, str) else json.dumps(value))
            except (ValueError, RecursionError):
                continue
    return found


def _member(obj: Any, key: str) -> Any:
    """The value of `key` in a JSON object: a key of its own, else a dotted path through nested
    objects (`result.bw` of `{"result": {"bw": 12.5}}`); _ABSENT where it has none."""
    if not isinstance(obj, dict):
        return _ABSENT
    if key in obj:
        return obj[key]
    head, dot, rest = key.partition(".")
    return _member(obj[head], rest) if dot and head in obj else _ABSENT


def number(text: str) -> float | None:
    """The value of a decimal number as printed (`12.5`, `+5`, `.5`, `5.`, `-0`, `1.2e+03`), None for any
    other text: a decimal comma (`12,5`) or digit grouping (`1,234.5`, `1_234.5`, which float() takes)
    is no number, nor inf, nan or a value beyond a double."""
    if not set(text.strip()) <= _DECIMAL:
        return None
    try:
        value = float(text)
    except ValueError:  # `1.2.3`, `e`, `+-5`
        return None
    return value if math.isfinite(value) else None


def readfigure_values(
    fig: dict[str, Any], text: str, count: int = 1, where: str | None = None, most: int | None = None
) -> list[float]:
    """The figure's values in `text` (`where` names it, else the figure's source): its last `count`
    matches (a regex's group `value`, else its first group, else the whole match; or the JSON lines
    holding its key), in order. Lost when fewer match, more than `most` (a program that repeats
    itself: its repeats and warm-ups), or a match is no number."""
    what = f"pattern {as_written(fig['regex'])}" if fig.get("regex") else f"JSON key {as_written(fig['json'])}"
    where = where or fig.get("source", "stdout")
    every = _matches(fig, text)
    if most is not None and len(every) > most:  # twice per repeat, or a summary line: which are the repeats?
        raise Lost(
            f"figure {fig['name']}: {what} matched {len(every)} times in {where}, more than the {count} "
            f"repeat(s) and {most - count} warm-up(s) the program ran: which are the repeats is unknown; "
            f"last lines: {tail(text)}"
        )
    found = every[-count:]
    if not found:
        raise Lost(f"figure {fig['name']}: {what} matched nothing in {where}; last lines: {tail(text)}")
    if len(found) < count:
        raise Lost(
            f"figure {fig['name']}: {what} matched {len(found)} time(s) in {where}, "
            f"not once per repeat ({count}); last lines: {tail(text)}"
        )
    values = []
    for text_value in found:
        value = number(text_value)
        if value is None:
            raise Lost(
                f"figure {fig['name']}: {what} matched {text_value[:80]!r}, not a finite number; "
                f"last lines: {tail(text)}"
            )
        values.append(value)
    return values


def figure_values(
    fig: dict[str, Any],
    output: Output,
    values: dict[str, str],
    cwd: Path,
    count: int,
    rank: int,
    most: int | None = None,
) -> list[float]:
    """A figure's values per repeat: the result rank's, or reduced over every rank as declared;
    `most` matches at most (readfigure_values)."""
    source = fig.get("source", "stdout")
    if not (fig.get("reduce") and output.ranks):
        return _read_values(fig, source, output, values, cwd, (count, most), rank)
    per_rank = [_read_values(fig, source, output, values, cwd, (count, most), r) for r in range(len(output.ranks))]
    return [reduce([v[i] for v in per_rank], fig["reduce"]) for i in range(count)]


def _read_values(
    fig: dict[str, Any],
    source: str,
    output: Output,
    values: dict[str, str],
    cwd: Path,
    counts: tuple[int, int | None],
    rank: int,
) -> list[float]:
    text, where = _source(source, output, values, cwd, rank)
    return readfigure_values(fig, text, counts[0], where, counts[1])


def sanity_problem(rule: dict[str, Any], text: str) -> str | None:
    """Why the output fails a sanity rule (the line quoted), or None."""
    m = re.search(rule["regex"], text, re.MULTILINE)
    if rule.get("expect", "match") == "match":
        if m is None:
            return (
                f"sanity pattern {as_written(rule['regex'])} must match {rule.get('source', 'stdout')} but matched "
                f"nothing; last lines: {tail(text)}"
            )
        return None
    if m is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = text[start : end if end >= 0 else len(text)].strip()
        return (
            f"sanity pattern {as_written(rule['regex'])} must not match {rule.get('source', 'stdout')}: line {line!r}"
        )
    return None
