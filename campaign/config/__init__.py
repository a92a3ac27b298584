"""Configuration: Hydra composition of conf/ validated against typed schemas.

The names below are imported on first use (PEP 562 `__getattr__`), so that
`campaign.config.groups` (which config names exist) answers a typo or a TAB
without loading OmegaConf and the schemas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from campaign.config.load import conf_dir, load_config, split_overrides
    from campaign.config.schema import (
        ClusterSpec,
        ExperimentSpec,
        KernelSpec,
        PartitionSpec,
        RootConfig,
        SweepSpec,
    )

_WHERE = {
    **{n: "campaign.config.load" for n in ("conf_dir", "load_config", "split_overrides")},
    **{n: "campaign.config.schema" for n in ("ClusterSpec", "ExperimentSpec", "KernelSpec", "PartitionSpec",
                                              "RootConfig", "SweepSpec")},
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'campaign.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
