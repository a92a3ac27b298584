"""The one line of a program's stderr that says what went wrong.

Why: a failed program's stderr often ends in noise, not in its error. A
Python that cannot start prints its path configuration, then
`ModuleNotFoundError: No module named 'encodings'`, then a crash dump
(`Current thread 0x... <no Python frame>`); a shell prints `foo: not found`
before a wrapper's own lines. Showing the last lines keeps the dump and drops
the error, so `jobs`, `status` and the preflight show this line instead
(the whole file stays where the message says).

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import os
import re
import signal

# An exception as Python prints it (`ModuleNotFoundError: ...`, `numpy.linalg.LinAlgError: ...`).
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failed|Failure|Interrupt)\b:?")
# Words a program's own error line carries (a shell's `not found`, a C runtime's `Segmentation fault`).
_ERROR_WORDS = re.compile(
    r"error|not found|no such file|cannot|can't|fatal|failed|segmentation fault|"
    r"killed|abort|denied|undefined|invalid|unable|illegal|exception",
    re.IGNORECASE,
)
# Lines of a crash dump or traceback that never say what went wrong.
_NOISE = re.compile(
    r"^(Current thread 0x|Thread 0x|<no Python frame>|File \"|Traceback \(most recent call|"
    r"Python runtime state:|During handling of the above|The above exception was)"
)
MAX_CHARS = 300  # one line in a table cell or a message; the file holds the rest
_READ_BYTES = 1 << 16  # the head of a huge stderr is enough: the first error comes early


def error_line(text: str) -> str | None:
    """The first exception line, else the first line with an error word, else
    the last line that is not crash-dump noise; None for an empty text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern in (_EXCEPTION, _ERROR_WORDS):
        for line in lines:
            if pattern.search(line) and not _NOISE.match(line):
                return line[:MAX_CHARS]
    meaningful = [line for line in lines if not _NOISE.match(line)]
    return meaningful[-1][:MAX_CHARS] if meaningful else None


def file_error_line(path: str | os.PathLike[str]) -> str | None:
    """error_line of a file's head; None when it is missing, unreadable or empty."""
    try:
        with open(path, "rb") as f:
            data = f.read(_READ_BYTES)
    except OSError:
        return None
    return error_line(data.decode(errors="replace"))


def signal_name(code: int) -> str | None:
    """The signal an exit status says ended the program: 128+N (a shell's or a
    launcher's word for "killed by signal N") and -N (Python's, as the job's own
    exit record and a scheduler's ``0:N`` are stored); None for any other status."""
    number = code - 128 if code > 128 else -code if code < 0 else 0
    try:
        return signal.Signals(number).name if number else None
    except ValueError:  # no signal of that number: the status as it is
        return None


def exit_words(code: int) -> str:
    """An exit status as a reader of the reason wants it: `exit 139, SIGSEGV`, `exit -9, SIGKILL`, `exit 3`."""
    name = signal_name(code)
    return f"exit {code}, {name}" if name else f"exit {code}"


def failure_cause(exit_code: int | None, stderr_path: str | os.PathLike[str], known: str | None = None) -> str | None:
    """What `jobs` says of a FAILED job: its exit code (the signal named where one
    killed it) and its program's error line (`exit 127: sh: 1: foo: not found`,
    `exit -9, SIGKILL: ...`), from the job's own exit record and stderr, else the
    scheduler's; `known` (the scheduler's words) when the program left neither."""
    line = file_error_line(stderr_path)
    if exit_code is None:
        return known or line
    said = exit_words(exit_code)
    return f"{said}: {line}" if line else (known or said)
