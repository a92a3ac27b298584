"""How a command stops when it is told to: Ctrl-C (SIGINT) and SIGTERM.

SIGTERM is what a closed login session, a batch job reaching its end or a
plain `kill` sends. Python's default for it ends the process at once: no
line said why, the shell saw -15, and a write transaction was left to the
database's recovery. Raised as an interruption instead, it takes Ctrl-C's
path: transactions roll back, claims are released, one line is printed,
and the exit code is the shell's for the signal (143; 130 for Ctrl-C).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

INTERRUPTED = 130  # 128 + SIGINT
TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, as Ctrl-C is."""


def _raise(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


def stop_on_sigterm() -> None:
    """SIGTERM raises Terminated in the main thread (signal handlers can be set there only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)


def stopped(exc: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the words for how the command was stopped."""
    return (TERMINATED, "terminated (SIGTERM)") if isinstance(exc, Terminated) else (INTERRUPTED, "interrupted")
