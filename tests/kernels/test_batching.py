"""Batch sizing of short GPU calls (kernels/torch/batching.py) and
the timing pieces around it, on the CPU (no GPU here: the GPU half of the
rule is tests/kernels/test_torch_kernels.py::test_cuda_short_calls_batched,
run on the H200).

The sizing rule is pure: `calibrate(time_batch)` only sees a function that
times k calls, so a model of a GPU call (a fixed launch cost per batch plus
a per-call time, optionally noisy or broken) stands in for the events."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
import torch

from kernels.torch import batching, timing
from kernels.torch.argtypes import nonnegative_float


def model(per_call_s: float, overhead_s: float = 5e-6, noise: float = 0.0,
          seed: int = 0) -> tuple[Callable[[int], float], list[int]]:
    """A batch timer of a call of `per_call_s` with a fixed event-pair cost
    and multiplicative noise; records the sizes it was asked for."""
    rng = random.Random(seed)
    asked: list[int] = []

    def time_batch(k: int) -> float:
        asked.append(k)
        return (overhead_s + k * per_call_s) * (1 + noise * (2 * rng.random() - 1))

    return time_batch, asked


@pytest.mark.parametrize("per_call_s", [1e-6, 3e-6, 7.3e-6, 20e-6, 52e-6, 90e-6])
def test_short_calls_get_a_batch_of_at_least_the_target(per_call_s: float) -> None:
    fn, asked = model(per_call_s)
    calls = batching.calibrate(fn, target_s=batching.TARGET_S)
    assert calls > 1
    # the chosen batch lasts the target, or is the largest allowed (a 1 us call)
    assert calls == batching.MAX_CALLS or calls * per_call_s + 5e-6 >= batching.TARGET_S
    # and not much more than needed: within the rule's aim (1.2x) plus one call
    assert calls * per_call_s <= 1.2 * batching.TARGET_S + 2 * per_call_s + 1e-12
    assert asked[0] == 1 and len(asked) <= batching.MAX_STEPS + batching.SINGLE_PROBES


@pytest.mark.parametrize("per_call_s", [100e-6, 150e-6, 1e-3, 2.0])
def test_long_calls_stay_one_call_per_repeat(per_call_s: float) -> None:
    fn, asked = model(per_call_s)
    assert batching.calibrate(fn) == 1
    assert asked == [1] * batching.SINGLE_PROBES  # single probes only, no batch timed


def test_one_slow_probe_does_not_leave_a_short_call_unbatched() -> None:
    """On the H200 one slow first call (a 16 us kernel timed at >= 100 us)
    left points unbatched in one run and batched in the next: the runs then
    disagreed. The fastest of the single probes decides."""
    fn, asked = model(16e-6)
    first = [True]

    def slow_first(k: int) -> float:
        if first[0]:
            first[0] = False
            return 300e-6
        return fn(k)

    assert batching.calibrate(slow_first) > 1


def test_target_zero_or_bad_turns_batching_off() -> None:
    for target in (0.0, -1.0, math.nan, math.inf):
        fn, asked = model(1e-6)
        assert batching.calibrate(fn, target_s=target) == 1
        assert asked == []  # nothing timed at all
        assert batching.calls_for(1e-6, target_s=target) == 1


@pytest.mark.parametrize("bad", [0.0, -1e-6, math.nan, math.inf, -math.inf])
def test_broken_timer_never_sizes_an_unbounded_batch(bad: float) -> None:
    asked: list[int] = []

    def broken(k: int) -> float:
        asked.append(k)
        return bad

    calls = batching.calibrate(broken, max_calls=1000)
    assert 1 <= calls <= 1000
    assert len(asked) <= batching.MAX_STEPS + batching.SINGLE_PROBES and max(asked) <= 1000
    assert 1 <= batching.calls_for(bad, max_calls=1000) <= 1000


def test_max_calls_caps_a_call_that_is_almost_free() -> None:
    fn, asked = model(1e-10, overhead_s=0.0)
    assert batching.calibrate(fn, max_calls=300) == 300
    assert max(asked) == 300
    for cap in (0, -5):  # a nonsense cap still means at least one call
        assert batching.calibrate(model(1e-6)[0], max_calls=cap) == 1


def test_noisy_timer_still_reaches_the_target_within_bounds() -> None:
    for seed in range(50):
        per_call = random.Random(seed).uniform(1e-6, 60e-6)  # under the 100 us rule even with +30% noise
        fn, asked = model(per_call, noise=0.3, seed=seed)
        calls = batching.calibrate(fn)
        assert 2 <= calls <= batching.MAX_CALLS
        assert len(asked) <= batching.MAX_STEPS + batching.SINGLE_PROBES
        # growth per step is bounded, so a noisy probe cannot overshoot wildly
        assert all(b <= a * batching.MAX_GROWTH for a, b in zip(asked, asked[1:]))
        assert calls == batching.MAX_CALLS or calls * per_call >= batching.TARGET_S / 1.3 - 5e-6


def test_spin_covers_the_host_enqueue_of_the_batch() -> None:
    # a call the host needs 70 us to launch (a pinned SDPA backend) and the GPU 11 us to run:
    # a batch of 45 is queued for 3.2 ms, so the spin must outlast that
    assert timing.spin_for(70e-6, 45) >= 70e-6 * 45
    assert timing.spin_for(0.0, 1) > 0  # a margin even for a free host


def test_next_calls_rules() -> None:
    assert batching.next_calls(10, 600e-6, target_s=500e-6) == 10  # already long enough
    assert batching.next_calls(10, 400e-6, target_s=500e-6) >= 20  # at least doubles
    assert batching.next_calls(1, 1e-9, target_s=500e-6) == batching.MAX_GROWTH  # at most 16x
    cap = batching.MAX_CALLS
    assert batching.next_calls(cap, 1e-6) == cap  # at the cap
    assert batching.next_calls(cap - 10, 1e-6) == cap
    assert batching.next_calls(10 * cap, 1e-9) == cap  # a size past the cap is brought back to it


def test_time_batch_on_cpu_times_all_calls_and_measure_keeps_one_call() -> None:
    counter = {"n": 0}
    out = torch.zeros(1)

    def call() -> tuple[torch.Tensor]:
        counter["n"] += 1
        return (out,)

    b = timing.time_batch(call, 7, torch.device("cpu"))
    assert counter["n"] == 7 and b.seconds >= 0 and b.outputs[0] is out and b.ahead

    class Case:
        run = staticmethod(call)
        poison = staticmethod(lambda: None)

    counter["n"] = 0
    m = timing.measure(Case(), repeats=3, warmup=2, device=torch.device("cpu"), batch_target_s=1e-3)
    # the CPU is timed one call per repeat whatever the target: 1 first + 2 warm-ups + 3 repeats
    assert m.calls == 1 and counter["n"] == 6 and len(m.times_s) == 3


def test_batch_target_argument_rejects_nonsense() -> None:
    import argparse

    assert nonnegative_float("0") == 0.0 and nonnegative_float("250.5") == 250.5
    for text in ("-1", "nan", "inf", "abc", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            nonnegative_float(text)
