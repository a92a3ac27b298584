"""Python's cyclic garbage collector paused while 100,000s of long-lived
objects are built (a submit's specs and requests, a sync's open attempts and
their scheduler states): each full collection walks all of them again, a
third of a 100,000-run submit's CPU time and half of reading a sync's open
attempts. Reference counting still frees what is dropped; the collector runs
again, as usual, once the block ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    if not gc.isenabled():  # nested, or the caller turned it off: leave it as it is
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
