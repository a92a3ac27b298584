"""What is checked of a config file's raw text before Hydra reads it: that it
is UTF-8 (Hydra's read would end in a UnicodeDecodeError naming no file), that
it is not empty (Hydra would say only that the schema's `name` is missing,
naming no file), and that its YAML aliases do not expand past a limit.

Why the limit: PyYAML shares an aliased node, but OmegaConf copies every use of it, so
a 400-byte file of nine anchors, each a list of nine aliases of the one
before ("billion laughs"), becomes 43 million config nodes and the compose
never ends. Neither Hydra nor OmegaConf has a limit, so each file a compose
will read (the chosen cluster and experiment, the kernels needed) is measured
first: its node count with every alias expanded, each node counted once
(memoised), so the measure is linear in the file. A file with no anchor
(`&`) has no alias and is not parsed here at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from campaign.config.groups import conf_dir, config_dirs
from campaign.plumbing.errors import ConfigError

MAX_NODES = 1_000_000  # the largest shipped config has a few hundred; a site's thousands at most
CHOSEN = ("cluster", "experiment")  # the groups a compose picks one file of


def _defaults() -> dict[str, str]:
    """The cluster and experiment the root config.yaml's defaults list picks (the shipped conf/'s,
    or the folder CAMPAIGN_CONF_DIR names): what a compose reads where no override chooses."""
    root = yaml.safe_load((conf_dir() / "config.yaml").read_text(encoding="utf-8")) or {}
    items = root.get("defaults") or [] if isinstance(root, dict) else []
    return {str(k): str(v) for item in items if isinstance(item, dict) for k, v in item.items() if k in CHOSEN}


def check_chosen(overrides: Sequence[str]) -> None:
    """ConfigError naming the cluster or experiment file chosen by `overrides`
    (or by default) whose aliases expand past MAX_NODES."""
    chosen = _defaults()
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+") in CHOSEN:
            chosen[key.lstrip("+")] = value
    for group, name in chosen.items():
        _check_file(group, name)


def check_kernels(kernels: Sequence[str]) -> None:
    """The same for the kernel files of `kernels`."""
    for name in kernels:
        _check_file("kernel", name)


def sound(kernels: Sequence[str]) -> list[str]:
    """Those of `kernels` whose files pass `check`: where every kernel is composed to name a mistake
    elsewhere (campaign.config.needed), a broken file the experiment may not use must not be named instead."""
    found = []
    for name in kernels:
        try:
            _check_file("kernel", name)
        except ConfigError:
            continue
        found.append(name)
    return found


def _check_file(group: str, name: str) -> None:
    path = _file(group, name)
    if path is not None:
        check(path)


def _file(group: str, name: str) -> Path | None:
    """The file Hydra reads for `group/name`: the first config folder that has it."""
    for folder in config_dirs():
        path = folder / group / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def check(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return  # Hydra names the file it cannot read
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); save it as UTF-8"
        ) from None
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        raise ConfigError(
            f"{path} is empty (nothing but blank lines and comments): write the config in it, its name first"
        )
    if "&" not in text:
        return
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return  # Hydra names the mistake when it reads the file
    if root is not None and _expanded(root, {}) > MAX_NODES:
        raise ConfigError(
            f"{path}: its YAML aliases (*name) expand to more than {MAX_NODES:,} values, or refer "
            f"to themselves; write the values out, or use fewer levels of aliases"
        )


def _expanded(node: yaml.Node, seen: dict[int, int]) -> int:
    """The node count of `node` with every alias expanded; above MAX_NODES for a cycle."""
    known = seen.get(id(node))
    if known is not None:
        return known
    seen[id(node)] = MAX_NODES + 1  # met again before it is done: an alias of itself
    count = 1
    if isinstance(node, yaml.MappingNode):
        count += sum(_expanded(k, seen) + _expanded(v, seen) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        count += sum(_expanded(item, seen) for item in node.value)
    seen[id(node)] = count
    return count
