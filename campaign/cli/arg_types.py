"""The types of the command line's values (argparse `type=` and `action=`):
each refuses a value that would mean something else than the user meant
(an empty name read as "every campaign", a second --campaign dropping the
first) as a usage error, one line, exit 2."""

from __future__ import annotations

import argparse


class Once(argparse.Action):
    """jobs' one campaign, refused twice: argparse's last one would drop the first one silently."""

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, value: object, opt: str | None = None
    ) -> None:
        if (given := getattr(ns, self.dest)) is not None:
            parser.error(
                f"{opt} is given twice ({given!r}, {value!r}): jobs lists one campaign, or every one without {opt}"
            )
        setattr(ns, self.dest, value)


def percent(text: str) -> float:
    """`5%` or `0.05` -> 0.05; otherwise a usage error naming the option and
    the form it takes (argparse prefixes "argument --threshold:")."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"expects a percentage such as 5% or a fraction such as 0.05 (above 0, below 100%), got {text!r}"
        )
    return value


def named(text: str) -> str:
    """A job ID or campaign name: an empty one matched a build job that has no scheduler ID
    (`show ''` printed the local build), and named every campaign (`rerun '' --failed` reran
    them all without --all), so it is a usage error."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expects a job ID or campaign name, got an empty one ({text!r})")
    return text


def nonblank(text: str) -> str:
    """A state or cluster to filter by: an empty one filtered nothing (`jobs --state ''` listed
    every job), so it is a usage error."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expects a value, got an empty one ({text!r})")
    return text


def positive(text: str) -> int:
    """A whole number >= 1 (a count of replicates), else a usage error."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expects a whole number >= 1, got {text!r}")
    return int(text)
