"""Hydra's sweep grammar on the command line: overrides -> the configurations to compose.

Users bring Hydra habits along: `threads=1,2,4,8`, `range(1,9)`, `choice(a,b)`,
`cluster=glob(local*)`, with or without `-m`. Parsing is Hydra's own
(`OverridesParser`, the grammar and sweep types of hydra-core), never a
hand-written splitter, so quoting and escapes mean what they mean in Hydra.

What a sweep means here (docs/design.md#cli):

- On a key whose schema type is a list (an experiment's sweep axes: `impls`,
  `variants`, `partitions`, `threads`, `dtypes`, `n`, a `grid` entry), the
  swept values *are* the axis: `threads=1,2,4` is `threads=[1,2,4]`, one run
  per thread count, and `n=64,128` keeps the whole n-sweep in one process
  (the measurement rule of docs/design.md#kernel-program-contract).
- One value on a list axis is a list of one: `threads=4` is `threads=[4]`.
- On any other key (`cluster=`, `experiment=`, `experiment.repeats=`,
  `experiment.sweeps.0.d=`) it is Hydra's multirun: the cartesian product of
  the values, one composed configuration each, in Hydra's order.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from collections.abc import Callable, Sequence
from typing import Any, Union, get_args, get_origin, get_type_hints

from campaign.config.groups import GROUPS  # config groups a glob() may choose from
from campaign.config.schema import RootConfig
from campaign.plumbing.errors import ConfigError

MAX_CONFIGS = 1000  # a sweep that composes more configurations than this is a typo, not a plan
MAX_VALUES = 10_000  # nor one axis of more values (a list axis is one configuration, so MAX_CONFIGS misses it)


def _unwrap(tp: Any) -> Any:
    """`X | None` -> X (schema fields are optional where YAML may leave them out)."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def field_type(path: str) -> Any:
    """The schema type at a dotted config path (`experiment.sweeps.0.threads`),
    or None where the schema does not say (Any, unknown keys)."""
    tp: Any = RootConfig
    for part in path.split("."):
        tp = _unwrap(tp)
        origin = get_origin(tp)
        if dataclasses.is_dataclass(tp):
            hints = get_type_hints(tp)
            if part not in hints:
                return None
            tp = hints[part]
        elif origin is dict:
            tp = get_args(tp)[1]
        elif origin is list:
            tp = get_args(tp)[0]
        else:
            return None
    return _unwrap(tp)


def is_list_field(path: str) -> bool:
    return get_origin(field_type(path)) is list


def unparsed(item: str, message: str) -> str:
    """The line for an override Hydra's grammar cannot read. It takes an unquoted value in ASCII
    only, and says just where it stopped ("token recognition error at: 'é'"): such a value is named."""
    other = next((c for c in item.partition("=")[2] if not c.isascii()), None)
    hint = f" (Hydra reads an unquoted value in ASCII only: quote the one with {other!r})" if other else ""
    return f"bad override {item!r}: {' '.join(message.split())}{hint}"


def _parse(overrides: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException, OverrideParseException

    parser = OverridesParser.create()
    out = []
    for item in overrides:  # one at a time, so that an error names its override
        try:
            out.append(parser.parse_override(item))
        except OverrideParseException as exc:
            raise ConfigError(unparsed(item, exc.message)) from None
        except HydraException as exc:
            raise ConfigError(unparsed(item, str(exc))) from None
    return out


def _values(override: Any, group_options: Callable[[str], list[str]]) -> list[str]:
    """The swept values as override value strings (Hydra's own encoding)."""
    from hydra.core.override_parser.types import ValueType

    line = override.input_line
    if override.is_interval_sweep():
        raise ConfigError(
            f"bad override {line!r}: interval() is for optimizing sweepers; a campaign needs "
            f"discrete values: a,b,c, range(), choice() or glob()"
        )
    if override.is_hydra_override():
        raise ConfigError(f"bad override {line!r}: campaign does not sweep hydra.* settings")
    if override.value_type is ValueType.GLOB_CHOICE_SWEEP:
        group = override.key_or_group
        if group not in GROUPS or override.package is not None:
            raise ConfigError(
                f"bad override {line!r}: glob() chooses among config files; "
                f"use it on {' or '.join(g + '=' for g in GROUPS)}"
            )
        known = group_options(group)
        chosen: list[str] = override.value().filter(known)
        if not chosen:
            raise ConfigError(f"bad override {line!r}: the glob matches no {group}; known: {', '.join(known)}")
        return chosen
    # Taken lazily up to the limit: range(1,100000000) on a list axis was a list of 1e8 values
    # composed into one override, which never finished.
    values = list(itertools.islice(override.sweep_string_iterator(), MAX_VALUES + 1))
    if len(values) > MAX_VALUES:
        raise ConfigError(
            f"bad override {line!r}: the sweep gives more than {MAX_VALUES} values; "
            f"a sweep that long is a typo, not a plan"
        )
    if not values:
        raise ConfigError(f"bad override {line!r}: the sweep has no values")
    return values


def _as_list_if_axis(override: Any) -> str:
    """One value on a list axis is a list of one (`threads=4` is `threads=[4]`);
    everything else is the override as typed."""
    value = override.value()
    if (
        override.is_delete()
        or override.package is not None
        or value is None
        or isinstance(value, (list, dict))
        or not is_list_field(override.key_or_group)
    ):
        return str(override.input_line)
    return f"{override.get_key_element()}=[{override.get_value_element_as_str()}]"


def expand(overrides: Sequence[str], group_options: Callable[[str], list[str]]) -> list[list[str]]:
    """The override list of each configuration a command line stands for.

    Without any sweep this is `[overrides]`, unchanged. `group_options(group)`
    lists the config names of a group (for glob())."""
    axes: list[list[str]] = []
    for override in _parse(overrides):
        if not override.is_sweep_override():
            axes.append([_as_list_if_axis(override)])
            continue
        key = override.get_key_element()
        values = _values(override, group_options)
        if override.package is None and is_list_field(override.key_or_group):
            axes.append([f"{key}=[{','.join(values)}]"])
        else:
            axes.append([f"{key}={v}" for v in values])
    total = 1
    for axis in axes:
        total *= len(axis)
    if total > MAX_CONFIGS:
        raise ConfigError(
            f"the sweep composes {total} configurations (at most {MAX_CONFIGS}): sweep a list "
            f"axis such as experiment.sweeps.0.threads=... inside one configuration instead"
        )
    return [list(combo) for combo in itertools.product(*axes)]
