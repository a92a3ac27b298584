"""How the torch kernel programs time a call (docs/design.md#kernel-program-contract).

A module apart from harness.py (which re-exports `measure`, `Measurement`,
`Flusher`), one concept each: the rules of one timed repeat live here, the
program around them (arguments, CSV, sweep) in harness.py.

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
# A batch's spin never exceeds this (a host that cannot keep ahead of the GPU
# would otherwise double it without end).
MAX_SPIN_S = 0.05
RETRIES = 3  # times a repeat whose batch the GPU reached before it was queued is timed again

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


@dataclass(frozen=True)
class Batch:
    """One timed batch: GPU (or CPU) seconds of all its calls, the host's
    seconds to enqueue them, and whether the GPU was still spinning when the
    host had queued the last call (`ahead`: then the events timed the calls
    back to back on the GPU, not the host's launch rate)."""

    seconds: float
    outputs: Outputs
    host_s: float
    ahead: bool


_CYCLES_PER_S: dict[int, float] = {}


def spin_cycles_per_s(device: torch.device) -> float:
    """The rate of torch.cuda._sleep's cycles, measured once per device (a
    spin of a given length in seconds needs it; the SM clock varies)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _CYCLES_PER_S:
        cycles = 4 * SPIN_CYCLES
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) * 1e-3
        _CYCLES_PER_S[index] = cycles / seconds if seconds > 0 else 2e9
    return _CYCLES_PER_S[index]


def time_batch(fn: Callable[[], Outputs], calls: int, device: torch.device, spin_s: float = 0.0) -> Batch:
    """`calls` back-to-back steady-state calls timed together (the batch, not
    per call): on the GPU one CUDA event pair, queued behind a spin of at
    least SPIN_CYCLES (or `spin_s` seconds, if longer) so that the host
    enqueues the calls while the GPU is busy and the pair times the device
    work; perf_counter_ns on the CPU."""
    calls = max(1, int(calls))
    if device.type != "cuda":
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            out = fn()
        seconds = (time.perf_counter_ns() - t0) * 1e-9
        return Batch(seconds, out, seconds, True)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    spin = getattr(torch.cuda, "_sleep", None)  # private API; absent => no spin
    if spin is not None:
        cycles = SPIN_CYCLES if spin_s <= 0 else max(SPIN_CYCLES, int(spin_s * spin_cycles_per_s(device)))
        spin(cycles)
    start.record()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        out = fn()
    end.record()
    host_s = (time.perf_counter_ns() - t0) * 1e-9
    ahead = not start.query()  # the GPU had not reached the batch when the last call was queued
    end.synchronize()
    return Batch(start.elapsed_time(end) * 1e-3, out, host_s, ahead)


def time_call(fn: Callable[[], Outputs], device: torch.device) -> tuple[float, Outputs]:
    """Seconds of one steady-state call (a batch of one)."""
    b = time_batch(fn, 1, device)
    return b.seconds, b.outputs


def spin_for(host_per_call_s: float, calls: int) -> float:
    """Seconds of spin that cover the host's enqueueing of `calls` calls,
    with a margin: the GPU must not start the batch before it is queued."""
    return 1.5 * host_per_call_s * calls + 50e-6


class BatchPlan:
    """The batch size of one point and the spin that keeps its batches
    queued ahead of the GPU (batching.calibrate sizes it; the host's
    enqueue time per call, the largest seen, sizes the spin)."""

    def __init__(self, fn: Callable[[], Outputs], device: torch.device, target_s: float) -> None:
        self.fn, self.device, self.host_per_call = fn, device, 0.0
        self.calls = batching.calibrate(self._probe, target_s) if target_s > 0 else 1
        self.spin_s = spin_for(self.host_per_call, self.calls) if self.calls > 1 else 0.0

    def _probe(self, calls: int) -> float:
        b = time_batch(self.fn, calls, self.device, spin_for(self.host_per_call, calls) if calls > 1 else 0.0)
        if not b.ahead and calls > 1:  # the spin did not cover the host: once more with its measured time
            self.host_per_call = max(self.host_per_call, b.host_s / calls)
            b = time_batch(self.fn, calls, self.device, spin_for(self.host_per_call, calls))
        self.host_per_call = max(self.host_per_call, b.host_s / calls)
        return b.seconds

    def time(self) -> Batch:
        """One timed repeat. A batch the GPU reached before it was queued
        (the host was slowed: a page fault, another process) timed the host,
        not the calls: it is timed again with twice the spin, up to
        RETRIES times, and the spin stays doubled for the next repeats."""
        b = time_batch(self.fn, self.calls, self.device, self.spin_s)
        for _ in range(RETRIES):
            if b.ahead or self.calls == 1:
                break
            self.spin_s = min(2 * max(self.spin_s, 50e-6), MAX_SPIN_S)
            b = time_batch(self.fn, self.calls, self.device, self.spin_s)
        return b


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
    plan = BatchPlan(case.run, device, batch_target_s if device.type == "cuda" else 0.0)
    times: list[float] = []
    for _ in range(repeats):
        case.poison()
        if flush is not None:
            flush()
        b = plan.time()
        out = b.outputs
        times.append(b.seconds / plan.calls)
    sync(device)
    return Measurement(first, times, out, plan.calls)
