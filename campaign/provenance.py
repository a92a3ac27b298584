"""How a set of jobs was made: code version, config, host, package versions."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
from importlib import metadata
from typing import Any

from campaign.config.load import repo_root

PACKAGES = ("campaign", "submitit", "hydra-core", "omegaconf", "sqlalchemy", "pandas", "torch", "numpy")


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository campaign runs from, or (None, None)."""
    root = str(repo_root())
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(dirty)


def package_versions() -> dict[str, Any]:
    versions: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def config_hash(yaml_text: str) -> str:
    return hashlib.sha256(yaml_text.encode()).hexdigest()


def collect(yaml_text: str) -> dict[str, Any]:
    commit, dirty = git_state()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "config_hash": config_hash(yaml_text),
        "config_yaml": yaml_text,
        "hostname": socket.gethostname(),
        "packages": package_versions(),
    }
