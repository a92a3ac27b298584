"""How a command stops when it is told to: Ctrl-C (SIGINT), SIGTERM and SIGHUP.

SIGTERM is what a batch job reaching its end or a plain `kill` sends, SIGHUP
what a closed terminal or a dropped ssh session sends. Python's default for
either ends the process at once: no line said why, the shell saw -15 or -1,
and a write transaction was left to the database's recovery. Raised as an
interruption instead, they take Ctrl-C's path: transactions roll back, claims
are released, one line is printed, and the exit code is the shell's for the
signal (143, 129; 130 for Ctrl-C).
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


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise HungUp if signum == signal.SIGHUP else Terminated


def stop_on_sigterm() -> None:
    """SIGTERM and SIGHUP raise Terminated in the main thread (signal handlers can be set there
    only). A SIGHUP that the caller ignores (`nohup`) stays ignored."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            signal.signal(signal.SIGHUP, _raise)


def stopped(exc: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the words for how the command was stopped."""
    if isinstance(exc, HungUp):
        return HUNG_UP, "hung up (SIGHUP)"
    return (TERMINATED, "terminated (SIGTERM)") if isinstance(exc, Terminated) else (INTERRUPTED, "interrupted")
