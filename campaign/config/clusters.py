"""A cluster config as YAML and back: campaigns store the cluster they were
submitted with, so sync, rerun and cancel use those facts, not today's files."""

from __future__ import annotations

import copy
from functools import lru_cache

from omegaconf import DictConfig, OmegaConf

from campaign.config.schema import ClusterSpec


def cluster_yaml(cluster: ClusterSpec) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(cluster))


def cluster_from_yaml(text: str) -> ClusterSpec:
    """The stored cluster, parsed once per text and process: `status --watch`
    and `submit --wait` sync every few seconds, and each sync asked OmegaConf
    again for the same campaign's cluster (~0.1-0.2 s of CPU each).
    Each caller gets its own copy, so none can change another's."""
    return copy.deepcopy(_parsed(text))


@lru_cache(maxsize=64)
def _parsed(text: str) -> ClusterSpec:
    stored = OmegaConf.create(text)
    parts = stored.get("partitions") if isinstance(stored, DictConfig) else None
    # A partition recorded with `profiler: null` (the profiler block was
    # optional in older cluster configs) has no profiler:
    # the default, disabled block.
    for part in (parts.values() if isinstance(parts, DictConfig) else ()):
        if isinstance(part, DictConfig) and "profiler" in part and part.get("profiler") is None:
            del part["profiler"]
    obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ClusterSpec), stored))
    assert isinstance(obj, ClusterSpec)
    return obj
