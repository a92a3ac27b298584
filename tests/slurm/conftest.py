"""Fixtures of the real-Slurm tests here (used by name, none autouse, so the
parsing tests in this folder need no cluster)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.slurm.helpers import OOM_MB
from tests.slurm_cluster import SlurmCluster


@pytest.fixture(scope="module")
def fake_kernel_env(slurm_cluster: SlurmCluster) -> Iterator[None]:
    """The fake kernel's configs for the submitting side; the jobs inherit them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAMPAIGN_CONFIG_PATH", str(FAKE_CONF))
        mp.setenv("CAMPAIGN_FAKE_KERNEL", str(FAKE_KERNEL))
        mp.setenv("FAKE_OOM_MB", str(OOM_MB))
        mp.delenv("CAMPAIGN_LEDGER", raising=False)
        yield


@pytest.fixture
def cancel_at_end() -> Iterator[Callable[[Ledger, str], None]]:
    """Register campaigns whose leftover jobs are cancelled when the test ends
    (pass or fail): the cluster is shared."""
    todo: list[tuple[Ledger, str]] = []
    yield lambda ledger, name: todo.append((ledger, name))
    for ledger, name in todo:
        try:
            api.cancel(ledger, name)
        except Exception:  # noqa: BLE001 - best effort cleanup
            pass
