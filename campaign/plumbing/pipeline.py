"""Two stages of a long job on two cores: each item made on the calling
thread while the item before it is consumed on one worker thread (a sync's
ingest: batch k+1's job files read, parsed and checked while batch k's
Parquet file is written, made durable and committed; docs/ledger.md, "Result rows live in files").

Why it pays: pyarrow's CSV reader, its compute kernels and its Parquet
writer (zstd), hashlib, fsync and SQLite's statements all release the GIL,
so the two stages overlap on a 2-core node (the wall time of a sync, not its
CPU time, is what a user waits for).

What it keeps of the serial loop: items are consumed one at a time, in the
order they were made (one worker: the ledger's commits keep their order);
at most two items are alive at once (the one consumed, the one being made),
so memory stays one item's bound however many there are; an exception of
the worker is raised here, as it is (the CLI's one line and exit code), and
one raised while the next item is made waits for the item in hand to finish
first, and yields to its error if it failed (the serial loop would have
stopped there). Both stages run with the cyclic collector paused
(campaign.plumbing.gc_pause); between items it runs as before."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar, cast

from campaign.plumbing.gc_pause import gc_paused

T = TypeVar("T")


def _paused(consume: Callable[[T], None], held: list[T]) -> None:
    with gc_paused():
        consume(held[0])


def _nothing() -> None:
    return None


def overlapped(items: Iterator[T], consume: Callable[[T], None], settle: Callable[[], None] = _nothing) -> None:
    """`consume(item)` for every item of `items`, in order, on one worker
    thread, while the next item is made here. Returns once the last is consumed.

    An item's last reference is dropped here, on the thread that made it, once
    it is consumed, and `settle()` then runs here: an allocator with one heap
    per thread (Arrow's mimalloc) keeps what the other thread freed until its
    owner collects, and a sync's peak memory varied by half from run to run
    (41-66 MB for the same ingest, tests/scale/test_scale_small.py; 37-44 MB
    so, and settling the worker's heap too only cost CPU)."""
    end = object()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="campaign-writer") as worker:
        pending: Future[None] | None = None
        held: list[T] = []  # the item in the worker's hands
        while True:
            try:
                with gc_paused():
                    item = next(items, end)
            except BaseException:
                if pending is not None:
                    pending.result()  # the earlier item's error first, as the serial loop would raise it
                raise
            if pending is not None:
                pending.result()
                pending = None
                held.clear()  # (the worker let go of it before its result was set)
                settle()
            if item is end:
                return
            held = [cast(T, item)]
            pending = worker.submit(_paused, consume, held)
