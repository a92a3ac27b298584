"""`--profile ncu`: hardware counters of one extra, separately launched call per n.

The timed repeats are never profiled: ncu replays each kernel many times and
serialises launches, which would ruin the timings. So after the timed repeats
of an n, the program starts ONE more process of itself under ncu, with that n,
`--repeats 1`, the same warm-ups and `--profiled-child`; the child builds the
same inputs, runs its first call and warm-ups unprofiled, then brackets a
single call with cudaProfilerStart/Stop (ncu --profile-from-start off). The
counters of that call, combined over its kernels (ncu.py), go to the counters
CSV beside the results CSV (`counters_path`).

A profile that cannot be taken (ncu not found, counters locked with
ERR_NVGPUCTRPERM, a container without counter access, the child failing) is a
row with the reason in `error`, never a failed run: the timings still count.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from kernels.torch import ncu, perf
from kernels.torch.csvout import format_float, write_csv_atomic

COUNTER_COLUMNS: tuple[str, ...] = (
    "kernel", "impl", "variant", "dtype", "n", "d", "metric", "value", "unit", "kernels", "error",
)
CHILD_FLAG = "--profiled-child"
PROFILERS: tuple[str, ...] = ("none", "ncu", "perf")
# One profiled call replays every kernel once per metric pass; generous, the
# job's walltime is the real bound.
CHILD_TIMEOUT_S = 1800
# Options of the parent that the child must not inherit: it gets its own n,
# repeats, warm-ups and output, and it neither profiles nor checks.
_DROP_WITH_VALUE = frozenset({"--n", "--repeats", "--warmup", "--out", "--profile",
                              "--profiler-path", "--ncu-metrics"})
_DROP_FLAGS = frozenset({"--check", "--l2-flush", CHILD_FLAG})


def add_args(parser: argparse.ArgumentParser) -> None:
    """The profiling options of every torch kernel program."""
    parser.add_argument("--profile", choices=PROFILERS, default="none",
                        help="after the timed repeats of each n, profile one extra call "
                             "(counters to <out stem>.counters.csv)")
    parser.add_argument("--profiler-path", default=None,
                        help="the ncu or perf executable (default: found on PATH)")
    parser.add_argument("--ncu-metrics", default=None, help=argparse.SUPPRESS)
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)


def counters_path(out_csv: str) -> str:
    """results.csv -> results.counters.csv (any other name: name + .counters.csv)."""
    stem = out_csv[:-4] if out_csv.endswith(".csv") else out_csv
    return f"{stem}.counters.csv"


def child_argv(module: str, argv: Sequence[str], n: int, warmup: int, out: str) -> list[str]:
    """The profiled child's command: the parent's options minus _DROP_*,
    then one n, one repeat, the same warm-ups and its own output."""
    kept: list[str] = []
    skip_next = False
    for tok in argv:
        if skip_next:
            skip_next = False
            continue
        name = tok.split("=", 1)[0]
        if name in _DROP_WITH_VALUE:
            skip_next = "=" not in tok
            continue
        if name in _DROP_FLAGS:
            continue
        kept.append(tok)
    return [sys.executable, "-m", module, *kept, "--n", str(n), "--repeats", "1",
            "--warmup", str(warmup), "--out", out, CHILD_FLAG]


def find_tool(path: str | None, name: str = "ncu") -> str | None:
    """The profiler to run: --profiler-path if given (must exist), else PATH."""
    if path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(name)


def metric_set(args: argparse.Namespace) -> list[str]:
    if args.ncu_metrics:
        return [m.strip() for m in args.ncu_metrics.split(",") if m.strip()]
    return list(ncu.METRICS)


def profile_n(module: str, argv: Sequence[str], args: argparse.Namespace, n: int,
              identity: dict[str, str]) -> list[dict[str, str]]:
    """Counter rows of one n (or one row naming why there are none)."""
    base = dict(identity, n=str(n))
    tool = find_tool(args.profiler_path, args.profile)
    if tool is None:
        where = args.profiler_path or "PATH"
        return [dict(base, error=f"{args.profile} not found ({where})")]
    if args.profile == "perf":
        return _perf_n(tool, module, argv, args, n, base)
    with tempfile.TemporaryDirectory(prefix="ncu-") as tmp:
        log = os.path.join(tmp, "ncu.csv")
        child = child_argv(module, argv, n, args.warmup, os.path.join(tmp, "child.csv"))
        cmd = ncu.command(tool, metric_set(args), log, child)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired:
            return [dict(base, error=f"ncu did not finish within {CHILD_TIMEOUT_S} s")]
        except OSError as exc:
            return [dict(base, error=f"cannot run {tool}: {exc}")]
        text = _read(log)
        keep = os.environ.get("CAMPAIGN_KEEP_NCU_LOG")
        if keep and os.path.exists(log):  # fixtures and debugging: each n's raw ncu CSV
            shutil.copyfile(log, f"{keep}.{identity.get('kernel', '')}.{identity.get('variant', '')}.n{n}.csv")
    output = ncu.parse(text)
    if proc.returncode != 0 and not output.kernels:
        tail = _last_line(proc.stderr) or _last_line(proc.stdout)
        reason = output.errors[0] if output.errors else f"profiled child exited {proc.returncode}: {tail}"
        return [dict(base, error=reason)]
    return counter_rows(output, base)


def counter_rows(output: ncu.NcuOutput, base: dict[str, str]) -> list[dict[str, str]]:
    """The counters CSV rows of one n from ncu's parsed output."""
    failure = output.failure()
    if failure is not None:
        return [dict(base, error=failure)]
    names = ncu.kernel_names(output.kernels)
    return [dict(base, metric=metric, value=format_float(value), unit=unit, kernels=names)
            for metric, value, unit in ncu.combine(output.kernels)]


def _perf_n(tool: str, module: str, argv: Sequence[str], args: argparse.Namespace, n: int,
            base: dict[str, str]) -> list[dict[str, str]]:
    """perf stat around the child's one call (perf.py), through two FIFOs."""
    with tempfile.TemporaryDirectory(prefix="perf-") as tmp:
        ctl, ack, out = (os.path.join(tmp, name) for name in ("ctl", "ack", "perf.csv"))
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # perf opens the ack FIFO for writing at start, which waits for a
        # reader: hold one (never read) until the child has its own.
        hold = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        child = child_argv(module, argv, n, args.warmup, os.path.join(tmp, "child.csv"))
        env = dict(os.environ, **{perf.CTL_ENV: ctl, perf.ACK_ENV: ack})
        try:
            proc = subprocess.run(perf.command(tool, out, ctl, ack, child), capture_output=True, text=True,
                                  timeout=CHILD_TIMEOUT_S, check=False, env=env)
        except subprocess.TimeoutExpired:
            return [dict(base, error=f"perf did not finish within {CHILD_TIMEOUT_S} s")]
        except OSError as exc:
            return [dict(base, error=f"cannot run {tool}: {exc}")]
        finally:
            os.close(hold)
        text = _read(out)
    if proc.returncode != 0:
        tail = _last_line(proc.stderr) or _last_line(proc.stdout)
        return [dict(base, error=f"perf stat exited {proc.returncode}: {tail}")]
    rows, failure = perf.parse(text)
    if failure is not None:
        return [dict(base, error=failure)]
    return [dict(base, metric=m, value=format_float(v), unit=u) for m, v, u in rows]


def write(out_csv: str, rows: Sequence[dict[str, str]]) -> None:
    write_csv_atomic(counters_path(out_csv), rows, COUNTER_COLUMNS)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _last_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
