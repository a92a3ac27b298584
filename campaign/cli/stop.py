"""How a command stops when it is told to: Ctrl-C (SIGINT), SIGTERM and SIGHUP.

SIGTERM is what a batch job reaching its end or a plain `kill` sends, SIGHUP
what a closed terminal or a dropped ssh session sends. Python's default for
either ends the process at once: no line said why, the shell saw -15 or -1,
and a write transaction was left to the database's recovery. Raised as an
interruption instead, they take Ctrl-C's path: transactions roll back, claims
are released, one line is printed, and the exit code is the shell's for the
signal (143, 129; 130 for Ctrl-C). A library that catches the interruption
inside its own code and raises its own error instead (DuckDB: "Query
interrupted") does not turn the stop into an internal error: the stop is
remembered where it is raised.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

INTERRUPTED = 128 + signal.SIGINT
TERMINATED = 128 + signal.SIGTERM
HUNG_UP = 128 + signal.SIGHUP


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, as Ctrl-C is."""


class HungUp(Terminated):
    """SIGHUP (the terminal went away), raised as SIGTERM is."""


_received: list[KeyboardInterrupt] = []  # the stops raised, for stop_received


def _raise(signum: int, _frame: FrameType | None) -> None:
    stop = HungUp() if signum == signal.SIGHUP else Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    _received.append(stop)
    raise stop


def stop_on_sigterm() -> None:
    """SIGTERM and SIGHUP raise Terminated in the main thread, SIGINT KeyboardInterrupt (signal
    handlers can be set there only), each remembered. A SIGHUP or SIGINT that the caller ignores
    (`nohup`, a background job of a shell without job control) stays ignored."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)
        for sig in (signal.SIGHUP, signal.SIGINT):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _raise)


def stop_received() -> KeyboardInterrupt | None:
    """The first stop raised in this process, even where a library caught it and raised its own
    error instead (DuckDB's "Query interrupted"), or None."""
    return _received[0] if _received else None


def stopped(exc: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the words for how the command was stopped."""
    if isinstance(exc, HungUp):
        return HUNG_UP, "hung up (SIGHUP)"
    return (TERMINATED, "terminated (SIGTERM)") if isinstance(exc, Terminated) else (INTERRUPTED, "interrupted")
