"""Python's cyclic garbage collector paused while 100,000s of long-lived
objects are built (a submit's specs and requests, a sync's open attempts and
their scheduler states): each full collection walks all of them again, a
third of a 100,000-run submit's CPU time and half of reading a sync's open
attempts. Reference counting still frees what is dropped; the collector runs
again, as usual, once the block ends.

The collector is one per process, and a sync pauses it on two threads at once
(campaign.plumbing.pipeline: a batch read on one while the one before is
written on the other): the pause is counted, so the collector comes back when
the last block on any thread ends, not when the first does."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_HOLDERS = [0, False]  # blocks inside a pause now; whether the first of them turned the collector off


@contextmanager
def gc_paused() -> Iterator[None]:
    with _LOCK:
        if _HOLDERS[0] == 0:  # outermost: pause only what is on (the caller may have turned it off)
            _HOLDERS[1] = gc.isenabled()
            gc.disable()
        _HOLDERS[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _HOLDERS[0] -= 1
            if _HOLDERS[0] == 0 and _HOLDERS[1]:
                _HOLDERS[1] = False
                gc.enable()
