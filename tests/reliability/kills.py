"""Signal a CLI run at a chosen moment: the kill-at-random tests' one way to stop a command."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence

from tests.conftest import run_cli


def signal_after(
    argv: Sequence[str],
    env: dict[str, str],
    delay: float,
    sig: signal.Signals = signal.SIGKILL,
    when: Callable[[], bool] | None = None,
) -> float | None:
    """Run the command and send it `sig` `delay` seconds after it started (or, with `when`, after
    `when()` first said true: a moment of the command's, e.g. its first temporary file): None if the
    signal found it running (killed, or stopped by its own handler: exit 128 + the signal), else the
    seconds it took. Through run_cli (a process forked with its imports done, no interpreter start): a kill
    during Python's start and imports tests nothing of the ledger, and each run paid it. The signal
    goes through a pidfd: never to a process that took a finished run's PID."""
    timers: list[threading.Thread] = []
    pidfds: list[int] = []
    done = threading.Event()

    def send(pidfd: int) -> None:
        while when is not None and not when() and not done.wait(0.002):
            pass
        if done.wait(delay):
            return
        try:
            signal.pidfd_send_signal(pidfd, sig)
        except ProcessLookupError:
            pass  # it ended first

    def arm(pid: int) -> None:
        pidfds.append(os.pidfd_open(pid))
        timers.append(threading.Thread(target=send, args=(pidfds[0],)))
        timers[0].start()

    started = time.monotonic()
    try:
        proc = run_cli(*argv, env=env, timeout=300, on_start=arm)
    finally:
        done.set()
        for timer in timers:
            timer.join()
        for fd in pidfds:
            os.close(fd)
    return None if proc.returncode in (-sig, 128 + sig) else time.monotonic() - started
