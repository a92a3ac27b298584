"""How the torch kernel programs time a call (docs/design.md#kernel-program-contract).

Split from harness.py (which re-exports `measure`, `Measurement`, `Flusher`)
when GPU batch timing came (issue 30): the rules of one timed repeat live
here, the program around them (arguments, CSV, sweep) in harness.py.

- The first call is timed apart (wall clock, host work such as compilation
  included), then W untimed warm-ups.
- On the CPU a repeat is one call timed with perf_counter_ns.
- On CUDA a repeat is one CUDA-event pair around `calls` back-to-back calls
  (kernels/torch/batching.py chooses `calls` per point: 1 for calls of
  100 us or more, else enough to last ~500 us), after a synchronize and a
  short GPU spin (SPIN_CYCLES) so that the host enqueues while the GPU is
  busy; time_s is the pair's time divided by `calls`.
- The outputs are poisoned before every repeat (and, with --l2-flush, the
  flush buffer written): before the batch, outside the event pair. Within a
  batch only the first call starts from a flushed L2; rows say both
  (`l2_flush`, `calls`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from kernels.torch import batching

# A buffer written between repeats must exceed the last-level cache; 256 MiB is
# over 2x the L2 of an H200 (60 MB) and over the L3 of common CPU sockets.
FLUSH_BYTES_MIN = 256 * 2**20
# Cycles of GPU spin queued before each timed batch: the host then enqueues the
# calls while the GPU is still busy, so the events time the device work and not
# the Python launch latency (what triton.testing.do_bench achieves with its
# cache clear). About 0.1 ms at H200 boost clocks; never part of time_s.
SPIN_CYCLES = 200_000

Outputs = Sequence[torch.Tensor]


class Timed(Protocol):
    """What `measure` needs of a case (harness.Case is one)."""

    @property
    def run(self) -> Callable[[], Outputs]: ...

    @property
    def poison(self) -> Callable[[], None]: ...


class Flusher:
    """Writes a buffer larger than the last-level cache between repeats."""

    def __init__(self, device: torch.device) -> None:
        size = FLUSH_BYTES_MIN
        if device.type == "cuda":
            l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
            size = max(size, 2 * l2)
        self.buffer = torch.empty(size // 4, dtype=torch.float32, device=device)

    def __call__(self) -> None:
        self.buffer.fill_(1.0)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_first_call(fn: Callable[[], Outputs], device: torch.device) -> tuple[float, Outputs]:
    """Wall-clock seconds of one call, host work (compilation) included."""
    sync(device)
    t0 = time.perf_counter_ns()
    out = fn()
    sync(device)
    return (time.perf_counter_ns() - t0) * 1e-9, out


def time_batch(fn: Callable[[], Outputs], calls: int, device: torch.device) -> tuple[float, Outputs]:
    """Seconds of `calls` back-to-back steady-state calls (the batch, not per
    call): one CUDA event pair (after a synchronize and a short spin, see
    SPIN_CYCLES) on the GPU, perf_counter_ns on the CPU."""
    calls = max(1, int(calls))
    if device.type != "cuda":
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            out = fn()
        return (time.perf_counter_ns() - t0) * 1e-9, out
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    spin = getattr(torch.cuda, "_sleep", None)  # private API; absent => no spin
    if spin is not None:
        spin(SPIN_CYCLES)
    start.record()
    for _ in range(calls):
        out = fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3, out


def time_call(fn: Callable[[], Outputs], device: torch.device) -> tuple[float, Outputs]:
    """Seconds of one steady-state call (a batch of one)."""
    return time_batch(fn, 1, device)


@dataclass
class Measurement:
    """Timings of one n: the first call, each timed repeat (seconds per
    call), and the calls each repeat timed together."""

    first_call_s: float
    times_s: list[float]
    outputs: Outputs
    calls: int = 1


def measure(case: Timed, repeats: int, warmup: int, device: torch.device,
            flush: Flusher | None = None, batch_target_s: float = 0.0) -> Measurement:
    """First call, W warm-ups, on CUDA with batch_target_s > 0 the batch size
    (batching.calibrate: its batches are untimed warm-ups too), then R timed
    repeats; poison before every repeat."""
    case.poison()
    first, out = time_first_call(case.run, device)
    for _ in range(warmup):
        case.poison()
        out = case.run()
    calls = 1
    if device.type == "cuda" and batch_target_s > 0:
        calls = batching.calibrate(lambda k: time_batch(case.run, k, device)[0], batch_target_s)
    times: list[float] = []
    for _ in range(repeats):
        case.poison()
        if flush is not None:
            flush()
        t, out = time_batch(case.run, calls, device)
        times.append(t / calls)
    sync(device)
    return Measurement(first, times, out, calls)
