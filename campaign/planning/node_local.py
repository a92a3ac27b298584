"""Refuse node-local paths for scheduler campaigns.

Why: on a cluster, /tmp and /dev/shm belong to each node. A ledger or job
folder there is written on the compute node and read on the login node, which
never sees it: every job would end LOST_OUTPUT (or the ledger would vanish
with the node). The one-machine test cluster shares /tmp on purpose, so a
cluster (`cluster.allow_node_local`) or a user (`campaign.allow_node_local=true`)
may allow it explicitly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from campaign.backends.capabilities import capabilities
from campaign.config.schema import RootConfig
from campaign.plumbing.errors import BadInputError

NODE_LOCAL = ("/tmp", "/dev/shm")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:/")


def node_local_root(path: Path | str) -> str | None:
    """The node-local folder `path` lies in, or None (URLs are never node-local)."""
    text = str(path)
    if _URL.match(text):  # a ledger URL (pathlib collapses "://" to ":/")
        return None
    resolved = Path(os.path.realpath(text))
    for root in NODE_LOCAL:
        base = Path(os.path.realpath(root))
        if resolved == base or base in resolved.parents:
            return root
    return None


def check_node_local(cfg: RootConfig, paths: Iterable[Path | str]) -> None:
    """BadInputError naming the first node-local path, unless allowed or local."""
    if capabilities(cfg.cluster.backend).local or cfg.cluster.allow_node_local or cfg.campaign.allow_node_local:
        return
    for path in paths:
        root = node_local_root(path)
        if root is not None:
            raise BadInputError(
                f"{path} is on node-local {root}, which the compute nodes of cluster {cfg.cluster.name} "
                f"do not share: use a shared filesystem, or campaign.allow_node_local=true if it is shared")
