"""Compose conf/ with Hydra, validate against the schemas, return typed objects.

This is the one boundary where DictConfig exists: past `load_config` the code
takes `RootConfig` dataclasses (docs/style.md#types-and-data).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
import typing
from collections.abc import Sequence
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from campaign.config import needed, raw_files, schema
from campaign.config import overrides as schema_overrides
from campaign.config.groups import (  # re-exported: callers import them from here
    SEARCH_PATH_ENV as SEARCH_PATH_ENV,
)
from campaign.config.groups import (
    conf_dir,
    config_dirs,
    group_options,
    repo_root,
    unknown_choice,
)
from campaign.config.schema import RootConfig
from campaign.config.sweep import unparsed
from campaign.config.validate import validate
from campaign.plumbing.errors import ConfigError


def split_overrides(overrides: Sequence[str]) -> list[str]:
    """Validate the shape of each override (KEY=VALUE, or Hydra's deletion ~KEY) before Hydra sees it."""
    for item in overrides:
        if item.startswith("~") and len(item) > 1 and "=" not in item:
            continue
        if "=" not in item or item.startswith("="):
            raise ConfigError(f"bad override {item!r}: expected KEY=VALUE, e.g. experiment.repeats=5")
    return list(overrides)


def _check_group_choice(overrides: Sequence[str], group: str) -> None:
    known = group_options(group)
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+~") == group and value not in known:
            raise unknown_choice(group, value, known)


def _register_schema() -> None:
    from hydra.core.config_store import ConfigStore  # lazy: Hydra costs ~0.3 s; read-only commands never compose

    ConfigStore.instance().store(name="campaign_schema", node=RootConfig)
    # Facts of *this* machine, for cluster=local.
    OmegaConf.register_new_resolver("campaign_nproc", lambda: os.cpu_count() or 1, replace=True)
    OmegaConf.register_new_resolver("campaign_mem_gb", _mem_gb, replace=True)


def _mem_gb() -> float:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return round(pages / 2**30, 1)
    except (ValueError, OSError):
        return 1.0


def load_config(overrides: Sequence[str] = ()) -> RootConfig:
    """Compose config.yaml + overrides. The kernels the experiment's sweeps
    name and those the command line names are composed under `kernels.<name>`
    (campaign.config.needed), no others: a kernel YAML nothing names is not
    read, so a broken one is no error for an experiment that does not use it."""
    from hydra import compose, initialize_config_dir  # lazy, as above
    from hydra.core.global_hydra import GlobalHydra

    overrides = split_overrides(overrides)
    for group in ("cluster", "experiment"):
        _check_group_choice(overrides, group)
    schema_overrides.check(overrides)  # unknown keys are refused, even with `+`
    _register_schema()
    kernels: list[str] = []
    given = [schema_overrides.hydra_form(o) for o in overrides]
    raw_files.check_chosen(overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            _search_user_dirs_first()
            kernels = needed.kernels(given, lambda some: compose(config_name="config", overrides=some))
            raw_files.check_kernels(kernels)
            cfg = compose(config_name="config", overrides=needed.defaults(kernels) + given)
        unknown = sorted(str(k) for k in set(cfg.keys()) - {"cluster", "experiment", "kernels", "campaign"})
        if unknown:
            raise ConfigError(
                f"unknown top-level config key(s) {', '.join(map(str, unknown))}; "
                f"known: cluster, experiment, kernels, campaign"
            )
        _fill_defaults(cfg)
        root = OmegaConf.to_object(cfg)
    except ConfigError:
        raise
    except OmegaConfBaseException as exc:
        raise ConfigError(_missing_entry(overrides, kernels) or _one_line(exc)) from None
    except Exception as exc:  # Hydra raises its own hierarchy; all are config mistakes here
        missing = _missing_entry(overrides, kernels)
        if missing:
            raise ConfigError(missing) from None
        merging = _merge_failure(exc, overrides)
        if merging:
            raise ConfigError(merging) from None
        scalar = _scalar_for_list(exc) or _unknown_key(exc) or _bad_value(exc)
        if scalar:
            raise ConfigError(scalar) from None
        override = getattr(exc, "override", None)  # hydra's OverrideParseException names it
        if override:
            raise ConfigError(unparsed(str(override), _one_line(exc))) from None
        if type(exc).__module__.startswith(("hydra", "omegaconf", "yaml")):
            raise ConfigError(_one_line(exc)) from None
        raise
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(root, RootConfig)
    for key, part in root.cluster.partitions.items():
        part.name = part.name or key
    validate(root)  # every value that reaches a script, a command or a path (campaign.config.validate)
    # For provenance (not a config field), rendered on first use: the YAML emitter is
    # ~10% of a compose's CPU, and most callers (plans, dry runs, tests) never read it.
    root.__dict__["_composed"] = cfg
    return root


def _missing_entry(overrides: Sequence[str], kernels: list[str]) -> str | None:
    """After a failed compose: does an override name a sweep, partition or
    kernel that the chosen configs do not have? (Hydra would say "use +" or
    "expects a list", hiding that.) Composes the chosen configs alone to see,
    with every kernel on the config path, so that a kernel no file declares is
    named with all that are; where one of those files does not compose, with
    `kernels`, the ones this compose used."""
    from hydra import initialize_config_dir  # lazy, as above
    from hydra.core.global_hydra import GlobalHydra

    keys = [o.partition("=")[0] for o in overrides]
    keys = [k.lstrip("+") for k in keys if not k.startswith("~") and k.lstrip("+") not in schema_overrides.GROUPS]
    if not any(schema_overrides.may_miss_an_entry(k) for k in keys):  # the compose below would find none
        return None
    chosen = [o for o in overrides if o.partition("=")[0].lstrip("+~") in schema_overrides.GROUPS]
    every = raw_files.sound(group_options("kernel"))  # a broken file here must not hide the mistake
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            _search_user_dirs_first()
            base = _first_composing([needed.defaults(every) + chosen, needed.defaults(kernels) + chosen])
    finally:
        GlobalHydra.instance().clear()
    if base is None:
        return None
    for item in overrides:
        key = item.partition("=")[0]
        if key.startswith("~") or key.lstrip("+") in schema_overrides.GROUPS:
            continue
        found = schema_overrides.missing_entry(base, key.lstrip("+"))
        if found:
            return f"bad override {item}: {found}"
    return None


def _first_composing(choices: list[list[str]]) -> Any:
    """The first of these override lists that composes; None if none does."""
    from hydra import compose  # lazy, as above

    for choice in choices:
        try:
            return compose(config_name="config", overrides=choice)
        except Exception:  # noqa: BLE001 - the first error is the one to report, not this one
            continue
    return None


def _search_user_dirs_first() -> None:
    """CAMPAIGN_CONFIG_PATH folders go BEFORE the shipped conf/, so a site's
    cluster/anvil.yaml replaces the shipped anvil (hydra.searchpath would
    append them after it, and the shipped file would win)."""
    from hydra.core.global_hydra import GlobalHydra  # lazy, as above

    loader = GlobalHydra.instance().config_loader()
    search_path = loader.get_search_path()
    for folder in reversed(config_dirs()[:-1]):
        search_path.prepend(provider="campaign-config-path", path=f"file://{folder}")
    loader.repository.initialize_sources(search_path)  # type: ignore[attr-defined]


def resolved_yaml(cfg: RootConfig) -> str:
    """The composed, resolved config as YAML (recorded with every submit): the
    composition `load_config` kept, rendered once, the first time it is asked."""
    text = cfg.__dict__.get("_resolved_yaml")
    if isinstance(text, str):
        return text
    composed = cfg.__dict__.get("_composed")
    if composed is None:
        return OmegaConf.to_yaml(OmegaConf.structured(cfg))
    text = OmegaConf.to_yaml(composed, resolve=True)
    cfg.__dict__["_resolved_yaml"] = text
    return text


def _fill_defaults(cfg: object) -> None:
    assert OmegaConf.is_config(cfg)
    settings = cfg.campaign  # type: ignore[attr-defined]
    if settings.python is None:
        settings.python = sys.executable
    if settings.kernel_bin is None:
        settings.kernel_bin = str(repo_root() / "kernels" / "build")


def _merge_failure(exc: BaseException, overrides: Sequence[str]) -> str | None:
    """Hydra's "Error merging override K=V" (no reason given) explained by the
    type K expects."""
    text = str(exc)
    if not text.startswith("Error merging override"):
        return None
    words = text.removeprefix("Error merging override").split()
    named = words[0] if words else ""
    item = next((o for o in overrides if o.lstrip("+~") == named.lstrip("+~")), named)
    return schema_overrides.explain(item) if item else None


def _scalar_for_list(exc: BaseException) -> str | None:
    """OmegaConf's "AnyNode is not a ListConfig" for a YAML file that gives one
    value where the schema wants a list (`gpus_per_rank: 1` in a sweep)."""
    text = " ".join(str(exc).split())
    found = re.search(r"^(?:In '([^']+)': )?.*is not a ListConfig, list or tuple.*full_key: (\S+)", text)
    if found is None:
        return None
    where, key = found.group(1), found.group(2)
    name = key.rsplit(".", 1)[-1]
    return f"{where + ': ' if where else ''}{key} must be a list, e.g. {name}: [1] (a single value goes in brackets)"


# how a message names a section of the schema (its dataclass)
_SECTIONS = {
    "ImplSpec": "an implementation",
    "KernelSpec": "a kernel",
    "FigureSpec": "a figure",
    "SanitySpec": "a sanity rule",
    "SweepSpec": "a sweep",
    "ExperimentSpec": "an experiment",
    "PartitionSpec": "a partition",
    "ClusterSpec": "a cluster",
    "CampaignSettings": "campaign",
}


# a word a newcomer writes for a key that spells it otherwise, where spelling alone points elsewhere
# (difflib takes a figure's `direction` for `duration`, a timed program's set time)
_DIRECTION = "higher_is_better (true for a rate, false for a time)"
_MEANT = {("FigureSpec", word): _DIRECTION for word in ("direction", "better", "lower_is_better", "sense")}


def _unknown_key(exc: BaseException) -> str | None:
    """OmegaConf's "Key 'env' not in 'ImplSpec'" for a key a YAML section
    does not have: the keys it has, the likely one, and where the key belongs
    if another section has it (`env` is the kernel's, not an implementation's)."""
    text = " ".join(str(exc).split())
    found = re.search(r"^(?:In '([^']+)': )?.*Key '([^']+)' not in '(\w+)'.*?full_key: (\S+)", text)
    section = getattr(schema, found.group(3), None) if found else None
    if found is None or not dataclasses.is_dataclass(section):
        return None
    where, name, spec, key = found.groups()
    keys = [f.name for f in dataclasses.fields(section)]
    close = [_MEANT[spec, name]] if (spec, name) in _MEANT else difflib.get_close_matches(name, keys, n=1)
    owners = [
        words
        for cls, words in _SECTIONS.items()
        if cls != spec and name in {f.name for f in dataclasses.fields(getattr(schema, cls))}
    ]
    hint = (f"; did you mean {close[0]}?" if close else "") + (
        f"; {name} is a key of {' or '.join(owners)}" if owners else ""
    )
    return (
        f"{where + ': ' if where else ''}{_item_path(where, key, spec)}: {name} is not a key of "
        f"{_SECTIONS.get(spec, spec)} (its keys: {', '.join(keys)}){hint}"
    )


def _bad_value(exc: BaseException) -> str | None:
    """OmegaConf's "Value 'maybe' is not a valid bool" (or "could not be converted to Integer") for a
    value of the wrong type in a YAML file, named by its path: one line, without the class names."""
    text = " ".join(str(exc).split())
    found = re.search(
        r"^(?:In '([^']+)': )?\w+ raised while composing config: (Value '(.*?)' .*?) "
        r"full_key: (\S+) reference_type=\S+ object_type=(\w+)$",
        text,
    )
    if found is None:
        return None
    where, reason, value, key, spec = found.groups()
    return f"{where + ': ' if where else ''}{_item_path(where, key, spec, value)}: {reason}"


# a config file's group: where its keys are composed, and the section it is
_FILES = {
    "kernel": ("kernels.{}", "KernelSpec"),
    "experiment": ("experiment", "ExperimentSpec"),
    "cluster": ("cluster", "ClusterSpec"),
}


def _item_path(where: str | None, key: str, spec: str, value: str | None = None) -> str:
    """A key's path as validate writes it. OmegaConf names a key of a list's item (a figure, a sanity
    rule, a sweep) without the list (`higher_is_beter`, not where it is): the first item of a list of
    `spec`s in the file `where` names (`kernel/ratebench`) that has the key, and the given value where
    the error quotes one, is the one it could not take (`kernels.ratebench.figures[0].higher_is_beter`).
    A key that already has its path, or one the file does not show, is given as it is."""
    group, _, name = (where or "").partition("/")
    if group not in _FILES or key.partition(".")[0] in ("cluster", "experiment", "kernels", "campaign"):
        return key
    import yaml  # lazy: only a failed compose reads the file again

    file = next((p for d in config_dirs() if (p := d / f"{where}.yaml").is_file()), None)
    try:
        data = yaml.safe_load(file.read_text()) if file is not None else None
    except (OSError, yaml.YAMLError):
        return key
    root, section = _FILES[group]
    field = re.match(r"\w*", key)
    found = _find_item(data, getattr(schema, section), root.format(name), spec, field.group(0) if field else key, value)
    return f"{found}.{key}" if found else key


def _find_item(data: Any, section: type, path: str, spec: str, key: str, value: str | None) -> str | None:
    """The path of the first item of a list of `spec`s in `data` (a YAML mapping of `section`) that
    has `key` (with `value`, or a list holding it, where given); sweeps are numbered as overrides and
    validate write them (`experiment.sweeps.0`), other lists' items as `figures[0]`."""
    if not isinstance(data, dict):
        return None
    hints = typing.get_type_hints(section)
    for f in dataclasses.fields(section):  # type: ignore[arg-type]  # (a schema dataclass)
        kind, given = hints[f.name], data.get(f.name)
        inner = (typing.get_args(kind) or (kind,))[-1]  # list[X], dict[str, X], X | None: X
        if not (isinstance(inner, type) and dataclasses.is_dataclass(inner)) or given is None:
            continue
        if isinstance(given, list):
            items = [
                (f"{path}.{f.name}" + (f".{i}" if f.name == "sweeps" else f"[{i}]"), item, True)
                for i, item in enumerate(given)
            ]
        elif isinstance(given, dict) and typing.get_origin(kind) is dict:
            items = [(f"{path}.{f.name}.{k}", item, False) for k, item in given.items()]
        else:
            items = [(f"{path}.{f.name}", given, False)]
        for at, item, listed in items:
            # (a list or dict of the item's own, `threads[1]`, names its type, not the item's)
            if listed and spec in (inner.__name__, "list", "dict") and isinstance(item, dict) and key in item:
                held = item[key] if isinstance(item[key], list) else [item[key]]
                if value is None or value in map(str, held):
                    return at
            found = _find_item(item, inner, at, spec, key, value)
            if found:
                return found
    return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    # OmegaConf appends "full_key: ... object_type=..." details; keep them short.
    return text[:400] if text else type(exc).__name__
