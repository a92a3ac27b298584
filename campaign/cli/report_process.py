"""What the `report` process runs with: the cyclic collector paused and what
survives frozen, and OpenBLAS with one thread. Both are costs of the process,
not of the report: together ~0.35 of the smoke campaign's 1.1 CPU s of
`report --json` on the 2-core VM (BENCHMARKS.md 23)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

from campaign.plumbing.gc_pause import gc_paused

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


@contextmanager
def report_process() -> Iterator[None]:
    """The collector paused for the whole command, the ledger's opening
    included: what the report imports (SQLAlchemy, pandas, scipy, matplotlib)
    and reads lives until the process exits, and every collection walked it
    again (write_reports still collects between clusters, for their figures).
    Frozen at the end (a report is the process's last work), so neither the
    collection that follows the pause nor the interpreter's at exit walks it
    once more."""
    with gc_paused(), one_blas_thread():
        yield
        gc.freeze()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS with one thread, unless the user chose a count.

    OpenBLAS, loaded with numpy and again with scipy, starts a thread per core
    when it loads, and those threads spin while they wait: CPU time the report
    never uses (its linear algebra is a few small fits). The variable is read
    when the library loads, so it is set before the report imports numpy, and
    removed after, so nothing the calling process starts later inherits it."""
    chosen = BLAS_THREADS in os.environ
    if not chosen:
        os.environ[BLAS_THREADS] = "1"
    try:
        yield
    finally:
        if not chosen:
            os.environ.pop(BLAS_THREADS, None)
