"""A sweep's `args` and `grid` values as a reader of the results sees them.

Each value is a point of its own (its text is in the run's key and its
`params`), shown in every table, report and export by its text. Two values
that differ only in their Unicode form ("café" composed or as "e" and an
accent, the ligature "ﬁ" and "fi") or by invisible characters (a zero-width
joiner) were two runs that every table showed as one `tag=café`, with no way to
tell which was which: they are refused, wherever in the experiment each is
given, rather than normalized, since the program is given a value as it is
written (a file name on a filesystem that keeps bytes as they are). A
direction control (U+202E ...) makes a value display as other text, so it is
refused too. A number YAML or an override reads as infinite or not a number
(`.inf`, `.nan`, `1e400`; `inf` and `nan` in an override) reached the program
as `inf` or `nan`: refused, and a value meant as that text is written quoted.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterator

from campaign.config.schema import ExperimentSpec
from campaign.plumbing.errors import ConfigError
from campaign.plumbing.lookalike import seen_as

# the explicit direction formatting characters of Unicode's bidirectional algorithm
_DIRECTION = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI", "LRM", "RLM", "ALM"}


def _given(exp: ExperimentSpec) -> Iterator[tuple[str, str, object]]:
    """(where, key, value) for every args and grid value of every sweep."""
    for i, sweep in enumerate(exp.sweeps):
        for key, value in sweep.args.items():
            yield f"experiment.sweeps.{i}.args.{key}", str(key), value
        for key, values in sweep.grid.items():
            for value in values:
                yield f"experiment.sweeps.{i}.grid.{key}", str(key), value


def _text(value: object) -> str:
    """The value's text as the run's params hold it (a list joined by commas)."""
    return ",".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)


def _finite(value: object, where: str) -> None:
    for item in value if isinstance(value, list | tuple) else [value]:
        if isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(
                f"{where}: {item} is not a finite number (YAML's .inf and .nan, a number past a double such as "
                '1e400, an override\'s inf and nan): give a finite number, or quote it ("nan") if the program '
                "takes that text"
            )


def check(exp: ExperimentSpec) -> None:
    """ConfigError naming the first value that is not finite, holds a direction control, or looks the
    same as another value of its key in the experiment."""
    first: dict[tuple[str, str], tuple[str, str]] = {}
    for where, key, value in _given(exp):
        _finite(value, where)
        text = _text(value)
        control = next((c for c in text if unicodedata.bidirectional(c) in _DIRECTION), None)
        if control is not None:
            raise ConfigError(
                f"{where}: value {ascii(text)[:80]} holds the direction control {ascii(control)}, which shows "
                "text other than it is: write the value without it"
            )
        seen = seen_as(text)
        other_where, other = first.setdefault((key, seen), (where, text))
        if other != text:
            raise ConfigError(
                f"{where}: value {ascii(text)[:80]} and {other_where}'s {ascii(other)[:80]} look the same "
                f"({seen[:40]!r}) but differ in their Unicode form or invisible characters, so their runs "
                "would show as one point: write the value one way"
            )
