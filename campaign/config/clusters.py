"""A cluster config as YAML and back: campaigns store the cluster they were
submitted with, so sync, rerun and cancel use those facts, not today's files."""

from __future__ import annotations

from omegaconf import OmegaConf

from campaign.config.schema import ClusterSpec


def cluster_yaml(cluster: ClusterSpec) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(cluster))


def cluster_from_yaml(text: str) -> ClusterSpec:
    obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ClusterSpec), OmegaConf.create(text)))
    assert isinstance(obj, ClusterSpec)
    return obj
