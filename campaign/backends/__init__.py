"""Backends by name: the one place that maps `cluster.backend` to a class.

The backend modules are imported on first use (each pulls in submitit, which
`campaign --help` and the read-only commands do not need).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from campaign.backends.base import Backend
from campaign.backends.capabilities import BACKENDS
from campaign.config.schema import ClusterSpec
from campaign.plumbing.errors import ConfigError


def get_backend(cluster: ClusterSpec, folder: Path, python: str | None = None) -> Backend:
    """The backend for this cluster; an unknown name lists the known ones."""
    kind = BACKENDS.get(cluster.backend)
    if kind is None:
        raise ConfigError(f"cluster {cluster.name}: unknown backend {cluster.backend!r}; "
                          f"known: {', '.join(sorted(BACKENDS))}")
    module, _, cls = kind.target.partition(":")
    backend: Backend = getattr(import_module(module), cls)(cluster, folder, python)
    return backend
