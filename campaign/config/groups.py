"""Where configs are found and which names a group offers (`cluster=`,
`experiment=`, `kernel`): only the standard library, so a misspelt name is
answered, and completed, without loading Hydra or OmegaConf."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from campaign.plumbing.errors import ConfigError, did_you_mean

SEARCH_PATH_ENV = "CAMPAIGN_CONFIG_PATH"  # extra config folders, ':'-separated
GROUPS = ("cluster", "experiment")  # the groups an override picks a file of
_PLAIN = re.compile(r"[\w.-]+")  # a single name: no sweep (a,b), glob(...), choice(...)


def conf_dir() -> Path:
    """The shipped conf/ folder, found relative to the package so that the
    installed CLI works from any working directory."""
    override = os.environ.get("CAMPAIGN_CONF_DIR")
    if override:
        return Path(override).resolve()
    return (Path(__file__).resolve().parents[2] / "conf").resolve()


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def config_dirs() -> list[Path]:
    """The user's folders first (so a site can shadow a shipped cluster)."""
    extra = [_folder(p) for p in os.environ.get(SEARCH_PATH_ENV, "").split(":") if p]
    return extra + [conf_dir()]


def _folder(text: str) -> Path:
    """One CAMPAIGN_CONFIG_PATH entry. A name the system refuses outright (too long) is one line
    here; a folder that does not exist is only a folder with no configs, as before."""
    path = Path(text).resolve()
    try:
        path.is_dir()
    except OSError as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ConfigError(f"{SEARCH_PATH_ENV}: {shown!r} is not a folder name: {exc.strerror}") from None
    return path


def group_options(group: str) -> list[str]:
    found: set[str] = set()
    for base in config_dirs():
        folder = base / group
        if folder.is_dir():
            found.update(p.stem for p in folder.glob("*.yaml"))
    return sorted(found)


def unknown_choice(group: str, value: str, known: list[str]) -> ConfigError:
    """`unknown experiment 'smok'; did you mean 'smoke'?`, the known names after."""
    hint = did_you_mean(value, known)
    listed = f"known: {', '.join(known)}" if known else f"no {group} configs found (campaign submit --info)"
    return ConfigError(f"unknown {group} {value!r}{hint} ({listed})")


def check_choices(overrides: Sequence[str]) -> None:
    """`cluster=NAME` / `experiment=NAME` naming no config file: ConfigError.
    Sweeps and globs (`a,b`, `glob(*)`) are left to the sweep expansion, which
    checks each of their values by this same rule."""
    for item in overrides:
        key, _, value = item.partition("=")
        group = key.lstrip("+~")
        if group in GROUPS and _PLAIN.fullmatch(value):
            known = group_options(group)
            if value not in known:
                raise unknown_choice(group, value, known)
