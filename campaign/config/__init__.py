"""Configuration: Hydra composition of conf/ validated against typed schemas."""

from campaign.config.load import conf_dir, load_config, split_overrides
from campaign.config.schema import (
    ClusterSpec,
    ExperimentSpec,
    KernelSpec,
    PartitionSpec,
    RootConfig,
    SweepSpec,
)

__all__ = [
    "ClusterSpec",
    "ExperimentSpec",
    "KernelSpec",
    "PartitionSpec",
    "RootConfig",
    "SweepSpec",
    "conf_dir",
    "load_config",
    "split_overrides",
]
