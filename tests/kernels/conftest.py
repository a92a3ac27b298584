"""Fixtures of the kernel programs' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def torch_threads_restored() -> Iterator[None]:
    """torch's thread count as it was: a kernel's main() sets it for its run."""
    import torch  # here, not at the top: the native kernels' tests never load torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
