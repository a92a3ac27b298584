"""The `campaign` CLI for tests without an interpreter start per call.

A light CLI call (status, report, compare) cost ~1 CPU s, of which 0.35-0.8 s
were Python's start and the imports (SQLAlchemy, pandas, pyarrow, DuckDB,
Hydra, matplotlib); ~700 such calls were two thirds of the suite's CPU on a
2-core machine. Here each call still runs in a FRESH PROCESS (a CLI that
crashes, leaks a file handle, sets a global or changes directory cannot touch
the next call or pytest), but one forked from a server that has imported all
that already: the standard library's `multiprocessing` forkserver, started
once per pytest process, preloading tests/cli_preload.py and the libraries.

The child is made to look like the process `subprocess.run([campaign, ...])`
would have started: its environment is replaced by exactly the caller's (and
TZ re-read), it takes the caller's umask and changes to the caller's
directory, `sys.argv` and `sys.executable` are the console script's, fds 0/1/2
are /dev/null and two pipes (so the CLI's own children, local jobs, inherit them
as from a real process, and the caller reads until every holder has closed
them, as subprocess.run does), `sys.std*` are rebuilt on them as the interpreter
builds them, `SystemExit` gives the exit code, non-daemon threads are joined and
`atexit` handlers run (multiprocessing's child skips both: it leaves through
os._exit), and a child killed by a signal gives the negative return code.
What a forked child cannot be (a different interpreter, `PYTHON*` variables,
another locale, import-time behaviour) goes through the real script: see
tests/conftest.run_cli. A run is no child of pytest, so its CPU is read from
the server's /proc figures (its own and its reaped children's) and handed to
tests/cpu_time.py; the server's PID is what a child of it sees as its parent
(no private attribute of multiprocessing: tests/architecture/test_private_stdlib.py).
"""

from __future__ import annotations

import atexit
import errno
import importlib
import io
import locale
import logging
import os
import selectors
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing import connection, get_context
from multiprocessing.context import ForkServerContext
from pathlib import Path
from subprocess import CompletedProcess, TimeoutExpired
from typing import Any

SCRIPT = Path(sys.executable).parent / "campaign"
ENTRY = "campaign.cli:main"
# The libraries the commands import (some lazily, so no product module's import loads them):
# tests/cli_preload.py imports them, then every module of campaign/ and analysis/, in the server.
LIBRARIES = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "duckdb", "sqlalchemy", "sqlalchemy.orm", "alembic",
             "hydra", "omegaconf", "matplotlib.pyplot", "submitit", "rich.console", "rich.table", "rich.live",
             "scipy.stats", "scipy.special")
PRELOAD = ["tests.cli_preload", "campaign.cli", "campaign.cli.commands"]
# Variables read when an interpreter starts (PYTHON*, the locale) or when a preloaded library is
# imported (matplotlib's config and backend, pandas' and Arrow's options, OpenBLAS's threads), not
# later: a call that sets or changes one needs a real start. (TZ is re-read in the child.)
STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG", "MPL", "MATPLOTLIB", "PANDAS_", "ARROW_", "OPENBLAS_")

_lock = threading.Lock()
_context: ForkServerContext | None = None
_server_env: dict[str, str] = {}
_charged: dict[int, float] = {}  # per server PID (a dead one is started again): its CPU charged so far
_pid: int | None = None  # the server's PID, as a child of it sees its parent (_server_pid)


def needs_script(env: dict[str, str]) -> bool:
    """True if `env` (the whole environment of the call) differs from the server's
    in a variable that only an interpreter start reads (PYTHONPATH,
    PYTHONPROFILEIMPORTTIME, the locale, ...)."""
    base = _server_env if _context is not None else dict(os.environ)
    keys = {k for k in (*env, *base) if k.startswith(STARTUP_PREFIXES)}
    return any(env.get(k) != base.get(k) for k in keys)


def _server() -> ForkServerContext:
    global _context, _server_env
    with _lock:
        if _context is None:
            ctx = get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
            _server_env = dict(os.environ)  # what the server starts with (see needs_script)
            _context = ctx
        return _context


def _umask() -> int:
    """This process's umask (only settable, so set and put back), which a subprocess would inherit."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _script_executable() -> str:
    """The interpreter of the console script's `#!` line: the CLI's sys.executable
    (the product records it as the jobs' Python)."""
    try:
        first = SCRIPT.read_text().splitlines()[0]
    except (OSError, IndexError):
        return sys.executable
    return first[2:].strip() if first.startswith("#!") else sys.executable


def run(args: Sequence[str], *, cwd: Path | str | None, env: dict[str, str], timeout: float | None,
        entry: str = ENTRY, on_cpu: Callable[[float], None] | None = None,
        on_start: Callable[[int], None] | None = None) -> CompletedProcess[str]:
    """`subprocess.run([campaign, *args], capture_output=True, text=True, cwd=cwd,
    env=env, timeout=timeout)`, run as a forked child of the server. `entry`
    ("module:function") is the function the console script calls; `on_cpu`
    gets the CPU seconds the server and its children spent since the last
    call (this run, to its exit, with the children it reaped; the first call
    also the server's start), which no RUSAGE_CHILDREN of this process sees;
    `on_start` gets the child's PID."""
    where = str(cwd if cwd is not None else os.getcwd())
    if not os.path.isdir(where):  # subprocess fails in the parent, before any child
        no = errno.ENOTDIR if os.path.exists(where) else errno.ENOENT
        raise (NotADirectoryError if no == errno.ENOTDIR else FileNotFoundError)(no, os.strerror(no), where)
    ctx = _server()
    out_r, out_fd = os.pipe()
    err_r, err_fd = os.pipe()
    # the write ends as Connections: multiprocessing passes those to the child (SCM_RIGHTS), and closes them here
    out_w, err_w = connection.Connection(out_fd, readable=False), connection.Connection(err_fd, readable=False)
    cmd = [str(SCRIPT), *args]
    try:
        proc = ctx.Process(target=_child, name="campaign-cli", args=(
            entry, list(args), dict(env), where, _umask(), _script_executable(), out_w, err_w))
        proc.start()
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        out_w.close()
        err_w.close()
    if on_start is not None and proc.pid is not None:
        on_start(proc.pid)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        out, err, timed_out = _read_both(out_r, err_r, deadline)
        if not timed_out:
            proc.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            timed_out = proc.exitcode is None
        if timed_out:
            proc.kill()
            proc.join()
            raise TimeoutExpired(cmd, timeout or 0.0, output=out, stderr=err)
    except BaseException:  # as subprocess.run: the child does not outlive an interrupted caller
        if proc.exitcode is None:
            proc.kill()
            proc.join()
        raise
    finally:
        os.close(out_r)
        os.close(err_r)
        if on_cpu is not None:
            on_cpu(_charge())
    code = proc.exitcode
    proc.close()
    assert code is not None
    return CompletedProcess(cmd, code, _text(out), _text(err))


def _text(data: bytes) -> str:
    """As subprocess's text mode decodes: the locale's encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def _read_both(out_r: int, err_r: int, deadline: float | None) -> tuple[bytes, bytes, bool]:
    """Both pipes to their end (every writer gone), or until the deadline: (out, err, timed out)."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return b"".join(chunks[out_r]), b"".join(chunks[err_r]), True
            for key, _ in sel.select(left):
                fd = int(key.fd)
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    sel.unregister(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), False


def _stdio() -> None:
    """fds 0/1/2 and sys.std* as the interpreter makes them for a non-tty
    process; a logging handler made at import on the server's sys.stdout or
    sys.stderr (submitit's) writes to the new one."""
    old = {id(sys.stdout): "stdout", id(sys.stderr): "stderr"}
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        raw = open(fd, mode + "b", closefd=False)  # noqa: SIM115  (the process's own stream)
        stream = io.TextIOWrapper(raw, encoding=locale.getpreferredencoding(False),  # type: ignore[arg-type]
                                  errors="backslashreplace" if fd == 2 else "strict", line_buffering=fd == 2)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    for handler in (h for lg in loggers for h in lg.handlers):
        if isinstance(handler, logging.StreamHandler) and id(handler.stream) in old:
            handler.setStream(getattr(sys, old[id(handler.stream)]))


def _child(entry: str, args: list[str], env: dict[str, str], cwd: str, umask: int, executable: str,
           out_w: connection.Connection, err_w: connection.Connection) -> None:
    """The forked child: become the CLI process, run it, leave as an interpreter does."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(out_w.fileno(), 1)
    os.dup2(err_w.fileno(), 2)
    out_w.close()
    err_w.close()
    _stdio()
    os.environ.clear()
    os.environ.update(env)
    time.tzset()  # TZ, as an interpreter's start reads it
    os.umask(umask)
    os.chdir(cwd)
    sys.argv = [str(SCRIPT.name), *args]
    sys.executable = executable
    _forget_forkserver()
    code = _call(entry)
    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's exit: non-daemon threads, then atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = 120  # what Python exits with when stdout cannot be flushed at exit
    os._exit(code)


def _charge() -> float:
    """The CPU seconds the server spent since the last charge, its own
    (interpreter start, preload, forks) and its reaped children's: every run
    to its exit (a killed one too) with what it reaped (local jobs). From
    /proc: utime, stime, cutime, cstime; the server reaps a run before it
    tells this process the exit code, so after join() the run is in."""
    for fresh in (False, True):  # a server gone since its PID was learnt: multiprocessing started another
        pid = _server_pid(fresh)
        if pid is None:
            return 0.0
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        before = _charged.get(pid, 0.0)
        _charged[pid] = max(before, total)
        return max(0.0, total - before)
    return 0.0


def _server_pid(fresh: bool) -> int | None:
    """The server's PID: the parent that a process started from it sees
    (os.getppid()), asked of one short probe run and kept; asked again when
    `fresh`. None if no probe could run (no server to charge)."""
    global _pid
    if _pid is not None and not fresh:
        return _pid
    ctx = _server()
    reader, writer = ctx.Pipe(duplex=False)
    try:
        probe = ctx.Process(target=_report_parent, args=(writer,), name="campaign-cli-server-pid")
        probe.start()
        writer.close()
        _pid = int(reader.recv()) if reader.poll(60) else None
        if _pid is None:
            probe.kill()
        probe.join()
        probe.close()
    except (OSError, EOFError, ValueError):
        _pid = None
    finally:
        writer.close()
        reader.close()
    return _pid


def _report_parent(writer: connection.Connection) -> None:
    """The probe run: its parent, the server, is whose CPU a run is charged from."""
    writer.send(os.getppid())
    writer.close()


def _call(entry: str) -> int:
    """Run the entry function as the console script does (`sys.exit(main())`)
    and return the exit code the interpreter would have left with."""
    module, _, func = entry.partition(":")
    try:
        fn: Any = getattr(importlib.import_module(module), func)
        sys.exit(fn())
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code & 0xFF
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # an uncaught exception: the traceback on stderr, exit 1
        sys.excepthook(*sys.exc_info())
        return 1


def _forget_forkserver() -> None:
    """multiprocessing's child bootstrap made forkserver this process's default
    start method; a CLI started by the script would have the platform's."""
    import multiprocessing

    multiprocessing.set_start_method(None, force=True)  # (None with force: "not fixed yet", the fresh state)
