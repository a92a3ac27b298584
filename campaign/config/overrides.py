"""Command-line overrides checked against the schema before Hydra sees them.

Hydra lets `+key=value` add a key that the schema does not have (and suggests
it after a typo), and reports a wrong type as "Error merging override" with no
reason. Both made mistakes silent or opaque (`+experiment.repeat=5`
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

from campaign.config.groups import GROUPS  # `cluster=NAME` picks a file: not a field value
from campaign.config.schema import RootConfig
from campaign.plumbing.errors import ConfigError, did_you_mean


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
                raise ConfigError(
                    f"unknown top-level config key(s) {part}{did_you_mean(part, list(hints))}; "
                    f"known: {', '.join(hints)}"
                )
            if part not in hints:
                raise ConfigError(
                    f"unknown config key {key!r}: {where} has no {part!r}"
                    f"{did_you_mean(part, list(hints))} (known: {', '.join(hints)})"
                )
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
        text = {
            int: "a list of integers, e.g. [1,2]",
            float: "a list of numbers, e.g. [0.5,1]",
            str: "a list of names, e.g. [a,b]",
        }.get(inner, "a list, e.g. [a,b]")
    elif origin is dict or dataclasses.is_dataclass(tp):
        text = "a mapping, e.g. {key: value}"
    else:
        text = {int: "an integer (whole number)", float: "a number", bool: "true or false", str: "text"}.get(
            tp, "a value"
        )
    return text + (" or null" if optional else "")


def check(overrides: Sequence[str]) -> None:
    """Refuse overrides whose key the schema does not have (with or without `+`),
    and deletions (`~KEY`) of what only a mapping of plain values can lose."""
    for item in overrides:
        key = item.partition("=")[0].lstrip("+~")
        if key.startswith("hydra.") or key in GROUPS or key.startswith("kernel@"):
            continue
        key_type(key)
        if item.startswith("~"):
            _check_deletion(key)


def _check_deletion(key: str) -> None:
    """Hydra removes an entry of a mapping (`env`, `grid`, `args`, a partition):
    a field of the schema is always there (set it instead), and a list item
    cannot be removed by Hydra at all (it fails inside OmegaConf)."""
    parent, _, last = key.rpartition(".")
    if last.isdigit():
        raise ConfigError(
            f"bad override ~{key}: {key} is an item of a list, which ~ cannot remove; "
            f"give the list without it ({parent}=[...])"
        )
    owner = _strip_optional(key_type(parent))[0] if parent else None
    if owner is not Any and typing.get_origin(owner) is not dict:
        raise ConfigError(
            f"bad override ~{key}: {key} is a field of the config, which ~ cannot remove; "
            f"set it instead ({key}=VALUE); ~ removes an entry of a mapping such as "
            f"cluster.env.NAME, experiment.sweeps.0.grid.NAME or cluster.partitions.NAME"
        )


def _into_plain_dict(key: str) -> bool:
    """Whether setting `key` writes into a dict of plain values (`grid`, `env`,
    `args`, `sbatch_extra`): Hydra's struct mode refuses new keys there without
    `+`, although the schema has the field."""
    tp: Any = RootConfig
    for part in key.split("."):
        tp, _ = _strip_optional(tp)
        origin = typing.get_origin(tp)
        if origin is dict:
            value = typing.get_args(tp)[1]
            if not dataclasses.is_dataclass(_strip_optional(value)[0]):
                return True
            tp = value
        elif dataclasses.is_dataclass(tp):
            tp = _hints(tp).get(part, Any)  # type: ignore[arg-type]
        elif origin is list:
            tp = typing.get_args(tp)[0]
        else:
            return False
    tp, _ = _strip_optional(tp)
    return typing.get_origin(tp) is dict and not dataclasses.is_dataclass(_strip_optional(typing.get_args(tp)[1])[0])


def hydra_form(item: str) -> str:
    """The override as Hydra must read it: `++key=value` (set or add) where the
    key is a schema field inside a plain dict, so `experiment.sweeps.0.grid={block:[64]}`
    needs no `+` (check() has refused unknown keys already)."""
    key = item.partition("=")[0]
    if key.startswith(("+", "~")) or key in GROUPS or key.startswith(("hydra.", "kernel@")):
        return item
    return f"++{item}" if _into_plain_dict(key) else item


_NOUN = {"experiment.sweeps": "sweep", "cluster.partitions": "partition", "kernels": "kernel"}


def may_miss_an_entry(key: str) -> bool:
    """Can `missing_entry` find anything for `key`? Only where the key goes through a list,
    a dict of configs, or a value the schema does not type (its parts being entries a config
    may lack); a key of plain fields and plain dicts never names a missing entry, and needs
    no composition to tell (decided from the schema: an unknown part is a maybe)."""
    parts = key.split(".")
    for end in range(1, len(parts)):
        try:
            tp = _strip_optional(key_type(".".join(parts[:end])))[0]
        except ConfigError:
            return True
        if dataclasses.is_dataclass(tp):
            continue
        if typing.get_origin(tp) is dict:
            value = _strip_optional(typing.get_args(tp)[1])[0]
            if not dataclasses.is_dataclass(value):
                continue
        return True
    return False


def missing_entry(cfg: Any, key: str) -> str | None:
    """The first part of `key` that names no entry of the composed config `cfg`
    (a list index past the end, a dict of configs without that name): the real
    problem behind Hydra's "Error merging override" or "use +". None when every
    part exists, or where a new entry is fine (a plain dict)."""
    from omegaconf import DictConfig, ListConfig  # lazy: only an error pays for it

    node: Any = cfg
    seen: list[str] = []
    for part in key.split("."):
        where = ".".join(seen)
        noun = _NOUN.get(where, "entry")
        owner = _owner(node, seen) or where
        if isinstance(node, ListConfig):
            if not part.isdigit():
                return None
            if int(part) >= len(node):
                numbered = f", numbered {', '.join(map(str, range(len(node))))}" if len(node) else ""
                return f"there is no {noun} {part}: {owner} has {len(node)} {noun}(s){numbered} ({where})"
            node = node[int(part)]
        elif isinstance(node, DictConfig):
            if part not in node:
                parent_type = _strip_optional(key_type(where))[0] if seen else RootConfig
                is_config_map = typing.get_origin(parent_type) is dict and dataclasses.is_dataclass(
                    _strip_optional(typing.get_args(parent_type)[1])[0]
                )
                if not is_config_map:
                    return None
                known = ", ".join(str(k) for k in node) or "none"
                return f"there is no {noun} {part!r}: {owner} has {known} ({where})"
            node = node[part]
        else:
            return None
        seen.append(part)
    return None


def _owner(node: Any, seen: list[str]) -> str | None:
    """`experiment 'smoke'`: the named config a list or dict of `node` belongs to."""
    if len(seen) != 2:
        return None
    parent = node._get_parent()
    name = parent.get("name") if parent is not None else None
    return f"{seen[0]} {name!r}" if name else None


def explain(item: str) -> str:
    """Why Hydra could not merge `key=value`: the type the key expects."""
    key, _, value = item.partition("=")
    key = key.lstrip("+~")
    try:
        tp = key_type(key)
    except ConfigError as exc:
        return str(exc)
    return f"bad override {key}={value}: {key} expects {describe(tp)}, got {value!r}"
