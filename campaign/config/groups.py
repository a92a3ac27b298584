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
CONF_DIR_ENV = "CAMPAIGN_CONF_DIR"  # a folder in place of the shipped conf/
GROUPS = ("cluster", "experiment")  # the groups an override picks a file of
_PLAIN = re.compile(r"[\w.-]+")  # a single name: no sweep (a,b), glob(...), choice(...)


def conf_dir() -> Path:
    """The shipped conf/ folder, found relative to the package so that the
    installed CLI works from any working directory; CONF_DIR_ENV replaces it,
    and must then name a folder (else every config the tool ships is missing,
    and a plain `experiment=smoke` would be answered as an unknown name)."""
    override = os.environ.get(CONF_DIR_ENV)
    if override:
        path = _folder(override, CONF_DIR_ENV)
        if not (path / "config.yaml").is_file():
            what = (
                "a file"
                if path.is_file()
                else "a folder without config.yaml"
                if path.is_dir()
                else "a device, FIFO or socket, not a folder"  # (/dev/null was "a folder that does not exist")
                if path.exists()
                else "a folder that does not exist"
            )
            raise ConfigError(
                f"{CONF_DIR_ENV}: {_shown(override)!r} is {what}; it names the folder that replaces "
                "the shipped conf/ (config.yaml, cluster/, experiment/, kernel/; unset it to use the "
                "shipped configs)"
            )
        return path
    return (Path(__file__).resolve().parents[2] / "conf").resolve()


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def config_dirs() -> list[Path]:
    """The user's folders first (so a site can shadow a shipped cluster)."""
    extra = [_search_entry(p) for p in os.environ.get(SEARCH_PATH_ENV, "").split(":") if p]
    return extra + [conf_dir()]


_SHOWN = 400  # characters of a path a line shows whole (a deep site path); a longer one keeps both ends


def _shown(text: str) -> str:
    """A path as a line shows it: whole, or its start and its end (the folder the user named last)."""
    return text if len(text) <= _SHOWN else text[: _SHOWN // 2] + "..." + text[-_SHOWN // 2 :]


def _folder(text: str, variable: str) -> Path:
    """A folder a variable names, resolved. A name the system refuses outright (too long) is one line."""
    path = Path(text).resolve()
    try:
        path.is_dir()
    except OSError as exc:
        raise ConfigError(f"{variable}: {_shown(text)!r} is not a folder name: {exc.strerror}") from None
    return path


def _search_entry(text: str) -> Path:
    """One CAMPAIGN_CONFIG_PATH entry: a file there is one line; a folder that does not exist is
    only a folder with no configs (an unknown name then says so: `missing_entries`)."""
    path = _folder(text, SEARCH_PATH_ENV)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{SEARCH_PATH_ENV}: {_shown(text)!r} is a file, not a folder of configs")
    return path


def missing_entries() -> list[str]:
    """The CAMPAIGN_CONFIG_PATH entries that name no existing folder."""
    return [p for p in os.environ.get(SEARCH_PATH_ENV, "").split(":") if p and not _folder(p, SEARCH_PATH_ENV).exists()]


def group_options(group: str) -> list[str]:
    found: set[str] = set()
    for base in config_dirs():
        folder = base / group
        if folder.is_dir():
            found.update(p.stem for p in folder.glob("*.yaml") if p.is_file())  # (a folder named x.yaml is none)
    return sorted(found)


def unknown_choice(group: str, value: str, known: list[str]) -> ConfigError:
    """`unknown experiment 'smok'; did you mean 'smoke'?`, the known names after."""
    hint = did_you_mean(value, known)
    listed = f"known: {', '.join(known)}" if known else f"no {group} configs found (campaign submit --info)"
    missing = missing_entries()
    absent = f"{SEARCH_PATH_ENV} names {_shown(missing[0])!r}, which does not exist; " if missing else ""
    return ConfigError(f"unknown {group} {value!r}{hint} ({absent}{listed})")


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
