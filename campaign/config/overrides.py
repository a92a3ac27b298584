"""Command-line overrides checked against the schema before Hydra sees them.

Hydra lets `+key=value` add a key that the schema does not have (and suggests
it after a typo), and reports a wrong type as "Error merging override" with no
reason. Both made mistakes silent or opaque (issue 12: `+experiment.repeat=5`
was accepted and did nothing; `walltime_min=0.5` failed without saying why).
Here every override key is walked through the dataclasses of
campaign.config.schema: an unknown key is refused even with `+`, and a
value Hydra cannot merge is explained by the type the key expects.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from functools import cache
from typing import Any

from campaign.config.schema import RootConfig
from campaign.errors import ConfigError

GROUPS = ("cluster", "experiment")  # `cluster=NAME` picks a file: not a field value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else Any), True
    return tp, False


def key_type(key: str) -> Any:
    """The schema type at a dotted key; ConfigError naming the first unknown part."""
    tp: Any = RootConfig
    seen: list[str] = []
    for part in key.split("."):
        tp, _ = _strip_optional(tp)
        origin = typing.get_origin(tp)
        where = ".".join(seen) or "the config root"
        if dataclasses.is_dataclass(tp):
            hints = _hints(tp)  # type: ignore[arg-type]
            if part not in hints and not seen:
                raise ConfigError(f"unknown top-level config key(s) {part}; known: {', '.join(hints)}")
            if part not in hints:
                raise ConfigError(f"unknown config key {key!r}: {where} has no {part!r} "
                                  f"(known: {', '.join(hints)})")
            tp = hints[part]
        elif origin is dict:
            tp = typing.get_args(tp)[1]
        elif origin is list:
            if not part.isdigit():
                raise ConfigError(f"unknown config key {key!r}: {where} is a list; use an index, e.g. {where}.0")
            tp = typing.get_args(tp)[0]
        elif tp is Any:
            return Any
        else:
            raise ConfigError(f"unknown config key {key!r}: {where} is a single value, it has no {part!r}")
        seen.append(part)
    return tp


def describe(tp: Any) -> str:
    """A type as a user reads it: `an integer`, `a list of integers, e.g. [1,2]`, ..."""
    tp, optional = _strip_optional(tp)
    origin = typing.get_origin(tp)
    if origin is list:
        inner = typing.get_args(tp)[0]
        text = {int: "a list of integers, e.g. [1,2]", float: "a list of numbers, e.g. [0.5,1]",
                str: "a list of names, e.g. [a,b]"}.get(inner, "a list, e.g. [a,b]")
    elif origin is dict or dataclasses.is_dataclass(tp):
        text = "a mapping, e.g. {key: value}"
    else:
        text = {int: "an integer (whole number)", float: "a number", bool: "true or false",
                str: "text"}.get(tp, "a value")
    return text + (" or null" if optional else "")


def check(overrides: Sequence[str]) -> None:
    """Refuse overrides whose key the schema does not have (with or without `+`)."""
    for item in overrides:
        key = item.partition("=")[0].lstrip("+~")
        if key.startswith("hydra.") or key in GROUPS or key.startswith("kernel@"):
            continue
        key_type(key)


def explain(item: str) -> str:
    """Why Hydra could not merge `key=value`: the type the key expects."""
    key, _, value = item.partition("=")
    key = key.lstrip("+~")
    try:
        tp = key_type(key)
    except ConfigError as exc:
        return str(exc)
    return f"bad override {key}={value}: {key} expects {describe(tp)}, got {value!r}"
