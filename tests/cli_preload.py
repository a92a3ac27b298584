"""What the CLI server (tests/cli_server.py) imports once, in its forkserver,
before it forks a CLI run: every module of campaign/ and analysis/
and the heavy libraries their commands import, so that a run pays neither the
interpreter's start nor the imports (0.35-0.8 s of CPU each, ~700 runs).

Imported only in the forkserver process, never by a test. The server must stay
single-threaded (a fork copies one thread), so the two libraries that start a
thread when they load are told not to: numpy's OpenBLAS (its pool: a CLI does
no BLAS work worth threads) and pyarrow's bundled jemalloc (its background
purging thread; pyarrow's default pool is mimalloc, and a forked child has
jemalloc's background threads off anyway). Nothing here opens a connection,
a file for writing or a thread, or reads the environment into a module
global: the audit is in docs/design.md (Tests). torch is never imported.
"""

from __future__ import annotations

import gc
import importlib
import os
import pkgutil

from tests.cli_server import LIBRARIES

_QUIET = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}
# Modules a run must not find already imported: `python -m` entry points that run
# at import, Alembic's env.py (run by Alembic itself, by path, inside a migration).
SKIP = ("__main__", "campaign.ledger.migrations.env")


def product_modules() -> list[str]:
    """Every module of campaign/ and analysis/ except SKIP's."""
    import analysis
    import campaign

    names: list[str] = []
    for pkg in (campaign, analysis):
        for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not mod.name.endswith(SKIP):
                names.append(mod.name)
    return names


def _preload() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)  # what analysis/plot_axes.py asks for; never a GUI backend
    for name in (*LIBRARIES, *product_modules()):  # numpy's and scipy's OpenBLAS, pyarrow's jemalloc load here
        importlib.import_module(name)


_saved = {k: os.environ.get(k) for k in _QUIET}
os.environ.update(_QUIET)
try:
    _preload()
finally:
    for _k, _v in _saved.items():  # the runs get the caller's environment, not these
        if _v is None:
            os.environ.pop(_k, None)
        else:
            os.environ[_k] = _v
# What the server imported lives as long as it does: frozen, it is left out of every
# collection of the runs forked from it, whose full collections would otherwise walk
# those ~230,000 objects again (~0.15 CPU s of a submit: BENCHMARKS.md section 31)
# and write to the pages it shares with them.
gc.freeze()
